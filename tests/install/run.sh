#!/usr/bin/env bash
# Install a build to a temporary prefix and use it as an app would:
# examples/generate.c built out of tree once with plain cc and pkg-config,
# once by a CMake project with find_package(vkllm); both generate text from
# the bundled model. Also checks what the installed library exports: the
# functions the installed headers declare (VKLLM_API), nothing else, and
# that the programs report the version the headers declare.
# Usage: run.sh BUILD_DIR SOURCE_DIR C_COMPILER CMAKE_GENERATOR
set -euo pipefail
build=$1
src=$2
cc=$3
generator=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
model=$src/model/vkllm-kjv.vkm

fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/vkllm.h include/vkllm_tokenizer.h lib/pkgconfig/vkllm.pc lib/cmake/vkllm/vkllmConfig.cmake \
         lib/cmake/vkllm/vkllmConfigVersion.cmake bin/vkllm bin/vkbench; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
if [ -e "$prefix/lib/libvkllm.so" ]; then
  shared=1
  symbols=$(nm -D --defined-only "$prefix/lib/libvkllm.so" | awk '{print $3}' | sort)
  soname=$(objdump -p "$prefix/lib/libvkllm.so" | awk '/SONAME/ {print $2}')
  echo "install test: shared libvkllm, soname $soname"
  [[ $soname == libvkllm.so.* ]] || fail "libvkllm.so has soname '$soname'"
  export LD_LIBRARY_PATH=$prefix/lib
else
  shared=0
  [ -e "$prefix/lib/libvkllm.a" ] || fail "neither libvkllm.a nor libvkllm.so was installed"
  symbols=$(nm -g --defined-only "$prefix/lib/libvkllm.a" | awk 'NF == 3 {print $3}' | sort)
fi

# Exported symbols == the functions the installed headers declare.
declared=$(grep -h '^VKLLM_API' "$prefix"/include/vkllm*.h | sed -E 's/^VKLLM_API [^(]*[ *](vkl_[a-z0-9_]+)\(.*/\1/' | sort)
if [ "$symbols" != "$declared" ]; then
  diff <(echo "$declared") <(echo "$symbols") >&2 || true
  fail "the library's exported symbols (>) differ from the headers' VKLLM_API functions (<)"
fi
echo "install test: $(echo "$symbols" | wc -l) symbols exported, all declared in vkllm.h / vkllm_tokenizer.h"

version=$(sed -nE 's/^#define VKLLM_VERSION_STRING "(.*)"/\1/p' "$prefix/include/vkllm.h")
"$prefix/bin/vkllm" --version | grep -qF "vkllm $version" || fail "vkllm --version does not say $version"
"$prefix/bin/vkbench" --version | grep -qF "vkbench $version" || fail "vkbench --version does not say $version"
[ "$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion vkllm)" = "$version" ] || fail "vkllm.pc's version"

# The generated text: the prompt and then at least a few more words.
check_output() {
  local out
  out=$("$1" "$model" "In the beginning" 12) || fail "$2: generate failed"
  echo "install test: $2: $out"
  [[ $out =~ ^In\ the\ beginning\ [A-Za-z]+\ [A-Za-z]+ ]] || fail "$2: no text after the prompt"
}

# 1. plain cc with pkg-config
static_flag=--static
[ "$shared" = 1 ] && static_flag=
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror "$src/examples/generate.c" -o "$work/generate_pc" \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config $static_flag --cflags --libs vkllm)
check_output "$work/generate_pc" "cc + pkg-config"

# 2. a CMake project with find_package(vkllm)
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$prefix" -DVKL_EXAMPLE="$src/examples/generate.c" >/dev/null
cmake --build "$work/consumer" >/dev/null
check_output "$work/consumer/generate" "CMake find_package"
