// Hugging Face tokenizers' own figure on the bench_tokenizer corpus (not run in CI):
//   npm install --prefix /tmp/hf tokenizers@0.23.2
//   TOKENIZERS_PARALLELISM=false NODE_PATH=/tmp/hf/node_modules node bench_hf.js TOKENIZER.json CORPUS.jsonl
// encodeBatch of the lines (repeated to 1 MB), then encode of the one text.
const { Tokenizer } = require('tokenizers');
const fs = require('fs');
(async () => {
  const [,, tokPath, corpus] = process.argv;
  let t0 = process.hrtime.bigint();
  const t = Tokenizer.fromFile(tokPath);
  const load = Number(process.hrtime.bigint() - t0) / 1e9;
  const lines = fs.readFileSync(corpus, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l).text);
  const oneCopy = lines.join('\n') + '\n';
  const reps = Math.ceil(1e6 / Buffer.byteLength(oneCopy));
  const all = []; for (let r = 0; r < reps; r++) all.push(...lines);
  const bytes = all.reduce((a, s) => a + Buffer.byteLength(s), 0);
  // warm up
  await t.encodeBatch(lines.slice(0, 100), { addSpecialTokens: false });
  t0 = process.hrtime.bigint();
  const encs = await t.encodeBatch(all, { addSpecialTokens: false });
  const batch = Number(process.hrtime.bigint() - t0) / 1e9;
  const ntok = encs.reduce((a, e) => a + e.getIds().length, 0);
  const big = oneCopy.repeat(reps);
  t0 = process.hrtime.bigint();
  const e = await t.encode(big, null, { addSpecialTokens: false });
  const one = Number(process.hrtime.bigint() - t0) / 1e9;
  const nbig = e.getIds().length;
  console.log(`${tokPath}: load ${load.toFixed(3)} s`);
  console.log(`  encodeBatch: ${all.length} lines, ${(bytes/1e6).toFixed(2)} MB, ${ntok} tokens in ${batch.toFixed(3)} s: ${(ntok/batch).toFixed(0)} tokens/s, ${(bytes/1e6/batch).toFixed(2)} MB/s`);
  console.log(`  one text   : ${(Buffer.byteLength(big)/1e6).toFixed(2)} MB, ${nbig} tokens in ${one.toFixed(3)} s: ${(nbig/one).toFixed(0)} tokens/s, ${(Buffer.byteLength(big)/1e6/one).toFixed(2)} MB/s`);
})();
