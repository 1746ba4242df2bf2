// What strangers can throw at the page (playground.test.js runs it): random settings at attnlab.set,
// random and mutated files at attnlab.loadModel and at the Model files… input. Every bad one throws or
// shows a message naming the problem; afterwards the page still computes the first tutorial exactly.
// The draws come from a seeded generator, so a failure names a case that can be replayed.
'use strict';

// mulberry32: small, seeded, reproducible.
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)] };
}

const settingKeys = ['sentences', 'seed', 'd_model', 'num_heads', 'num_layers', 'd_ff', 'max_len', 'num_classes',
                     'mask', 'dropout', 'train', 'norm_first', 'model'];

function randomValue(r) {
  switch (r.int(9)) {
    case 0: return r.pick([0, 1, 2, 3, 4, 6, 8, 16, 64]);
    case 1: return r.pick([-1, -0.5, 0.5, 1e9, 1e12, 2 ** 53, 1e308, -1e308, 7, 10.5]);
    case 2: return r.pick(['tutorial', 'transformer', 'loaded', 'none', 'padding', 'causal', 'padding+causal', '']);
    case 3: return r.pick([true, false, null]);
    case 4: return r.pick([[], ['나는 간다'], ['a b', ''], [1, 2], [['x']], ['\u0000', '\ud83d\ude00 x']]);
    case 5: return {};
    case 6: return String.fromCharCode(...Array.from({ length: r.int(12) }, () => r.int(0xd7ff)));
    case 7: return String(r.int(1000));
    default: return r.int(2 ** 31) - 2 ** 30;
  }
}

function randomSettings(r) {
  const settings = {};
  for (let n = 1 + r.int(4); n > 0; n--) settings[r.int(12) ? r.pick(settingKeys) : 'k' + r.int(9)] = randomValue(r);
  return settings;
}

// Bytes: random, or a good file, cut short, with bytes flipped or inserted (`mutations` of them).
function randomBytes(r, good, mutations) {
  if (r.int(5) === 0) return Uint8Array.from({ length: r.int(64) }, () => r.int(256));
  const bytes = Array.from(good);
  if (mutations && r.int(3) === 0) bytes.length = r.int(bytes.length + 1);
  for (let n = mutations; n > 0 && bytes.length; n--) {
    const at = r.int(bytes.length), value = r.pick([0, 0x7f, 0xff, 0x22, 0x2c, 0x7b, 0x5d, 0x39, r.int(256)]);
    if (r.int(2)) bytes[at] = value; else bytes.splice(at, 0, value);
  }
  return Uint8Array.from(bytes);
}

const roles = [['weights', ['model.safetensors', 'weights.safetensors', 'small.safetensors']],
               ['config', ['config.json', 'small.config.json']], ['vocab', ['vocab.json', 'small.vocab.json']],
               [null, ['vocab.txt', 'merges.txt', 'tokenizer_config.json', 'pytorch_model.bin', 'notes.txt']]];

// A third of the time the model's three files with a few mutations (some load), else one to three
// files of random roles and names.
function randomFiles(r, good) {
  const file = (role, mutations) => ({ name: r.pick(role[1]), bytes: randomBytes(r, good[role[0] || r.pick(Object.keys(good))], mutations) });
  if (r.int(3) === 0) return roles.slice(0, 3).map((role) => file(role, r.int(3) ? 0 : 1 + r.int(3)));
  return Array.from({ length: 1 + r.int(3) }, () => file(r.pick(roles), r.int(6)));
}

// `model`: smallModelFiles() (weights, config, vocab as Buffers).
async function checkRobustness(page, check, model, expectTutorial) {
  const good = { weights: Uint8Array.from(model.weights), config: Uint8Array.from(model.config), vocab: Uint8Array.from(model.vocab) };
  const r = generator(20261203);
  const settings = Array.from({ length: 300 }, () => randomSettings(r));
  const set = await page.evaluate((all) => all.map((s) => {
    try { attnlab.set(s); } catch (e) { return { threw: e.message }; }
    const st = attnlab.state();
    return { error: st.error, computed: st.compute_count };
  }), settings);
  const silent = set.findIndex((o) => ('threw' in o && !o.threw) || ('error' in o && o.error === undefined));
  check(silent < 0, `300 random settings at attnlab.set: each taken, or refused with a message ` +
        `(${set.filter((o) => o.threw).length} thrown, ${set.filter((o) => o.error).length} shown as errors)` +
        (silent >= 0 ? `; no message for ${JSON.stringify(settings[silent])}` : ''));

  const files = Array.from({ length: 300 }, () => randomFiles(r, good));
  const loads = await page.evaluate((all) => all.map((f) => {
    const before = attnlab.state().loaded_model;
    try { attnlab.loadModel(f.map((x) => ({ name: x.name, bytes: new Uint8Array(x.bytes) }))); return { loaded: true }; }
    catch (e) { return { message: e.message, kept: attnlab.state().loaded_model === before }; }
  }), files.map((f) => f.map((x) => ({ name: x.name, bytes: [...x.bytes] }))));
  const refused = loads.filter((o) => !o.loaded);
  check(refused.every((o) => o.message && o.kept) && refused.length < loads.length,
        `300 random file sets at attnlab.loadModel: ${loads.length - refused.length} loaded, ${refused.length} refused, ` +
        `each with a message and the model loaded before kept (${refused.filter((o) => !o.message || !o.kept).length} not)`);

  let quiet = 0;
  for (let i = 0; i < 100; i++) {
    await page.evaluate(() => { document.getElementById('model-note').textContent = ''; });
    await page.setInputFiles('#model-files', randomFiles(r, good).map((f) => ({
      name: f.name, mimeType: 'application/octet-stream', buffer: Buffer.from(f.bytes) })));
    // The note says how far the reading has got, then loaded or why not.
    const note = await page.waitForFunction(() => {
      const t = document.getElementById('model-note').textContent;
      return /^(loaded|not loaded)/.test(t) && t;
    }, null, { timeout: 10000 })
      .then((h) => h.jsonValue(), () => '');
    if (!/^(loaded|not loaded: .+)/.test(note)) quiet++;
  }
  check(quiet === 0, `100 random file sets through the Model files… input: each a note saying loaded or why not (${quiet} without)`);

  const tooLarge = await page.evaluate(() => {
    attnlab.set({ model: 'transformer', sentences: ['a b'], d_model: 4096, num_heads: 8, num_layers: 6 });
    return attnlab.state().error;
  });
  check(/needs about [4-9][.\d]* GiB, more than the 4 GiB of memory available/.test(tooLarge),
        'a model beyond the page\'s 4 GiB (4.5 GiB of parameters) is refused naming the limit: ' + tooLarge);

  const alive = await page.evaluate(() => {
    attnlab.set({ model: 'tutorial', sentences: ['나는 오늘 학교에 간다', '나는 오늘 도서관에 간다', '오늘 나는 학교에서 공부한다', '나는 집에 간다'],
                  seed: 0, d_model: 6, max_len: 100, mask: 'padding', dropout: 0, train: false });
    return attnlab.trace();
  });
  const problems = expectTutorial(alive);
  check(problems.length === 0, 'after the random input the page computes the first tutorial exactly ' + problems.slice(0, 3).join('; '));
}

module.exports = { checkRobustness };
