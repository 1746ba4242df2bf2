// Text generation with a GPT-2 checkpoint or a Llama-family decoder, token by token with a key/value cache (each new token runs
// one position through the model): greedy or sampled (temperature, top-k, top-p, as transformers'
// logits warpers apply them), reproducible from a seed, keeping where each predicting position looked.
// docs/generate.md gives the definitions.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/base/tensor.hpp"
#include "core/model/decoder.hpp"
#include "core/model/pretrained.hpp"
#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer_json.hpp"
#include "core/torch/rng.hpp"

namespace attn {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (the likeliest token)
  size_t top_k = 0;          // 0: no top-k filter
  double top_p = 1.0;        // 1: no nucleus filter
  uint64_t seed = 0;         // torch.manual_seed's value for the draws
};
// InputError naming the flag for a negative or non-finite temperature, top_p outside (0, 1].
void check_sampling(const SamplingOptions& o);

// The distribution a step draws from: softmax(logits / T) over the tokens top-k and top-p keep (the
// others 0), in vocabulary order. With T = 0 (greedy: the likeliest token, the first of equals), the
// plain softmax(logits), unfiltered.
std::vector<double> next_token_distribution(const float* logits, size_t vocab, const SamplingOptions& o);

struct GeneratedToken {
  int64_t id = 0;
  std::string token;   // readable label
  double probability;  // in the distribution it was drawn from (greedy: the plain softmax)
  // Where the position that predicted it looked: per layer [heads, keys] over every earlier token.
  std::vector<Tensor> attention;
  // The distribution's likeliest tokens (at most candidates_kept, most likely first; ties by id).
  std::vector<NextToken> candidates;
};
inline constexpr size_t candidates_kept = 10;
struct Generation {
  std::vector<int64_t> prompt_ids;
  std::vector<std::string> prompt_tokens;
  std::vector<GeneratedToken> tokens;
  std::string text;  // prompt and generated tokens decoded
};

// What generation needs of a language model, whichever it is. Its functions refer to the model, which
// must outlive it.
struct CausalLM {
  size_t vocab = 0, positions = 0, layers = 0;
  std::vector<int64_t> ends;                                        // the tokens that end a generation
  std::function<std::string(int64_t)> label;                        // a token, readable
  std::function<std::string(const std::vector<int64_t>&)> text;     // ids decoded
  std::function<Trace(const std::vector<int64_t>&, KeyValueCache&)> forward;  // one row after the cache's
  std::function<std::string(size_t)> attention_weights;             // layer L's weights stage
  Json description;                                                 // generation_json's "model"
};
// GPT-2 (InputError for BERT, which does not generate).
CausalLM causal_lm(const Pretrained& model);
// A Llama-family decoder, its tokens labelled and decoded by `tokenizer` when it has one ("<id N>" and
// the labels joined by spaces without), ending at `ends` (config.json's eos_token_id).
CausalLM causal_lm(const DecoderModel& model, const JsonTokenizer* tokenizer, std::vector<int64_t> ends);

// The prompt (at least one token), then max_new_tokens tokens; an InputError when they would not fit in
// the model's positions, or for a model that is not GPT-2.
Generation generate(const Pretrained& model, const std::string& prompt, size_t max_new_tokens,
                    const SamplingOptions& options);
// The same from the prompt's ids, with any model.
Generation generate(const CausalLM& model, std::vector<int64_t> prompt_ids, size_t max_new_tokens,
                    const SamplingOptions& options);

// The same one token at a time (the playground draws each as it comes): the constructor runs the prompt
// (and throws what generate() throws), each step() one position. `model` must outlive it.
class TokenGenerator {
 public:
  TokenGenerator(const Pretrained& model, const std::string& prompt, size_t max_new_tokens, const SamplingOptions& o);
  // The same from the prompt's ids (each within the model's vocabulary, else InputError).
  TokenGenerator(const Pretrained& model, std::vector<int64_t> prompt_ids, size_t max_new_tokens, const SamplingOptions& o);
  TokenGenerator(CausalLM model, std::vector<int64_t> prompt_ids, size_t max_new_tokens, const SamplingOptions& o);
  // max_new_tokens generated, or an end token (GPT-2's <|endoftext|>).
  bool done() const { return done_; }
  // The next token (after done(): nothing happens).
  void step();
  // What is generated so far; its text is the prompt and the tokens so far, decoded.
  const Generation& generation() const { return g_; }

 private:
  CausalLM lm_;
  size_t max_new_tokens_;
  SamplingOptions o_;
  Generation g_;
  TorchGenerator gen_;
  KeyValueCache cache_;
  Trace trace_;
  std::vector<int64_t> ids_;  // the prompt's and the new tokens so far
  bool done_ = false;
};

// What to generate, as the JS API (and a Python caller) gives it: {"prompt", "max_new_tokens",
// "temperature", "top_k", "top_p", "seed"}, all but the prompt optional (attn generate's defaults);
// an InputError names an unknown key or a value of the wrong type or range.
struct GenerateSettings {
  std::string prompt;
  size_t max_new_tokens = 20;
  SamplingOptions sampling;
};
GenerateSettings generate_settings(const Json& settings);

// `attn generate --json`: {"model", "prompt": {"ids", "tokens"}, "settings", "generated": [{"id", "token",
// "probability", "attention": [layer][head][key]}], "text"}.
Json generation_json(const Pretrained& model, const Generation& g, size_t max_new_tokens, const SamplingOptions& o);
Json generation_json(const CausalLM& model, const Generation& g, size_t max_new_tokens, const SamplingOptions& o);

}  // namespace attn
