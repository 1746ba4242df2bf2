// The engine side of `attn batch`: reading input lines into items, grouping items of equal length
// into mini-batches, and writing each item's stages as one JSON Lines record. No threads and no files
// here (the CLI owns those), so every rule is testable on its own and the same under WebAssembly.
//
// Each item is computed as if it were alone, never padded, so the classifier's mean pooling (over all
// positions, as the tutorial's) and the padding mask see exactly the item's own tokens: a mini-batch
// holds items of one length, or, on a backend that packs sequences, items of any lengths packed row
// after row (DeviceModel::classify_packed). Rows of a batch are computed independently, so an item's
// numbers do not depend on which items share its batch: output is the same for every --batch-size and
// --threads.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/trace.hpp"
#include "core/model/transformer.hpp"

namespace attn {
class DeviceModel;
}

namespace attn::batch {

enum class InputFormat { text, jsonl };
// "text" | "jsonl" | "auto"; auto decides by the file name (.jsonl, .ndjson, .json: JSON Lines; .txt:
// text) and otherwise (standard input, other names) by the first line: '{' first means JSON Lines.
std::optional<InputFormat> format_from_name(const std::string& path);
InputFormat format_from_first_line(const std::string& line);

// One input line before tokenizing: a sentence or token ids, and the id the line gave (null if none);
// or why the line is bad (the id kept when the line gave a valid one).
struct RawItem {
  Json id;
  std::optional<std::string> text;
  std::vector<int64_t> ids;
  std::string error;  // empty: good so far
};
// `text` is the line without its end-of-line (CR included) and, on line 1, without a byte-order mark.
// Text: the line is the sentence. JSON Lines: an object with "text" (a string) or "ids" (non-negative
// integers), and optionally "id" (a string or an integer); other keys are ignored. A bad line (invalid
// UTF-8, empty, malformed JSON, wrong fields) gives its reason in `error`.
RawItem parse_line(const std::string& text, InputFormat format);
// Removes a trailing CR, and on line 1 a UTF-8 byte-order mark.
void strip_line(std::string& text, size_t line);

// Duplicate ids: the first line with an id owns it, whether or not that line is otherwise good.
class IdRegistry {
 public:
  // The earlier line holding `id`, or nullopt (and `line` now holds it). Null ids are never duplicates.
  // Keeps a 64-bit hash per id, not the id: memory grows by about 40 bytes per distinct id.
  std::optional<size_t> claim(const Json& id, size_t line);

 private:
  std::unordered_map<uint64_t, size_t> first_line_;
};

// An item ready to compute.
struct Item {
  size_t line = 0;
  Json id;
  std::vector<std::string> tokens;  // text items: the words (unknown ones as [UNK]); ids items: empty
  std::vector<int64_t> ids;
  std::vector<int64_t> type_ids;  // a BERT checkpoint's segments (a tab in the text); empty: all 0
};

// What tokenizing needs to know: the vocabulary (null: text items are refused) and the model's limits.
struct ItemRules {
  const Vocab* vocab = nullptr;
  size_t embedding_rows = 0, max_len = 0;
  const LoadedModel* checkpoint = nullptr;  // BERT, GPT-2 or a decoder: its tokenizer instead of the vocabulary
};
// Throws InputError with the reason: unknown token without [UNK], text without a vocabulary, a token
// id outside the embedding table, more tokens than max_len.
Item make_item(RawItem raw, size_t line, const ItemRules& rules);

// Items split into mini-batches of equal length, each at most `batch_size` items: lengths ascending,
// input order within a length.
std::vector<std::vector<Item>> group_by_length(std::vector<Item> items, size_t batch_size);

// Items in mini-batches of `batch_size` whatever their lengths, for packed sequences, in input order:
// mixed lengths keep every batch near batch_size × the mean length in rows, where sorting by length
// gave batches of 4 to 32 rows per item and products too short to run at the GEMM's best rate.
std::vector<std::vector<Item>> group_by_size(std::vector<Item> items, size_t batch_size);

// Runs the model (evaluation mode) on items of one length: the batch's trace, by the exact path, or
// by the fast path on `device` when given (its stages but the scores).
Trace compute(const TransformerModel& model, const std::vector<Item>& items, MaskKind mask,
              DeviceModel* device = nullptr);
// A checkpoint (BERT, GPT-2, a Llama-family decoder) on items of one length (no padding).
Trace compute(const LoadedModel& model, const std::vector<Item>& items);
// The fast path on items of any lengths packed together (device's backend packs sequences): one
// trace per item, the item alone ([1, S, ...]: row 0 for item_arrays).
std::vector<Trace> compute_packed(const std::vector<Item>& items, MaskKind mask, DeviceModel& device);

// Which stages each record keeps.
struct StageSelection {
  bool tokens = false;             // "tokens": the record's "tokens" (text items) and "ids"
  std::vector<std::string> names;  // trace stage names, in trace order
  std::vector<PrintDtype> dtypes;  // each name's dtype (ids and masks are written as integers in JSON)
  std::vector<size_t> heads;       // heads kept of per-head stages ([B, H, S, S]); empty = all
};
// `requested`: stage names as in the trace ("logits", "layers.3.self_attn.attention_weights") or a
// per-layer name ("attention_weights", "self_attn.attention_weights", "norm1") that stands for that
// stage of every layer in `layers` (empty = all). Empty `requested` = the default: tokens, logits (the
// encoder output for --encoder-only models) and the last layer's attention weights. `sample` is any
// trace of the model, to know the names. Throws InputError naming an unknown stage, layer or head.
StageSelection select_stages(const Trace& sample, const TransformerConfig& config,
                             const std::vector<std::string>& requested, const std::vector<size_t>& layers,
                             const std::vector<size_t>& heads);
// What select_stages needs of a model: its layers, heads and default stages.
struct ModelOutline {
  size_t num_layers = 0, num_heads = 0;
  std::vector<std::string> default_stages;
};
ModelOutline outline(const TransformerConfig& config);
// A checkpoint's defaults: tokens, the last layer's attention weights and last_hidden_state (BERT) or
// next_token_probs (GPT-2, the decoders).
ModelOutline outline(const LoadedModel& checkpoint);
StageSelection select_stages(const Trace& sample, const ModelOutline& model, const std::vector<std::string>& requested,
                             const std::vector<size_t>& layers, const std::vector<size_t>& heads);

// One item's output in every format: its selected stages, each the item's row of the batch's stage
// without the batch dimension (per-head stages cut to the selected heads), in `selection.names` order.
struct ItemArrays {
  size_t line = 0;
  Json id;
  std::vector<std::string> tokens;  // text items; empty for ids items
  std::vector<int64_t> ids;
  std::vector<Tensor> stages;
};
ItemArrays item_arrays(const Item& item, const Trace& trace, size_t row, const StageSelection& selection);
// One item's record, one line (with its '\n'): {"line", "id", ["tokens",] ["ids",] "stages": {name:
// {"shape", "data"}}}.
std::string item_record(const ItemArrays& item, const StageSelection& selection);
std::string item_record(const Item& item, const Trace& trace, size_t row, const StageSelection& selection);
// The index line of --format safetensors and npy-dir: {"line", "id", "length"[, "tokens"][, "ids"]}
// ("tokens" for text items and "ids" only when `with_ids`, both only with the tokens stage).
std::string index_record(const ItemArrays& item, const StageSelection& selection, bool with_ids);

// How a selected stage's item shape depends on the item's length S: fixed (logits: [C]) or not
// (attention_weights: [H, S, S]); `shape` is the item shape when fixed, else only its rank counts.
struct StageLayout {
  std::string name;
  bool fixed = false;
  Shape shape;
};
// Compares each selected stage at lengths 1 and 2.
std::vector<StageLayout> stage_layouts(const TransformerModel& model, MaskKind mask, const StageSelection& selection);
std::vector<StageLayout> stage_layouts(const LoadedModel& model, const StageSelection& selection);

// --- safetensors written piece by piece (--format safetensors and attn merge) ---

struct TensorEntry {
  std::string name, dtype;  // "F32", "I64", "U8"
  Shape shape;
};
size_t dtype_size(const std::string& dtype);  // 4, 8, 1; throws InputError for others
// The file's first bytes: the 8-byte length and the JSON header (data_offsets one tensor after the
// other, in the given order), padded with spaces to a multiple of 8 bytes. Deterministic.
std::string safetensors_header(const std::vector<TensorEntry>& tensors,
                               const std::map<std::string, std::string>& metadata);
// A header's tensors, in the order of their data, with where each starts in the data; checks the
// rules (known dtype, offsets matching shape, data contiguous and exactly `data_size` bytes).
struct StoredTensor {
  TensorEntry entry;
  uint64_t begin = 0, end = 0;
};
struct SafetensorsHeader {
  std::vector<StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + header length
};
// `file_size`: the whole file's. Throws InputError naming `path` and the rule broken.
SafetensorsHeader parse_safetensors_header(const std::string& path, const std::string& json_text,
                                           uint64_t file_size);

// --- the identity of a run (attn merge and --resume check it) ---

// FNV-1a, 64 bits (not cryptographic: it tells runs apart, it does not guard against forgery).
class Fnv1a {
 public:
  void update(const void* data, size_t size);
  void update(const std::string& text) { update(text.data(), text.size()); }
  uint64_t value() const { return h_; }
  std::string hex() const;  // 16 lowercase hex digits

 private:
  uint64_t h_ = 14695981039346656037ull;
};
// {"size", "fnv1a64"} of the tokens in id order (each followed by a NUL byte); null without one.
Json vocab_identity(const Vocab* vocab);
// {"config", "fnv1a64"}: the config, and the state_dict (names, shapes, float32 bytes) hashed.
Json model_identity(const TransformerModel& model);
// A checkpoint's: its family and sizes, its weights and its tokenizer's tokens hashed.
Json model_identity(const Pretrained& model);
Json model_identity(const LoadedModel& checkpoint);  // a BERT / GPT-2 checkpoint's, or a decoder's

// The vocabulary of a run without --vocab, built in a first pass: [PAD] = 0, then each word of each
// sentence (a text line, a JSON line's "text") in order of first appearance. A line that does not
// parse adds nothing; a line that parses but is refused later (too long, duplicate id) adds its words.
void add_sentence_words(Vocab& vocab, const RawItem& raw);
// {"[PAD]": 0, "word": 1, ...} in id order, one line: what --vocab reads.
std::string vocab_json(const Vocab& vocab);
// A line that cannot be computed, as written to OUTPUT.errors.jsonl: {"line", "id", "reason"}.
std::string error_record(size_t line, const Json& id, const std::string& reason);
// The line number a record (item or error) starts with; throws InputError if it does not start with
// {"line":N — the merge reads only this much of each record.
size_t record_line(const std::string& record);

// Shard K of N (1-based): the lines whose 1-based number n has (n - 1) mod N == K - 1.
struct Shard {
  size_t index = 1, count = 1;
  bool owns(size_t line) const { return (line - 1) % count == index - 1; }
};
Shard parse_shard(const std::string& text);  // "K/N"; throws InputError

}  // namespace attn::batch
