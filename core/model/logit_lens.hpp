// The logit lens (nostalgebraist, 2020): the residual stream between every two layers read out as if it
// were the last — through the model's final LayerNorm and its unembedding (GPT-2: ln_f, then wte
// transposed; the Llama family: model.norm's RMSNorm, then lm_head), or through the classifier's head (the encoder's final LayerNorm, then fc). The
// LayerNorm is computed afresh on each stream (TransformerLens's apply_ln_to_stack with
// recompute_ln=True), so the last row is the model's own output. docs/interventions.md#logit-lens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/decoder.hpp"
#include "core/model/pretrained.hpp"

namespace attn {

struct LogitLens {
  std::vector<std::string> stages;  // the residual stream stages read (residual_stream_stages)
  size_t batch = 0, seq = 0;
  size_t width = 0;    // GPT-2: the top k tokens per position; a classifier: its classes
  bool classes = false;
  // [stage, item, position, width]: GPT-2's top-k ids, most likely first, and their probabilities; a
  // classifier's class probabilities in class order (ids 0 … C − 1).
  std::vector<int64_t> ids;
  std::vector<float> probabilities;
  std::vector<float> pooled;  // a classifier: [stage, item, class], its mean-pooled prediction
};

// The lens on `trace`, a run of `model`: the classifier's (InputError for an encoder without its head),
// or GPT-2's with the `top_k` most likely tokens (InputError for BERT, which has no unembedding).
LogitLens logit_lens(const TransformerModel& model, const Trace& trace);
LogitLens logit_lens(const PretrainedModel& model, const Trace& trace, size_t top_k);
LogitLens logit_lens(const DecoderModel& model, const Trace& trace, size_t top_k);

}  // namespace attn
