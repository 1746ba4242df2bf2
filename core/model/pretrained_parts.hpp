// Pieces the checkpoints' forwards share: BERT's (core/model/pretrained.cpp, which defines them), GPT-2's
// (core/model/gpt2.cpp) and the Llama family's (core/model/decoder.cpp). Internal to core/model.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/pretrained.hpp"

namespace attn {

Tensor transposed(const Tensor& t);                    // [r, c] → [c, r]
Tensor add_rows(const Tensor& x, const Tensor& rows);  // rows broadcast over x's leading dimensions
// Rows of `table` picked by ids → [B, S, H]; an id outside the table is an InputError naming `what`.
Tensor lookup(const Tensor& table, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what);
Tensor lookup(const Weight& table, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what);
// [B, S, H] → [B, 1, H]: each row's last position (the LM head's input when only the next token counts).
Tensor last_position(const Tensor& x);
Tensor ids_tensor(const std::vector<int64_t>& ids, size_t batch, size_t seq);  // ids as a float [B, S] stage
// InputError for no tokens, more than the model's positions (after `past` cached ones) or a trace that
// would not fit in memory.
void check_pretrained_input(const PretrainedModel& m, const PretrainedInput& in, size_t past = 0);
// The residual stream a resumed run starts from, handed on as `stage`.
Tensor resumed(const LayerStart& start, const std::string& stage, Trace& t);

// A config.json's values, each checked, with transformers' default when the key is absent; messages
// name `file` and the key.
struct ConfigReader {
  const Json& j;
  const std::string& file;

  size_t size(const char* key, size_t fallback, bool positive = true) const {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    return json_integer<size_t>(j[key], file + ": '" + key + "'", positive ? 1 : 0, size_t(1) << 30);
  }
  double number(const char* key, double fallback) const {
    if (!j.contains(key)) return fallback;
    const double x = json_number(j[key], file + ": '" + key + "'");
    if (!(x > 0)) throw InputError(file + ": '" + key + "' must be a positive number");
    return x;
  }
  double probability(const char* key, double fallback) const {
    if (!j.contains(key)) return fallback;
    const double x = json_number(j[key], file + ": '" + key + "'");
    if (!(x >= 0 && x < 1)) throw InputError(file + ": '" + key + "' must be a probability in [0, 1)");
    return x;
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_string()) throw InputError(file + ": '" + key + "' must be a string");
    return j[key].get<std::string>();
  }
  bool flag(const char* key, bool fallback) const {
    if (!j.contains(key)) return fallback;
    if (!j[key].is_boolean()) throw InputError(file + ": '" + key + "' must be true or false");
    return j[key].get<bool>();
  }
};

// Hands each stage under the layer's prefix to the trace (its hooks first, then a copy recorded) and
// on to the next step.
struct Recorder {
  Trace& trace;
  std::string prefix;
  Tensor operator()(const std::string& name, Tensor t) const {
    trace.stage(prefix + name, t);
    return t;
  }
};

// Per (batch, head): scores = QKᵀ ÷ scale, then `mask_scores` (BERT adds its extended mask, GPT-2
// replaces the future with the lowest float, the Llama family adds it), softmax, · V. Hands on scores
// and weights as `scores_name` and `weights_name`.
struct HeadAttention {
  Tensor scores, weights, context;  // [B, n, S, S], [B, n, S, S], [B, n, S, d]
};
HeadAttention attend_heads(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                           const std::function<void(float* row_scores, size_t b, size_t query)>& mask_scores,
                           const Recorder& rec, const std::string& scores_name, const std::string& weights_name);
// softmax(logits[b, lengths[b] − 1]) for each row of logits [B, S, V]: [B, V].
Tensor next_token_probs(const Tensor& logits, const std::vector<size_t>& lengths);

}  // namespace attn
