// What kind of head is this? TransformerLens's head detector (transformer_lens/head_detector.py):
// a detection pattern says where a head of a kind attends (previous token: the position before;
// duplicate token: earlier copies of the current token; induction: the token after each earlier copy),
// and a head's score is how well its attention weights match it. docs/interventions.md gives the
// definitions; the sequences are usually random tokens repeated once, where all three kinds show.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/interventions.hpp"
#include "core/model/trace.hpp"
#include "core/torch/rng.hpp"

namespace attn {

enum class HeadKind { previous_token, duplicate_token, induction };
std::string head_kind_name(HeadKind kind);  // "previous_token", …
// "previous_token,duplicate_token,induction" (any of them, in any order, each once); else InputError.
std::vector<HeadKind> parse_head_kinds(const std::string& text);

enum class ErrorMeasure { mul, abs };
ErrorMeasure parse_error_measure(const std::string& text);  // "mul" | "abs"

struct DetectOptions {
  ErrorMeasure measure = ErrorMeasure::mul;
  bool exclude_bos = false;            // attention to position 0 left out
  bool exclude_current_token = false;  // attention to the query's own position left out
};

// The [n, n] 0/1 pattern of `kind` for tokens[0 … n), row = query, column = key, lower triangular.
std::vector<float> detection_pattern(HeadKind kind, const int64_t* tokens, size_t n);
// compute_head_attention_similarity_score: `attention` [n, n] (a head's weights, rows are queries).
// mul: Σ attention·pattern / Σ attention; abs: 1 − n·mean |attention − pattern| (TransformerLens
// rounds this to 3 decimals; here it is not rounded).
double head_score(const float* attention, const std::vector<float>& pattern, size_t n, const DetectOptions& o);

struct HeadScores {
  HeadKind kind = HeadKind::previous_token;
  size_t layers = 0, heads = 0;
  std::vector<double> scores;  // [layers, heads]: the mean of each item's score
};
// Every head's score of each kind, from a run's attention weights (blocks.L.attn.hook_pattern,
// [B, H, S, S]) on `ids` [B, S]; item b counts its first lengths[b] positions (the real tokens).
std::vector<HeadScores> detect_heads(const ModelStages& model, const Trace& trace, const std::vector<int64_t>& ids,
                                     const std::vector<size_t>& lengths, const std::vector<HeadKind>& kinds,
                                     const DetectOptions& o);

// {KIND: {"axes": ["layer", "head"], "scores": [[…]]}} (attn heads --json's "detectors").
Json head_scores_json(const std::vector<HeadScores>& scores);

struct TokenRange {
  int64_t low = 0, high = 0;  // high excluded
};
// "LOW:HIGH" within a vocabulary of `vocab_size` ids, not empty; else InputError naming --token-range.
TokenRange parse_token_range(const std::string& text, size_t vocab_size);

// torch.randint(low, high, (batch, half)) drawn from `gen`, each row then followed by itself:
// [batch, 2·half] ids, the sequences the detectors are usually run on.
std::vector<int64_t> repeated_random_tokens(TorchGenerator& gen, size_t batch, size_t half, int64_t low, int64_t high);

}  // namespace attn
