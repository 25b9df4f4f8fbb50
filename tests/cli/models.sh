#!/usr/bin/env bash
# vkllm's subcommands on real models, at the command line: what they print,
# where, and with which exit code. Models are imported here from
# tests/models/llama with tests/cli/tiny_tokenizer (258 ids, within the
# fixture's 512 logits) and a tokenizer_config.json written per case.
# Usage: models.sh VKLLM
set -uo pipefail
vkllm=${1:?usage: models.sh VKLLM}
root=$(cd "$(dirname "$0")/../.." && pwd)
llama=$root/tests/models/llama/model.onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }

# run_cmd CMD...: runs it with stdin from $tmp/in; exit code in $rc,
# streams in $tmp/out and $tmp/err.
run_cmd() {
  "$@" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
: >"$tmp/in"

# expect_rc WANT NEEDLE CMD...: exit code WANT and NEEDLE in stderr.
expect_rc() {
  local want=$1 needle=$2
  shift 2
  run_cmd "$@"
  if [ "$rc" -ne "$want" ]; then fail "$* -> exit $rc, want $want; stderr: $(head -c 400 "$tmp/err")"; return 1; fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" "$tmp/err"; then
    fail "$* -> stderr lacks '$needle': $(head -c 400 "$tmp/err")"
    return 1
  fi
  ok
}

# tokenizer DIR CONFIG_JSON: a tokenizer folder with the tiny tokenizer.
tokenizer() {
  mkdir -p "$1"
  cp "$root/tests/cli/tiny_tokenizer/tokenizer.json" "$1/"
  printf '%s\n' "$2" >"$1/tokenizer_config.json"
}

# model NAME CONFIG_JSON: $tmp/NAME.vkm, the llama fixture with that config.
model() {
  tokenizer "$tmp/$1" "$2"
  if ! "$vkllm" import "$llama" -o "$tmp/$1.vkm" --tokenizer "$tmp/$1" >"$tmp/import.log" 2>&1; then
    fail "import $1: $(cat "$tmp/import.log")"
    return 1
  fi
}

special='"bos_token": "<s>", "eos_token": "</s>"'

# ---- chat: the template's own error, not "no longer fits" ----------------------
model raise "{$special, \"chat_template\": \"{% for m in messages %}{{ m['content'] }}{% endfor %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}\"}"
model plain "{$special, \"chat_template\": \"{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\\n{% endfor %}\"}"
echo hello >"$tmp/in"
expect_rc 1 "Conversation roles must alternate" "$vkllm" chat -m "$tmp/raise.vkm"
if grep -q "no longer fits" "$tmp/err"; then fail "chat reports a template error as a full context"; fi
expect_rc 1 "no longer fits the context" "$vkllm" chat -m "$tmp/plain.vkm" --context 16
printf 'hello\nagain\n' >"$tmp/in"
expect_rc 0 "" "$vkllm" chat -m "$tmp/plain.vkm"
: >"$tmp/in"

# ---- a model path that is no regular file: refused at once ----------------------
# (a FIFO once blocked open(2) forever; timeout turns a regression into a failure)
mkfifo "$tmp/fifo"
for c in "run -p hi -m" "chat -m" "info" "perplexity" "import" "quant-report"; do
  extra=()
  case $c in perplexity) extra=("$tmp/in") ;; import) extra=(-o "$tmp/x.vkm") ;; esac
  # shellcheck disable=SC2086
  expect_rc 1 "'$tmp/fifo' is not a regular file: it is a named pipe (FIFO)" \
    timeout 60 "$vkllm" $c "$tmp/fifo" "${extra[@]}"
done
expect_rc 1 "is not a regular file: it is a directory" "$vkllm" info "$tmp"
expect_rc 1 "is not a regular file: it is a character device" "$vkllm" run -p hi -m /dev/null

# ---- import --tokenizer: checked before it is stored ---------------------------
# ids beyond the model's logits (the bundled model's 4096-id tokenizer on the
# 512-logit fixture), a truncated tokenizer.json, a missing one: exit 1, no file
expect_rc 1 "its ids go up to 4095 but the model's logits have 512 entries" \
  "$vkllm" import "$llama" -o "$tmp/bad.vkm" --tokenizer "$root/model/tokenizer"
mkdir -p "$tmp/trunc"
head -c 2000 "$root/tests/cli/tiny_tokenizer/tokenizer.json" >"$tmp/trunc/tokenizer.json"
expect_rc 1 "not valid JSON" "$vkllm" import "$llama" -o "$tmp/bad.vkm" --tokenizer "$tmp/trunc"
expect_rc 1 "cannot read $tmp/nosuch/tokenizer.json" "$vkllm" import "$llama" -o "$tmp/bad.vkm" --tokenizer "$tmp/nosuch"
[ -e "$tmp/bad.vkm" ] && fail "a rejected tokenizer still wrote $tmp/bad.vkm" || ok

# ---- info: whether prompts run the lm_head on their last row alone --------------
if expect_rc 0 "" "$vkllm" info "$tmp/plain.vkm" --no-verify; then
  grep -qF "last-row logits: a prompt runs the lm_head on one row, taken from '/model/model/layers.1/Add_1_output_0'" \
    "$tmp/out" && ok || fail "info: no last-row logits line: $(grep -F last-row "$tmp/out")"
fi

# ---- run: the context and what the statistics line says ----------------------
# No eos_token: generation can only stop at -n or at the full context.
model ctx '{"bos_token": "<s>", "model_max_length": 40}'
model noctx '{"bos_token": "<s>"}'
# the default context is the tokenizer's model_max_length when below 1024
if expect_rc 0 "context 40; prompt 6 tokens" "$vkllm" run -m "$tmp/ctx.vkm" -p hello -n 1000; then
  expect_rc 0 "stopped after 34 of 1000 tokens: the context of 40 tokens is full" "$vkllm" run -m "$tmp/ctx.vkm" -p hello -n 1000
fi
expect_rc 0 "context 1024;" "$vkllm" run -m "$tmp/noctx.vkm" -p hello -n 1
expect_rc 0 "stopped after 14 of 100 tokens: the context of 20 tokens is full" \
  "$vkllm" run -m "$tmp/ctx.vkm" -p hello -n 100 --context 20
expect_rc 0 "--context 50 is beyond the tokenizer's model_max_length 40" "$vkllm" run -m "$tmp/ctx.vkm" -p hello -n 1 --context 50
expect_rc 0 "generated 3 tokens" "$vkllm" run -m "$tmp/ctx.vkm" -p hello -n 3
if grep -q "stopped" "$tmp/err"; then fail "run -n 3 says it stopped early: $(cat "$tmp/err")"; fi
# a prompt that fills the context: nothing generated, and said
expect_rc 0 "stopped after 0 of 5 tokens" "$vkllm" run -m "$tmp/ctx.vkm" -p "$(printf 'x%.0s' $(seq 39))" -n 5
expect_rc 1 "do not fit" "$vkllm" run -m "$tmp/ctx.vkm" -p "$(printf 'x%.0s' $(seq 40))" -n 5
# a one-token prompt is a prompt, not a decode step
expect_rc 0 "prompt 1 tokens" "$vkllm" run -m "$tmp/ctx.vkm" -p h --raw -n 2
# the bundled model: its tokenizer's model_max_length is 512
expect_rc 0 "context 512;" "$vkllm" run -p "In the beginning" -n 1

# ---- perplexity: a line longer than the 512-token context is scored whole ---
# (the tiny tokenizer has one token per byte outside runs of 'a': a 600-byte
# line is BOS + 600 tokens, all 600 scored, in two windows); a line of any
# length is one line.
model pp "{$special}"
printf 'xyz %.0s' $(seq 150) >"$tmp/long.txt"
printf '\n' >>"$tmp/long.txt"
if expect_rc 0 "" "$vkllm" perplexity "$tmp/pp.vkm" "$tmp/long.txt"; then
  grep -q ": 1 lines, 600 tokens:" "$tmp/out" && ok || fail "perplexity of a 600-byte line: $(cat "$tmp/out")"
fi
head -c 70000 /dev/zero | tr '\0' a >"$tmp/huge.txt"
printf '\nAnd God said\n' >>"$tmp/huge.txt"
if expect_rc 0 "" "$vkllm" perplexity "$tmp/pp.vkm" "$tmp/huge.txt"; then
  grep -q ": 2 lines, " "$tmp/out" && ok || fail "a 70,000-byte line is not one line: $(cat "$tmp/out")"
fi
expect_rc 1 "nothing was scored" "$vkllm" perplexity "$tmp/pp.vkm" "$tmp/in"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
