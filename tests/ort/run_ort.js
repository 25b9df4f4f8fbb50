#!/usr/bin/env node
// Reference outputs for the random op cases (gen_cases.py): runs every case
// folder's model.onnx in ONNX Runtime (CPU execution provider, every graph
// optimization off) on its step0.in.*.npy inputs and writes
// step0.out.<name>.npy for every graph output, then records the outputs'
// dtypes and shapes in manifest.json.
//
// Usage: node run_ort.js ROOT_DIR
// Each subfolder of ROOT_DIR holding a manifest.json is one case. A case ORT
// cannot load or run is written to ROOT_DIR/ort_failures.txt with the error
// and is left without outputs (run.sh reports it as a failure).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// .npy descr <-> ORT tensor type and typed array.
const TYPES = {
  '<f4': { ort: 'float32', arr: Float32Array, size: 4 },
  '<f8': { ort: 'float64', arr: Float64Array, size: 8 },
  '<f2': { ort: 'float16', arr: Uint16Array, size: 2 },
  '<i8': { ort: 'int64', arr: BigInt64Array, size: 8 },
  '<i4': { ort: 'int32', arr: Int32Array, size: 4 },
  '<i2': { ort: 'int16', arr: Int16Array, size: 2 },
  '|i1': { ort: 'int8', arr: Int8Array, size: 1 },
  '|u1': { ort: 'uint8', arr: Uint8Array, size: 1 },
  '|b1': { ort: 'bool', arr: Uint8Array, size: 1 },
};
const DESCR_OF = {};
for (const [d, t] of Object.entries(TYPES)) DESCR_OF[t.ort] = d;
// Names numpy gives the descrs, as written into manifest.json.
const NUMPY_NAME = { '<f4': 'float32', '<f8': 'float64', '<f2': 'float16', '<i8': 'int64', '<i4': 'int32',
  '<i2': 'int16', '|i1': 'int8', '|u1': 'uint8', '|b1': 'bool' };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  let hlen, hstart;
  if (major === 1) { hlen = buf.readUInt16LE(8); hstart = 10; }
  else { hlen = buf.readUInt32LE(8); hstart = 12; }
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${file}: bad header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${file}: Fortran order`);
  const t = TYPES[descr[1]];
  if (!t) throw new Error(`${file}: dtype ${descr[1]} not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const off = hstart + hlen;
  // Copy into an aligned buffer: typed arrays need aligned offsets.
  const bytes = new Uint8Array(count * t.size);
  buf.copy(bytes, 0, off, off + count * t.size);
  if (bytes.length !== count * t.size) throw new Error(`${file}: truncated data`);
  return { descr: descr[1], dims, data: new t.arr(bytes.buffer, 0, count) };
}

// .npy format 1.0: magic, version, u16 header length, the dict padded with
// spaces and a newline so that the data starts at a multiple of 64.
function writeNpy(file, descr, dims, bytes) {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(bytes)]));
}

function outputBytes(tensor) {
  const d = tensor.data;
  if (tensor.type === 'bool') {
    // ORT gives bool data as a Uint8Array of 0/1.
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).map((v) => (v ? 1 : 0));
  }
  if (tensor.type === 'float16' && !(d instanceof Uint16Array)) {
    // Float16Array (Node with --js-float16array): take the raw bits.
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  }
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

async function runCase(dir, options) {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const step = manifest.steps[0];
  const feeds = {};
  for (const inp of step.inputs) {
    const a = readNpy(path.join(dir, inp.file));
    feeds[inp.name] = new ort.Tensor(TYPES[a.descr].ort, a.data, a.dims);
  }
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), options);
  try {
    const results = await session.run(feeds);
    const outs = [];
    for (const name of session.outputNames) {
      const t = results[name];
      const descr = DESCR_OF[t.type];
      if (!descr) throw new Error(`output ${name} has type ${t.type}, which the .npy writer does not handle`);
      const file = `step0.out.${name}.npy`;
      writeNpy(path.join(dir, file), descr, t.dims, outputBytes(t));
      outs.push({ name, file, dtype: NUMPY_NAME[descr], shape: Array.from(t.dims) });
    }
    step.outputs = outs;
    manifest.reference = `onnxruntime-node ${ort.env.versions.node}, CPUExecutionProvider, graph optimizations disabled`;
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
  } finally {
    await session.release();
  }
}

async function main() {
  const root = process.argv[2];
  if (!root) {
    console.error('usage: node run_ort.js ROOT_DIR');
    process.exit(2);
  }
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    logSeverityLevel: 4, // errors are reported per case in ort_failures.txt
  };
  const dirs = fs.readdirSync(root).filter((d) => fs.existsSync(path.join(root, d, 'manifest.json'))).sort();
  const failures = [];
  for (const d of dirs) {
    try {
      await runCase(path.join(root, d), options);
    } catch (e) {
      failures.push(`${d}\t${String(e.message || e).replace(/\s+/g, ' ')}`);
    }
  }
  fs.writeFileSync(path.join(root, 'ort_failures.txt'), failures.map((l) => l + '\n').join(''));
  console.log(`run_ort: ${dirs.length - failures.length} of ${dirs.length} cases ran in onnxruntime-node ${ort.env.versions.node}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
