#!/usr/bin/env bash
# Outputs never clobber: `vkllm import -o` writes a regular file or a new
# path, never the input (however it is named), a directory, a device, a FIFO
# or what a symbolic link to one of those names; a failed write leaves the old
# output as it was and no temporary file; a later write removes temporary
# files whose process is gone. (Signals: test_import_signal.c.)
# Usage: outputs.sh VKLLM
set -uo pipefail
vkllm=${1:?usage: outputs.sh VKLLM}
vkllm=$(cd "$(dirname "$vkllm")" && pwd)/$(basename "$vkllm") # one case runs in another directory
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { passed=$((passed + 1)); }

cp "$root/tests/models/llama/model.onnx" "$tmp/M.onnx"
cp "$tmp/M.onnx" "$tmp/orig.onnx"
mkdir "$tmp/w"
w=$tmp/w

# refused OUT NEEDLE [ARGS...]: import to OUT fails with exit 1 and NEEDLE on
# stderr, and leaves no temporary file in $w.
refused() {
  local out=$1 needle=$2 rc
  shift 2
  timeout 120 "$vkllm" import "$tmp/M.onnx" -o "$out" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 1 ]; then fail "import -o $out: exit $rc, want 1: $(cat "$tmp/err")"; return; fi
  if ! grep -qF -- "$needle" "$tmp/err"; then fail "import -o $out: stderr lacks '$needle': $(cat "$tmp/err")"; return; fi
  if ls -A "$w" | grep -q '\.tmp-'; then fail "import -o $out left $(ls -A "$w")"; return; fi
  ok
}

# the input itself, under its own name, another spelling and a hard link
refused "$tmp/M.onnx" "is the input"
refused "$tmp/../$(basename "$tmp")/M.onnx" "is the input"
ln "$tmp/M.onnx" "$w/hard.onnx"
refused "$w/hard.onnx" "is the input"
cmp -s "$tmp/M.onnx" "$tmp/orig.onnx" && ok || fail "the input was changed"
rm "$w/hard.onnx"
# the tokenizer files given with --tokenizer are inputs too
mkdir "$tmp/tok"
cp "$root/tests/cli/tiny_tokenizer/tokenizer.json" "$tmp/tok/"
refused "$tmp/tok/tokenizer.json" "is the input" --tokenizer "$tmp/tok"
cmp -s "$tmp/tok/tokenizer.json" "$root/tests/cli/tiny_tokenizer/tokenizer.json" && ok || fail "tokenizer.json changed"

# directories
refused "$w" "it is a directory"
(cd "$w" && refused . "it is a directory")
refused "$w/sub/" "names a directory"

# a FIFO, and a symbolic link to one: still a FIFO afterwards, no hang
mkfifo "$w/fifo"
ln -s fifo "$w/link"
refused "$w/fifo" "it is a named pipe (FIFO)"
refused "$w/link" "it is a named pipe (FIFO)"
[ -p "$w/fifo" ] && [ -L "$w/link" ] && ok || fail "the FIFO or the link was replaced"
rm -f "$w/fifo" "$w/link"

# a device. As root a private node (a write there once replaced the node
# with a regular file); /dev/null itself only where we cannot write /dev.
if [ "$(id -u)" -eq 0 ]; then
  mknod "$w/null" c 1 3
  refused "$w/null" "it is a character device"
  [ -c "$w/null" ] && ok || fail "the device node was replaced"
  rm -f "$w/null"
else
  refused /dev/null "it is a character device"
fi

# a good write, then one that fails halfway (a file size limit): the first
# output is untouched and no temporary file remains
"$vkllm" import "$tmp/M.onnx" -o "$w/out.vkm" >/dev/null 2>"$tmp/err" && ok || fail "import: $(cat "$tmp/err")"
cp "$w/out.vkm" "$tmp/good.vkm"
(ulimit -f 64 && exec "$vkllm" import "$tmp/M.onnx" -o "$w/out.vkm") >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "File too large" "$tmp/err" && ok || fail "write past ulimit -f: exit $rc: $(cat "$tmp/err")"
cmp -s "$w/out.vkm" "$tmp/good.vkm" && ok || fail "a failed write changed the existing output"
[ "$(ls -A "$w")" = "out.vkm" ] && ok || fail "a failed write left: $(ls -A "$w")"

# temporary files of dead processes are removed by the next write to the same
# output; a live process's, another output's and other names are kept
dead=$(sh -c 'echo $$')
touch "$w/.out.vkm.tmp-$dead-1a2b00" "$w/.out.vkm.tmp-$$-1a2b00" "$w/.other.vkm.tmp-$dead-1a2b00" "$w/.out.vkm.tmp-x"
"$vkllm" import "$tmp/M.onnx" -o "$w/out.vkm" >/dev/null 2>"$tmp/err" && ok || fail "import: $(cat "$tmp/err")"
[ ! -e "$w/.out.vkm.tmp-$dead-1a2b00" ] && ok || fail "the dead process's temporary file is still there"
for f in ".out.vkm.tmp-$$-1a2b00" ".other.vkm.tmp-$dead-1a2b00" .out.vkm.tmp-x; do
  [ -e "$w/$f" ] && ok || fail "$f was removed"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
