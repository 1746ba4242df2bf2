// The stages of the attention pipeline as functions of the previous tensors, named as in the
// tutorials. Shapes: batch B, sequence S (query Sq, key Sk), model width d.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/tensor.hpp"
#include "core/base/weight.hpp"

namespace attn {

// Embeddings.forward: lut(x) * sqrt(d_model); weight [V, d], ids [B, S] → [B, S, d].
Tensor embed(const Tensor& weight, const std::vector<int64_t>& ids, size_t batch, size_t seq);
// PositionalEncoding's table pe[max_len, d] (sin on even columns, cos on odd ones); d must be even.
Tensor positional_encoding_table(size_t max_len, size_t d_model);
// x + pe[:S] for x [B, S, d].
Tensor add_positional_encoding(const Tensor& x, const Tensor& table);
// A parameter's gradient holding no dimensions is frozen: a backward pass leaves it alone and skips its
// sum, as autograd skips a tensor without requires_grad (attribution's input gradients need no weight
// gradients; they would cost as much as the input's).
inline bool frozen(const Tensor& grad) { return grad.dimension() == 0; }
// nn.Linear: x[..., in] · weightᵀ (+ bias); weight [out, in]; bias null for bias=False; then ReLU when relu.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias = nullptr, bool relu = false);
// The same with the weight as stored: a half-precision one is widened as the product packs it (the bits
// of the product with the widened weight).
Tensor linear(const Tensor& x, const Weight& weight, const Tensor* bias = nullptr);
// Its backward (addmm's): returns grad_x = grad_y · weight; adds grad_yᵀ · x to grad_weight [out, in] and
// grad_y summed over rows to grad_bias [out] (when non-null), so a parameter used twice accumulates.
// A frozen grad_weight (below) skips both sums: the layer's parameters are frozen together.
Tensor linear_backward(const Tensor& x, const Tensor& weight, const Tensor& grad_y, Tensor& grad_weight,
                       Tensor* grad_bias);
// Those two sums alone (a layer whose input gradient is computed apart, as the decoders' half-precision
// weights are read).
void linear_weight_backward(const Tensor& x, const Tensor& grad_y, Tensor& grad_weight, Tensor* grad_bias);

enum class MaskKind { none, padding, causal, padding_causal };
MaskKind parse_mask_kind(const std::string& text);  // none|padding|causal|padding+causal
inline bool masks_padding(MaskKind kind) { return kind == MaskKind::padding || kind == MaskKind::padding_causal; }
inline bool masks_future(MaskKind kind) { return kind == MaskKind::causal || kind == MaskKind::padding_causal; }
std::string mask_kind_name(MaskKind kind);
// (ids != [PAD]) as [B, S]: True for real tokens.
MaskTensor padding_mask(const std::vector<int64_t>& ids, size_t batch, size_t seq);
// The combined mask broadcast to [B, S, S]: 1 = may attend, 0 = masked (logical AND of the kinds).
MaskTensor attention_mask(MaskKind kind, const std::vector<int64_t>& ids, size_t batch, size_t seq);

// Every intermediate of attention(query, key, value, mask) in the tutorial's order.
struct AttentionSteps {
  Tensor scores;             // QKᵀ            [B, Sq, Sk]
  Tensor scaled_scores;      // ÷ √d_k
  Tensor masked_scores;      // masked_fill(mask == 0, -1e9); equal to scaled_scores without a mask
  Tensor attention_weights;  // softmax over keys
  Tensor attention_output;   // weights · V    [B, Sq, d_v]
  Tensor dropout_noise;      // training mode: what dropout multiplied the weights by; else 0-dimensional
};
class TorchGenerator;
struct AttentionOptions {
  const MaskTensor* mask = nullptr;  // [B, Sq, Sk]; null = no mask
  // nn.MultiheadAttention divides q by √d_k before QKᵀ (then scaled_scores equals scores).
  bool scale_query_first = false;
  TorchGenerator* dropout = nullptr;  // training mode: dropout on the weights before · V
  double dropout_p = 0.0;
  float mask_value = -1e9f;    // what masked scores become (GPT-2: the lowest float, as torch.where with finfo.min)
  float layer_divisor = 1.0f;  // GPT-2's scale_attn_by_inverse_layer_idx: ÷ (layer + 1) after ÷ √d_k
};
// q [B, Sq, d_k], k [B, Sk, d_k], v [B, Sk, d_v].
AttentionSteps scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionOptions& options = {});
// The same in two halves, for a caller that hands the masked scores on (a hook may change them) before
// the rest: the scores up to masked_scores, then the weights (softmax, dropout) and · V.
AttentionSteps attention_scores(const Tensor& q, const Tensor& k, const AttentionOptions& options = {});
void attention_weights_and_output(AttentionSteps& steps, const Tensor& v, const AttentionOptions& options = {});
// Its last step, weights [B, Sq, Sk] · v [B, Sk, d_v] into out [B, Sq, d_v] (again, after a hook replaced
// the weights).
void attend_to_values(const Tensor& weights, const Tensor& v, Tensor& out);
struct AttentionGrads {
  Tensor query, key, value;
};
// Its backward from grad_output [B, Sq, d_v], reading what the forward computed (`steps`).
AttentionGrads scaled_dot_product_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                     const AttentionSteps& steps, const Tensor& grad_output,
                                                     const AttentionOptions& options = {});

}  // namespace attn
