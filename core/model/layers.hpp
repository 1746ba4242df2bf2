// The modules a Transformer layer is built of — LayerNorm, multi-head self-attention, the feed-forward
// block, dropout, a whole (pre- or post-norm) layer — each forward beside its backward, for every model
// that stacks them: the encoders (the second tutorial's classifier, BERT) and the decoders (GPT-2).
// A backward reads what its forward saved (the tensors autograd saves) and adds the parameter
// gradients to `grads`, a layer of the same shape. Forwards record their stages under `prefix` when
// `trace` is non-null (core/model/trace.hpp: hooks on those names intervene).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/attention.hpp"
#include "core/model/trace.hpp"
#include "core/torch/rng.hpp"

namespace attn {

enum class Activation { relu, gelu };
enum class HiddenAct { gelu, gelu_new, relu };  // Hugging Face's: erf GELU, GPT-2's tanh approximation, ReLU
enum class LayerStyle { tutorial, torch };  // the tutorial's modules, or nn.TransformerEncoderLayer

// What a layer's computation depends on besides its weights.
struct LayerConfig {
  size_t num_heads = 1;
  double dropout = 0.0;  // the residual branches', the feed-forward activation's (and torch style's weights')
  bool norm_first = false;
  Activation activation = Activation::relu;
  LayerStyle layer_style = LayerStyle::tutorial;
};

struct Linear {
  Tensor weight, bias;  // [out, in], [out]
};
struct LayerNorm {
  Tensor weight, bias;
};
struct EncoderLayer {
  Linear query, key, value, output, linear1, linear2;
  LayerNorm norm1, norm2;
};

// --- what the forwards keep for their backwards ---
struct AttentionSaved {
  Tensor input;              // [B, S, d]: the query, key and value input (self-attention)
  Tensor query, key, value;  // [B·H, S, d_k], heads split
  AttentionSteps steps;      // the weights and their dropout noise
  Tensor merged;             // [B, S, d]: heads merged, W_O's input
};
struct FeedForwardSaved {
  Tensor input, hidden;  // linear1's input and output (after ReLU, which keeps its positives)
  Tensor activated;      // linear2's input: the activation after dropout
  Tensor noise;          // that dropout's noise (0-dimensional in evaluation mode)
};
struct EncoderLayerSaved {
  AttentionSaved attention;
  FeedForwardSaved feed_forward;
  Tensor norm1_input, norm2_input;
  Tensor attention_noise, feed_forward_noise;  // the residual branches' dropout (0-dimensional: none)
};

// --- element-wise pieces and layouts ---
Tensor reshaped(Tensor t, const Shape& shape);  // the same values in another shape of the same size
Tensor add(const Tensor& a, const Tensor& b);   // a + b, one shape
// x ← relu(x) or the exact (erf) GELU, element by element.
void activate(Tensor& x, Activation activation);
// The same for Hugging Face's names; gelu_new is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), each
// operation rounded to float as PyTorch computes it. `tanh`, when non-null, receives gelu_new's tanh
// values (what its backward reads instead of computing them again: the costliest part of both).
void activate(Tensor& x, HiddenAct activation, Tensor* tanh = nullptr);
// grad ← grad · the activation's derivative at its input x (in double, rounded once); gelu_new's from
// the forward's `tanh` values when given.
void activate_backward(Tensor& grad, const Tensor& input, Activation activation);
void activate_backward(Tensor& grad, const Tensor& input, HiddenAct activation, const Tensor* tanh = nullptr);
// F.dropout in training mode (gen non-null); `noise` receives its noise, which the backward multiplies
// the gradient by. In evaluation mode, or with p = 0, nothing is drawn and `noise` stays 0-dimensional
// (a default Tensor, whose size() is 1).
void dropout(TorchGenerator* gen, Tensor& x, double p, Tensor* noise = nullptr);
void dropout_backward(Tensor& grad, const Tensor& noise);
// [B, S, H·dk] → [B, H, S, dk] (view + transpose(1, 2) + contiguous): the traced form of q, k, v.
Tensor split_heads(const Tensor& x, size_t heads);
// Its inverse, [B, H, S, dk] → [B, S, H·dk] (transpose(1, 2) + contiguous + view).
Tensor merge_heads(const Tensor& x);

// --- the modules ---
Tensor layer_norm(const Tensor& x, const LayerNorm& norm, float eps = 1e-5f);
Tensor layer_norm_backward(const Tensor& x, const LayerNorm& norm, const Tensor& grad_y, LayerNorm& grads,
                           float eps = 1e-5f);
// MultiHeadAttention(q_in, kv_in, kv_in, mask): mask [B, Sq, Sk] or null; weights [B, H, Sq, Sk].
Tensor multi_head_attention(const EncoderLayer& layer, const LayerConfig& config, const Tensor& q_in,
                            const Tensor& kv_in, const MaskTensor* mask, Trace* trace, const std::string& prefix);
Tensor feed_forward(const EncoderLayer& layer, const LayerConfig& config, const Tensor& x, TorchGenerator* dropout,
                    Trace* trace, const std::string& prefix);
// Self-attention's backward from the gradient of W_O's output: W_O, the heads' attention (`options` as
// the forward's, its mask per head [B·H, S, S]), then W_Q, W_K and W_V, whose input gradients add up.
Tensor self_attention_backward(const EncoderLayer& layer, size_t heads, const AttentionSaved& saved,
                               const AttentionOptions& options, const Tensor& grad_output, EncoderLayer& grads);
// [B, Sq, Sk] repeated for every head: [B·H, Sq, Sk].
MaskTensor head_mask(const MaskTensor& mask, size_t heads);
// One layer on x [B, S, d] (self-attention and feed-forward, each a residual block, LayerNorm before
// each (norm_first) or after); `dropout_gen` non-null = training mode; `saved`, when non-null, receives
// what encoder_layer_backward reads. Stages: {prefix}norm1, self_attn.…, norm2, ffn.output, output.
Tensor encoder_layer_forward(const EncoderLayer& layer, const LayerConfig& config, Tensor x, const MaskTensor* mask,
                             TorchGenerator* dropout_gen, Trace* trace, const std::string& prefix,
                             EncoderLayerSaved* saved);
// Returns the gradient of the layer's input.
Tensor encoder_layer_backward(const EncoderLayer& layer, const LayerConfig& config, const EncoderLayerSaved& saved,
                              const MaskTensor* mask, Tensor grad_output, EncoderLayer& grads);

// F.cross_entropy(logits [N, C] (or [..., C]), labels [N], label_smoothing=ε, ignore_index=-100): the mean
// over the rows whose label is not −100 (those rows get no gradient); `grad`, when non-null, receives
// ∂loss/∂logits. Throws InputError for another label outside [0, C) or when every row is ignored.
float cross_entropy(const Tensor& logits, const std::vector<int64_t>& labels, double label_smoothing, Tensor* grad);

}  // namespace attn
