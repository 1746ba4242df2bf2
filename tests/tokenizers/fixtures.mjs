// Small tokenizer.json files shaped as the real ones of each decoder family (the Hub's are not read
// here): the same normalizers, pre-tokenizers, model options, added tokens, post-processor and
// decoder, with a vocabulary and merges learnt here by plain BPE from a fixed corpus, so every run
// writes the same bytes. check.mjs compares core/text/tokenizer_json.* with tokenizers.js on them.
//   node fixtures.mjs OUT_DIR   writes OUT_DIR/<family>.json (the committed tests/data/tokenizers)
import fs from 'node:fs';
import path from 'node:path';

// The patterns the real files carry.
export const LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const CORPUS = [
  'The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away.',
  "It's a tokenizer test: we're counting tokens, they'll merge pairs, I'd say it's working.",
  'Attention is all you need. Transformers compute attention step by step, layer by layer.',
  'def attention(query, key, value):\n    scores = query @ key.T / math.sqrt(d)\n    return softmax(scores) @ value\n',
  'for (int i = 0; i < 10; ++i) { total += values[i] * 2; }',
  'In 2024 the model had 8000000000 parameters, 32 layers and 4096 hidden units; 3.14159 and 1,000,000.',
  '나는 오늘 학교에 간다. 고양이가 밥을 먹는다. 나는 오늘 도서관에 간다. 오늘 나는 학교에서 공부한다.',
  '안녕하세요! 반갑습니다. 고양이가 잔다. 나는 내일 집에 간다.',
  'Hello world! Hello there, hello again. hello hello HELLO.',
  'the cat sat on the mat, the cat played with the dog and the player ran happily.',
  '    indented line\n\n\nthree newlines   and   spaces\t\ttabs',
];

const BYTES = (() => {  // GPT-2's bytes_to_unicode
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const out = new Array(256);
  bs.forEach((b, i) => { out[b] = String.fromCharCode(cs[i]); });
  return out;
})();
const byteSymbols = (s) => Array.from(new TextEncoder().encode(s), (b) => BYTES[b]).join('');
const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

// Plain BPE: the most frequent adjacent pair merged, ties broken by the pair's text, until `count`
// merges or no pair occurs twice. `words`: [symbols, frequency].
function learnMerges(words, count) {
  const merges = [];
  for (let k = 0; k < count; k++) {
    const pairs = new Map();
    for (const [w, f] of words)
      for (let i = 0; i + 1 < w.length; i++) {
        const key = w[i] + '\u0000' + w[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + f);
      }
    let best = null, bestCount = 1;
    for (const [key, c] of pairs) if (c > bestCount || (c === bestCount && best !== null && key < best)) { best = key; bestCount = c; }
    if (best === null) break;
    const [a, b] = best.split('\u0000');
    merges.push([a, b]);
    for (const entry of words) {
      const w = entry[0], out = [];
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) { out.push(a + b); i++; } else out.push(w[i]);
      }
      entry[0] = out;
    }
  }
  return merges;
}

function countWords(pieces) {
  const counts = new Map();
  for (const p of pieces) counts.set(p, (counts.get(p) ?? 0) + 1);
  return [...counts].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0)).map(([w, c]) => [Array.from(w), c]);
}

const unique = (list) => list.filter((t, i) => list.indexOf(t) === i);
const vocabObject = (tokens) => Object.fromEntries(tokens.map((t, i) => [t, i]));
const added = (content, id, special = true, extra = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special, ...extra,
});
const template = (bos, id) => ({
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
  pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
         { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
  special_tokens: { [bos]: { id: bos, ids: [id], tokens: [bos] } },
});
const byteLevelPre = (useRegex, prefix = false) => ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: true, use_regex: useRegex });
const skeleton = () => ({ version: '1.0', truncation: null, padding: null });

// Byte-level BPE: the 256 byte symbols, then each merge's result; `head` tokens first.
function byteLevelModel(merges, head = [], extra = []) {
  const tokens = unique([...head, ...BYTES, ...merges.map(([a, b]) => a + b), ...extra]);
  return { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: vocabObject(tokens) };
}
const byteLevelMerges = (count) =>
  learnMerges(countWords(CORPUS.flatMap((s) => (s.match(GPT2_SPLIT) ?? []).map(byteSymbols))), count);

function llama3() {
  const merges = byteLevelMerges(400);
  // Whole words no merge sequence reaches, so ignore_merges decides their tokens.
  const model = byteLevelModel(merges, [], ['Ġtokenization', 'Ġunbelievable', 'Ġsupercalifragilistic']);
  model.ignore_merges = true;
  model.merges = merges;  // the newer ["a", "b"] form
  const n = Object.keys(model.vocab).length;
  const specials = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>', '<|start_header_id|>',
                    '<|end_header_id|>', '<|eot_id|>'];
  return {
    ...skeleton(), added_tokens: specials.map((t, i) => added(t, n + i)), normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: LLAMA3_PATTERN }, behavior: 'Isolated', invert: false }, byteLevelPre(false)] },
    post_processor: { type: 'Sequence', processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true }, template('<|begin_of_text|>', n)] },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model,
  };
}

function qwen2() {
  const merges = byteLevelMerges(300);
  const model = byteLevelModel(merges);
  model.merges = merges.map(([a, b]) => `${a} ${b}`);
  const n = Object.keys(model.vocab).length;
  return {
    ...skeleton(), added_tokens: ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((t, i) => added(t, n + i)),
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN2_PATTERN }, behavior: 'Isolated', invert: false }, byteLevelPre(false)] },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model,
  };
}

// GPT-NeoX (Pythia): NFC, GPT-2's ByteLevel split, <|endoftext|> and <|padding|> first, and runs of
// spaces as added tokens that are not special (normalized, matched in the text).
function neox() {
  const merges = byteLevelMerges(300);
  const model = byteLevelModel(merges, ['<|endoftext|>', '<|padding|>']);
  model.merges = merges.map(([a, b]) => `${a} ${b}`);
  const n = Object.keys(model.vocab).length;
  return {
    ...skeleton(),
    added_tokens: [added('<|endoftext|>', 0), added('<|padding|>', 1), added('    ', n, false), added('  ', n + 1, false)],
    normalizer: { type: 'NFC' }, pre_tokenizer: byteLevelPre(true),
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model,
  };
}

// A byte-level BPE behind NFKC and lower-casing, with ByteLevel's prefix space and lines cut out.
function nfkcLowercase() {
  const merges = byteLevelMerges(200);
  const model = byteLevelModel(merges, ['<|endoftext|>']);
  model.merges = merges.map(([a, b]) => `${a} ${b}`);
  return {
    ...skeleton(), added_tokens: [added('<|endoftext|>', 0)],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      // A Regex, not a String: tokenizers.js keeps a removed String delimiter (it splits on a capture group).
      { type: 'Split', pattern: { Regex: '\n' }, behavior: 'Removed', invert: false }, byteLevelPre(true, true)] },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model,
  };
}

// SentencePiece-style BPE: words with ▁ for their space, characters seen twice in the corpus, the 256
// <0xNN> byte tokens for every other character (byte_fallback).
function sentencePieceModel(specials, merges) {
  const chars = new Map();
  for (const s of CORPUS) for (const c of s.replaceAll(' ', '▁')) chars.set(c, (chars.get(c) ?? 0) + 1);
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const alphabet = [...chars].filter(([, c]) => c >= 2).map(([c]) => c).sort();
  const tokens = unique([...specials, ...bytes, '▁', ...alphabet, ...merges.map(([a, b]) => a + b)]);
  return { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab: vocabObject(tokens),
           merges: merges.map(([a, b]) => `${a} ${b}`) };
}
const sentencePieceMerges = (count) =>
  learnMerges(countWords(CORPUS.flatMap((s) => s.split(' ').filter(Boolean).map((w) => '▁' + w))), count);
const spDecoders = [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }];

// Llama 2 (and TinyLlama, which ships Llama 2's tokenizer): Prepend ▁ and Replace spaces, no pre-tokenizer.
function llama2() {
  const specials = ['<unk>', '<s>', '</s>'];
  return {
    ...skeleton(), added_tokens: specials.map((t, i) => added(t, i)),
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null, post_processor: template('<s>', 1),
    decoder: { type: 'Sequence', decoders: [...spDecoders, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: sentencePieceModel(specials, sentencePieceMerges(300)),
  };
}

// Mistral: a Metaspace pre-tokenizer prepending ▁ to the first section only, [INST] control tokens.
function mistral() {
  const specials = ['<unk>', '<s>', '</s>', '[INST]', '[/INST]'];
  return {
    ...skeleton(), added_tokens: specials.map((t, i) => added(t, i)), normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false },
    post_processor: template('<s>', 1),
    decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false }] },
    model: sentencePieceModel(specials, sentencePieceMerges(300)),
  };
}

// Gemma: spaces replaced by ▁ with nothing prepended, <pad> <eos> <bos> <unk> <mask> first.
function gemma() {
  const specials = ['<pad>', '<eos>', '<bos>', '<unk>', '<mask>', '<start_of_turn>', '<end_of_turn>'];
  return {
    ...skeleton(), added_tokens: specials.map((t, i) => added(t, i)),
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '▁' }, pre_tokenizer: null,
    post_processor: template('<bos>', 2), decoder: { type: 'Sequence', decoders: spDecoders },
    model: sentencePieceModel(specials, sentencePieceMerges(300)),
  };
}

export const families = { llama3, qwen2, neox, nfkc_lowercase: nfkcLowercase, llama2, mistral, gemma };
export const fixtureText = (build) => JSON.stringify(build(), null, 1) + '\n';

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node fixtures.mjs OUT_DIR');
  fs.mkdirSync(out, { recursive: true });
  for (const [name, build] of Object.entries(families)) fs.writeFileSync(path.join(out, `${name}.json`), fixtureText(build));
}
