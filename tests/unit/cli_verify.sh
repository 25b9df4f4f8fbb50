#!/usr/bin/env bash
# The command line of weight verification on a copy of the bundled model:
# `vkllm info --verify` reports every checksum, and on a copy with four bytes
# flipped in its weights fails naming the data section and saying the file is
# corrupt; --no-verify loads that copy (info, run); --check-finite runs.
# Usage: cli_verify.sh VKLLM_BINARY MODEL.vkm
set -euo pipefail
bin=${1:?usage: cli_verify.sh VKLLM_BINARY MODEL.vkm}
model=${2:?usage: cli_verify.sh VKLLM_BINARY MODEL.vkm}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect WHAT WANT_RC GOT_RC OUTPUT_FILE NEEDLE
  if [ "$3" -ne "$2" ] || ! grep -q -- "$5" "$4"; then
    echo "FAIL: $1 (exit $3, want $2; output lacks '$5' or differs):"; cat "$4"; fail=1
  else echo "ok: $1"; fi
}

rc=0; "$bin" info "$model" --verify > "$tmp/out" 2>&1 || rc=$?
expect "info --verify on the bundled model" 0 $rc "$tmp/out" "every section matches its XXH3 checksum"

# four bytes flipped in the middle of the data section (the last section)
cp "$model" "$tmp/bad.vkm"
size=$(stat -c %s "$model")
printf '\xde\xad\xbe\xef' | dd of="$tmp/bad.vkm" bs=1 seek=$((size - 4096)) conv=notrunc status=none

rc=0; "$bin" info "$tmp/bad.vkm" --verify > "$tmp/out" 2>&1 || rc=$?
expect "info --verify on a corrupt copy" 1 $rc "$tmp/out" "data: checksum mismatch.*the file is corrupt"
rc=0; "$bin" info "$tmp/bad.vkm" > "$tmp/out" 2>&1 || rc=$?
expect "info (verifies by default) on a corrupt copy" 1 $rc "$tmp/out" "the file is corrupt"
rc=0; "$bin" info "$tmp/bad.vkm" --no-verify > "$tmp/out" 2>&1 || rc=$?
expect "info --no-verify on a corrupt copy" 0 $rc "$tmp/out" "metadata:"
rc=0; "$bin" run -m "$tmp/bad.vkm" -p "In the beginning" -n 2 > "$tmp/out" 2>&1 || rc=$?
expect "run on a corrupt copy" 1 $rc "$tmp/out" "data: checksum mismatch"
rc=0; "$bin" run -m "$tmp/bad.vkm" -p "In the beginning" -n 2 --no-verify > "$tmp/out" 2>&1 || rc=$?
expect "run --no-verify on a corrupt copy" 0 $rc "$tmp/out" "generated 2 tokens"
rc=0; "$bin" run -m "$model" -p "In the beginning" -n 2 --check-finite > "$tmp/out" 2>&1 || rc=$?
expect "run --check-finite on the bundled model" 0 $rc "$tmp/out" "generated 2 tokens"
exit $fail
