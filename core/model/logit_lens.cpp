#include "core/model/logit_lens.hpp"

#include <algorithm>
#include <numeric>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/attention.hpp"
#include "core/model/interventions.hpp"

namespace attn {

namespace {

// Appends the k most likely of each row of probs [rows, V] (most likely first) to `lens`.
void append_top_k(const Tensor& probs, size_t k, LogitLens& lens) {
  const size_t V = probs.shape(probs.dimension() - 1), rows = probs.size() / V;
  std::vector<int64_t> order(V);
  for (size_t r = 0; r < rows; ++r) {
    const float* p = probs.data() + r * V;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    for (size_t i = 0; i < k; ++i) {
      lens.ids.push_back(order[i]);
      lens.probabilities.push_back(p[order[i]]);
    }
  }
}

void softmax_last(Tensor& t) {
  const size_t n = t.shape(t.dimension() - 1);
  softmax_rows(t.data(), t.size() / n, n);
}

// The stages read and the batch's shape.
LogitLens lens_of(const ModelStages& m, const Trace& trace) {
  LogitLens lens;
  lens.stages = residual_stream_stages(m);
  if (lens.stages.empty()) throw InputError("--logit-lens: the model has no layers");
  const Tensor& first = trace.at(lens.stages.front());
  lens.batch = first.shape(0);
  lens.seq = first.shape(1);
  return lens;
}

// A language model's lens: each stage's `unembed` (final norm, then unembedding), its top k tokens.
template <class Unembed>
LogitLens token_lens(const ModelStages& m, const Trace& trace, size_t top_k, size_t vocab, const Unembed& unembed) {
  LogitLens lens = lens_of(m, trace);
  lens.width = std::min(top_k, vocab);
  for (const std::string& stage : lens.stages) {
    Tensor probs = unembed(trace.at(stage));
    softmax_last(probs);
    append_top_k(probs, lens.width, lens);
  }
  return lens;
}

}  // namespace

LogitLens logit_lens(const PretrainedModel& m, const Trace& trace, size_t top_k) {
  if (m.config.family == ModelFamily::bert)
    throw InputError("--logit-lens reads GPT-2's unembedding or a classifier's head; BERT's base model has neither");
  return token_lens(model_stages(m.config), trace, top_k, m.config.vocab_size, [&m](const Tensor& x) {
    return linear(layer_norm(x, m.final_norm, float(m.config.layer_norm_eps)), m.unembedding());
  });
}

LogitLens logit_lens(const DecoderModel& m, const Trace& trace, size_t top_k) {
  return token_lens(model_stages(m.config), trace, top_k, m.config.vocab_size,
                    [&m](const Tensor& x) { return decoder_unembed(m, x); });
}

LogitLens logit_lens(const TransformerModel& m, const Trace& trace) {
  if (!m.config.classifier_head) throw InputError("--logit-lens needs a classifier head: this is the encoder alone");
  LogitLens lens = lens_of(model_stages(m.config), trace);
  lens.classes = true;
  lens.width = m.config.num_classes;
  for (const std::string& stage : lens.stages) {
    const Tensor& stream = trace.at(stage);
    const Tensor x = m.config.final_norm ? layer_norm(stream, m.final_norm) : stream;
    Tensor probs = linear(x, m.fc.weight, &m.fc.bias);
    softmax_last(probs);
    Tensor pooled = linear(mean_pool(x), m.fc.weight, &m.fc.bias);
    softmax_last(pooled);
    lens.probabilities.insert(lens.probabilities.end(), probs.begin(), probs.end());
    lens.pooled.insert(lens.pooled.end(), pooled.begin(), pooled.end());
    for (size_t r = 0; r < lens.batch * lens.seq; ++r)
      for (size_t c = 0; c < lens.width; ++c) lens.ids.push_back(int64_t(c));
  }
  return lens;
}

}  // namespace attn
