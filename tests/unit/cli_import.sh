#!/usr/bin/env bash
# `vkllm import` on threads: the same .vkm bytes on 1 and 3 threads (the
# llama fixture, E0M4 + int8 lm_head + bf16 embedding); --quiet prints
# nothing; a short import shows no progress.
# Usage: cli_import.sh VKLLM_BINARY FIXTURE_DIR
set -euo pipefail
bin=${1:?usage: cli_import.sh VKLLM_BINARY FIXTURE_DIR}
fixture=${2:?usage: cli_import.sh VKLLM_BINARY FIXTURE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
recipe=(--weights e0m4 --lm-head int8 --embed bf16)
"$bin" import "$fixture/model.onnx" -o "$tmp/one.vkm" "${recipe[@]}" --threads 1 > "$tmp/one.out" 2> "$tmp/one.err"
"$bin" import "$fixture/model.onnx" -o "$tmp/three.vkm" "${recipe[@]}" --threads 3 --quiet > "$tmp/q.out" 2> "$tmp/q.err"
if cmp -s "$tmp/one.vkm" "$tmp/three.vkm"; then echo "ok: 1 and 3 threads write the same bytes"
else echo "FAIL: 1 and 3 threads write different files"; fail=1; fi
if [ -s "$tmp/q.out" ] || [ -s "$tmp/q.err" ]; then echo "FAIL: --quiet printed:"; cat "$tmp/q.out" "$tmp/q.err"; fail=1
else echo "ok: --quiet prints nothing"; fi
if grep -q "import:" "$tmp/one.err"; then echo "FAIL: a short import showed progress:"; cat "$tmp/one.err"; fail=1
else echo "ok: no progress for a short import"; fi
grep -q "^wrote " "$tmp/one.out" || { echo "FAIL: no summary"; fail=1; }
exit $fail
