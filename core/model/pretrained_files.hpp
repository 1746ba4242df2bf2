// A Hugging Face checkpoint folder's files (config.json, model.safetensors, the tokenizer's files),
// found by their names, loaded into a model with its own tokenizer, and sentences turned into its input.
// Both the CLI (a folder or files by name) and the playground (files the user picks) come here.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/text/tokenizer_bpe.hpp"
#include "core/model/pretrained.hpp"
#include "core/text/tokenizer_wordpiece.hpp"

namespace attn {

struct PretrainedFiles {
  std::string config, weights, vocab, merges, tokenizer_config;  // paths; vocab: vocab.txt or vocab.json
  std::string tokenizer_json;  // the Llama family's tokenizer (core/text/tokenizer_json.hpp)
};

// Sorts paths by file name: config.json, *.safetensors (or model.safetensors.index.json, whose shards
// it names: then the weights' path is the index's), vocab.txt / vocab.json, merges.txt,
// tokenizer_config.json, tokenizer.json (read for the Llama family's decoders; BERT and GPT-2 read
// their own files); other files (special_tokens_map.json, …) are not needed. A
// pytorch_model.bin (or any .bin / .pt / .pth) without safetensors is an InputError saying how to
// convert it; so is a missing config or weights file.
PretrainedFiles sort_pretrained_files(const std::vector<std::string>& paths);
PretrainedFiles pretrained_files_in(const std::string& dir);  // the folder's files, sorted so
// A transformers config.json from its file (InputError naming it for bad JSON or values).
PretrainedConfig read_pretrained_config(const std::string& path);
// Whether a JSON config file is a transformers config (has model_type or architectures), not the tutorial's.
bool is_pretrained_config(const Json& json);

using PretrainedTokenizer = std::variant<WordPieceTokenizer, BytePairTokenizer>;
size_t tokenizer_size(const PretrainedTokenizer& tokenizer);
const std::string& tokenizer_token(const PretrainedTokenizer& tokenizer, int64_t id);
std::optional<int64_t> tokenizer_find(const PretrainedTokenizer& tokenizer, const std::string& token);

struct Pretrained {
  PretrainedModel model;
  PretrainedTokenizer tokenizer;
};

// Token `id` as a label (byte-level tokens readable), "<id N>" beyond the tokenizer's vocabulary.
std::string token_label(const Pretrained& model, int64_t id);

// Reads and checks every file (each reader's InputError names its file): the family from config.json,
// the tokenizer that family needs (vocab.txt for BERT, vocab.json + merges.txt for GPT-2) and whose ids
// must fit the embedding. `progress` follows the weights' reading (read_safetensors).
Pretrained load_pretrained_files(const PretrainedFiles& files, const ReadProgress& progress = nullptr);

struct PretrainedBatch {
  PretrainedInput input;
  std::vector<std::vector<std::string>> tokens;  // readable labels, [PAD] where padded
};
// Each sentence through the model's tokenizer (BERT: [CLS] … [SEP]; a tab starts a second segment of
// token type 1), right-padded to the longest with BERT's [PAD] or GPT-2's <|endoftext|>.
PretrainedBatch tokenize_pretrained(const Pretrained& model, const std::vector<std::string>& sentences);

struct NextToken {
  int64_t id = 0;
  std::string token;  // readable
  double probability = 0;
};
// The k most likely of V next tokens after one position's logits, softmax(logits / temperature), each
// named by `label`; InputError for a temperature that is not a positive number.
std::vector<NextToken> top_next_tokens(const float* logits, size_t V, size_t k, double temperature,
                                       const std::function<std::string(int64_t)>& label);
// A causal model's k most likely next tokens after row `row` of its trace (logits [B, S, V]) at the row's
// last real token, softmax(logits / temperature), each named by `label`.
std::vector<NextToken> next_tokens(const Trace& trace, const PretrainedInput& input, size_t row, size_t k,
                                   double temperature, const std::function<std::string(int64_t)>& label);
// GPT-2's, after row `row` of a gpt2_forward trace.
std::vector<NextToken> next_tokens(const Pretrained& model, const Trace& trace, const PretrainedInput& input,
                                   size_t row, size_t k, double temperature);

}  // namespace attn
