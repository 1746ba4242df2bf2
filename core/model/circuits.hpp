// How heads of different layers compose (Elhage et al., "A Mathematical Framework for Transformer
// Circuits"): a later head reads what an earlier head wrote into the residual stream through its queries
// (Q-composition), its keys (K-composition) or its values (V-composition). The score of a pair is
// TransformerLens's all_composition_scores: ‖W_A·W_B‖ / (‖W_A‖·‖W_B‖) (Frobenius norms), W_A the earlier
// head's OV circuit W_V·W_O, W_B the later head's W_Q·W_Kᵀ (Q), W_K·W_Qᵀ (K) or W_V·W_O (V), on the
// weights TransformerLens's from_pretrained holds by default: for a pre-norm model (GPT-2, the pre-norm
// classifier, the Llama family) each layer's first norm scale folded into W_Q, W_K and W_V, and for a
// LayerNorm model W_O centred over d_model (the next LayerNorm removes the mean anyway; RMSNorm does not,
// so TransformerLens leaves the Llama family's W_O as it is); a post-norm model's weights as they are.
// Grouped key/value heads serve each of their query heads (TransformerLens repeats them).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/decoder.hpp"
#include "core/model/layers.hpp"

namespace attn {

enum class CompositionKind { q, k, v };
std::string composition_kind_name(CompositionKind kind);  // "Q", "K", "V"

struct CompositionScores {
  CompositionKind kind = CompositionKind::k;
  size_t layers = 0, heads = 0;
  // [layers, heads, layers, heads]: [l1, h1, l2, h2] is the earlier head (l1, h1) read by (l2, h2); 0
  // where l2 <= l1.
  std::vector<double> scores;
  double at(size_t l1, size_t h1, size_t l2, size_t h2) const { return scores[((l1 * heads + h1) * layers + l2) * heads + h2]; }
};

// How the weights are processed first (above): fold_norm, each layer's norm1 scale into its W_Q, W_K, W_V;
// centre_writing, W_O centred over d_model.
struct WeightProcessing {
  bool fold_norm = false, centre_writing = false;
};
CompositionScores composition_scores(const std::vector<EncoderLayer>& layers, size_t num_heads, WeightProcessing processing,
                                     CompositionKind kind);
// The Llama family's: its layers as query heads (each key/value head's rows repeated for its query heads),
// the input norm's scale folded in (Gemma's 1 + w), W_O centred for GPT-NeoX's LayerNorm only.
CompositionScores decoder_composition_scores(const DecoderModel& model, CompositionKind kind);

// {"Q"|"K"|"V": {"axes": ["layer", "head", "layer", "head"], "scores": [[[[…]]]]}} (attn heads --json's
// "composition").
Json composition_json(const std::vector<CompositionScores>& scores);

}  // namespace attn
