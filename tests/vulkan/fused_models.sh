#!/usr/bin/env bash
# A fusion of backends/vulkan/vk_fuse.c on the fixture models beside the
# bundled one (tests/models' llama, GQA, and qwen2, q/k/v bias), imported
# here in the forms that exercise it, then test_vk_fuse --MODE on them all:
# several decode steps fused and unfused, logits and KV cache bit for bit.
#   rope-kv  RoPE + KvAppend: llama with an f16 and an int8-fp8 KV cache,
#            qwen2 with an f32 and an int8-e5m2 one (`vkllm import --kv`);
#   qkv      the Q/K/V matvec: both with E0M4 and int8 projections (group
#            32: the fixtures' K is small), so they run the quantized matvec;
#   glu-codes  the gate/up matvec writing its down projection's int8 codes
#            (integer-dot matvecs; skipped without them): the same imports.
#   attn-codes  the decode Attention writing its o_proj's int8 codes: the
#            same imports, on the integer-dot matvecs.
#   gemm     the prefill GEMM storing the residual Add and the SiluMul: the
#            same imports, a prompt on the GEMM.
# Exit 77 (skipped) where test_vk_fuse finds no Vulkan.
# Usage: fused_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm rope-kv|qkv|glu-codes|attn-codes|gemm
set -uo pipefail
usage="usage: fused_models.sh VKLLM TEST_VK_FUSE BUNDLED.vkm rope-kv|qkv|glu-codes|attn-codes|gemm"
vkllm=${1:?$usage}
test_vk_fuse=${2:?$usage}
bundled=${3:?$usage}
mode=${4:?$usage}
case $mode in
  rope-kv) specs="llama:f16 llama:int8-fp8 qwen2:f32 qwen2:int8-e5m2" flag=(--kv) ;;
  qkv | glu-codes | attn-codes | gemm) specs="llama:e0m4 llama:int8 qwen2:e0m4 qwen2:int8" flag=(--group 32 --weights) ;;
  *) echo "$usage"; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=()
for spec in $specs; do
  model=${spec%%:*} form=${spec#*:}
  out=$tmp/$model-$form.vkm
  if ! "$vkllm" import "$root/tests/models/$model/model.onnx" -o "$out" "${flag[@]}" "$form" --quiet; then
    echo "FAIL: import of $model with ${flag[*]} $form"
    exit 1
  fi
  models+=("$out")
done
exec "$test_vk_fuse" "--$mode" "$bundled" "${models[@]}"
