// attnlab against onnxruntime-web on the same encoders, weights and input, under node and in headless
// Chromium (cross-origin isolated), at 1 thread and at every core. scripts/bench-ort.sh prepares DIR:
// attn-bench.js's --dump (weights, input, attn's output) and export_onnx.py's encoder_dD.onnx.
//
//   node tests/ort/bench.js DIR BUILD [--threads 1,2] [--no-chromium] [--json FILE]
//
// BUILD is the threaded WebAssembly build (build-web-mt: attn-bench.js, attn-bench-web.js). Under node each
// engine runs in a process of its own per thread count, in Chromium in a page of its own (onnxruntime-web
// takes its thread count once). Every onnxruntime-web output must be within 1e-4 of attn's, and attn's
// output in Chromium must be the bytes it gave under node, else the run fails. The ratio is
// onnxruntime-web's median time / attnlab's: above 1, attnlab is faster.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { parseNpy, runOrt } = require('./common');
const { serveFiles, inside, isolation } = require('../browser/static_server');

const tolerance = 1e-4;
const readNpy = (file) => parseNpy(fs.readFileSync(file), file);

// --- node ---

function attnUnderNode(build, threads) {
  const out = execFileSync(process.execPath, [path.join(build, 'attn-bench.js'), '--json', '--threads', String(threads),
                                              'encoder'], { encoding: 'utf8', maxBuffer: 1 << 24 });
  return JSON.parse(out).results;
}

// One onnxruntime-web run in this process (bench.js --ort STEM THREADS): prints {ms, difference}.
async function ortChild(stem, threads) {
  const r = await runOrt(require('onnxruntime-web'), fs.readFileSync(stem + '.onnx'), readNpy(stem + '_input.npy'),
                         readNpy(stem + '_output.npy'), Number(threads));
  console.log(JSON.stringify(r));
}

function ortUnderNode(stem, threads) {
  const out = execFileSync(process.execPath, [__filename, '--ort', stem, String(threads)], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

// --- Chromium ---

// bench.html and common.js, onnxruntime-web's files under ort/, the build's under attn/, DIR's under data/.
function serve(dir, build) {
  const roots = { ort: path.join(__dirname, 'node_modules', 'onnxruntime-web', 'dist'), attn: build, data: dir };
  return serveFiles((name) => {
    const [top, ...rest] = name.split('/');
    return roots[top] ? inside(roots[top], rest.join('/')) : inside(__dirname, name);
  }, isolation);
}

async function inPage(browser, url, fn, arg) {
  const page = await browser.newPage();
  try {
    await page.goto(url);
    if (!(await page.evaluate(() => self.crossOriginIsolated))) throw new Error('the page is not cross-origin isolated');
    return await page.evaluate(fn, arg);
  } finally {
    await page.close();
  }
}

async function chromiumRows(dir, build, counts, nodeHashes) {
  const { chromium } = require(path.join(__dirname, '..', 'browser', 'node_modules', 'playwright-core'));
  const server = await serve(dir, build);
  const url = `http://127.0.0.1:${server.address().port}/bench.html`;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
                                          args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const rows = [];
  try {
    for (const threads of counts) {
      const attn = await inPage(browser, url, (t) => window.benchAttn(t), threads);
      if (attn.code !== 0) throw new Error(`attn-bench-web failed in Chromium:\n${attn.text}`);
      for (const r of JSON.parse(attn.text).results) {
        const stem = `encoder_d${r.params.d_model}`;
        const ort = await inPage(browser, url, ([s, t]) => window.benchOrt(s, t), [stem, threads]);
        rows.push(row('chromium', threads, r, ort, r.output_fnv1a64 === nodeHashes[stem]));
      }
    }
  } finally {
    await browser.close();
    server.close();
  }
  return rows;
}

// --- the table ---

function row(where, threads, attn, ort, sameBytes) {
  const p = attn.params, attnMs = attn.median_s * 1e3;
  const r = { where, threads, case: `d_model ${p.d_model}, ${p.layers} layers, B ${p.batch} x S ${p.seq}`,
              attn_ms: attnMs, ort_ms: ort.ms, ratio: ort.ms / attnMs, max_difference: ort.difference,
              attn_bytes_as_under_node: sameBytes };
  console.log(`${where.padEnd(8)} ${String(threads).padStart(2)} thread(s)  ${r.case.padEnd(36)} ` +
              `attnlab ${attnMs.toFixed(1).padStart(8)} ms  onnxruntime-web ${ort.ms.toFixed(1).padStart(8)} ms  ` +
              `${r.ratio.toFixed(2)}x  (outputs within ${ort.difference.toExponential(1)}` +
              `${sameBytes ? '' : '; attn\'s output differs from node\'s'})`);
  return r;
}

async function main(args) {
  if (args[0] === '--ort') return ortChild(args[1], args[2]);
  const [dir, build] = args;
  if (!dir || !build) throw new Error('usage: node tests/ort/bench.js DIR BUILD [--threads 1,2] [--no-chromium] [--json FILE]');
  const option = (name) => (args.indexOf(name) > 1 ? args[args.indexOf(name) + 1] : null);
  const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  const counts = (option('--threads') || `1,${cores}`).split(',').map(Number).filter((n, i, all) => n >= 1 && all.indexOf(n) === i);
  const rows = [], nodeHashes = {};
  for (const threads of counts) {
    for (const r of attnUnderNode(build, threads)) {
      const stem = `encoder_d${r.params.d_model}`;
      nodeHashes[stem] = nodeHashes[stem] || r.output_fnv1a64;
      rows.push(row('node', threads, r, ortUnderNode(path.join(dir, stem), threads), r.output_fnv1a64 === nodeHashes[stem]));
    }
  }
  if (!args.includes('--no-chromium')) rows.push(...(await chromiumRows(dir, build, counts, nodeHashes)));
  if (option('--json')) fs.writeFileSync(option('--json'), JSON.stringify(rows, null, 1) + '\n');
  const bad = rows.filter((r) => !(r.max_difference <= tolerance) || !r.attn_bytes_as_under_node);
  if (bad.length) {
    console.error(`${bad.length} row(s) where onnxruntime-web's output is not within ${tolerance} of attn's, or attn's ` +
                  'output is not the same bytes on every thread count and in both places');
    process.exit(1);
  }
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
