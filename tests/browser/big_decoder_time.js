#!/usr/bin/env node
// A benchmark, not a test: a Qwen2.5-0.5B-shaped checkpoint of random bfloat16 weights (24 layers, hidden
// 896, 14 query heads over 2 key/value heads, MLP 4864, vocabulary 151,936, tied: 0.99 GB) opened in the
// playground in headless Chromium through its Model files… input, as a user drops a folder, then run on a
// sentence. Prints the page's heap after loading, the time to load and the forward's time. The weights
// are N(0, 0.02) rounded to bfloat16, the norms 1; the tokenizer is llama_tiny's (its ids are few, the
// model's vocabulary whole), so only the shapes and the bytes are Qwen's.
//   node tests/browser/big_decoder_time.js [SITE_DIR [FOLDER]]
// (default build-web/web/site and a folder in the temporary directory, written once and kept;
// docs/decoders.md quotes its output).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { serveFiles, inside } = require('./static_server');
const { launchChromium } = require('./headless');

const root = path.join(__dirname, '..', '..');
const site = path.resolve(process.argv[2] || path.join(root, 'build-web', 'web', 'site'));
const folder = path.resolve(process.argv[3] || path.join(os.tmpdir(), 'attn-qwen2.5-0.5b-shaped'));

const config = {
  model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'], hidden_size: 896, num_hidden_layers: 24,
  num_attention_heads: 14, num_key_value_heads: 2, intermediate_size: 4864, vocab_size: 151936,
  max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 1000000.0, hidden_act: 'silu',
  tie_word_embeddings: true, use_sliding_window: false, torch_dtype: 'bfloat16',
};

// Every tensor's name and shape, in the order written; norms are filled with ones.
function tensors(c) {
  const H = c.hidden_size, d = H / c.num_attention_heads, q = c.num_attention_heads * d, kv = c.num_key_value_heads * d;
  const out = [['model.embed_tokens.weight', [c.vocab_size, H]], ['model.norm.weight', [H]]];
  for (let i = 0; i < c.num_hidden_layers; ++i) {
    const p = `model.layers.${i}.`;
    out.push([p + 'input_layernorm.weight', [H]], [p + 'post_attention_layernorm.weight', [H]],
             [p + 'self_attn.q_proj.weight', [q, H]], [p + 'self_attn.q_proj.bias', [q]],
             [p + 'self_attn.k_proj.weight', [kv, H]], [p + 'self_attn.k_proj.bias', [kv]],
             [p + 'self_attn.v_proj.weight', [kv, H]], [p + 'self_attn.v_proj.bias', [kv]],
             [p + 'self_attn.o_proj.weight', [H, q]], [p + 'mlp.gate_proj.weight', [c.intermediate_size, H]],
             [p + 'mlp.up_proj.weight', [c.intermediate_size, H]], [p + 'mlp.down_proj.weight', [H, c.intermediate_size]]);
  }
  return out;
}

// bfloat16 of N(0, 0.02) (Box–Muller, rounded to nearest even), or of 1 for a norm.
function fill(bytes, norm) {
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  for (let i = 0; i < bytes.length; i += 2) {
    f[0] = norm ? 1 : 0.02 * Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
    const b = (u[0] + 0x7fff + ((u[0] >>> 16) & 1)) >>> 16;
    bytes[i] = b & 0xff;
    bytes[i + 1] = b >>> 8;
  }
}

function writeFolder() {
  if (fs.existsSync(path.join(folder, 'model.safetensors'))) return;
  fs.mkdirSync(folder, { recursive: true });
  const list = tensors(config);
  const header = {};
  let offset = 0;
  for (const [name, shape] of list) {
    const n = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = { dtype: 'BF16', shape, data_offsets: [offset, offset + n] };
    offset += n;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const file = path.join(folder, 'model.safetensors.part');
  const fd = fs.openSync(file, 'w');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(text.length));
  fs.writeSync(fd, length);
  fs.writeSync(fd, Buffer.from(text));
  for (const [name, shape] of list) {
    const chunk = 1 << 24;
    for (let left = shape.reduce((a, b) => a * b, 1) * 2; left > 0; left -= chunk) {
      const bytes = Buffer.alloc(Math.min(chunk, left));
      fill(bytes, name.endsWith('norm.weight'));
      fs.writeSync(fd, bytes);
    }
  }
  fs.closeSync(fd);
  fs.renameSync(file, path.join(folder, 'model.safetensors'));
  fs.writeFileSync(path.join(folder, 'config.json'), JSON.stringify(config, null, 2));
  fs.copyFileSync(path.join(root, 'tests', 'fixtures', 'pretrained', 'llama_tiny', 'tokenizer.json'),
                  path.join(folder, 'tokenizer.json'));
}

async function main() {
  if (!fs.existsSync(path.join(site, 'index.wasm'))) throw new Error(`no build in ${site}`);
  writeFolder();
  const size = fs.statSync(path.join(folder, 'model.safetensors')).size;
  console.log(`${folder}: model.safetensors ${(size / 2 ** 30).toFixed(2)} GiB`);
  const server = await serveFiles((name) => inside(site, name || 'index.html'));
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForFunction(() => window.attnlab && window.attnlab.firstFrameMs !== null, null, { timeout: 60000 });
    const start = Date.now();
    await page.setInputFiles('#model-files', fs.readdirSync(folder).map((f) => path.join(folder, f)));
    await page.waitForFunction(() => (attnlab.state().loaded_model || '').startsWith('Qwen2ForCausalLM:') ||
                                     attnlab.state().error !== '', null, { timeout: 600000 });
    const loaded = (Date.now() - start) / 1000;
    const s = await page.evaluate(() => attnlab.state());
    if (s.error) throw new Error(`the page refused it: ${s.error}`);
    const heap = await page.evaluate(() => (typeof HEAPU8 !== 'undefined' ? HEAPU8.length : Module.HEAPU8.length));
    console.log(`loaded and run on its first sentence in ${loaded.toFixed(1)} s; wasm heap ${(heap / 2 ** 30).toFixed(2)} GiB`);
    for (const sentence of ['the cat sat on the mat', 'a dog ran in the park and the cat sat on the mat']) {
      const t = Date.now();
      const r = await page.evaluate((x) => { attnlab.set({ sentences: [x] }); return attnlab.state(); }, sentence);
      console.log(`"${sentence}": ${((Date.now() - t) / 1000).toFixed(2)} s ${r.error || ''}`);
    }
  } finally {
    await browser.close();
    server.close();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
