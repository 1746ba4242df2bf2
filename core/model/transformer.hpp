// The second tutorial's Transformer (docs/tutorials.md): the encoder (its layers, the modules of
// core/model/layers.hpp, then its final LayerNorm), and TransformerClassifier
// (embedding × √d_model → positional encoding → encoder → mean pooling → fc). Layers can also be
// PyTorch's own nn.TransformerEncoderLayer (packed in_proj, query scaled before QKᵀ).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model/attention.hpp"
#include "core/model/layers.hpp"
#include "core/base/json.hpp"
#include "core/torch/rng.hpp"
#include "core/io/safetensors.hpp"
#include "core/model/trace.hpp"

namespace attn {

struct TransformerConfig {
  size_t vocab_size = 0;
  size_t d_model = 128, num_heads = 8, num_layers = 4;
  size_t d_ff = 0;  // 0 = 4 · d_model, as the tutorial
  size_t max_len = 512, num_classes = 5;
  double dropout = 0.1;
  bool norm_first = false;  // pre-norm instead of the tutorial's post-norm
  Activation activation = Activation::relu;
  LayerStyle layer_style = LayerStyle::tutorial;
  bool final_norm = true;       // TransformerEncoder's closing LayerNorm
  bool classifier_head = true;  // mean pooling + fc; false = just the encoder

  size_t ff_width() const { return d_ff ? d_ff : 4 * d_model; }
  size_t head_dim() const { return d_model / num_heads; }
  LayerConfig layer_config() const { return {num_heads, dropout, norm_first, activation, layer_style}; }
};

// A TransformerEncoder alone: no embedding and no classifier head (it takes vectors, not token ids).
bool bare_encoder(const TransformerConfig& config);
// Throws InputError for sizes PyTorch would refuse or that do not fit in memory.
void validate(const TransformerConfig& config);
TransformerConfig config_from_json(const Json& json);  // the keys of Json below; unknown keys refused
Json config_to_json(const TransformerConfig& config);
Activation parse_activation(const std::string& text);

struct TransformerModel {
  TransformerConfig config;
  Tensor embedding;            // [vocab, d]
  Tensor positional_encoding;  // [1, max_len, d]: PositionalEncoding's buffer `pe` (state_dict only)
  std::vector<EncoderLayer> layers;
  LayerNorm final_norm;  // when config.final_norm
  Linear fc;             // when config.classifier_head
};

// TransformerClassifier(...) after torch.manual_seed(seed): every parameter drawn in PyTorch's order
// (module construction, then _init_weights' xavier_uniform_ on every parameter of 2+ dimensions).
// Only the tutorial layer style is built this way.
TransformerModel init_transformer(const TransformerConfig& config, TorchGenerator& gen);
// The modules' constructors one by one, each drawing from `gen` what PyTorch's draws, in its order.
// MultiHeadAttention(d_model, h): W_Q, W_K, W_V, W_O into `layer` (its other members untouched).
void init_attention(EncoderLayer& layer, size_t d_model, TorchGenerator& gen);
// FeedForward(d_model, d_ff): linear1, linear2 into `layer`.
void init_feed_forward(EncoderLayer& layer, size_t d_model, size_t d_ff, TorchGenerator& gen);
// One layer of config's style: the tutorial's TransformerEncoderLayer, or nn.TransformerEncoderLayer
// (out_proj's nn.Linear init, then _reset_parameters: xavier_uniform_ on the packed in_proj weight and
// zero in_proj_bias and out_proj.bias; then linear1, linear2).
EncoderLayer init_encoder_layer(const TransformerConfig& config, TorchGenerator& gen);
// A bare encoder (vocab_size 0, no classifier head). The tutorial's TransformerEncoder constructs its
// layers one after another; nn.TransformerEncoder(layer, n) deep-copies one layer, so all start equal.
TransformerModel init_encoder(const TransformerConfig& config, TorchGenerator& gen);
// The PyTorch state_dict: names, shapes and order as the modules register them.
std::vector<NamedTensor> state_dict(const TransformerModel& model);
// The same entries without copies: each one's name, shape, and the tensors whose rows make it (three
// for a packed in_proj, else one).
using StateVisitor =
    std::function<void(const std::string& name, const Shape& shape, const std::vector<const Tensor*>& parts)>;
void for_each_state(const TransformerModel& model, const StateVisitor& visit);
// The parameters in named_parameters() order (the state_dict without the pe buffer), for an optimizer;
// a packed in_proj's three parts as "<name>.q", ".k" and ".v" (optimizers work element by element).
std::vector<std::pair<std::string, Tensor*>> parameters(TransformerModel& model);
// Strict load_state_dict: missing, unexpected and wrongly shaped tensors are one InputError listing them.
TransformerModel load_transformer(const TransformerConfig& config, const std::vector<NamedTensor>& tensors);
size_t parameter_count(const TransformerModel& model);

// --- training: what a forward pass keeps for its backward (the tensors autograd saves) ---
struct EncoderSaved {
  std::vector<EncoderLayerSaved> layers;
  Tensor final_norm_input;
};
struct ClassifierSaved {
  std::vector<int64_t> ids;
  size_t batch = 0, seq = 0;
  MaskKind mask_kind = MaskKind::none;
  MaskTensor mask;        // [B, S, S]
  Tensor embedded_noise;  // PositionalEncoding's dropout
  EncoderSaved encoder;
  Tensor pooled;  // fc's input
};

// --- the stack's forward pass; it records its stages when trace is non-null ---
// The encoder stack on x [B, S, d]; `dropout` non-null = training mode, drawing from it. `saved`, when
// non-null, receives what encoder_backward reads. With `first_layer`, x enters that layer and the layers
// before it are skipped (activation patching resumes a cached run there).
Tensor encoder_forward(const TransformerModel& model, Tensor x, const MaskTensor* mask, TorchGenerator* dropout,
                       Trace* trace, EncoderSaved* saved = nullptr, size_t first_layer = 0);
// A forward pass resumed at a layer: `residual` [B, S, d] is the residual stream entering layer `layer`
// (TransformerLens's blocks.L.hook_resid_pre), taken from an earlier run of the same input. The pass
// hands it on as that stage (its hooks apply), then runs the layers from there; the earlier stages are
// not recomputed, nor recorded.
struct LayerStart {
  size_t layer = 0;
  Tensor residual;
};

// The classifier on token ids [B, S]: token_ids, embedding, positional_encoding, embedded,
// layers.{i}.…, encoder_output, pooled, logits.
// `hooks`, when given, intervene on the named stages (core/model/trace.hpp).
Trace classify(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
               MaskKind mask, TorchGenerator* dropout, const Hooks* hooks = nullptr, const LayerStart* start = nullptr);
// classify's first stages (token_ids … embedded) into t; returns embedded [B, S, d]. `noise` receives
// the dropout's noise in training mode. `token_embeddings` [B, S, d], when given, stand in for the
// embedding stage (embedding(ids) × √d_model; attribution's scaled inputs).
Tensor classifier_input(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                        TorchGenerator* dropout, Trace& t, Tensor* noise = nullptr,
                        const Tensor* token_embeddings = nullptr);
// classify's last stages from the encoder output [B, S, d]: encoder_output, pooled, logits.
void classifier_output(const TransformerModel& model, Tensor encoder_output, Trace& t);
// x.mean(dim=1) of x [B, S, d], summed in PyTorch's order: the classifier's pooling.
Tensor mean_pool(const Tensor& x);

// --- the backward passes, each reading what its forward saved; parameter gradients are added to
// `grads`, a model of the same shape (zeros_like) ---
TransformerModel zeros_like(const TransformerModel& model);
// Every gradient frozen (core/model/attention.hpp): the backward computes the input's gradient alone.
TransformerModel frozen_like(const TransformerModel& model);
// The classifier's forward pass on token ids [B, S], keeping in `saved` what classifier_backward reads;
// returns the logits [B, classes]. `token_embeddings` as classifier_input takes them.
Tensor classifier_forward(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                          MaskKind mask, TorchGenerator* dropout, ClassifierSaved& saved,
                          const Tensor* token_embeddings = nullptr);
// Returns the gradient of the embedding stage [B, S, d] (embedding(ids) × √d_model).
Tensor classifier_backward(const TransformerModel& model, const ClassifierSaved& saved, const Tensor& grad_logits,
                           TransformerModel& grads);
// Returns the gradient of the encoder's input.
Tensor encoder_backward(const TransformerModel& model, const EncoderSaved& saved, const MaskTensor* mask,
                        const Tensor& grad_output, TransformerModel& grads);

}  // namespace attn
