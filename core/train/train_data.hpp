// The data side of `attn train`: labelled data files, the validation split, the order of the
// training batches, and the built-in tasks. No files here (the CLI reads and writes them), so every
// rule is testable on its own; lines are read with `attn batch`'s parsing (core/batch/batch.hpp).
//
// Every random choice comes from a TorchGenerator seeded with the run's seed and separate from the
// model's (the one initialisation and dropout draw from), so shuffling never moves dropout's noise.
// Each has a PyTorch equivalent (tests/torchgen/train_data.py computes them):
//   g = torch.Generator().manual_seed(seed)
//   split:   perm = torch.randperm(N, generator=g); val = sorted(perm[:k]), k as in validation_count
//   shuffle: the stream torch.randperm(N, generator=g) + torch.randperm(N, generator=g) + ... (one g)
//   tasks:   draw(m) = int(torch.randint(0, m, (1,), generator=g)), one generator output each
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/attention.hpp"
#include "core/batch/batch.hpp"
#include "core/torch/rng.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/transformer.hpp"

namespace attn::train {

// --- data files, line by line (the classifier's labelled files and a language model's) ---

// The lines that are not blank, numbered from 1, without end of line or byte-order mark.
std::vector<std::pair<size_t, std::string>> content_lines(const std::string& content);

// The bad lines of one file, reported together so that one run shows what to fix: the first 10 listed.
class LineErrors {
 public:
  explicit LineErrors(const std::string& path) : path_(path) {}
  void add(size_t line, const std::string& reason) {
    if (count_++ < listed) listed_ += "\n  line " + std::to_string(line) + ": " + reason;
  }
  void throw_if_any() const;

 private:
  static constexpr size_t listed = 10;
  std::string path_, listed_;
  size_t count_ = 0;
};

// --- labelled data files (--data, --val-data) ---

// JSON Lines {"text": "…", "label": k} or {"ids": […], "label": k}, optionally with "id" (other keys
// ignored); or TSV `label<TAB>sentence`. By the file name (.jsonl, .ndjson, .json: JSON Lines; .tsv:
// TSV), else by the first line that is not blank: '{' first means JSON Lines.
enum class DataFormat { jsonl, tsv };
DataFormat data_format(const std::string& path, const std::string& first_line);

// One good line before tokenizing (raw.error is empty).
struct LabelledLine {
  size_t line = 0;  // 1-based
  batch::RawItem raw;
  int64_t label = 0;
};

// Parses a data file's bytes (`path` names it in messages and decides the format). Lines end with LF
// or CRLF; line 1 may start with a byte-order mark; blank lines are skipped. Strict: a bad line
// (invalid UTF-8, malformed JSON, missing or non-integer or negative label, empty text, bad "ids" or
// "id", a TSV line without a tab or with a label that is not a non-negative integer) is an InputError
// naming the file and listing the first 10 bad lines with their reasons; so is a file without items.
std::vector<LabelledLine> parse_data(const std::string& path, const std::string& content);

// The vocabulary of a run without --vocab, as `attn batch` builds it (batch::add_sentence_words):
// [PAD] = 0, then each word of the text lines in order of first appearance (no [UNK]). Call it on the
// training lines, then on the validation lines, so that validation words are known too.
void add_words(Vocab& vocab, const std::vector<LabelledLine>& lines);

// Tokens [second, second + length) of an item repeating its tokens [first, first + length): the
// induction tasks' items (core/train/train_lm.hpp) carry one; length 0: none.
struct RepeatedSegment {
  size_t first = 0, second = 0, length = 0;
};

// A tokenized item: batch::Item (line, id, tokens, ids) and its class.
struct LabelledItem : batch::Item {
  int64_t label = 0;
  RepeatedSegment repeat;  // a language task's, where it made one
};

// Tokenizes with batch::make_item: an unknown word becomes [UNK] if the vocabulary has it; a token id
// must be below rules.embedding_rows and an item at most rules.max_len long. Bad items are listed in
// one InputError as in parse_data.
std::vector<LabelledItem> make_items(const std::string& path, const std::vector<LabelledLine>& lines,
                                     const batch::ItemRules& rules);

// Throws InputError naming the first item whose label is not below num_classes.
void check_labels(const std::vector<LabelledItem>& items, size_t num_classes);
// The highest label + 1 (0 for no items): num_classes when the data decides it.
size_t class_count(const std::vector<LabelledItem>& items);

// The items as JSON Lines (--save-data), one per line in order: {"id"?, "text" | "ids", "label"}, "id"
// only when the item has one, "text" (the tokens joined by spaces) for text items. parse_data reads it
// back; item k is on line k when items are numbered 1, 2, … (as generate_task numbers them).
std::string data_jsonl(const std::vector<LabelledItem>& items);

// --- the validation split (--val-fraction) ---

// k = floor(fraction · n + 0.5) (halves round up), at least 1 and at most n - 1. Throws InputError
// unless 0 < fraction < 1 and n >= 2.
size_t validation_count(size_t n, double fraction);

struct Datasets {
  std::vector<LabelledItem> train, val;
};
// Validation: the items at the first k indices of randperm(n) from a generator seeded with `seed`,
// in file order; training: the others, in file order. Items keep their line numbers.
Datasets split_validation(std::vector<LabelledItem> items, double fraction, uint64_t seed);

// --- batches ---

// torch.randperm(n, generator=g) on the CPU (torch 1.13), bit for bit: r = 0..n-1, then for i in
// 0..n-2: swap(r[i], r[i + random() % (n - i)]) with one 32-bit output each (n - 1 in all, for any n).
std::vector<size_t> randperm(TorchGenerator& generator, size_t n);

// The items of batch k of size B: positions k·B … k·B+B-1 of an endless stream of item indices.
// Without shuffling the stream cycles 0, 1, …, n-1, 0, 1, …; with it, it is perm_0, perm_1, … where
// perm_e = randperm(n) drawn from one generator seeded with `seed`, so a batch may straddle two
// epochs. Any batch follows from (k, n, B, seed, shuffle) alone, so a resumed run starts at any step:
// the current epoch's permutation is cached, a later epoch is reached by skipping the n - 1 outputs of
// each permutation in between, an earlier one by reseeding first (O(epoch · n) draws at worst, about
// a millisecond per million items).
class BatchOrder {
 public:
  // Throws InputError for n == 0 or batch_size == 0.
  BatchOrder(size_t n, size_t batch_size, bool shuffle, uint64_t seed);
  std::vector<size_t> batch(size_t k);

 private:
  size_t item_at(size_t position);
  const std::vector<size_t>& permutation(size_t epoch);

  size_t n_, batch_size_;
  bool shuffle_;
  TorchGenerator generator_;
  size_t next_epoch_ = 0;      // the epoch whose permutation the generator draws next
  std::vector<size_t> perm_;   // epoch next_epoch_ - 1's, once drawn
};

// --epochs E: ceil(E · n / batch_size) steps.
size_t steps_for_epochs(size_t epochs, size_t n, size_t batch_size);

// A training batch: the items' ids padded with [PAD] (id 0) to the longest one.
struct TrainBatch {
  std::vector<int64_t> ids;  // [batch, seq], row-major
  size_t batch = 0, seq = 0;
  std::vector<int64_t> labels;  // [batch]
  std::vector<size_t> items;    // the indices the batch was made of
};
TrainBatch make_batch(const std::vector<LabelledItem>& items, const std::vector<size_t>& indices);

// --- built-in tasks (--task NAME) ---
//
// Item i (0-based) has label i mod num_classes, so classes are balanced exactly, and is drawn from
// the task's one generator after items 0 … i-1, with draw(m) = g.random() mod m (one output; it is
// torch.randint(0, m, (1,), generator=g)) and randperm(m) as above:
//   duplicate (2 classes; 32 tokens a … z, A … F): L = 4 + draw(7); s = randperm(32) as those symbols. Label 0:
//     s[0 … L-1], all distinct. Label 1: s[0 … L-2], then t = s[draw(L-1)] inserted before position
//     q = draw(L) (appended when q = L-1): exactly one symbol twice.
//   brackets (2 classes; tokens "(" ")"), by i mod 4:
//     1, 3 (label 1): balanced, length 2·(1 + draw(8)); left to right "(" when nothing is open, ")"
//       when every remaining bracket must close, else "(" if draw(2) == 0, else ")";
//     0 (label 0): unequal counts: length 2 + draw(15), each "(" if draw(2) == 0, and the last one
//       flipped if the counts came out equal;
//     2 (label 0): equal counts but a prefix that closes more than it opened: h = 1 + draw(8), then
//       position j is "(" if randperm(2h)[j] < h, drawn again while the result is balanced.
//   places (3 classes: 0 학교, 1 도서관, 2 집; the first tutorial's words and a few more):
//     subject = [나는 너는 우리는 그는 그녀는][draw(5)], time = [none 오늘 내일 어제][draw(4)], the
//     time word first if draw(2) == 0 (drawn only when there is one) else after the subject, and
//     study = draw(2) == 1: place 학교에서 | 도서관에서 | 집에서 and verb 공부한다, else place 학교에 |
//     도서관에 | 집에 and verb 간다 (공부했다, 갔다 with 어제). [time] subject [time] place verb. Attention
//     is not needed for it: the place word's own embedding reaches the classifier through mean pooling.
//   asked (3 classes, the place of the person asked about; the words of places plus 가고, 공부하고):
//     people = randperm(5) (the subjects above), places = randperm(3), time = [none 오늘 내일 어제][draw(4)]
//     first when there is one; then for each clause k = 0, 1, 2: study = draw(2) == 1, person people[k],
//     place places[k] (학교에 | … or 학교에서 | … when studying), verb 가고 | 공부하고, the last clause's
//     간다 | 공부한다 (갔다 | 공부했다 with 어제); last, the person whose place is label i mod 3 again
//     ("나는 학교에 가고 너는 집에 가고 그는 도서관에 간다 너는": 2). Every item names all three places,
//     so only attention (from the last word to the place after the same person) tells them apart.
// Defaults (tasks()): AdamW at lr 3e-3, batch 32, dropout 0, d_model 32, d_ff 64, pre-norm layers
// (norm_first: much faster to learn here than the tutorial's post-norm). Each reaches >= 95 %
// validation accuracy (docs/training.md has the measured figures; the step counts leave a margin):
//   duplicate: 1 head, 1 layer, max_len 16, mask padding+causal, batch 64, 8000 steps, 20000 train /
//     1000 val items (99.6 % at 4000 steps, 100 % at 8000 for seed 0; the slowest to learn);
//   brackets: 2 heads, 1 layer, max_len 16, mask padding+causal, 1500 steps, 4000 / 1000 (99.5-100 %;
//     about 40 s);
//   places: 2 heads, 1 layer, max_len 8, mask padding, 300 steps, 1200 / 300 (100 %; 2-3 s);
//   asked: 2 heads, 2 layers, max_len 16, mask padding+causal, lr 1e-3, 4000 steps, 4000 / 1000 (100 %
//     for seeds 0-4, reached by step 1500-3000; about 6 s).

// A task's data and the model and training settings it is meant to be learned with (what it asks and
// what its heads should show are the UI's texts, in both languages: ui/strings_table.inc).
struct TaskSpec {
  std::string name;
  std::vector<std::string> tokens;  // the vocabulary, by id ([PAD] = 0)
  TransformerConfig model;          // vocab_size = tokens.size()
  MaskKind mask = MaskKind::padding;
  std::string optimizer = "adamw";
  double lr = 3e-3;
  size_t batch_size = 32, steps = 1000;
  size_t train_size = 0, val_size = 0;
  // Item `index`'s tokens, drawn from `g`; its label is index mod num_classes.
  std::vector<std::string> (*sample)(TorchGenerator& g, size_t index) = nullptr;
};

const std::vector<TaskSpec>& tasks();               // duplicate, brackets, places, asked
const TaskSpec& find_task(const std::string& name);  // InputError listing the names

// `count` items from one generator seeded with `seed`, item i (0-based) drawn after items 0..i-1 and
// numbered line i + 1, with no id.
std::vector<LabelledItem> generate_task(const TaskSpec& task, size_t count, uint64_t seed);
// The first train_size items of generate_task(task, train_size + val_size, seed) for training, the
// rest (numbered again from 1) for validation.
Datasets task_data(const TaskSpec& task, size_t train_size, size_t val_size, uint64_t seed);

// The duplicate task's repeated pair: the positions (i < j) of the first two equal ids, if any.
std::optional<std::pair<size_t, size_t>> twin_positions(const batch::Item& item);

}  // namespace attn::train
