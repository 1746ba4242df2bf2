#!/usr/bin/env node
// End-to-end test of the web playground in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core, software WebGL2 through SwiftShader):
//   node tests/browser/playground.test.js SITE_DIR [OUT_DIR]
// Serves SITE_DIR on a free 127.0.0.1 port and checks: static size <= 5.5 MiB; no console errors; first
// frame time (budget 3 s); attnlab.trace() equals the PyTorch fixtures exactly; typing in the text
// field changes tokens and shapes; the URL hash and attnlab.set reproduce other fixtures (mask toggled);
// the screenshot shows the heatmap's colours; idle frames allocate nothing and compute nothing; the
// Masks view of any layer and head; Hangul beyond KS X 1001 has glyphs; a model loaded through the
// page's file input (PyTorch's weights of transformer_small.json) equals PyTorch, malformed files are
// messages, and so are random settings and files (robustness.js); the language switch and the guided
// tour; recompute + redraw time at S=128, d=128, 4 heads, 2 layers (budgets printed; enforced only with
// ATTN_FIRST_FRAME_BUDGET_MS / ATTN_RECOMPUTE_BUDGET_MS); at 1280x800 and 1920x1080 no label, legend or
// heatmap of any view overlaps another or is cut off; a Hugging Face Hub model opened by a link from a local
// Hub (hub.js).
'use strict';
const fs = require('fs');
const path = require('path');
const { checkHub } = require('./hub');
const { checkRobustness } = require('./robustness');
const { serveFiles, inside, isolation } = require('./static_server');
const { decodePng, launchChromium } = require('./headless');

const site = path.resolve(process.argv[2] || 'build-web/web/site');
const outDir = process.argv[3] ? path.resolve(process.argv[3]) : null;
const fixtures = path.join(__dirname, '..', 'fixtures');
// The 3 s first-frame budget is a benchmark figure, printed here, not a timed test: a loaded CI machine
// would fail it for reasons unrelated to the code. Set ATTN_FIRST_FRAME_BUDGET_MS to enforce it.
const firstFrameBudgetMs = Number(process.env.ATTN_FIRST_FRAME_BUDGET_MS || 0);
const recomputeBudgetMs = Number(process.env.ATTN_RECOMPUTE_BUDGET_MS || 0);
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

// `threaded`: the pthreads build, served under /mt/ with the cross-origin isolation headers on every
// response (as scripts/serve.py does).
function serve(dir, threaded = null) {
  return serveFiles((name) => {
    const mt = threaded && (name === 'mt' || name.startsWith('mt/'));
    return inside(mt ? threaded : dir, (mt ? name.slice(3) : name) || 'index.html');
  }, threaded ? isolation : {});
}

// Our trace against a PyTorch fixture: tokens, vocab and every stage, bit for bit (as float32).
function sameAsFixture(trace, fixtureName) {
  const fx = JSON.parse(fs.readFileSync(path.join(fixtures, fixtureName), 'utf8'));
  const problems = [];
  if (JSON.stringify(trace.tokens) !== JSON.stringify(fx.tokens)) problems.push('tokens');
  if (JSON.stringify(trace.vocab) !== JSON.stringify(fx.vocab)) problems.push('vocab');
  if (trace.stages.length !== fx.stages.length) problems.push('stage count');
  fx.stages.forEach((s, i) => {
    const o = trace.stages[i];
    if (!o || o.name !== s.name || JSON.stringify(o.shape) !== JSON.stringify(s.shape)) { problems.push(s.name + ' shape'); return; }
    const bad = s.data.findIndex((v, k) => Math.fround(o.data[k]) !== Math.fround(v));
    if (bad >= 0) problems.push(`${s.name}[${bad}] = ${o.data[bad]}, PyTorch ${s.data[bad]}`);
  });
  return problems;
}

// The native attn (ATTN_CLI, else the native build's; scripts/test.sh builds it before the WebAssembly
// suite), or null without one.
function cliBinary() {
  const cli = process.env.ATTN_CLI || path.join(__dirname, '..', '..', 'build', 'native', 'attn');
  return fs.existsSync(cli) ? cli : null;
}

// The CLI's log of the same run, for the Train tab to equal.
function cliTrainingLog(args) {
  const cli = cliBinary();
  if (!cli) return null;
  const log = path.join(require('os').tmpdir(), `attn_browser_train_${process.pid}.jsonl`);
  require('child_process').execFileSync(cli, ['train', ...args, '--log', log, '--quiet']);
  const records = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  fs.rmSync(log);
  return records;
}

// `attn patch --json` on the same seeded classifier (its vocabulary from the page, written to a file).
// The native attn's --json document of `args` (null without the native attn).
function cliJson(args) {
  const cli = cliBinary();
  return cli && JSON.parse(require('child_process').execFileSync(cli, [...args, '--json']));
}

// What the native attn writes to `flag`'s file (--svg, --csv, --tex, --png) for `args` (its --plot options):
// text, or bytes for a PNG; null without the native attn.
function cliPlot(args, flag) {
  const cli = cliBinary();
  if (!cli) return null;
  const file = path.join(require('os').tmpdir(), `attn_browser_${process.pid}${flag.replace('--', '.')}`);
  require('child_process').execFileSync(cli, [...args, flag, file]);
  const out = flag === '--png' ? fs.readFileSync(file) : fs.readFileSync(file, 'utf8');
  fs.rmSync(file);
  return out;
}

// `attn diff A.json B.json --json` of two trace documents (exit 1 when they differ beyond the tolerance).
function cliDiffJson(a, b) {
  const cli = cliBinary();
  if (!cli) return null;
  const files = [a, b].map((doc, i) => {
    const file = path.join(require('os').tmpdir(), `attn_browser_${process.pid}_${i}.json`);
    fs.writeFileSync(file, JSON.stringify(doc));
    return file;
  });
  try {
    return JSON.parse(require('child_process').execFileSync(cli, ['diff', ...files, '--json']));
  } catch (e) {
    if (e.status === 1) return JSON.parse(e.stdout);
    throw e;
  } finally {
    for (const f of files) fs.rmSync(f);
  }
}

function cliPatch(args, vocab) {
  const file = path.join(require('os').tmpdir(), `attn_browser_vocab_${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(vocab));
  try {
    return cliJson(['patch', ...args, '--vocab', file]);
  } finally {
    fs.rmSync(file);
  }
}

// 60 frames' times while the Train tab plays (a step at least per frame, else at most 6 ms of training).
async function framesWhilePlaying(page, task) {
  const during = await page.evaluate(async () => {
    const ms = [];
    for (let i = 0; i < 60; i++) {
      await new Promise((resolve) => requestAnimationFrame(resolve));
      ms.push(attnlab.stats().last_frame_ms);
    }
    return { ms, training: attnlab.state().training };
  });
  const mean = during.ms.reduce((a, b) => a + b, 0) / during.ms.length;
  console.log(`frame time while training ${task}: mean ${mean.toFixed(1)} ms, max ${Math.max(...during.ms).toFixed(1)} ms ` +
              `over ${during.ms.length} frames (${during.training.steps_per_s.toFixed(0)} steps/s)`);
  return during;
}

// Clicks one of the Train tab's buttons where the UI drew it.
async function clickTrainButton(page, name) {
  await frames(page, 2);
  const b = (await page.evaluate(() => attnlab.state().view.train.buttons))[name];
  if (!b) throw new Error('no Train tab button ' + name);
  await clickAt(page, b);
}

// Clicks a button the UI drew at b = [x, y, w, h] (canvas pixels).
async function clickAt(page, b) {
  const canvasBox = await page.locator('#canvas').boundingBox();  // the bar above may have grown
  // ImGui hovers an item from the frame after the mouse arrives, and clicks on press then release.
  await page.mouse.move(canvasBox.x + b[0] + b[2] / 2, canvasBox.y + b[1] + b[3] / 2);
  await frames(page, 2);
  await page.mouse.down();
  await frames(page, 2);
  await page.mouse.up();
  await frames(page, 2);
}

// The Attribution tab on the loaded GPT-2 (folder `dir`): each method's document equals attn attribute
// --json's on the first sentence (integrated gradients on a worker, polled); a click on a head of logit
// attribution's layer x head map opens that head in the Stage tab.
async function checkAttribution(page, dir, sentence) {
  await page.evaluate(() => attnlab.selectView({ batch: 0 }));
  for (const method of ['integrated-gradients', 'flow', 'logit-attribution']) {
    const shown = await page.evaluate(async (m) => {
      attnlab.selectView({ tab: 'attribution', attribute: { method: m, steps: 20 } });
      for (let i = 0; i < 600 && attnlab.state().view.attribution.running; i++) await new Promise((r) => requestAnimationFrame(r));
      await new Promise((r) => requestAnimationFrame(r));
      return attnlab.state().view.attribution;
    }, method);
    const cli = cliJson(['attribute', '--model-dir', dir, '--sentence', sentence, '--method', method, '--steps', '20']);
    const values = (d) => d.scores || d.contributions || [];
    const gap = cli ? Math.max(...values(shown).map((v, i) => Math.abs(v - values(cli)[i]))) : 0;
    check(shown.error === '' && values(shown).length > 0 && (!cli || (shown.target.id === cli.target.id &&
          values(shown).length === values(cli).length && gap <= 1e-5)),
          `the Attribution tab's ${method}: ${values(shown).length} values` +
          (cli ? `, attn attribute's target and values within ${gap.toExponential(1)}` : ''));
  }
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_attribution.png'), await page.screenshot());
  const map = (await page.evaluate(() => attnlab.state().view.attribution)).heatmap;
  await clickAt(page, [map.x + map.cell_w, map.y + map.cell_h * 1, map.cell_w, map.cell_h]);  // layer 1, head 1
  const opened = await page.evaluate(() => attnlab.state().view);
  check(opened.tab === 'stage' && opened.layer === 1 && opened.head === 1 && /h\.1\.attn\.attn_weights/.test(opened.stage),
        `a click on head 1.1 of the logit attribution opens it: tab ${opened.tab}, stage ${opened.stage}, head ${opened.head}`);
  await checkIdle(page, 'Attribution tab');
}

// The Train tab: the API's log equals attn train --log bit for bit; the buttons; the frame time while
// training (printed); the duplicate and asked tasks learned to their documented accuracy, each with the
// head its documentation names (from a repeated symbol to its twin; from the last word to the place of
// the person it names) in the trained model's view of every head.
async function checkTraining(page) {
  const places = { task: 'places', steps: 40, eval_every: 10 };
  await page.bringToFront();
  await page.evaluate((s) => { attnlab.selectView({ tab: 'train' }); attnlab.train(s); }, places);
  await frames(page, 4);
  const tab = await page.evaluate(() => attnlab.state().view.tab);
  check(tab === 'train', 'selectView shows the Train tab: ' + tab);
  const records = await page.evaluate(() => attnlab.trainSteps(40));
  const cli = cliTrainingLog(['--task', 'places', '--steps', '40', '--eval-every', '10']);
  check(cli !== null, 'the native attn is there to compare with (ATTN_CLI or build/native/attn)');
  if (cli) check(JSON.stringify(records) === JSON.stringify(cli) && records.length === 44,
                 `Train tab log equals attn train --log bit for bit (${records.length} records, places, 40 steps)`);
  const log = await page.evaluate(() => attnlab.trainingLog());
  check(JSON.stringify(log) === JSON.stringify(records), 'trainingLog() holds every record');
  const hash = await page.evaluate(() => location.hash);
  check(hash.includes('train.task=places') && hash.includes('train.steps=40'), 'the training settings are in the URL hash: ' + hash);
  let refused = await page.evaluate(() => { try { attnlab.train({ task: 'places', lr: -1 }); return ''; } catch (e) { return e.message; } });
  check(refused.includes('learning rate'), 'bad training settings throw with the reason: ' + refused);
  refused = await page.evaluate(() => { try { attnlab.train({ task: 'places', bogus: 1 }); return ''; } catch (e) { return e.message; } });
  check(refused.includes("unknown training setting 'bogus'"), 'unknown training settings throw: ' + refused);

  // A language model (GPT-2): the induction task's log equals attn train's bit for bit; its snapshots
  // carry every head's detector scores and a greedy sample; a text of one's own trains as --task text.
  const induction = { task: 'induction', steps: 30, eval_every: 10 };
  const lmRecords = await page.evaluate((s) => { attnlab.train(s); return attnlab.trainSteps(30); }, induction);
  const lmCli = cliTrainingLog(['--task', 'induction', '--steps', '30', '--eval-every', '10']);
  if (lmCli) check(JSON.stringify(lmRecords) === JSON.stringify(lmCli) && lmRecords.length === 33 &&
                   'induction_score' in lmRecords[32],
                   `Train tab's language model log equals attn train --log bit for bit (${lmRecords.length} records, induction)`);
  await frames(page, 3);
  const lmView = await page.evaluate(() => attnlab.state().view.train);
  check(lmView.language_model && lmView.samples.length >= 2 && lmView.samples.every((x) => x.sample.length === lmView.sample_expected.length) &&
        JSON.stringify(Object.keys(lmView.head_scores).sort()) ===
          '["duplicate_token","induction","k_composition","prefix_matching","previous_token","q_composition","v_composition"]' &&
        lmView.head_scores.k_composition.length === 4 && lmView.head_scores.k_composition[0].length === 4,
        `the language model's replay: ${lmView.samples.length} samples continuing "${lmView.sample_prompt}", four head scores ` +
        'and three compositions of every pair of heads');
  // Played on the single-threaded page, a frame runs one part of a step of the induction model: its
  // forward pass, or its backward pass and update, or one batch of its evaluation, or its snapshot (the
  // threaded page trains in a worker). The times are printed; the check is that frames keep coming, none
  // blocked for seconds.
  await page.evaluate(() => attnlab.train({ task: 'induction' }));
  await clickTrainButton(page, 'play');
  const lmDuring = await framesWhilePlaying(page, 'induction (a GPT-2, single-threaded page)');
  await clickTrainButton(page, 'play');  // Pause
  check(lmDuring.training.running && lmDuring.training.step > 0 && Math.max(...lmDuring.ms) < 2000,
        `the page keeps drawing while the language model trains (step ${lmDuring.training.step}, no frame over 2 s)`);
  // A run played to its end that way (steps split over frames, evaluations a batch a frame) logs what
  // attn train logs, bit for bit.
  await page.evaluate(() => attnlab.train({ task: 'induction', steps: 12, eval_every: 4 }));
  await clickTrainButton(page, 'play');
  const played = await page.evaluate(async () => {
    for (let i = 0; i < 900 && (attnlab.state().training.running || attnlab.state().training.step < 12); i++)
      await new Promise((resolve) => requestAnimationFrame(resolve));
    return attnlab.trainingLog();
  });
  const playedCli = cliTrainingLog(['--task', 'induction', '--steps', '12', '--eval-every', '4']);
  if (playedCli) check(JSON.stringify(played) === JSON.stringify(playedCli) && played.length === 15,
                       `a played language model run's log equals attn train --log bit for bit (${played.length} records)`);
  const text = 'the cat sat on the mat\nthe dog sat on the log\n';
  const textFile = path.join(require('os').tmpdir(), `attn_browser_text_${process.pid}.txt`);
  fs.writeFileSync(textFile, text);
  const textRecords = await page.evaluate((t) => { attnlab.train({ task: 'text', text: t, steps: 3, seq_len: 8 }); return attnlab.trainSteps(3); }, text);
  const textCli = cliTrainingLog(['--task', 'text', '--data', textFile, '--steps', '3', '--seq-len', '8']);
  fs.rmSync(textFile);
  if (textCli) check(JSON.stringify(textRecords) === JSON.stringify(textCli) && textRecords.length === 3,
                     'a pasted text trains as attn train --task text --data FILE.txt does, bit for bit');

  // The buttons: Reset, Play (frames keep coming while it trains), Pause.
  await page.evaluate(() => attnlab.train({ task: 'duplicate' }));
  await clickTrainButton(page, 'reset');
  let t = await page.evaluate(() => attnlab.state().training);
  check(t.step === 0 && !t.running, 'Reset: step 0, paused');
  await clickTrainButton(page, 'play');
  const during = await framesWhilePlaying(page, 'duplicate');
  check(during.training.running && during.training.step > 0, `Play trains in slices of each frame (step ${during.training.step})`);
  await clickTrainButton(page, 'play');  // now labelled Pause
  t = await page.evaluate(() => attnlab.state().training);
  await frames(page, 3);
  const later = await page.evaluate(() => attnlab.state().training);
  check(!t.running && later.step === t.step, `Pause stops the run (step ${t.step})`);
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_train.png'), await page.screenshot());

  // duplicate with its documented settings: >= 95 % validation accuracy, and a twin-looking head.
  const started = Date.now();
  const done = await page.evaluate(async () => {
    attnlab.train({ task: 'duplicate' });
    const records = await attnlab.trainSteps(1e9);
    return { last: records[records.length - 1], training: attnlab.state().training };
  });
  console.log(`duplicate: ${done.training.step} steps in ${((Date.now() - started) / 1000).toFixed(1)} s in the browser`);
  check(done.last.val_accuracy >= 0.95, `duplicate reaches ${(100 * done.last.val_accuracy).toFixed(1)} % validation accuracy (>= 95 %)`);
  // Save model: the weights + config + vocabulary triple, downloaded.
  const downloads = [];
  const onDownload = (d) => downloads.push(d);
  page.on('download', onDownload);
  await clickTrainButton(page, 'save');
  for (let i = 0; i < 50 && downloads.length < 3; i++) await frames(page, 2);
  page.off('download', onDownload);
  const names = downloads.map((d) => d.suggestedFilename()).sort();
  check(JSON.stringify(names) === JSON.stringify(['trained.config.json', 'trained.safetensors', 'trained.vocab.json']),
        'Save model downloads the weights, config and vocabulary: ' + names.join(', '));
  const config = downloads.find((d) => d.suggestedFilename() === 'trained.config.json');
  if (config) {
    const text = fs.readFileSync(await config.path(), 'utf8');
    check(JSON.parse(text).d_model === 32, 'the downloaded config is the trained model\'s (d_model 32)');
  }
  // Its one head is what the task needs: with it zero-ablated the validation accuracy falls to chance.
  await page.evaluate(() => attnlab.selectView({ train_layer: 0, train_head: 0 }));
  await clickTrainButton(page, 'ablated_accuracy');
  const ablated = (await page.evaluate(() => attnlab.state().view.train)).ablated_accuracy;
  check(ablated && ablated.accuracy >= 0.95 && ablated.ablated <= 0.6,
        'Validation accuracy with head 0.0 ablated: ' +
        (ablated ? `${(100 * ablated.ablated).toFixed(1)} % (${(100 * ablated.accuracy).toFixed(1)} % with it; chance 50 %, <= 60 %)` : 'none'));
  const twins = await shownHeadAttention(page, (tokens) => {
    const later = tokens.findIndex((x, j) => x !== '[PAD]' && tokens.indexOf(x) < j);
    return later < 0 ? null : [later, tokens.indexOf(tokens[later])];
  });
  check(twins.view.tab === 'stage' && twins.view.model_view.on && twins.view.model_view.cells.length === twins.heads,
        `the trained model in the Stage tab's model view (${twins.view.model_view.cells.length} cells)`);
  check(twins.best >= 0.5, `a head attends from a repeated symbol to its twin: ${twins.best.toFixed(2)} on average (>= 0.5)`);
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_model_view.png'), await page.screenshot());

  // asked (the tutorial's words, three people at three places, one named again) needs attention: >= 95 %,
  // and a head attends from the last word to the place word after that person's first mention.
  await page.evaluate(() => attnlab.selectView({ tab: 'train' }));
  const askedStart = Date.now();
  const asked = await page.evaluate(async () => {
    attnlab.train({ task: 'asked' });
    const records = await attnlab.trainSteps(1e9);
    return { last: records[records.length - 1], training: attnlab.state().training };
  });
  console.log(`asked: ${asked.training.step} steps in ${((Date.now() - askedStart) / 1000).toFixed(1)} s in the browser`);
  check(asked.last.val_accuracy >= 0.95, `asked reaches ${(100 * asked.last.val_accuracy).toFixed(1)} % validation accuracy (>= 95 %)`);
  const place = await shownHeadAttention(page, (tokens) => {
    const last = tokens.length - 1 - [...tokens].reverse().findIndex((x) => x !== '[PAD]');
    return [last, tokens.indexOf(tokens[last]) + 1];
  });
  check(place.best >= 0.5, `asked: ${place.where} attends from the last word to the asked person's place word: ` +
                           `${place.best.toFixed(2)} on average over ${place.items} items (>= 0.5)`);
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_model_view.png'), await page.screenshot());
}

// The Interventions tab: a click on a head of its grid ablates that head (the setting, the hash, every
// later stage and the logits follow; the effect lists each item's prediction before and after), a
// second click restores it to the same bits; attnlab.ablate and attnlab.detectHeads as documented.
async function checkInterventions(page) {
  await page.evaluate(() => {
    attnlab.set({ model: 'transformer', d_model: 16, num_heads: 4, num_layers: 2, seed: 2, mask: 'causal',
                  sentences: ['나는 오늘 학교에 간다', '나는 오늘 도서관에 간다', '오늘 나는 학교에서 공부한다', '나는 집에 간다'] });
    attnlab.selectView({ tab: 'interventions' });
  });
  await frames(page, 3);
  const logits = () => page.evaluate(() => attnlab.trace().stages.find((s) => s.name === 'logits').data);
  const clean = await logits();
  const clickHead = async (layer, head) => {
    const canvasBox = await page.locator('#canvas').boundingBox();
    const cell = (await page.evaluate(() => attnlab.state().view.interventions.cells)).find((c) => c.layer === layer && c.head === head);
    if (!cell) throw new Error(`no Interventions cell ${layer}.${head}`);
    await page.mouse.move(canvasBox.x + cell.x + cell.w / 2, canvasBox.y + cell.y + cell.h / 2);
    await frames(page, 2);
    await page.mouse.down();
    await frames(page, 2);
    await page.mouse.up();
    await frames(page, 3);
  };
  await clickHead(1, 2);
  let state = await page.evaluate(() => attnlab.state());
  const ablated = await logits();
  check(state.settings.ablate === '1.2' && state.hash.includes('ablate=1.2') &&
        ablated.some((v, i) => v !== clean[i]) && state.view.interventions.effect.length === 4,
        `a click on head 1.2 ablates it: settings ${state.settings.ablate}, hash ${state.hash}, the logits change, ` +
        `the effect lists ${state.view.interventions.effect.length} items`);
  await clickHead(1, 2);
  state = await page.evaluate(() => attnlab.state());
  const restored = await logits();
  check(state.settings.ablate === '' && restored.every((v, i) => v === clean[i]), 'a second click restores it, bit for bit');
  const api = await page.evaluate(() => {
    attnlab.ablate([[0, 1], [1, 3]], { kind: 'mean', mlps: [0] });
    const s = attnlab.state().settings;
    const detectors = attnlab.detectHeads();
    attnlab.ablate([]);
    return { s, detectors, after: attnlab.state().settings.ablate };
  });
  const scores = api.detectors.induction.scores;
  check(api.s.ablate === '0.1,1.3' && api.s.ablate_mlp === '0' && api.s.ablation === 'mean' && api.after === '',
        `attnlab.ablate sets ${api.s.ablate} / mlp ${api.s.ablate_mlp} / ${api.s.ablation}, ablate([]) restores`);
  check(Object.keys(api.detectors).sort().join() === 'duplicate_token,induction,previous_token' && scores.length === 2 &&
        scores.every((row) => row.length === 4 && row.every((v) => v >= 0 && v <= 1 + 1e-6)),
        'attnlab.detectHeads: three kinds of [2 layers][4 heads] scores in [0, 1]: ' + JSON.stringify(api.detectors));
  await checkIdle(page, 'Interventions tab');
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_interventions.png'), await page.screenshot());
  // Activation patching: attnlab.patch equals attn patch on the same model, every sweep, bit for bit.
  const patched = await page.evaluate(async () => {
    const out = await attnlab.patch({ corrupted: '나는 오늘 집에 간다', label: 1 });
    return { out, vocab: attnlab.trace().vocab, hash: attnlab.state().hash };
  });
  const cli = cliPatch(['--d-model', '16', '--num-heads', '4', '--num-layers', '2', '--seed', '2', '--mask', 'causal',
                        '--clean', '나는 오늘 학교에 간다', '--corrupted', '나는 오늘 집에 간다', '--label', '1'], patched.vocab);
  check(patched.hash.includes('patch.label=1') && patched.out.runs === 2 * 4 + 2 * 4 + 4 &&
        (!cli || JSON.stringify(cli.patches) === JSON.stringify(patched.out.patches)),
        `attnlab.patch: ${patched.out.runs} patched runs${cli ? ', every recovery equal to attn patch\'s' : ''}; ` +
        'the inputs in the hash');
  await page.evaluate(() => attnlab.selectView({ tab: 'interventions', patching: true }));
  await checkIdle(page, 'Interventions tab, patching');
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_patching.png'), await page.screenshot());
  // The first tutorial's single head, mean-ablated: attn tutorial --ablate's bits.
  const sentences = ['나는 오늘 학교에 간다', '나는 집에 간다'];
  await page.evaluate((sentences) => {
    attnlab.set({ model: 'tutorial', sentences, seed: 2, d_model: 6, mask: 'padding' });
    attnlab.ablate('0.0', { kind: 'mean' });
    attnlab.selectView({ tab: 'interventions', patching: false });
  }, sentences);
  await frames(page, 3);
  const first = await page.evaluate(() => ({
    out: attnlab.trace().stages.find((s) => s.name === 'attention_output').data,
    effect: attnlab.state().view.interventions.effect }));
  const cliFirst = cliJson(['tutorial', '--seed', '2', '--mask', 'padding', ...sentences.flatMap((t) => ['--sentence', t]),
                            '--ablate', '0.0', '--ablation', 'mean']);
  check(first.effect.length === 1 && (!cliFirst || JSON.stringify(first.out) ===
        JSON.stringify(cliFirst.stages.find((s) => s.name === 'attention_output').data)),
        `the first tutorial's head ablated: ${first.effect[0]}${cliFirst ? '; attention_output equal to attn tutorial --ablate\'s' : ''}`);
  await page.evaluate(() => attnlab.ablate([]));
}

// The trained model in the Stage tab (the Train tab's "Show in Stage tab", then the model view): the
// largest mean, over every layer and head, of the attention from query to key that pick(tokens) names
// for each replay item (null: the item does not count).
async function shownHeadAttention(page, pick) {
  await clickTrainButton(page, 'show');
  await page.evaluate(() => attnlab.selectView({ model_view: true }));
  await frames(page, 3);
  const shown = await page.evaluate(() => ({ trace: attnlab.trace(), view: attnlab.state().view }));
  let best = 0, where = '', heads = 0, items = 0;
  for (const w of shown.trace.stages.filter((s) => s.name.endsWith('self_attn.attention_weights'))) {
    const [, H, S] = w.shape;
    heads = H;
    for (let h = 0; h < H; h++) {
      let sum = 0, count = 0;
      shown.trace.tokens.forEach((tokens, b) => {
        const qk = pick(tokens);
        if (!qk) return;
        sum += w.data[((b * H + h) * S + qk[0]) * S + qk[1]];
        count++;
      });
      items = count;
      if (count && sum / count > best) [best, where] = [sum / count, `${w.name} head ${h}`];
    }
  }
  return { best, where, heads, items, view: shown.view };
}

// The cross-origin isolated page: it opens the threaded build (mt/), whose Train tab trains on a Web
// Worker, to the same records as attn train --log; the frame time and speed while it plays are printed.
async function checkThreaded(browser, errors) {
  const threaded = process.env.ATTN_THREADED_SITE || path.join(__dirname, '..', '..', 'build-web-mt', 'web', 'site');
  check(fs.existsSync(path.join(threaded, 'index.wasm')), 'the threaded build is there (ATTN_THREADED_SITE or build-web-mt)');
  if (!fs.existsSync(path.join(threaded, 'index.wasm'))) return;
  const server = await serve(site, threaded);
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
  page.on('console', (m) => { if (m.type() === 'error') errors.push('mt: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('mt: ' + String(e)));
  try {
    await page.goto(`http://127.0.0.1:${server.address().port}/#train.task=places&train.steps=40&train.eval_every=10`);
    await page.waitForURL(/\/mt\//, { timeout: 30000 });
    await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
    const where = await page.evaluate(() => ({ path: location.pathname, isolated: self.crossOriginIsolated,
                                               tab: attnlab.state().view.tab }));
    check(where.isolated && where.path === '/mt/' && where.tab === 'train',
          `an isolated page runs the threaded build, the link opening the Train tab (${JSON.stringify(where)})`);
    const played = await page.evaluate(async () => {
      attnlab.trainControl('play');
      const start = performance.now();
      while (attnlab.state().training.step < 40 && performance.now() - start < 60000)
        await new Promise((resolve) => setTimeout(resolve, 20));
      return attnlab.trainingLog();
    });
    const cli = cliTrainingLog(['--task', 'places', '--steps', '40', '--eval-every', '10']);
    check(cli !== null && JSON.stringify(played) === JSON.stringify(cli),
          `Play on the Web Worker gives attn train --log's records bit for bit (${played.length} records)`);
    // Products big enough to be split over the pool's Web Workers, stepped from the page's own thread, on
    // every core (by default one is left to the page); the CLI runs on one thread.
    const left = await page.evaluate(() => ({ threads: attnlab.state().training.threads, cores: navigator.hardwareConcurrency }));
    check(left.threads === Math.max(1, left.cores - 1), `by default training leaves the page a core (${JSON.stringify(left)})`);
    const wide = await page.evaluate(async () => {
      attnlab.train({ task: 'duplicate', d_model: 64, batch_size: 64, steps: 6, eval_every: 3, threads: 'auto' });
      const records = await attnlab.trainSteps(6);
      return { records, threads: attnlab.state().training.threads, cores: navigator.hardwareConcurrency };
    });
    const wideCli = cliTrainingLog(['--task', 'duplicate', '--d-model', '64', '--batch-size', '64', '--steps', '6',
                                    '--eval-every', '3']);
    check(wide.threads > 1 && wide.threads <= wide.cores,
          `training runs on the page's cores (${wide.threads} threads, ${wide.cores} cores)`);
    check(wideCli !== null && JSON.stringify(wide.records) === JSON.stringify(wideCli),
          `on ${wide.threads} threads, attn train --threads 1's records bit for bit (${wide.records.length} records)`);
    const timing = await page.evaluate(async () => {
      attnlab.train({ task: 'duplicate' });
      attnlab.trainControl('play');
      const ms = [], start = performance.now();
      while (performance.now() - start < 3000) {
        await new Promise((resolve) => requestAnimationFrame(resolve));
        ms.push(attnlab.stats().last_frame_ms);
      }
      const t = attnlab.state().training;
      attnlab.trainControl('pause');
      return { ms, t, seconds: (performance.now() - start) / 1000 };
    });
    const mean = timing.ms.reduce((a, b) => a + b, 0) / timing.ms.length;
    console.log(`threaded page, duplicate playing on a worker: ${timing.t.step} steps in ${timing.seconds.toFixed(1)} s ` +
                `(${timing.t.steps_per_s.toFixed(0)} steps/s); frames ${timing.ms.length}, mean ${mean.toFixed(1)} ms, ` +
                `max ${Math.max(...timing.ms).toFixed(1)} ms`);
    check(timing.t.step > 0, `the worker trains while frames are drawn (${timing.t.step} steps)`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_threaded_train.png'), await page.screenshot());
  } finally {
    await page.close();
    server.close();
  }
}

// Layouts that fit: in 1280x800 and 1920x1080 viewports, every view of the first tutorial and of the
// Transformer (attnlab.layoutViews(): each stage, of layer 0 only for the Transformer, the model view,
// Masks, Positional encoding, Train after 20 steps) draws no label, legend or heatmap that overlaps
// another or is cut off (state().view.layout).
async function checkLayouts(browser, url, errors) {
  for (const [width, height] of [[1280, 800], [1920, 1080]]) {
    const size = `${width}x${height}`;
    const page = await browser.newPage({ viewport: { width, height }, deviceScaleFactor: 1 });
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`${size}: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`${size}: ${String(e)}`));
    try {
      await page.goto(url);
      await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
      const start = Date.now();
      const found = await page.evaluate(async () => {
        const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
        attnlab.train({ task: 'duplicate', steps: 20 });
        await attnlab.trainSteps(20);
        const out = { views: 0, boxes: 0, problems: [] };
        let tab = attnlab.state().view.tab;
        for (const model of ['tutorial', 'transformer']) {
          attnlab.set({ model });
          for (const view of attnlab.layoutViews()) {
            if (/^layers\.[1-9]/.test(view.stage || '')) continue;  // other layers: the same shapes
            attnlab.selectView(view);
            // A tab shows from the frame after it is selected (and rAF callbacks may run before the page's).
            for (let i = view.tab === tab ? 2 : 3; i > 0; i--) await frame();
            tab = view.tab;
            const layout = attnlab.state().view.layout;
            out.views++;
            out.boxes += layout.boxes;
            for (const p of layout.problems) out.problems.push(`${model} ${JSON.stringify(view)}: ${p}`);
          }
        }
        attnlab.selectView({ tab: 'masks' });
        for (let i = 0; i < 3; i++) await frame();
        return out;
      });
      check(found.views > 30 && found.boxes > 0 && found.problems.length === 0,
            `${size}: ${found.views} views, ${found.boxes} labels, legends and heatmaps, none overlapping or cut off ` +
            `(${((Date.now() - start) / 1000).toFixed(1)} s) ` +
            found.problems.slice(0, 5).join('; '));
      if (outDir) fs.writeFileSync(path.join(outDir, `playground_layout_${size}.png`), await page.screenshot());
    } finally {
      await page.close();
    }
  }
}

// Frames drawn by the page (the main loop runs on requestAnimationFrame too).
const frames = (page, n) => page.evaluate((k) => new Promise((resolve) => {
  const step = () => (k-- > 0 ? requestAnimationFrame(step) : resolve());
  step();
}), n);

// The language (a Korean browser gets Korean; set({lang}) and the URL hash switch it, the page's own
// labels follow) and the guided tour (selectView({tour}) walks its steps on the user's sentences, each
// selecting its stage; the step is in the hash; a link to a step opens it).
async function checkLanguageAndTour(browser, url, errors) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, locale: 'ko-KR' });
  page.on('console', (m) => { if (m.type() === 'error') errors.push('ko: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('ko: ' + String(e)));
  await page.goto(url);
  await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
  await frames(page, 3);
  const label = () => page.evaluate(() => document.querySelector('[data-tr=page_sentences]').textContent);
  let s = await page.evaluate(() => attnlab.state());
  check(s.lang === 'ko' && s.view.lang === 'ko' && s.hash === '' && s.view.missing_glyphs === 0,
        `a Korean browser gets the Korean UI (lang ${s.lang}, hash '${s.hash}', ${s.view.missing_glyphs} missing glyphs)`);
  check(await label() === '문장', 'the page\'s labels are Korean: ' + await label());
  await page.evaluate(() => attnlab.set({ lang: 'en' }));
  await frames(page, 2);
  s = await page.evaluate(() => ({ state: attnlab.state(), hash: location.hash }));
  check(s.state.lang === 'en' && s.hash === '#lang=en' && await label() === 'Sentences',
        `set({lang: 'en'}) switches to English and keeps it in the hash (${s.hash}, label ${await label()})`);
  await page.evaluate(() => { location.hash = '#lang=ko'; });
  await frames(page, 3);
  s = await page.evaluate(() => attnlab.state());
  check(s.lang === 'ko' && s.view.missing_glyphs === 0, 'the URL hash switches back to Korean: ' + s.lang);
  const refused = await page.evaluate(() => { try { attnlab.set({ lang: 'fr' }); return ''; } catch (e) { return e.message; } });
  check(refused.includes('lang must be'), 'an unknown language is refused: ' + refused);

  const stages = ['token_ids', 'token_ids', 'embedding', 'positional_encoding', 'query', 'scores', 'scaled_scores',
                  'masked_scores', 'attention_weights', 'attention_output', 'layers.0.self_attn.attention_weights',
                  'layers.0.ffn.output', 'layers.0.norm2', 'encoder_output', 'logits'];
  await page.evaluate(() => attnlab.set({ sentences: ['the cat sat on the mat', 'a dog ran'] }));
  const walk = [];
  const go = async (step) => {
    await page.evaluate((n) => attnlab.selectView({ tour: n }), step);
    await frames(page, 3);
    const r = await page.evaluate(() => ({ state: attnlab.state(), hash: location.hash }));
    walk.push({ step, tab: r.state.view.tab, tour: r.state.view.tour, stage: r.state.view.stage, model: r.state.settings.model,
                rows: r.state.view.heatmap.rows, hash: r.hash });
  };
  for (let step = 1; step <= stages.length; ++step) await go(step);  // Next, Next, …
  for (let step = stages.length - 1; step >= 1; --step) await go(step);  // … and Back
  const wrong = walk.filter((w) => w.tab !== 'tour' || w.tour !== w.step || w.stage !== stages[w.step - 1] ||
                                   !w.hash.includes('tour=' + w.step) || w.model !== (w.step > 10 ? 'transformer' : 'tutorial'));
  check(wrong.length === 0, `the tour walks its ${stages.length} steps forward and back, each showing its stage` +
        (wrong.length ? ': ' + JSON.stringify(wrong.slice(0, 3)) : ''));
  check(walk[0].rows === 2, 'the tour follows the user\'s sentences (token ids of 2 sentences)');
  if (outDir) fs.writeFileSync(path.join(outDir, 'playground_tour.png'), await page.screenshot());
  await checkIdle(page, 'Korean tour');
  await page.evaluate(() => attnlab.selectView({ tour: 0 }));
  await frames(page, 3);
  s = await page.evaluate(() => ({ state: attnlab.state(), hash: location.hash }));
  check(s.state.view.tour === 0 && s.state.view.tab === 'stage' && !s.hash.includes('tour'),
        `selectView({tour: 0}) ends the tour (tour ${s.state.view.tour}, tab ${s.state.view.tab}, hash '${s.hash}')`);
  const bad = await page.evaluate(() => { try { attnlab.selectView({ tour: 16 }); return ''; } catch (e) { return e.message; } });
  check(bad.includes('tour'), 'a step past the end is refused: ' + bad);
  await page.close();

  const linked = await browser.newPage({ viewport: { width: 1000, height: 700 }, locale: 'en-US' });
  linked.on('console', (m) => { if (m.type() === 'error') errors.push('tour link: ' + m.text()); });
  await linked.goto(url + '#tour=12');
  await linked.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
  await frames(linked, 3);
  s = await linked.evaluate(() => attnlab.state());
  check(s.lang === 'en' && s.view.tab === 'tour' && s.view.stage === 'layers.0.ffn.output' && s.settings.model === 'transformer',
        `a link to tour step 12 opens it on the Transformer (${s.lang}, ${s.view.tab}, ${s.view.stage})`);
  await linked.close();
}

// Idle frames: after a few frames to settle, `n` more must allocate nothing and compute nothing.
async function checkIdle(page, what, n = 8) {
  await frames(page, 4);
  const r = await page.evaluate(async (k) => {
    const before = attnlab.stats();
    const allocations = [];
    for (let i = 0; i < k; i++) {
      await new Promise((resolve) => requestAnimationFrame(resolve));
      allocations.push(attnlab.stats().frame_allocations);
    }
    const after = attnlab.stats();
    return { allocations, computes: after.compute_count - before.compute_count, frames: after.frames - before.frames };
  }, n);
  check(r.frames >= n - 1 && r.computes === 0 && r.allocations.every((a) => a === 0),
        `${what}: idle frames compute nothing and allocate nothing (${r.frames} frames, ${r.computes} computations, ` +
        `allocations ${JSON.stringify(r.allocations)})`);
}

// transformer_small.json's model as the files `attn encode --weights/--config/--vocab` reads:
// PyTorch's parameters as an F32 safetensors file, its config, and a vocabulary t1…t11.
function smallModelFiles() {
  const fx = JSON.parse(fs.readFileSync(path.join(fixtures, 'transformer_small.json'), 'utf8'));
  const header = {}, parts = [];
  let offset = 0;
  for (const p of fx.parameters) {
    const bytes = Buffer.from(new Float32Array(p.data).buffer);
    header[p.name] = { dtype: 'F32', shape: p.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  const vocab = { '[PAD]': 0 };
  for (let id = 1; id < 12; id++) vocab['t' + id] = id;
  const sentences = fx.ids.map((row) => row.filter((id) => id !== 0).map((id) => 't' + id).join(' '));
  return { fx, sentences, weights: Buffer.concat([length, Buffer.from(json), ...parts]),
           config: Buffer.from(JSON.stringify(fx.config)), vocab: Buffer.from(JSON.stringify(vocab)) };
}

// Stages against a PyTorch fixture within the engine tests' tolerance (|d| <= 1e-5 + 1e-5 |expected|).
function closeToFixture(trace, fx) {
  const problems = [];
  let worst = 0;
  for (const s of fx.stages) {
    const o = trace.stages.find((t) => t.name === s.name);
    if (!o || JSON.stringify(o.shape) !== JSON.stringify(s.shape)) { problems.push(s.name + ' shape'); continue; }
    s.data.forEach((v, k) => {
      const d = Math.abs(o.data[k] - v);
      worst = Math.max(worst, d);
      if (!(d <= 1e-5 + 1e-5 * Math.abs(v))) problems.push(`${s.name}[${k}] = ${o.data[k]}, PyTorch ${v}`);
    });
  }
  return { problems, worst };
}

(async () => {
  const files = fs.readdirSync(site).filter((f) => fs.statSync(path.join(site, f)).isFile());
  const total = files.reduce((n, f) => n + fs.statSync(path.join(site, f)).size, 0);
  console.log('static files: ' + files.map((f) => `${f} ${fs.statSync(path.join(site, f)).size}`).join(', '));
  check(total <= 5.5 * 1024 * 1024, `total static size ${(total / 1048576).toFixed(2)} MiB <= 5.5 MiB`);  // docs/playground.md says why
  for (const f of ['index.html', 'index.js', 'index.wasm', 'NanumGothic-subset.ttf']) check(files.includes(f), `${f} present`);

  const server = await serve(site);
  const url = `http://127.0.0.1:${server.address().port}/`;
  const userData = fs.mkdtempSync('/tmp/attnlab-chromium-');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));

    // 1. Load: first frame, no errors, the default trace is the first tutorial's, bit for bit.
    await page.goto(url);
    await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
    const firstFrame = await page.evaluate(() => window.attnlab.firstFrameMs);
    const load = await page.evaluate(() => ({
      runtime: attnlab.runtimeReadyMs,
      files: performance.getEntriesByType('resource').map((e) => `${e.name.split('/').pop()} ${e.responseEnd.toFixed(0)}`),
      html: performance.getEntriesByType('navigation')[0].responseEnd }));
    console.log(`first frame after ${firstFrame.toFixed(0)} ms from navigation start (page ${load.html.toFixed(0)} ms, ` +
                `files loaded at: ${load.files.join(', ')} ms, runtime ready ${load.runtime.toFixed(0)} ms; budget 3000 ms)`);
    if (firstFrameBudgetMs > 0) check(firstFrame <= firstFrameBudgetMs, `first frame within ${firstFrameBudgetMs} ms`);
    let trace = await page.evaluate(() => attnlab.trace());
    let problems = sameAsFixture(trace, 'tutorial_default.json');
    check(problems.length === 0, 'default trace equals tutorial_default.json (PyTorch) ' + problems.slice(0, 3).join('; '));
    check(trace.config.seed === 0 && trace.config.d_model === 6 && trace.config.mask === 'padding', 'default config is the tutorial');

    // 2. The heatmap on screen: the colours the UI computed for PyTorch's weights, at each cell.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const state = await page.evaluate(() => attnlab.state());
    const hm = state.view.heatmap;
    check(state.view.stage === 'attention_weights' && hm.rows === 4 && hm.cols === 4, 'attention weights shown as a 4x4 heatmap');
    const weights0 = trace.stages.find((s) => s.name === 'attention_weights').data.slice(0, 16);
    check(hm.values.every((v, i) => Math.fround(v) === Math.fround(weights0[i])), 'heatmap values are batch item 0 weights');
    const shot = await page.screenshot();
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground.png'), shot);
    const img = decodePng(shot), canvasBox = await page.locator('#canvas').boundingBox();
    let matched = 0;
    for (let i = 0; i < hm.rows; i++)
      for (let j = 0; j < hm.cols; j++) {
        const x = Math.round(canvasBox.x + hm.x + (j + 0.12) * hm.cell_w), y = Math.round(canvasBox.y + hm.y + (i + 0.12) * hm.cell_h);
        const o = (y * img.width + x) * 4, want = hm.colors[i * hm.cols + j];
        if ([0, 1, 2].every((k) => Math.abs(img.px[o + k] - want[k]) <= 4)) matched++;
        else console.log(`  cell ${i},${j}: screen ${[...img.px.subarray(o, o + 3)]} want ${want}`);
      }
    check(matched === hm.rows * hm.cols, `screenshot shows the heatmap colours (${matched}/16 cells)`);
    const top = hm.colors[weights0.indexOf(Math.max(...weights0))];
    check(top[0] > 200 && top[1] > 200 && top[2] < 100, 'largest weight drawn yellow (viridis top)');

    await checkIdle(page, 'default view');

    // Export SVG: the figure attn tutorial --plot draws, byte for byte, read back by the browser's XML parser.
    const svgDownload = page.waitForEvent('download');
    await clickAt(page, (await page.evaluate(() => attnlab.state().view.heatmap.export)).svg);
    const svgText = fs.readFileSync(await (await svgDownload).path(), 'utf8');
    const svg = await page.evaluate((text) => {
      const d = new DOMParser().parseFromString(text, 'image/svg+xml');
      return { error: d.querySelector('parsererror') !== null, cells: d.querySelectorAll('rect.cell').length,
               fills: [...d.querySelectorAll('rect.cell')].map((r) => r.getAttribute('fill')),
               labels: [...d.querySelectorAll('.col-labels text')].map((e) => e.textContent) };
    }, svgText);
    const hex = (c) => '#' + c.map((v) => v.toString(16).padStart(2, '0')).join('');
    check(!svg.error && svg.cells === 16 && svg.fills.every((f, i) => f === hex(hm.colors[i])) &&
          JSON.stringify(svg.labels) === JSON.stringify(trace.tokens[0]),
          `Export SVG: 16 cells in the heatmap's colours, the tokens as labels (${svg.labels.join(' ')})`);
    const cliFigure = cliPlot(['tutorial', '--plot', 'attention_weights'], '--svg');
    if (cliFigure !== null) check(svgText === cliFigure, 'the exported SVG equals attn tutorial --plot attention_weights --svg');

    // Copy CSV / Copy LaTeX: attn tutorial --plot --csv / --tex's text; Export PNG at 4x: 16 times the
    // pixels of 1x, each cell in its colour, the bytes of attn tutorial --plot --png --scale 4.
    for (const [key, flag] of [['csv', '--csv'], ['latex', '--tex']]) {
      await clickAt(page, (await page.evaluate(() => attnlab.state().view.heatmap.export))[key]);
      const copied = await page.evaluate(() => attnlab.copied);
      const cli = cliPlot(['tutorial', '--plot', 'attention_weights'], flag);
      check(copied && copied.includes('나는') && (cli === null || copied === cli),
            `Copy ${key}: ${copied && copied.length} characters, attn tutorial --plot attention_weights ${flag}'s text`);
    }
    const pngs = [];
    for (const scale of [1, 4]) {
      await page.evaluate((k) => attnlab.selectView({ png_scale: k }), scale);
      const download = page.waitForEvent('download');
      await clickAt(page, (await page.evaluate(() => attnlab.state().view.heatmap.export)).png);
      pngs.push(fs.readFileSync(await (await download).path()));
    }
    const [png1, png4] = pngs.map(decodePng);
    const cell4 = png4.width / 4, cellColours = [];
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < 4; j++) cellColours.push([...png4.px.subarray(((i * cell4 + cell4 / 2) * png4.width + j * cell4 + cell4 / 2) * 4).slice(0, 3)]);
    check(png4.width === 4 * png1.width && png4.height === 4 * png1.height &&
          cellColours.every((c, k) => c.every((v, m) => v === hm.colors[k][m])),
          `Export PNG at 4x: ${png4.width}x${png4.height}, 16 times the pixels of 1x (${png1.width}x${png1.height}), the cells in their colours`);
    const cliPng = cliPlot(['tutorial', '--plot', 'attention_weights', '--scale', '4'], '--png');
    if (cliPng !== null) check(Buffer.compare(cliPng, pngs[1]) === 0, 'the 4x PNG equals attn tutorial --plot attention_weights --png --scale 4');
    await page.evaluate(() => attnlab.selectView({ png_scale: 1 }));

    // 3. Typing in the text field: new tokens, new shapes, URL hash updated.
    await page.fill('#sentences', '고양이가 밥을 먹는다\n강아지가 잔다');
    trace = await page.evaluate(() => attnlab.trace());
    check(JSON.stringify(trace.tokens) === JSON.stringify([['고양이가', '밥을', '먹는다'], ['강아지가', '잔다', '[PAD]']]),
          'typed sentences become the tokens: ' + JSON.stringify(trace.tokens));
    check(JSON.stringify(trace.stages.find((s) => s.name === 'attention_weights').shape) === '[2,3,3]', 'weights shape [2, 3, 3]');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const typed = await page.evaluate(() => ({ hash: location.hash, view: attnlab.state().view }));
    check(typed.view.heatmap.rows === 3 && typed.hash.includes('s=%EA%B3%A0'), 'heatmap is 3x3 and the URL hash holds the sentences');
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_typed.png'), await page.screenshot());

    // 4. Toggling the mask (attnlab.set) gives PyTorch's weights; a link with the hash reproduces it.
    await page.evaluate(() => attnlab.set({ sentences: ['나는 오늘 학교에 간다', '나는 오늘 도서관에 간다',
      '오늘 나는 학교에서 공부한다', '나는 집에 간다'], seed: 1, mask: 'none' }));
    trace = await page.evaluate(() => attnlab.trace());
    problems = sameAsFixture(trace, 'tutorial_seed1_nomask.json');
    check(problems.length === 0, 'set({seed: 1, mask: none}) equals tutorial_seed1_nomask.json ' + problems.slice(0, 3).join('; '));
    const hash = await page.evaluate(() => location.hash);
    check(hash === '#seed=1&mask=none', 'URL hash is ' + hash);
    await page.evaluate(() => attnlab.set({ mask: 'padding' }));
    const padded = await page.evaluate(() => attnlab.trace());
    const w1 = trace.stages.find((s) => s.name === 'attention_weights').data, w2 = padded.stages.find((s) => s.name === 'attention_weights').data;
    check(w1[48 + 3] > 0 && w2[48 + 3] === 0, `padding mask: attention to [PAD] ${w1[51]} -> ${w2[51]}`);
    const fx = JSON.parse(fs.readFileSync(path.join(fixtures, 'tutorial_causal_mixed.json'), 'utf8'));
    const page2 = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    page2.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const link = '#' + fx.config.sentences.map((s) => 's=' + encodeURIComponent(s)).join('&') +
                 `&seed=${fx.config.seed}&d_model=${fx.config.d_model}&max_len=${fx.config.max_len}&mask=${fx.config.mask}`;
    await page2.goto(url + link);
    await page2.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
    problems = sameAsFixture(await page2.evaluate(() => attnlab.trace()), 'tutorial_causal_mixed.json');
    check(problems.length === 0, 'a link with the URL hash reproduces tutorial_causal_mixed.json ' + problems.slice(0, 3).join('; '));
    await page2.close();

    // 5. The Masks view of a chosen layer and head: without the mask the padded sentence attends to
    // [PAD], with it not at all; the shown slice is that layer's and head's.
    const masks = await page.evaluate(async () => {
      attnlab.set({ model: 'transformer', d_model: 16, num_heads: 2, num_layers: 3, mask: 'padding', seed: 0,
                    sentences: ['나는 오늘 학교에 간다', '나는 집에 간다'] });
      attnlab.selectView({ tab: 'masks', batch: 1, layer: 2, head: 1 });
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const view = attnlab.state().view;
      const w = attnlab.trace().stages.find((s) => s.name === 'layers.2.self_attn.attention_weights');
      const slice = w.data.slice((1 * 2 + 1) * 16, (1 * 2 + 2) * 16);  // [batch 1, head 1]
      return { view, slice };
    });
    const mv = masks.view.masks;
    check(masks.view.tab === 'masks' && mv.layer === 2 && JSON.stringify(mv.leading) === '[1,1]',
          `Masks view shows layer ${mv.layer}, [batch, head] ${JSON.stringify(mv.leading)}`);
    check(mv.masked.every((v, i) => Math.fround(v) === Math.fround(masks.slice[i])), 'masked weights are the trace\'s layer 2, head 1');
    check(mv.pad_with.every((v) => v === 0) && mv.pad_without.every((v) => v > 0),
          `attention to [PAD] without mask ${mv.pad_without.map((v) => v.toFixed(3))}, with mask ${mv.pad_with}`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_masks.png'), await page.screenshot());
    await checkIdle(page, 'Masks view');

    // 5b. Compare: one model, two sentences pinned as A and B — attn diff's document of the two traces, the
    // three heatmaps (A, B and B − A of the traces' values), A in the URL hash, and a link reproducing both.
    const cmp = await page.evaluate(async () => {
      attnlab.set({ model: 'transformer', d_model: 16, num_heads: 2, num_layers: 2, seed: 3, mask: 'padding',
                    sentences: ['나는 오늘 학교에 간다', '나는 집에 간다'] });
      // B's second sentence is longer: its tokens move (a word swapped for another of the same rank would
      // change nothing: the seeded model's ids and so every number would be the same).
      const diff = attnlab.compare({ a: {}, b: { sentences: ['나는 오늘 학교에 간다', '나는 오늘 집에 간다'] } });
      attnlab.selectView({ stage: 'layers.1.self_attn.attention_weights', batch: 1, head: 1 });
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      let refused = null;
      try { attnlab.compare({ a: { seed: 'x' } }); } catch (e) { refused = e.message; }
      return { diff, refused, view: attnlab.state().view, hash: location.hash, a: attnlab.trace('a'), b: attnlab.trace() };
    });
    const cv = cmp.view.compare, stageOf = (t) => t.stages.find((s) => s.name === 'layers.1.self_attn.attention_weights');
    const sliceA = stageOf(cmp.a).data.slice(48, 64), sliceB = stageOf(cmp.b).data.slice(48, 64);  // [item 1, head 1]
    check(cmp.view.tab === 'compare' && cv.pinned && cv.maps.every((m) => m.rows === 4 && m.cols === 4),
          `Compare tab: A, B and B − A as 4x4 heatmaps (${cv.summary})`);
    check(cv.maps[0].values.every((v, i) => Math.fround(v) === Math.fround(sliceA[i])) &&
          cv.maps[1].values.every((v, i) => Math.fround(v) === Math.fround(sliceB[i])) &&
          cv.maps[2].values.every((v, i) => Math.abs(v - (sliceB[i] - sliceA[i])) <= 1e-7),
          'the heatmaps are the traces\' A, B and B − A of item 1, layer 1, head 1');
    check(cv.maps[0].lo === cv.maps[1].lo && cv.maps[0].hi === cv.maps[1].hi && cv.maps[2].lo === -cv.maps[2].hi,
          `A and B on one scale [${cv.maps[0].lo}, ${cv.maps[0].hi}], B − A centred on 0`);
    check(cv.col_labels.includes('집에→오늘') && cmp.diff.first_differing !== null && !cmp.diff.passed,
          `the difference labels the tokens that moved (${cv.col_labels.join(' ')}); first differing ${cmp.diff.first_differing}`);
    check(cmp.refused !== null && cmp.refused.includes('seed'), 'a bad run A is refused: ' + cmp.refused);
    const hashA = cmp.hash.split('&compare=1')[1] || '';
    check(hashA.startsWith('&a.model=transformer&') && hashA.includes(encodeURIComponent('학교에')) &&
          !hashA.includes(encodeURIComponent('나는 오늘 집에')), 'the URL hash carries A after B: ' + cmp.hash);
    const cliDiff = cliDiffJson(cmp.a, cmp.b);
    if (cliDiff !== null)
      check(JSON.stringify(cliDiff) === JSON.stringify(cmp.diff),
            `compare() returns attn diff A.json B.json --json's document (first differing ${cmp.diff.first_differing})`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_compare.png'), await page.screenshot());
    await checkIdle(page, 'Compare view');
    const page3 = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    page3.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page3.goto(url + cmp.hash);
    await page3.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 30000 });
    const linkedCompare = await page3.evaluate(() => ({ a: attnlab.trace('a'), b: attnlab.trace() }));
    check(JSON.stringify(linkedCompare.a.stages) === JSON.stringify(cmp.a.stages) &&
          JSON.stringify(linkedCompare.b.stages) === JSON.stringify(cmp.b.stages), 'a link with A in its hash reproduces A and B');
    await page3.close();
    const cleared = await page.evaluate(() => { attnlab.compare(null); return location.hash; });
    check(!cleared.includes('compare'), 'compare(null) clears A from the hash');

    // 5c. Long inputs: a text of 2,048 words from a file (Open text…; the first tutorial at max_len 2048):
    // the 2048 x 2048 attention map as one texture, zoomed with the wheel about the cursor, panned by
    // dragging, its minimap shown; row sums 1, column sums adding up to 2,048; no frame over 16 ms.
    await page.evaluate(() => attnlab.set({ model: 'tutorial', max_len: 2048, mask: 'padding', seed: 0 }));
    const longText = Array.from({ length: 2048 }, (_, i) => 'w' + (i % 500)).join(' ') + '\n';
    await page.setInputFiles('#sentences-file', { name: 'long.txt', mimeType: 'text/plain', buffer: Buffer.from(longText) });
    await page.waitForFunction(() => attnlab.state().settings.sentences[0].split(" ").length === 2048, null, { timeout: 30000 });
    await page.evaluate(() => attnlab.selectView({ tab: 'stage', stage: 'attention_weights', batch: 0 }));
    await frames(page, 4);
    let long = await page.evaluate(() => attnlab.state().view.heatmap);
    check(long.rows === 2048 && long.cols === 2048 && long.values.length === 0,
          `a 2,048-word text from a file: a ${long.rows} x ${long.cols} map (its values left out of state())`);
    check(long.row_sums.every((v) => Math.abs(v - 1) < 1e-3) && Math.abs(long.col_sums.reduce((a, b) => a + b) - 2048) < 0.5,
          'row sums 1, column sums adding up to 2,048');
    const longCanvas = await page.locator('#canvas').boundingBox();
    const at = (fx, fy) => [longCanvas.x + long.box[0] + fx * long.box[2], longCanvas.y + long.box[1] + fy * long.box[3]];
    // Zooms in with 12 wheel steps at a quarter of the map, then drags 200 px up and left; returns the
    // heatmap's state after each and every frame's time meanwhile.
    const zoomAndPan = async () => {
      await page.evaluate(() => {
        window.__frameMs = [];
        const loop = () => {
          if (!window.__frameMs) return;
          window.__frameMs.push(attnlab.stats().last_frame_ms);
          requestAnimationFrame(loop);
        };
        requestAnimationFrame(loop);
      });
      await page.mouse.move(...at(0.25, 0.25));
      await frames(page, 2);
      for (let k = 0; k < 12; k++) {
        await page.mouse.wheel(0, -120);
        await frames(page, 1);
      }
      const zoomed = await page.evaluate(() => attnlab.state().view.heatmap);
      await page.mouse.down();
      for (let k = 1; k <= 10; k++) {
        await page.mouse.move(at(0.25, 0.25)[0] - 20 * k, at(0.25, 0.25)[1] - 20 * k);
        await frames(page, 1);
      }
      await page.mouse.up();
      await frames(page, 2);
      const panned = await page.evaluate(() => attnlab.state().view.heatmap);
      const ms = await page.evaluate(() => { const m = window.__frameMs; window.__frameMs = null; return m; });
      console.log(`  2048 x 2048 map, ${ms.length} frames while zooming and panning: ` +
                  `mean ${(ms.reduce((x, y) => x + y, 0) / ms.length).toFixed(2)} ms, max ${Math.max(...ms).toFixed(2)} ms ` +
                  `(the slowest: ${ms.map((v, i) => [v, i]).sort((x, y) => y[0] - x[0]).slice(0, 5).map(([v, i]) => `#${i} ${v.toFixed(1)}`).join(', ')})`);
      return { zoomed, panned, max: ms.length > 20 ? Math.max(...ms) : Infinity };
    };
    const { zoomed, panned, max: firstMax } = await zoomAndPan();
    check(zoomed.zoom > 8 && zoomed.minimap[2] > 0 && zoomed.view_col > 100 && zoomed.view_col < 512,
          `the wheel zooms about the cursor: ${zoomed.zoom.toFixed(1)}x from column ${zoomed.view_col.toFixed(0)}, a minimap`);
    check(panned.view_col > zoomed.view_col && panned.view_row > zoomed.view_row && panned.zoom === zoomed.zoom,
          `dragging pans: from column ${zoomed.view_col.toFixed(0)} to ${panned.view_col.toFixed(0)}`);
    // A frame over 16 ms once is measured again (the whole sequence, from the whole map: a double-click):
    // on 2 shared cores a lone spike is the machine's; the map's cost would repeat.
    let slowest = firstMax;
    if (slowest > 16) {
      await page.mouse.dblclick(...at(0.5, 0.5));
      await frames(page, 2);
      slowest = Math.min(slowest, (await zoomAndPan()).max);
    }
    check(slowest <= 16, `no frame over 16 ms on the 2048 x 2048 map (slowest ${slowest.toFixed(2)} ms` +
                         `${firstMax > 16 ? `, ${firstMax.toFixed(2)} ms in the first of two runs` : ''})`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_long.png'), await page.screenshot());
    await checkIdle(page, 'a zoomed 2048 x 2048 map');
    await page.evaluate(() => attnlab.set({ max_len: 100, sentences: ['나는 오늘 학교에 간다'] }));

    // 6. Hangul outside KS X 1001's 2,350 syllables, and jamo, have glyphs (no '?').
    const rare = '똠방각하 뷁 햏 쌰 퓛 ㄱㅏㅎ ㆍ';
    await page.evaluate((s) => attnlab.set({ model: 'tutorial', sentences: [s] }), rare);
    await frames(page, 2);
    const missing = await page.evaluate(() => attnlab.state().view.missing_glyphs);
    check(missing === 0, `"${rare}": ${missing} characters without a glyph`);

    // 7. A model from files through the page's file input: PyTorch's numbers; malformed files are messages.
    const model = smallModelFiles();
    await page.setInputFiles('#model-files', [
      { name: 'small.safetensors', mimeType: 'application/octet-stream', buffer: model.weights },
      { name: 'config.json', mimeType: 'application/json', buffer: model.config },
      { name: 'vocab.json', mimeType: 'application/json', buffer: model.vocab }]);
    await page.waitForFunction(() => attnlab.state().loaded_model !== null, null, { timeout: 10000 });
    await page.evaluate((s) => attnlab.set({ sentences: s }), model.sentences);
    const loaded = await page.evaluate(() => ({ state: attnlab.state(), trace: attnlab.trace() }));
    const close = closeToFixture(loaded.trace, model.fx);
    check(loaded.state.settings.model === 'loaded' && close.problems.length === 0,
          `model from the file input (${loaded.state.loaded_model}) equals transformer_small.json ` +
          `(max |diff| ${close.worst.toExponential(2)}) ${close.problems.slice(0, 3).join('; ')}`);
    check(loaded.state.hash.startsWith('model=loaded&s=t1%20t5'), 'URL hash of a loaded model: ' + loaded.state.hash);
    await page.setInputFiles('#model-files', [{ name: 'broken.safetensors', mimeType: 'application/octet-stream',
                                                buffer: Buffer.from('not a safetensors file at all') }]);
    await page.waitForFunction(() => /not loaded/.test(document.getElementById('model-note').textContent), null, { timeout: 10000 });
    const broken = await page.evaluate(() => ({ note: document.getElementById('model-note').textContent, state: attnlab.state() }));
    check(/broken\.safetensors/.test(broken.note) && /could not load/.test(broken.state.status) &&
          broken.state.error === '' && broken.state.loaded_model === loaded.state.loaded_model,
          'malformed weights: a message (' + broken.note + '), the loaded model stays');
    const refusals = await page.evaluate((cfg) => {
      const tryLoad = (files) => { try { attnlab.loadModel(files); return ''; } catch (e) { return e.message; } };
      return [tryLoad({ weights: new Uint8Array([1, 2, 3]) }), tryLoad({ weights: new Uint8Array(16), config: '{"d_model": ' }),
              tryLoad({ config: cfg })];
    }, model.config.toString());
    check(refusals.every((m) => m.length > 0), 'loadModel refuses malformed files: ' + refusals.join(' | '));
    const viaApi = await page.evaluate((m) => {
      attnlab.loadModel({ weights: new Uint8Array(m.weights), config: JSON.parse(m.config), vocab: m.vocab });
      return attnlab.state().loaded_model;
    }, { weights: [...model.weights], config: model.config.toString(), vocab: model.vocab.toString() });
    check(viaApi === 'weights.safetensors + config.json + vocab.json', 'attnlab.loadModel loads: ' + viaApi);
    await checkIdle(page, 'loaded model');

    // 7b. BERT and GPT-2 checkpoints through the file input (tests/fixtures/pretrained): their own
    // tokenizers and stages, as PyTorch computes them; a pickle is refused with the way to convert it.
    const cases = JSON.parse(fs.readFileSync(path.join(fixtures, 'pretrained', 'pretrained_stages.json'), 'utf8'));
    for (const [name, architecture] of [['bert_tiny', 'BertModel'], ['gpt2_tiny', 'GPT2LMHeadModel']]) {
      const folder = path.join(fixtures, 'pretrained', name);
      await page.setInputFiles('#model-files', fs.readdirSync(folder).map((f) => path.join(folder, f)));
      await page.waitForFunction((a) => (attnlab.state().loaded_model || '').startsWith(a + ':'), architecture, { timeout: 10000 });
      const fx = cases.find((c) => c.case === name);
      const sentences = fx.text.map((t) => (Array.isArray(t) ? t.join('\t') : t));
      const got = await page.evaluate((s) => { attnlab.set({ sentences: s }); return { state: attnlab.state(), trace: attnlab.trace() }; },
                                      sentences);
      const near = closeToFixture(got.trace, fx);
      check(got.state.error === '' && near.problems.length === 0 && got.trace.stages.length === fx.stages.length,
            `${name} from the file input equals PyTorch (${got.trace.stages.length} stages, max |diff| ` +
            `${near.worst.toExponential(2)}) ${got.state.error} ${near.problems.slice(0, 3).join('; ')}`);
    }
    // A Llama-family folder (config.json, model.safetensors, tokenizer.json) through the same input: its
    // tokenizer.json's tokens and every stage as the native attn encode --model-dir computes them (which
    // tests/decoder_check.py checks against PyTorch), the shorter sentence padded after its tokens.
    const llama = path.join(fixtures, 'pretrained', 'llama_tiny');
    const gpt2Sentences = await page.evaluate(() => attnlab.state().settings.sentences);
    await page.setInputFiles('#model-files', fs.readdirSync(llama).map((f) => path.join(llama, f)));
    await page.waitForFunction(() => (attnlab.state().loaded_model || '').startsWith('LlamaForCausalLM:'), null, { timeout: 10000 });
    const decoderSentences = ['the cat sat on the mat', 'a dog ran'];
    const decoded = await page.evaluate((s) => { attnlab.set({ sentences: s }); return { state: attnlab.state(), trace: attnlab.trace() }; },
                                        decoderSentences);
    const cliDecoder = cliJson(['encode', '--model-dir', llama, ...decoderSentences.flatMap((t) => ['--sentence', t])]);
    const nearCli = cliDecoder ? closeToFixture(decoded.trace, cliDecoder) : { problems: [], worst: 0 };
    check(decoded.state.error === '' && decoded.trace.stages.length === (cliDecoder ? cliDecoder.stages.length : 42) &&
          nearCli.problems.length === 0 && /tokenizer\.json$/.test(decoded.state.loaded_model),
          `a Llama folder from the file input: ${decoded.trace.stages.length} stages` +
          (cliDecoder ? `, attn encode's within ${nearCli.worst.toExponential(2)}` : '') +
          ` ${decoded.state.error} ${nearCli.problems.slice(0, 3).join('; ')}`);
    // Its views: the model view's first-token share (attention sinks) and the Positional encoding tab's
    // rotary split equal attn encode --json's first_token_attention and --rotary (first sentence).
    await page.evaluate(() => attnlab.selectView({ tab: 'stage', model_view: true, first_token_share: true, batch: 0 }));
    await frames(page, 3);
    const sinks = await page.evaluate(() => attnlab.state().view.decoder.sinks);
    await page.evaluate(() => attnlab.selectView({ tab: 'positional_encoding', model_view: false, first_token_share: false,
                                                   rotary: [5, 2, 1, 3] }));
    await frames(page, 3);
    const rotary = await page.evaluate(() => attnlab.state().view.decoder.rotary);
    const cliViews = cliJson(['encode', '--model-dir', llama, ...decoderSentences.flatMap((t) => ['--sentence', t]),
                              '--rotary', '5,2']);
    if (cliViews) {
      const theirs = cliViews.rotary.layers[1][3];
      const gap = (a, b) => (a.length === b.length ? Math.max(0, ...a.map((v, i) => Math.abs(v - b[i]))) : Infinity);
      const sinkGap = gap(sinks, cliViews.first_token_attention.flat());
      const pairGap = gap(rotary.pairs, theirs.pairs), distanceGap = gap(rotary.by_distance, theirs.by_distance);
      check(sinkGap <= 1e-6 && pairGap <= 1e-5 && distanceGap <= 1e-5,
            `a Llama folder's sinks heatmap and rotary split equal attn encode --json's (sinks ${sinkGap.toExponential(1)}, ` +
            `pairs ${pairGap.toExponential(1)}, by distance ${distanceGap.toExponential(1)})`);
    } else {
      check(sinks.length === 8 && rotary.pairs.length === 4, 'a Llama folder\'s sinks heatmap and rotary split are drawn');
    }
    // attnlab.generate on it: attn generate's tokens and probabilities (the Generate tab's code).
    const decoderSettings = { prompt: 'the cat', max_new_tokens: 6, temperature: 0.8, top_k: 5, seed: 3 };
    const decoderGenerated = await page.evaluate((s) => attnlab.generate(s), decoderSettings);
    const cliDecoderGenerated = cliJson(['generate', '--model-dir', llama, '--prompt', decoderSettings.prompt,
                                         '--max-new-tokens', '6', '--temperature', '0.8', '--top-k', '5', '--seed', '3']);
    const ids = (g) => JSON.stringify(g.generated.map((t) => t.id));
    const probabilityGap = cliDecoderGenerated ? Math.max(...decoderGenerated.generated.map((t, i) =>
      Math.abs(t.probability - cliDecoderGenerated.generated[i].probability))) : 0;
    check(decoderGenerated.generated.length === 6 && (!cliDecoderGenerated ||
          (ids(decoderGenerated) === ids(cliDecoderGenerated) && probabilityGap <= 1e-6)),
          `attnlab.generate on a Llama folder: ${ids(decoderGenerated)}` +
          (cliDecoderGenerated ? `, attn generate's ids, probabilities within ${probabilityGap.toExponential(1)}` : ''));
    // Back to GPT-2 for the generation checks below.
    const gpt2Folder = path.join(fixtures, 'pretrained', 'gpt2_tiny');
    await page.setInputFiles('#model-files', fs.readdirSync(gpt2Folder).map((f) => path.join(gpt2Folder, f)));
    await page.waitForFunction(() => (attnlab.state().loaded_model || '').startsWith('GPT2LMHeadModel:'), null, { timeout: 10000 });
    await page.evaluate((s) => attnlab.set({ sentences: s }), gpt2Sentences);
    // attnlab.generate on the loaded GPT-2: attn generate's tokens, text, probabilities and attention.
    const settings = { prompt: 'the cat sat', max_new_tokens: 6, temperature: 0.8, top_k: 5, seed: 3 };
    const generated = await page.evaluate((s) => attnlab.generate(s), settings);
    const cliGenerated = cliJson(['generate', '--model-dir', path.join(fixtures, 'pretrained', 'gpt2_tiny'), '--prompt',
                                  settings.prompt, '--max-new-tokens', '6', '--temperature', '0.8', '--top-k', '5', '--seed', '3']);
    const flat = (g) => g.generated.flatMap((t) => [t.probability, ...t.attention.flat(2)]);
    const gap = cliGenerated ? Math.max(...flat(generated).map((v, i) => Math.abs(v - flat(cliGenerated)[i]))) : 0;
    check(generated.generated.length === 6 && (!cliGenerated || (generated.text === cliGenerated.text &&
          JSON.stringify(generated.generated.map((t) => t.id)) === JSON.stringify(cliGenerated.generated.map((t) => t.id)) &&
          gap <= 1e-6)), `attnlab.generate: ${JSON.stringify(generated.text)}` +
          (cliGenerated ? `, attn generate's tokens and text, probabilities and attention within ${gap.toExponential(1)}` : ''));
    // The Generate tab with the same settings: attn generate's tokens, a token a frame, each one's attention drawn.
    const shownGenerate = await page.evaluate(async (s) => {
      attnlab.selectView({ tab: 'generate', generate: s });
      for (let i = 0; i < 100 && attnlab.state().view.generate.running; i++) await new Promise((r) => requestAnimationFrame(r));
      await new Promise((r) => requestAnimationFrame(r));
      return attnlab.state().view.generate;
    }, settings);
    check(shownGenerate.done && shownGenerate.heatmap.rows === 4 && shownGenerate.heatmap.cols > 0 &&
          (!cliGenerated || (shownGenerate.text === cliGenerated.text &&
           JSON.stringify(shownGenerate.ids) === JSON.stringify(cliGenerated.generated.map((t) => t.id)))),
          `the Generate tab: ${JSON.stringify(shownGenerate.text)}, attn generate's tokens; the last one's attention ` +
          `[${shownGenerate.heatmap.rows} heads x ${shownGenerate.heatmap.cols} tokens]`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_generate.png'), await page.screenshot());
    await checkAttribution(page, path.join(fixtures, 'pretrained', 'gpt2_tiny'), gpt2Sentences[0]);
    await page.evaluate(() => attnlab.selectView({ tab: 'stage' }));
    const badGenerate = await page.evaluate(() => { try { attnlab.generate({ prompt: 'x', top_p: 2 }); return ''; } catch (e) { return e.message; } });
    check(/--top-p must be in/.test(badGenerate), 'attnlab.generate refuses bad settings: ' + badGenerate);
    const pickle = await page.evaluate(() => {
      try { attnlab.loadModel([{ name: 'config.json', bytes: '{"model_type": "bert"}' }, { name: 'pytorch_model.bin', bytes: new Uint8Array(8) }]); return ''; }
      catch (e) { return e.message; }
    });
    check(/convert it to model\.safetensors/.test(pickle), 'a pytorch_model.bin is refused with a message: ' + pickle);
    // The Model folder… picker: a downloaded folder holds more than the model (a README, another format's
    // weights, a subfolder); only the checkpoint's files are read. A folder with only a pickle is a message.
    const folders = fs.mkdtempSync('/tmp/attnlab-folders-');
    try {
      const full = path.join(folders, 'gpt2'), pickleOnly = path.join(folders, 'pickle');
      fs.mkdirSync(path.join(full, 'onnx'), { recursive: true });
      fs.mkdirSync(pickleOnly);
      const gpt2 = path.join(fixtures, 'pretrained', 'gpt2_tiny');
      for (const f of fs.readdirSync(gpt2)) fs.copyFileSync(path.join(gpt2, f), path.join(full, f));
      fs.writeFileSync(path.join(full, 'README.md'), '# a model card\n');
      fs.writeFileSync(path.join(full, 'pytorch_model.bin'), Buffer.alloc(1 << 20));
      fs.writeFileSync(path.join(full, 'onnx', 'model.onnx'), Buffer.alloc(64));
      fs.copyFileSync(path.join(gpt2, 'config.json'), path.join(pickleOnly, 'config.json'));
      fs.writeFileSync(path.join(pickleOnly, 'pytorch_model.bin'), Buffer.alloc(64));
      const noteSaysDone = () => /^(loaded|not loaded)/.test(document.getElementById('model-note').textContent);
      await page.evaluate(() => { attnlab.set({ model: 'tutorial' }); document.getElementById('model-note').textContent = ''; });
      await page.setInputFiles('#model-folder', full);
      await page.waitForFunction(noteSaysDone, null, { timeout: 10000 });
      const picked = await page.evaluate(() => ({ note: document.getElementById('model-note').textContent, state: attnlab.state() }));
      check(picked.state.settings.model === 'loaded' && picked.state.error === '' && /^loaded /.test(picked.note) &&
            picked.note === 'loaded ' + picked.state.loaded_model && !/README|onnx|pytorch_model/.test(picked.note),
            'Model folder… loads a GPT-2 folder, reading only its checkpoint files: ' + picked.note);
      await page.evaluate(() => { document.getElementById('model-note').textContent = ''; });
      await page.setInputFiles('#model-folder', pickleOnly);
      await page.waitForFunction(noteSaysDone, null, { timeout: 10000 });
      const refusedFolder = await page.evaluate(() => ({ note: document.getElementById('model-note').textContent, state: attnlab.state() }));
      check(/convert it to model\.safetensors/.test(refusedFolder.note) && refusedFolder.state.loaded_model === picked.state.loaded_model,
            'a folder with only a pickle is a message, the loaded model stays: ' + refusedFolder.note);
    } finally {
      fs.rmSync(folders, { recursive: true, force: true });
    }
    await checkIdle(page, 'checkpoint');

    // 8. Errors are messages, not crashes.
    const err = await page.evaluate(() => { attnlab.set({ model: 'tutorial', d_model: 7 }); return attnlab.state().error; });
    check(/even/.test(err), 'odd d_model shows an error: ' + err);
    const refused = await page.evaluate(() => { try { attnlab.set({ bogus: 1 }); return ''; } catch (e) { return e.message; } });
    check(/unknown setting/.test(refused), 'unknown setting refused: ' + refused);
    await checkRobustness(page, check, model, (trace) => sameAsFixture(trace, 'tutorial_default.json'));

    // 9. Recompute + redraw at S = 128, d_model = 128, 4 heads, 2 layers (the Stage view of layer 0's
    // weights, then the Masks view).
    const timing = await page.evaluate(async () => {
      const words = Array.from({ length: 128 }, (_, i) => 'w' + (i % 40)).join(' ');
      const runs = [];
      for (const [seed, tab] of [[1, 'stage'], [2, 'stage'], [3, 'stage'], [4, 'masks'], [5, 'masks']]) {
        attnlab.selectView({ tab, stage: 'layers.0.self_attn.attention_weights' });
        await new Promise((r) => requestAnimationFrame(r));
        // From the change to the end of the frame that shows it: the set() call computes, the next
        // frame redraws (its own time is last_frame_ms).
        const t0 = performance.now();
        attnlab.set({ model: 'transformer', sentences: [words], d_model: 128, num_heads: 4, num_layers: 2, seed });
        const frames0 = attnlab.stats().frames;
        while (attnlab.stats().frames === frames0) await new Promise((r) => requestAnimationFrame(r));
        const s = attnlab.stats();
        runs.push({ tab, total: performance.now() - t0, compute: s.compute_ms, frame: s.last_frame_ms });
      }
      return { runs, error: attnlab.state().error, shape: attnlab.trace().stages.find((s) => s.name === 'layers.1.self_attn.attention_weights').shape };
    });
    console.log('S=128 d=128 4 heads 2 layers: ' + timing.runs.map((r) => `[${r.tab}] compute ${r.compute.toFixed(1)} ms + ` +
      `frame ${r.frame.toFixed(1)} ms, change to drawn ${r.total.toFixed(1)} ms`).join('; '));
    check(timing.error === '' && JSON.stringify(timing.shape) === '[1,4,128,128]', 'large configuration computes: ' + JSON.stringify(timing.shape));
    const best = Math.min(...timing.runs.map((r) => r.compute + r.frame));
    console.log(`recompute + redraw at S=128: best ${best.toFixed(1)} ms (budget 100 ms)`);
    if (recomputeBudgetMs > 0) check(best <= recomputeBudgetMs, `recompute + redraw within ${recomputeBudgetMs} ms`);
    if (outDir) fs.writeFileSync(path.join(outDir, 'playground_large.png'), await page.screenshot());
    await checkIdle(page, 'S=128 Masks view');
    await checkLanguageAndTour(browser, url, errors);
    await checkInterventions(page);
    await checkTraining(page);
    await page.close();  // headless pages all draw: one page at a time, so the timings are the page's own
    await checkLayouts(browser, url, errors);
    await checkThreaded(browser, errors);
    await checkHub(browser, url, errors, { check, cliJson, closeToFixture });
    check(errors.length === 0, 'no console errors' + (errors.length ? ': ' + errors.join(' | ') : ''));
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(userData, { recursive: true, force: true });
  }
  console.log(failures ? `${failures} check(s) failed` : 'all browser checks passed');
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
