// Random-text references from Hugging Face tokenizers 0.23.2, for checking
// any tokenizer.json beyond the committed corpus (not run in CI):
//   npm install --prefix /tmp/hf tokenizers@0.23.2
//   NODE_PATH=/tmp/hf/node_modules node hf_random.js TOKENIZER.json N SEED > ref.jsonl
//   vkllm tokenize TOKENIZER.json --jsonl ref.jsonl > out.jsonl
//   python3 compare.py random ref.jsonl out.jsonl
// Lines are {"text", "ids", "ids_with_special", "decoded"} as in *.dev.jsonl.
// Characters come from blocks assigned by Unicode 9: characters assigned
// later are classified by each Unicode table in play (utf8proc 2.8 here,
// Oniguruma and older Rust crates in HF) and legitimately differ.
const { Tokenizer } = require('tokenizers');
const [,, tokPath, countStr, seedStr] = process.argv;
let s0 = BigInt(parseInt(seedStr || '1')) * 0x9E3779B97F4A7C15n + 1n;
function rnd() { s0 ^= s0 << 13n; s0 &= 0xFFFFFFFFFFFFFFFFn; s0 ^= s0 >> 7n; s0 ^= s0 << 17n; s0 &= 0xFFFFFFFFFFFFFFFFn; return Number(s0 >> 11n) / 9007199254740992; }
function ri(n) { return Math.floor(rnd() * n); }
const pieces = [
  () => String.fromCharCode(97 + ri(26)), () => String.fromCharCode(65 + ri(26)), () => String.fromCharCode(48 + ri(10)),
  () => ' ', () => '  ', () => '\t', () => '\n', () => '\r\n', () => '\r', () => '\u00a0', () => '\u2028', () => '\u3000', () => '\u200b', () => '\u0085',
  () => "'s", () => "'S", () => "'ll", () => "'LL", () => "'\u017f", () => "'re", () => "'", () => '"',
  () => '!?.,;:-_()[]{}<>/\\|@#$%^&*+=~`'[ri(31)],
  () => String.fromCodePoint(0x4e00 + ri(0x5000)), () => String.fromCodePoint(0x0410 + ri(0x40)), () => String.fromCodePoint(0x0627 + ri(0x20)),
  () => String.fromCodePoint(0x0915 + ri(0x30)), () => String.fromCodePoint(0x0300 + ri(0x60)), () => String.fromCodePoint(0x1F600 + ri(0x40)),
  () => '\u200d', () => '\ufe0f', () => String.fromCodePoint(0x1F1E6 + ri(26)), () => String.fromCodePoint(0xac00 + ri(0x2000)),
  () => String.fromCodePoint(0x3041 + ri(0x50)), () => String.fromCodePoint(0xff01 + ri(0x5e)), () => String.fromCodePoint(0x2160 + ri(0x10)),
  () => String.fromCodePoint(0x00b2 + ri(0x8)), () => String.fromCodePoint(0x0660 + ri(10)), () => String.fromCodePoint(0x00c0 + ri(0x100)),
  () => String.fromCodePoint(1 + ri(0x1f)), () => 'e\u0301', () => '\u00e9', () => '\ufb01',
  () => '<s>', () => '</s>', () => '<unk>', () => '<|im_start|>', () => '<|im_end|>', () => '<|endoftext|>', () => '<|begin_of_text|>',
  () => '<think>', () => '</think>', () => '<|eot_id|>', () => '<0x41>', () => '\u2581', () => '\u0120',
  () => 'the', () => ' the', () => 'ing', () => '1234567', () => '3.14', () => '    ', () => 'hello world',
];
(async () => {
  const t = Tokenizer.fromFile(tokPath);
  const n = parseInt(countStr || '1000');
  for (let i = 0; i < n; i++) {
    let s = '';
    const len = ri(i % 10 == 0 ? 200 : 20);
    for (let k = 0; k < len; k++) s += pieces[ri(pieces.length)]();
    const e = await t.encode(s, null, { addSpecialTokens: false });
    const es = await t.encode(s, null, { addSpecialTokens: true });
    process.stdout.write(JSON.stringify({ text: s, ids: e.getIds(), ids_with_special: es.getIds(), decoded: await t.decode(e.getIds(), false) }) + '\n');
  }
})();
