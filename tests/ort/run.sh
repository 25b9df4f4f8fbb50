#!/usr/bin/env bash
# Randomized differential test of the ref backend against ONNX Runtime:
# gen_cases.py writes random single-op (and small shape-subgraph) ONNX
# fixtures, run_ort.js computes their reference outputs with
# onnxruntime-node (CPU, graph optimizations off), and `vkllm check` runs
# each fixture on the ref backend and compares.
#
# Usage: tests/ort/run.sh VKLLM_BINARY [--seed N] [--count-per-op N]
#                         [--ops A,B,...] [--jobs N] [--keep DIR]
#   --keep DIR  generate into DIR (kept) instead of a temporary folder.
#
# Prints one block per failing case (its name, op, opset, and the check
# output), then a last line "N passed, M failed". Exit status 0 only when
# every case passed.
#
# Needs /usr/bin/python3 with numpy and onnx (python3-numpy, python3-onnx),
# node, and tests/ort/node_modules (npm ci --ignore-scripts --prefix tests/ort).
# A missing dependency is a failure; with VKL_ORT_OPTIONAL=1 it is a skip
# (message "skipped: ...", exit status 77, ctest's SKIP_RETURN_CODE) for
# developers without npm.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() {
  sed -n '8,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 1 ] || usage
vkllm=$1
shift
seed=1 count=20 ops="" jobs=$(nproc 2>/dev/null || echo 2) keep=""
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --count-per-op) count=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) usage ;;
  esac
done

python=${VKL_PYTHON:-/usr/bin/python3}
install_hint="npm ci --ignore-scripts --prefix tests/ort"
missing=""
if ! command -v node >/dev/null 2>&1; then
  missing="node not installed (install Node.js >= 18, then run: $install_hint)"
elif [ ! -f "$here/node_modules/onnxruntime-node/package.json" ]; then
  missing="onnxruntime-node not installed (run: $install_hint)"
elif ! "$python" -c 'import numpy, onnx' >/dev/null 2>&1; then
  missing="$python cannot import numpy and onnx (install: apt-get install python3-numpy python3-onnx)"
fi
if [ -n "$missing" ]; then
  if [ "${VKL_ORT_OPTIONAL:-0}" = 1 ]; then
    echo "skipped: $missing"
    exit 77
  fi
  echo "error: $missing; set VKL_ORT_OPTIONAL=1 to skip this test instead"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -x "$vkllm" ]; then
  echo "error: $vkllm is not an executable (the first argument is the vkllm binary)"
  echo "0 passed, 1 failed"
  exit 1
fi
vkllm=$(cd "$(dirname "$vkllm")" && pwd)/$(basename "$vkllm")

if [ -n "$keep" ]; then
  root=$keep
  rm -rf "$root"
  mkdir -p "$root"
else
  root=$(mktemp -d "${TMPDIR:-/tmp}/vkl_ort.XXXXXX")
  trap 'rm -rf "$root"' EXIT
fi

gen_args=(--seed "$seed" --count-per-op "$count")
[ -n "$ops" ] && gen_args+=(--ops "$ops")
if ! "$python" "$here/gen_cases.py" "$root" "${gen_args[@]}"; then
  echo "error: gen_cases.py failed"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! node "$here/run_ort.js" "$root"; then
  echo "error: run_ort.js failed"
  echo "0 passed, 1 failed"
  exit 1
fi

# One case: vkllm check with the manifest's tolerance. Writes check.out and
# check.rc into the case folder.
check_one() {
  local dir=$1 tol
  tol=$(sed -n 's/^ *"tol": *\([0-9.eE+-]*\).*/\1/p' "$dir/manifest.json" | head -n1)
  "$VKLLM" check "$dir" --tol "${tol:-1e-4}" >"$dir/check.out" 2>&1
  echo $? >"$dir/check.rc"
}
export -f check_one
export VKLLM=$vkllm

cases=()
for m in "$root"/*/manifest.json; do cases+=("$(dirname "$m")"); done
# Cases ONNX Runtime could not run have no reference: failures, not checked.
declare -A ort_failed=()
while IFS=$'\t' read -r name err; do
  [ -n "$name" ] && ort_failed[$name]=$err
done <"$root/ort_failures.txt"

printf '%s\n' "${cases[@]}" | while read -r d; do
  [ -n "${ort_failed[$(basename "$d")]+x}" ] || printf '%s\0' "$d"
done | xargs -0 -r -P "$jobs" -I{} bash -c 'check_one "$1"' _ {}

passed=0 failed=0
for d in "${cases[@]}"; do
  name=$(basename "$d")
  info=$(sed -n 's/^ *"opset": *\([0-9]*\).*/opset \1/p' "$d/manifest.json" | head -n1)
  if [ -n "${ort_failed[$name]+x}" ]; then
    echo "FAIL $name ($info): ONNX Runtime could not run the case: ${ort_failed[$name]}"
    failed=$((failed + 1))
    continue
  fi
  rc=$(cat "$d/check.rc" 2>/dev/null || echo 1)
  # A declared output dtype/shape the shape rules disagree with is logged as
  # a warning; cmd_check compares values only, so count it as a failure.
  if [ "$rc" = 0 ] && ! grep -q "is declared\|unlike its declared shape" "$d/check.out"; then
    passed=$((passed + 1))
  else
    echo "FAIL $name ($info, $(sed -n 's/^ *"symbolic_inputs": *\(true\|false\|"unnamed"\).*/symbolic \1/p' "$d/manifest.json"))"
    sed 's/^/    /' "$d/check.out"
    failed=$((failed + 1))
  fi
done
[ -n "$keep" ] && echo "cases kept in $root"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
