#!/usr/bin/env bash
# The fused Q/K/V matvec (backends/vulkan/vk_fuse.c) on the bundled model
# and the fixture models beside it: tests/models' llama (GQA) and qwen2
# (q/k/v bias), imported here with E0M4 and int8 projections (group 32: the
# fixtures' K is small) so that their projections run the quantized matvec,
# then test_vk_fuse --qkv on all of them: several decode steps fused and
# unfused, logits and KV cache bit for bit.
# Exit 77 (skipped) where test_vk_fuse finds no Vulkan.
# Usage: qkv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm
set -uo pipefail
vkllm=${1:?usage: qkv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
test_vk_fuse=${2:?usage: qkv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
bundled=${3:?usage: qkv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=()
for spec in llama:e0m4 llama:int8 qwen2:e0m4 qwen2:int8; do
  model=${spec%%:*} weights=${spec#*:}
  out=$tmp/$model-$weights.vkm
  if ! "$vkllm" import "$root/tests/models/$model/model.onnx" -o "$out" --weights "$weights" --group 32 --quiet; then
    echo "FAIL: import of $model with --weights $weights"
    exit 1
  fi
  models+=("$out")
done
exec "$test_vk_fuse" --qkv "$bundled" "${models[@]}"
