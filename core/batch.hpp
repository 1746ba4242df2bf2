// The engine side of `attn batch`: reading input lines into items, grouping items of equal length
// into mini-batches, and writing each item's stages as one JSON Lines record. No threads and no files
// here (the CLI owns those), so every rule is testable on its own and the same under WebAssembly.
//
// Each item is computed as if it were alone: a mini-batch only ever holds items of the same length, so
// nothing is padded, and the classifier's mean pooling (over all positions, as the tutorial's) and the
// padding mask see exactly the item's own tokens. Rows of a batch are computed independently, so an
// item's numbers do not depend on which items share its batch: output is the same for every
// --batch-size and --threads.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/json.hpp"
#include "core/tokenizer.hpp"
#include "core/trace.hpp"
#include "core/transformer.hpp"

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
};

// What tokenizing needs to know: the vocabulary (null: text items are refused) and the model's limits.
struct ItemRules {
  const Vocab* vocab = nullptr;
  size_t embedding_rows = 0, max_len = 0;
};
// Throws InputError with the reason: unknown token without [UNK], text without a vocabulary, a token
// id outside the embedding table, more tokens than max_len.
Item make_item(RawItem raw, size_t line, const ItemRules& rules);

// Items split into mini-batches of equal length, each at most `batch_size` items: lengths ascending,
// input order within a length.
std::vector<std::vector<Item>> group_by_length(std::vector<Item> items, size_t batch_size);

// Runs the model (evaluation mode) on items of one length: the batch's trace.
Trace compute(const TransformerModel& model, const std::vector<Item>& items, MaskKind mask);

// Which stages each record keeps.
struct StageSelection {
  bool tokens = false;             // "tokens": the record's "tokens" (text items) and "ids"
  std::vector<std::string> names;  // trace stage names, in trace order
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

// One item's record, one line (with its '\n'): {"line", "id", ["tokens",] ["ids",] "stages": {name:
// {"shape", "data"}}}. Each stage is the item's row of the batch's stage, without the batch dimension.
std::string item_record(const Item& item, const Trace& trace, size_t row, const StageSelection& selection);
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
