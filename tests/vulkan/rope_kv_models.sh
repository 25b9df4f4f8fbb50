#!/usr/bin/env bash
# The fused RoPE + KvAppend (backends/vulkan/vk_fuse.c) on the fixture
# models beside the bundled one: tests/models' llama (GQA) with an f16 and
# an int8-fp8 KV cache, qwen2 (q/k/v bias) with an f32 and an int8-e5m2 one,
# imported here (`vkllm import --kv`), then test_vk_fuse --rope-kv on them:
# several decode steps fused and unfused, logits and KV cache bit for bit.
# Exit 77 (skipped) where test_vk_fuse finds no Vulkan.
# Usage: rope_kv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm
set -uo pipefail
vkllm=${1:?usage: rope_kv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
test_vk_fuse=${2:?usage: rope_kv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
bundled=${3:?usage: rope_kv_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=()
for spec in llama:f16 llama:int8-fp8 qwen2:f32 qwen2:int8-e5m2; do
  model=${spec%%:*} kv=${spec#*:}
  out=$tmp/$model-$kv.vkm
  if ! "$vkllm" import "$root/tests/models/$model/model.onnx" -o "$out" --kv "$kv" --quiet; then
    echo "FAIL: import of $model with --kv $kv"
    exit 1
  fi
  models+=("$out")
done
exec "$test_vk_fuse" --rope-kv "$bundled" "${models[@]}"
