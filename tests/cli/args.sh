#!/usr/bin/env bash
# Command lines of vkllm and vkbench: every numeric option of every
# subcommand rejects bad values (not a number, negative, overflowing, out of
# range, nan/inf) with exit 2, nothing on stdout and one stderr line naming
# the option and the accepted range; every subcommand answers --help on
# stdout with exit 0; `vkllm help [CMD]` works; unknown commands and options,
# and missing values, are usage errors with a message.
# Usage: args.sh VKLLM VKBENCH
set -uo pipefail
vkllm=${1:?usage: args.sh VKLLM VKBENCH}
vkbench=${2:?usage: args.sh VKLLM VKBENCH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# expect RC NEEDLE CMD...: exit code RC; with RC 2 stdout empty and stderr
# holding NEEDLE; with RC 0 stdout holding NEEDLE and stderr empty.
expect() {
  local want=$1 needle=$2 rc
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$* -> exit $rc, want $want; stderr: $(head -c 300 "$tmp/err")"
    return
  fi
  local stream=$tmp/err quiet=$tmp/out
  if [ "$want" -eq 0 ]; then stream=$tmp/out quiet=$tmp/err; fi
  if [ -s "$quiet" ]; then fail "$* -> unexpected output on the other stream: $(head -c 300 "$quiet")"; return; fi
  if ! grep -qF -- "$needle" "$stream"; then fail "$* -> lacks '$needle': $(head -c 300 "$stream")"; return; fi
  passed=$((passed + 1))
}

# The values every integer / float option must reject.
ints=(abc "" -1 1.5 5x " 5" "5 " 0x10 +5 18446744073709551616 99999999999999999999999 -9223372036854775809)
floats=(abc "" nan NaN inf -inf 1e999 5x " 1" -1 0x)

# bad_values KIND OUT_OF_RANGE CMD... OPT: each bad value as the option's value
# (the option last, so positional arguments come first).
bad_values() {
  local kind=$1 oor=$2
  shift 2
  local opt=${*: -1} vals
  local cmd=("${@:1:$#-1}")
  if [ "$kind" = int ]; then vals=("${ints[@]}"); else vals=("${floats[@]}"); fi
  for v in "${vals[@]}" $oor; do
    expect 2 "$opt '$v'" "${cmd[@]}" "$opt" "$v"
    if ! grep -q "expected" "$tmp/err"; then fail "${cmd[*]} $opt '$v': no accepted range in: $(cat "$tmp/err")"; fi
  done
  expect 2 "$opt needs a value" "${cmd[@]}" "$opt"
}

run=("$vkllm" run -p hi)
bad_values int "1048577" "${run[@]}" -n
bad_values float "101" "${run[@]}" --temperature
bad_values int "2147483648" "${run[@]}" --top-k
bad_values float "0 1.5 1e-60" "${run[@]}" --top-p
bad_values float "1.5" "${run[@]}" --min-p
bad_values float "0 101" "${run[@]}" --repeat-penalty
bad_values int "18446744073709551616" "${run[@]}" --seed
bad_values int "0 1048577" "${run[@]}" --context
bad_values int "0" "$vkllm" chat --context
bad_values int "0 4294967296" "$vkllm" perplexity M.vkm T.txt --lines
bad_values int "0 1 1048577" "$vkllm" perplexity M.vkm T.txt --window
bad_values float "1e7" "$vkllm" check DIR --tol
bad_values int "0 16 65568" "$vkllm" check DIR --group
bad_values int "0 16 65568" "$vkllm" import M.onnx -o O.vkm --group
bad_values int "0 257" "$vkllm" import M.onnx -o O.vkm --threads
bad_values int "0" "$vkllm" info M.vkm --context
bad_values int "0 16 1048608" "$vkllm" quant-report M.onnx --group
bad_values int "0 3" "$vkllm" quant-report M.onnx --n
bad_values int "0 1 1048577" "$vkbench" --decode M.vkm --tokens
bad_values int "0 1048577" "$vkbench" --decode M.vkm --window
bad_values int "0 1000001" "$vkbench" --quant --reps
bad_values int "1048577" "$vkbench" --quant --rotate-mb
bad_values int "65537" "$vkbench" --quant --gemm-rows
bad_values int "0 1048577" "$vkbench" --decode M.vkm --prefill
bad_values int "0 1048577" "$vkbench" M.vkm --prefill
# --group must also be a multiple of 32
for c in "check DIR" "import M.onnx -o O.vkm" "quant-report M.onnx"; do
  # shellcheck disable=SC2086
  expect 2 "not a multiple of 32" "$vkllm" $c --group 48
done

# --help on stdout, exit 0, for every subcommand; `vkllm help CMD` says the same.
for c in backends run chat perplexity tokenize chat-template import check info quant-report version; do
  expect 0 "usage: vkllm $c" "$vkllm" "$c" --help
  cp "$tmp/out" "$tmp/help1"
  expect 0 "usage: vkllm $c" "$vkllm" "$c" -h
  expect 0 "usage: vkllm $c" "$vkllm" help "$c"
  cmp -s "$tmp/out" "$tmp/help1" || fail "vkllm help $c differs from vkllm $c --help"
done
expect 0 "usage: vkllm COMMAND" "$vkllm" help
expect 0 "usage: vkllm COMMAND" "$vkllm" --help
expect 0 "usage: vkbench" "$vkbench" --help
expect 2 "unknown command 'nosuch'" "$vkllm" help nosuch
expect 2 "unknown command 'nosuch'" "$vkllm" nosuch
expect 2 "no command given" "$vkllm"
expect 2 "unknown option '--nosuch'" "$vkllm" run -p hi --nosuch 1
expect 2 "-p PROMPT is required" "$vkllm" run
expect 2 "unexpected argument 'extra'" "$vkllm" version extra
expect 2 "unexpected argument 'extra'" "$vkllm" backends extra
# backends reports what the kill switches leave (VKL_CPU_DISABLE: every instruction set off -> portable C)
expect 1 "VKL_CPU_DISABLE=x: 'x' is not one of avx2, dotprod, i8mm" env VKL_CPU_DISABLE=x "$vkllm" backends
expect 0 "portable kernels" env VKL_CPU_DISABLE=avx2,dotprod,i8mm "$vkllm" backends
expect 2 "unexpected argument '--nosuch'" "$vkllm" import M.onnx -o O.vkm --nosuch
expect 2 "unexpected argument '--nosuch'" "$vkbench" --nosuch
expect 2 "exactly one of" "$vkbench"
for m in f17 "" "f32,,dot" "f32,"; do
  expect 2 "want a comma-separated list of f32, f16, dot, dot1" "$vkbench" --quant --math "$m"
done
expect 2 "--math goes with --quant" "$vkbench" --decode M.vkm --math f16
expect 2 "--profile, --json and --svg need --decode MODEL.vkm" "$vkbench" --profile
expect 2 "--profile, --json and --svg need --decode MODEL.vkm" "$vkbench" --quant --json J.json
expect 2 "--svg draws the profile: add --profile" "$vkbench" --decode M.vkm --svg G.svg
expect 2 "--json: cannot write '$tmp': it is a directory" "$vkbench" --decode M.vkm --profile --json "$tmp"
expect 2 "--svg: cannot write '$tmp': it is a directory" "$vkbench" --prefill 4 M.vkm --profile --svg "$tmp"
expect 2 "--prefill N needs a model" "$vkbench" --prefill 4
expect 2 "unexpected argument 'M.vkm'" "$vkbench" --decode A.vkm M.vkm
expect 2 "unexpected argument 'extra'" "$vkbench" --prefill 4 M.vkm extra
expect 2 "-o needs a value" "$vkllm" import M.onnx -o
expect 2 "exclude each other" "$vkllm" info M.vkm --verify --no-verify
expect 2 "no backend 'nosuch'" "$vkllm" check DIR --backend nosuch

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
