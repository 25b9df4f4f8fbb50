#!/usr/bin/env node
// ONNX Runtime's speed on a causal-LM export with explicit KV inputs
// (past_key_i / past_value_i, as ../shared/tools/export_hf_onnx.py writes
// them): a prompt of P random token ids, then N greedy-free decode steps
// (token 1 each time: the content does not change the work), CPU execution
// provider, every graph optimization on, T intra-op threads. The peer figure
// for `vkbench --decode M.vkm --backend cpu --prefill P` (docs/perf.md).
// Usage: node bench_llm.js MODEL.onnx [P=128] [N=16] [T=2]
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [file, P = '128', N = '16', T = '2'] = process.argv.slice(2);
  if (!file) { console.error('usage: node bench_llm.js MODEL.onnx [P] [N] [T]'); process.exit(2); }
  const prompt = Number(P), steps = Number(N), threads = Number(T);
  let t0 = Date.now();
  const s = await ort.InferenceSession.create(file, {
    executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  console.log(`ort ${require('onnxruntime-node/package.json').version}: load ${((Date.now() - t0) / 1e3).toFixed(1)} s, ` +
              `${threads} threads`);
  const pasts = s.inputNames.filter((n) => n.startsWith('past_'));
  const kvHeads = 8, headDim = 64; // Llama-3.2-1B / 3-8B shapes; checked against the presents below
  const ids = (n, start) => new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(1 + ((start + i) * 7919) % 32000)), [1, n]);
  const range = (a, n) => new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(a + i)), [1, n]);
  const ones = (n) => new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
  const feeds = { input_ids: ids(prompt, 0), attention_mask: ones(prompt), position_ids: range(0, prompt) };
  for (const p of pasts) feeds[p] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
  t0 = Date.now();
  let out = await s.run(feeds);
  const tp = (Date.now() - t0) / 1e3;
  console.log(`prefill: ${prompt} tokens in ${tp.toFixed(3)} s, ${(prompt / tp).toFixed(1)} tok/s`);
  let len = prompt;
  t0 = Date.now();
  for (let i = 0; i < steps; i++) {
    const f = { input_ids: ids(1, len), attention_mask: ones(len + 1), position_ids: range(len, 1) };
    for (const p of pasts) f[p] = out[p.replace('past_', 'present_')];
    out = await s.run(f);
    len++;
  }
  const td = (Date.now() - t0) / 1e3;
  console.log(`decode: ${steps} steps in ${td.toFixed(3)} s, ${(steps / td).toFixed(2)} tok/s (${(1e3 * td / steps).toFixed(1)} ms/step)`);
}
main().catch((e) => { console.error(e.message || e); process.exit(1); });
