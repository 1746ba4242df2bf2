#!/usr/bin/env node
// Checks the playgrounds a notebook's outputs embed (python/attnlab/_playground.py's playground_html) in
// headless Chromium (Debian's /usr/bin/chromium driven by tests/browser's playwright-core):
//   node tests/python/notebook_check.mjs EXECUTED.ipynb
// Every output whose text/html holds such an iframe goes, in notebook order, onto one page served from a
// fake http://127.0.0.1 address (as a notebook server's page; nothing else may be requested, so a relative
// URL inside a srcdoc frame fails), and each playground is checked: it gets ready; no console error or
// page error; the canvas draws (several colours) with every glyph (the inlined Hangul font);
// attnlab.trace() deep-equals the output's <script type="application/json" class="attnlab-trace">
// (numbers exactly); in the Stage tab, the heatmap drawn (or every cell of the model view) has, at sampled
// cells, the colours of the trace's values under the UI's colour map (core/plot/heatmap.cpp), within
// tests/browser/playground.test.js's tolerance of 4 per channel. A line per playground (cell: the
// notebook's cell index from 0); exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const browserRequire = createRequire(path.join(here, '..', 'browser', 'package.json'));
const { decodePng, launchChromium } = browserRequire('./headless.js');

const notebook = process.argv[2];
if (!notebook) {
  console.error('usage: node tests/python/notebook_check.mjs EXECUTED.ipynb');
  process.exit(2);
}
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

// The outputs with a playground: [{cell, html}].
function playgroundOutputs(nb) {
  const found = [];
  nb.cells.forEach((cell, c) => {
    for (const out of cell.cell_type === 'code' ? cell.outputs || [] : []) {
      let html = out.data && out.data['text/html'];
      if (Array.isArray(html)) html = html.join('');
      if (typeof html === 'string' && html.includes('class="attnlab-playground"')) found.push({ cell: c, html });
    }
  });
  return found;
}

// The first difference between two JSON values ('' if none); numbers compared exactly.
function difference(a, b, at = '$') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${at}: ${JSON.stringify(a)?.slice(0, 80)} vs ${JSON.stringify(b)?.slice(0, 80)}`;
  if (a === null || typeof a !== 'object') return a === b ? '' : `${at}: ${a} vs ${b}`;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return `${at}: length ${a.length} vs ${b.length}`;
    for (let i = 0; i < a.length; i++) { const d = difference(a[i], b[i], `${at}[${i}]`); if (d) return d; }
    return '';
  }
  const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
  if (ka.join() !== kb.join()) return `${at}: keys ${ka.join(',')} vs ${kb.join(',')}`;
  for (const k of ka) { const d = difference(a[k], b[k], `${at}.${k}`); if (d) return d; }
  return '';
}

// The UI's colour map (core/plot/heatmap.cpp: stage_color_map, map_range, value_color, color_at).
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129],
                 [92, 200, 99], [170, 220, 50], [253, 231, 37]];
const RDBU = [[33, 102, 172], [103, 169, 207], [209, 229, 240], [247, 247, 247], [253, 219, 199], [239, 138, 98],
              [178, 24, 43]];
const masked = (v) => v <= -1e8 || !Number.isFinite(v);
const sequential = (name) => ['token_ids', 'input_ids', 'mask', 'next_token_probs'].includes(name) ||
  /attention_weights|attention_probs|attn_weights/.test(name);
function colorMap(name, values) {
  const seq = sequential(name), kept = values.filter((v) => !masked(v));
  let lo = kept.length ? Math.min(...kept) : 0, hi = kept.length ? Math.max(...kept) : 0;
  if (name === 'mask') [lo, hi] = [0, 1];
  else if (!seq) hi = Math.max(Math.abs(lo), Math.abs(hi)), lo = -hi;
  const stops = seq ? VIRIDIS : RDBU;
  return (v) => {
    if (masked(v)) return [96, 96, 96];
    let t = hi - lo > 0 ? (v - lo) / (hi - lo) : 0.5;
    t = Math.min(1, Math.max(0, t));
    const x = t * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
    return [0, 1, 2].map((k) => Math.round(stops[i][k] * (1 - f) + stops[i + 1][k] * f));
  };
}
// A stage's 2-D slice with the leading indices fixed (clamped; extra indices ignored), as slice_2d does.
function slice2d(stage, index) {
  const shape = stage.shape, data = stage.data.map(Math.fround);
  if (shape.length < 2) return { rows: 1, cols: data.length, values: data };
  const rows = shape[shape.length - 2], cols = shape[shape.length - 1];
  let offset = 0;
  for (let axis = 0; axis + 2 < shape.length; axis++) offset = offset * shape[axis] + Math.min(index[axis] || 0, shape[axis] - 1);
  return { rows, cols, values: data.slice(offset * rows * cols, (offset + 1) * rows * cols) };
}
// At most n evenly spread indices of 0..count-1.
const spread = (count, n) => [...new Set(Array.from({ length: Math.min(count, n) }, (_, k) => Math.floor(k * count / Math.min(count, n))))];

// Heatmap cells sampled on the canvas's screenshot against the trace's colours: [{where, screen, want}].
function heatmapSamples(view, trace, img) {
  const samples = [];
  const sample = (where, x, y, want) => samples.push({ where, screen: img.at(Math.round(x), Math.round(y)), want });
  if (view.model_view.on) {
    // Each layer's attention weights (the trace's attention matrices in order), batch item view.batch.
    const layers = trace.stages.filter((s) => sequential(s.name) && /weights|probs/.test(s.name) && s.shape.length >= 3);
    for (const cell of view.model_view.cells) {
      const stage = layers[cell.layer];
      if (!stage) throw new Error(`model view: no attention weights in the trace for layer ${cell.layer}`);
      const s = slice2d(stage, [view.batch, cell.head]), color = colorMap(stage.name, s.values);
      // The image sits inside the button's 1-pixel frame padding (ui/app_head_grid.hpp).
      for (const i of spread(s.rows, 3)) for (const j of spread(s.cols, 3))
        sample(`L${cell.layer} H${cell.head} [${i},${j}]`, cell.x + 1 + (j + 0.5) * cell.w / s.cols,
               cell.y + 1 + (i + 0.5) * cell.h / s.rows, color(s.values[i * s.cols + j]));
    }
    return samples;
  }
  const hm = view.heatmap, stage = trace.stages.find((s) => s.name === view.stage);
  if (!stage) throw new Error(`stage ${view.stage} shown is not in the trace`);
  if (hm.zoom !== 1) throw new Error(`the heatmap is zoomed (${hm.zoom})`);
  const s = slice2d(stage, [view.batch, view.head]), color = colorMap(stage.name, s.values);
  if (s.rows !== hm.rows || s.cols !== hm.cols) throw new Error(`heatmap ${hm.rows}x${hm.cols}, trace's slice ${s.rows}x${s.cols}`);
  // Near the cell's top-left corner, as the browser test samples: large cells print their value at the centre.
  for (const i of spread(s.rows, 4)) for (const j of spread(s.cols, 4))
    sample(`${view.stage} [${i},${j}]`, hm.x + (j + 0.12) * hm.cell_w, hm.y + (i + 0.12) * hm.cell_h, color(s.values[i * s.cols + j]));
  return samples;
}

// One playground (its wrapper div from playground_html): the problems found and what was checked.
async function checkPlayground(wrapper) {
  const problems = [], done = [];
  const handle = await wrapper.$('iframe.attnlab-playground'), frame = await handle.contentFrame();
  const attached = await wrapper.$eval('script.attnlab-trace', (s) => s.textContent).catch(() => null);
  await handle.scrollIntoViewIfNeeded();  // an offscreen frame may get no animation frames
  await frame.waitForFunction(() => window.attnlabEmbedded, null, { timeout: 60000 });
  const setup = await frame.evaluate(() => window.attnlabEmbedded);
  if (setup !== null) problems.push('setup failed: ' + setup);
  const trace = JSON.parse(await frame.evaluate(() => JSON.stringify(attnlab.trace())));
  const state = await frame.evaluate(() => attnlab.state());
  const shot = decodePng(await frame.locator('#canvas').screenshot());
  const colours = new Set();
  for (let i = 0; i < shot.px.length; i += 4 * 7) colours.add(shot.px.readUInt32BE(i));
  if (colours.size < 16) problems.push(`the canvas is blank (${colours.size} colours)`);
  else done.push(`canvas ${shot.width}x${shot.height} drawn`);
  if (state.view.missing_glyphs) problems.push(`${state.view.missing_glyphs} glyphs missing (the inlined font)`);
  const expected = attached === null ? null : JSON.parse(attached);
  if (expected === null) problems.push('no attnlab-trace JSON attached to the output');
  else {
    // A checkpoint's document in the page holds its stages and tokens but not attn encode's next_tokens
    // and config (docs/playground.md): those two keys are compared where the page has them.
    const d = difference(trace, Object.fromEntries(Object.entries(expected).filter(([k]) => k in trace || !['next_tokens', 'config'].includes(k))));
    if (d) problems.push('attnlab.trace() differs from the attached trace at ' + d);
    else if (!('stages' in trace)) problems.push('attnlab.trace() has no stages');
    else done.push('trace equal');
  }
  // The Stage tab's heatmap or model view; another tab's pictures are not checked.
  const samples = state.view.tab === 'stage' ? heatmapSamples(state.view, expected || trace, shot) : [];
  const bad = samples.filter((s) => !s.want.every((w, k) => Math.abs(s.screen[k] - w) <= 4));
  const what = state.view.model_view.on ? 'model view' : state.view.stage;
  if (!samples.length) done.push(`tab ${state.view.tab}: colours not checked`);
  else if (bad.length) problems.push(`${what}: ${bad.length}/${samples.length} cells not in the trace's colours (` +
                                     bad.slice(0, 3).map((s) => `${s.where} screen ${s.screen} want ${s.want}`).join('; ') + ')');
  else done.push(`${what}: ${samples.length} cells in the trace's colours`);
  const own = await frame.evaluate(() => window.attnlabCheckErrors);
  if (own.length) problems.push('console errors: ' + own.join(' | '));
  return { problems, done, hash: state.hash };
}

const outputs = playgroundOutputs(JSON.parse(fs.readFileSync(notebook, 'utf8')));
if (!outputs.length) {
  console.error(`FAIL ${notebook}: no output holds a playground iframe`);
  process.exit(1);
}
const origin = 'http://127.0.0.1:9';  // answered by page.route below, never by the network
const body = '<!doctype html><html><head><meta charset="utf-8"><title>notebook</title></head><body>\n' +
  outputs.map((o) => `<div class="output" data-cell="${o.cell}">${o.html}</div>`).join('\n') + '\n</body></html>';
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
  const errors = [], requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  // Each frame's own errors too (playwright's console messages do not say which frame logged them).
  await page.addInitScript(() => {
    const seen = window.attnlabCheckErrors = [], error = console.error;
    console.error = (...args) => { seen.push(args.map(String).join(' ')); error.apply(console, args); };
    window.addEventListener('error', (e) => seen.push(String(e.message)));
    window.addEventListener('unhandledrejection', (e) => seen.push('unhandled rejection: ' + String(e.reason)));
  });
  page.on('request', (r) => {
    if (r.url() !== origin + '/notebook.html' && !/^(data|blob|about):/.test(r.url())) requests.push(r.url());
  });
  await page.route('**/*', (route) => (route.request().url() === origin + '/notebook.html'
    ? route.fulfill({ body, contentType: 'text/html; charset=utf-8' }) : route.abort()));
  await page.goto(origin + '/notebook.html');
  const wrappers = await page.$$('div.attnlab-playground-output');
  check(wrappers.length >= outputs.length, `${wrappers.length} playgrounds in ${outputs.length} outputs`);
  for (const wrapper of wrappers) {
    const cell = await wrapper.evaluate((w) => w.closest('div.output').dataset.cell);
    try {
      const r = await checkPlayground(wrapper);
      check(!r.problems.length, `cell ${cell} (${r.hash ? '#' + r.hash : 'default settings'}): ` + (r.problems.length ? r.problems.join('; ') : r.done.join(', ') + ', no errors'));
    } catch (e) {
      check(false, `cell ${cell}: ${e.message.split('\n')[0]}`);
    }
  }
  check(!errors.length, 'no console errors or page errors on the page' + (errors.length ? ': ' + errors.join(' | ') : ''));
  check(!requests.length, 'no network requests' + (requests.length ? ': ' + requests.join(', ') : ''));
} finally {
  await browser.close();
}
console.log(failures ? `${failures} check(s) failed` : `all ${outputs.length} playground outputs passed`);
process.exit(failures ? 1 : 0);
