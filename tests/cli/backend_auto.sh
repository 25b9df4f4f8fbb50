#!/usr/bin/env bash
# `vkllm run` without --backend: says on stderr which backend it chose and
# why; picks a hardware GPU when vkbench --probe reports one, and never a
# GPU API run on the CPU (lavapipe) on its own. Without any Vulkan driver
# (VK_ICD_FILENAMES naming none) it takes the cpu backend and says Vulkan's reason.
# Usage: backend_auto.sh VKLLM VKBENCH
set -euo pipefail
vkllm=$1 vkbench=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

probe=$("$vkbench" --probe)
err=$("$vkllm" run -p "In the beginning" -n 2 2>&1 >/dev/null)
line=$(grep '^backend: ' <<<"$err" | head -1) || fail "no 'backend:' line on stderr: $err"
echo "$line"
if grep -q '^vulkan: .*, hardware GPU$' <<<"$probe"; then
  grep -q '^backend: vulkan (.*GPU)' <<<"$line" || fail "a hardware GPU is present but not chosen: $line"
else
  grep -q '^backend: cpu (no hardware GPU' <<<"$line" || fail "expected cpu without a hardware GPU: $line"
  if grep -q '^vulkan: .*GPU API on the CPU$' <<<"$probe"; then
    grep -q 'runs on the CPU' <<<"$line" || fail "the reason should name the CPU-type Vulkan device: $line"
  fi
fi

# No Vulkan driver at all: cpu, and the reason says why.
line=$(VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json \
  "$vkllm" run -p "In the beginning" -n 2 2>&1 >/dev/null | grep '^backend: ') || fail "no 'backend:' line without a driver"
echo "$line"
grep -q '^backend: cpu (no hardware GPU (vulkan: ' <<<"$line" || fail "without a driver: $line"
# By name: the reason says so.
line=$("$vkllm" run --backend ref -p "In the beginning" -n 2 2>&1 >/dev/null | grep '^backend: ')
[[ $line == "backend: ref (asked for by name)" ]] || fail "by name: $line"
echo "backend_auto: ok"
