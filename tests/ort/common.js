// What bench.js (node) and bench.html (Chromium) share: reading attn's .npy files, comparing outputs, and
// timing as attn bench's measure() does.
'use strict';

// A C-order '<f4' .npy (as attn writes it), from its bytes: {shape, values}.
function parseNpy(bytes, name) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint16(8, true);
  const header = new TextDecoder('latin1').decode(bytes.subarray(10, 10 + length));
  if (!header.includes("'descr': '<f4'") || !header.includes("'fortran_order': False"))
    throw new Error(`${name}: expected a C-order float32 array, got ${header}`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const body = bytes.slice(10 + length);  // a copy: Float32Array needs 4-byte alignment
  return { shape, values: new Float32Array(body.buffer, body.byteOffset, body.byteLength / 4) };
}

// max |a - b|; Infinity when the lengths differ or a value is NaN.
function maxDifference(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; ++i) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return Number.isNaN(worst) ? Infinity : worst;
}

// A warm-up run, then samples until 3 and half a second (at most 50): the median, in ms.
async function measure(fn) {
  await fn();
  const samples = [], start = performance.now();
  while (samples.length < 3 || (performance.now() - start < 500 && samples.length < 50)) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const n = samples.length;
  return n % 2 ? samples[(n - 1) / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

// onnxruntime-web on `model` (the .onnx bytes) with `input`, its output compared with `expected`.
async function runOrt(ort, model, input, expected, threads) {
  ort.env.wasm.numThreads = threads;
  const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const feeds = { x: new ort.Tensor('float32', input.values, input.shape) };
  let y = null;
  const ms = await measure(async () => { y = (await session.run(feeds)).y; });
  return { ms, difference: maxDifference(y.data, expected.values) };
}

if (typeof module !== 'undefined') module.exports = { parseNpy, maxDifference, measure, runOrt };
