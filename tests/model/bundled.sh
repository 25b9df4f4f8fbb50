#!/usr/bin/env bash
# The bundled model end to end (model/vkllm-kjv.vkm, E0M4):
#  1. its tokenizer gives Hugging Face's ids (with special tokens) on all 1,036
#     held-out lines (model/heldout.ids.txt, made by HF tokenizers at training)
#     and decodes them back to the text;
#  2. greedy `vkllm run` is identical across two runs and equals the 40 tokens
#     PyTorch generated in float32 (model/sample.json).
# Usage: bundled.sh VKLLM_BINARY
set -euo pipefail
bin=${1:?usage: bundled.sh VKLLM_BINARY}
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${VKL_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

"$py" -c 'import json,sys; [print(json.dumps({"text": l.rstrip("\n")})) for l in open(sys.argv[1], encoding="utf-8")]' \
  "$root/model/data/heldout.txt" > "$tmp/heldout.jsonl"
"$bin" tokenize "$root/model/tokenizer" --jsonl "$tmp/heldout.jsonl" > "$tmp/out.jsonl"
if "$py" - "$tmp/out.jsonl" "$root/model/heldout.ids.txt" "$root/model/data/heldout.txt" <<'PY'
import json, sys
out = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
ref = [[int(x) for x in l.split()] for l in open(sys.argv[2])]
text = [l.rstrip("\n") for l in open(sys.argv[3], encoding="utf-8")]
bad = [i for i, (o, r, t) in enumerate(zip(out, ref, text)) if o["ids_with_special"] != r or o["decoded"] != t]
print(f"tokenizer: {len(out) - len(bad)} of {len(ref)} held-out lines match HF ids and round-trip")
sys.exit(1 if bad or len(out) != len(ref) else 0)
PY
then passed=$((passed + 1)); else failed=$((failed + 1)); fi

"$bin" run -p "In the beginning" -n 40 2>/dev/null > "$tmp/run1.txt"
"$bin" run -p "In the beginning" -n 40 2>/dev/null > "$tmp/run2.txt"
if cmp -s "$tmp/run1.txt" "$tmp/run2.txt"; then passed=$((passed + 1)); else echo "greedy runs differ"; failed=$((failed + 1)); fi
want=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["full_text"])' "$root/model/sample.json")
if [ "$(cat "$tmp/run1.txt")" == "$want" ]; then
  passed=$((passed + 1))
else
  echo "greedy text differs from PyTorch's:"; echo " got:  $(cat "$tmp/run1.txt")"; echo " want: $want"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
