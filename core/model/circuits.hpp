// How heads of different layers compose (Elhage et al., "A Mathematical Framework for Transformer
// Circuits"): a later head reads what an earlier head wrote into the residual stream through its queries
// (Q-composition), its keys (K-composition) or its values (V-composition). The score of a pair is
// TransformerLens's all_composition_scores: ‖W_A·W_B‖ / (‖W_A‖·‖W_B‖) (Frobenius norms), W_A the earlier
// head's OV circuit W_V·W_O, W_B the later head's W_Q·W_Kᵀ (Q), W_K·W_Qᵀ (K) or W_V·W_O (V), on the
// weights TransformerLens's from_pretrained holds by default: for a pre-norm model (GPT-2, the pre-norm
// classifier) each layer's first LayerNorm scale folded into W_Q, W_K and W_V, and W_O centred over
// d_model (the next LayerNorm removes the mean anyway); a post-norm model's weights as they are.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/base/json.hpp"
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

CompositionScores composition_scores(const std::vector<EncoderLayer>& layers, size_t num_heads, bool pre_norm,
                                     CompositionKind kind);

// {"Q"|"K"|"V": {"axes": ["layer", "head", "layer", "head"], "scores": [[[[…]]]]}} (attn heads --json's
// "composition").
Json composition_json(const std::vector<CompositionScores>& scores);

}  // namespace attn
