// One configurable decoder-only Transformer for rotary Hugging Face checkpoints (LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM,
// GPTNeoXForCausalLM): RMSNorm (w·x or Gemma's (1 + w)·x) or LayerNorm, rotary position embeddings
// (rope_scaling default, linear, dynamic, llama3, yarn; partial; a local base for sliding layers),
// grouped-query attention with sliding-window layers, optional q/k/v biases, per-head q/k norms and
// soft-capping, a gated or plain MLP, sequential (optionally sandwich-normed) or parallel residuals.
// The families differ only in DecoderConfig's fields, never in code paths of their own; GPT-2 keeps gpt2.cpp.
// docs/decoders.md lists the stages with the PyTorch code of each.
#pragma once
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/io/safetensors.hpp"
#include "core/model/layers.hpp"
#include "core/model/pretrained.hpp"
#include "core/model/trace.hpp"

namespace attn {

enum class RopeType { default_, linear, dynamic, llama3, yarn };

// rope_scaling (or rope_parameters) as transformers' modeling_rope_utils reads it.
struct RopeScaling {
  RopeType type = RopeType::default_;
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  size_t original_max_positions = 0;                     // llama3 (yarn: the config's max positions)
  double attention_factor = 0.0;                         // yarn; 0 = 0.1·ln(factor) + 1
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
};

enum class NormKind { rms, rms_one_plus, layer_norm };  // w·x̂; Gemma's (1 + w)·x̂; LayerNorm with bias
enum class MlpKind { gated, plain };  // down(act(gate(x))·up(x)); NeoX's dense_4h_to_h(act(dense_h_to_4h(x)))
enum class DecoderAct { silu, gelu, gelu_tanh };  // hidden_act: silu, gelu (erf), gelu_pytorch_tanh

struct DecoderConfig {
  std::string model_type, architecture;  // "llama", "LlamaForCausalLM"
  size_t vocab_size = 0, hidden_size = 0, num_layers = 0, intermediate_size = 0, max_positions = 0;
  size_t num_heads = 0, num_kv_heads = 0, head_dim = 0;  // head_dim: the config's, else hidden / heads
  double rms_norm_eps = 1e-6, rope_theta = 10000.0, partial_rotary_factor = 1.0;
  RopeScaling rope;
  size_t sliding_window = 0;  // 0: none (Mistral's: a key visible when q − window < k ≤ q)
  bool qkv_bias = false;      // q_proj, k_proj and v_proj have biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;        // o_proj has one (Llama's and Qwen3's attention_bias)
  bool qk_norm = false;       // Qwen3: RMSNorm over each head's queries and keys before the rotation
  bool tie_word_embeddings = false;
  NormKind norm = NormKind::rms;
  MlpKind mlp = MlpKind::gated;
  DecoderAct act = DecoderAct::silu;
  bool mlp_bias = false;            // NeoX's dense_h_to_4h and dense_4h_to_h
  bool fused_qkv = false;           // NeoX: query_key_value, its output [heads, 3, head_dim] (q, k, v per head)
  bool embed_scale = false;         // Gemma: the embeddings × √hidden_size (rounded to float first)
  bool sandwich_norms = false;      // Gemma: post_attention / pre_ and post_feedforward_layernorm
  bool parallel_residual = false;   // NeoX: x + attn(ln1(x)) + mlp(ln2(x))
  double query_pre_attn_scalar = 0; // Gemma: scores × scalar^−½ (0: head_dim)
  double attn_softcap = 0, final_softcap = 0;  // Gemma: tanh(s / c)·c on scores before the mask, on logits
  std::vector<bool> sliding_layers;  // per layer: whether sliding_window applies (Mistral: every layer)
  double local_rope_theta = 0;       // Gemma 3: sliding layers' default rotation base (0: one rotation)
  std::vector<int64_t> eos_token_ids;  // eos_token_id: one id, a list (Llama 3) or none; where generation ends

  size_t group() const { return num_heads / num_kv_heads; }  // query heads per key/value head
  size_t rotary_dim() const { return size_t(double(head_dim) * partial_rotary_factor); }
};

// The supported architectures, "LlamaForCausalLM, …, GPTNeoXForCausalLM", for messages.
std::string decoder_architectures();
// Whether a config.json names one of these families (model_type or architectures[0]).
bool is_decoder_config(const Json& json);
// The config as transformers reads it (missing keys take the family's defaults; old and new spellings
// of rope_scaling); InputError naming `file` for an unsupported family or option, or a bad value.
DecoderConfig decoder_config_from_json(const Json& json, const std::string& file);

// nn.Linear with its weight as stored (core/base/weight.hpp: bfloat16 and float16 kept so).
struct StoredLinear {
  Weight weight;  // [out, in]
  Tensor bias;    // [out], or empty
};

// The matrices (embeddings, projections, LM head) are kept as the checkpoint stores them; the norms'
// weights and the biases, small, as float32.
struct DecoderLayer {
  LayerNorm input_norm, post_attention_norm;   // [H]; biases only for NeoX's LayerNorm
  LayerNorm pre_feedforward_norm, post_feedforward_norm;  // Gemma's sandwich norms
  StoredLinear q_proj, k_proj, v_proj, o_proj;  // biases empty unless qkv_bias / o_bias (NeoX: split at load)
  Tensor q_norm, k_norm;                        // [head_dim]; empty unless qk_norm
  StoredLinear gate_proj, up_proj, down_proj;   // plain MLP: up_proj = dense_h_to_4h, down_proj = dense_4h_to_h
};

struct DecoderModel {
  DecoderConfig config;
  Weight embed_tokens;  // [V, H]
  std::vector<DecoderLayer> layers;
  LayerNorm norm;                    // model.norm (NeoX: final_layer_norm) [H]
  Weight lm_head;                    // [V, H]; embed_tokens when tied
  std::vector<std::string> ignored;  // the file's tensors outside the model (rotary buffers, …)
};

// Every tensor the model holds, as stored: its bytes and how many values they hold (empty ones, such as
// absent biases, skipped; a tied lm_head once).
void for_each_tensor(const DecoderModel& model,
                     const std::function<void(const void* data, size_t bytes, size_t values)>& visit);
// The bytes the model's tensors take in memory (half-precision ones at two bytes a value).
size_t decoder_weight_bytes(const DecoderModel& model);
// How its matrices are held: "bfloat16", "float16" or "float32" (the embedding's, which the others share
// in every checkpoint transformers saves).
std::string decoder_weight_dtype(const DecoderModel& model);

// The model from tensors under Hugging Face's names (model.embed_tokens.weight, …, lm_head.weight; NeoX's
// gpt_neox.embed_in.weight, …, embed_out.weight);
// missing and wrongly shaped tensors are one InputError naming `file` and each tensor.
DecoderModel load_decoder(const DecoderConfig& config, std::vector<NamedWeight> tensors, const std::string& file);
// `path`: model.safetensors, or a sharded checkpoint's model.safetensors.index.json; bfloat16 and float16
// matrices stay half precision (read_checkpoint_weights) unless `widen` (float32 throughout: the same values).
DecoderModel read_decoder_weights(const DecoderConfig& config, const std::string& path, const std::string& file_name,
                                  const ReadProgress& progress = nullptr, bool widen = false);

// transformers' inv_freq [rotary_dim / 2] and attention factor for this config (modeling_rope_utils).
struct RotaryFrequencies {
  std::vector<float> inv_freq;
  float attention_factor = 1.0f;
};
RotaryFrequencies rotary_frequencies(const DecoderConfig& config);
// Gemma 3's sliding layers' config: rope_local_base_freq, the default rotation.
DecoderConfig local_rotary_config(const DecoderConfig& config);

// About how many floats decoder_forward's trace holds for `batch` sequences of `seq` tokens after `past`.
double decoder_trace_floats(const DecoderConfig& config, size_t batch, size_t seq, size_t past = 0);

// The families' ForCausalLM.forward in evaluation mode on ids [batch, seq] (no padding),
// recording input_ids, model.embed_tokens, model.rotary_emb{,_local}.{angles,cos,sin}, each layer's
// model.layers.{i}.… stages (docs/decoders.md), model.norm, logits [B, S, V] and next_token_probs [B, V].
// InputError for no tokens, an id outside the vocabulary or more positions than max_position_embeddings.
// With `cache` (generation, as gpt2_forward's), the ids come after the positions it holds: their keys
// (rotated) and values join it, one entry per key/value head, and the attention stages are
// [B, n, S, past + S]; an empty cache starts one. `lengths`: each row's real tokens, padding after
// them (which no real token attends to: the mask is causal); next_token_probs reads each row's last
// real position. Empty: every row is seq long.
Trace decoder_forward(const DecoderModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                      const Hooks* hooks = nullptr, KeyValueCache* cache = nullptr,
                      const std::vector<size_t>& lengths = {});
// The same on given token embeddings [B, S, H] (what embed_tokens gives: inputs_embeds, which Gemma's
// √hidden scale still multiplies), every row S long, no cache: attribution's scaled inputs. Its logits
// are each row's last position's alone, [B, 1, V] (the LM head is a large share of a small model).
Trace decoder_forward_embeddings(const DecoderModel& model, const Tensor& token_embeddings, const Hooks* hooks = nullptr);
// The attention scores' divisor: √head_dim, or Gemma's √query_pre_attn_scalar.
float decoder_score_divisor(const DecoderConfig& config);
// The rotation layer `layer` uses, by its recorded stages' prefix: "model.rotary_emb", or Gemma 3's
// sliding layers' "model.rotary_emb_local".
std::string decoder_rotary_stage(const DecoderConfig& config, size_t layer);
// Gemma's embedding scale, √hidden_size rounded to float (transformers' normalizer); 1 for the others.
float decoder_embed_scale(const DecoderConfig& config);
// The gradient of the token embeddings [B, S, H] (decoder_forward_embeddings' input) from the gradient of
// model.norm's output [B, S, H], backward through every layer from what `trace` (that forward's) recorded
// (core/model/decoder_backward.cpp). The input's gradient alone (attribution's).
Tensor decoder_input_gradient(const DecoderModel& model, const Trace& trace, const Tensor& grad_normed);
// The gradient of every weight, named and laid out as decoder_state_dict gives the weights (float32; a tied
// lm_head's part in the embedding's), from the gradient of the logits [B, S, V] of the run on `ids` that
// `trace` recorded (decoder_forward without a cache; every position's logits).
std::vector<NamedTensor> decoder_weight_gradients(const DecoderModel& model, const Trace& trace,
                                                  const std::vector<int64_t>& ids, const Tensor& grad_logits);
// Layer `layer`'s attention weights [B, n, S, S] as if no key were masked (no causal mask, no window):
// the softmax of its scaled (Gemma: capped) scores from the trace's queries_rotated and keys_rotated.
// What the playground's Masks view compares the masked weights with.
Tensor decoder_unmasked_weights(const DecoderConfig& config, const Trace& trace, size_t layer);
// Every tensor under Hugging Face's name, as {Llama,…}ForCausalLM.state_dict() gives it (a tied lm_head
// left out, as save_pretrained leaves it), widened to float32.
std::vector<NamedTensor> decoder_state_dict(const DecoderModel& model);
// The same tensors as stored (what write_safetensors_weights writes as the checkpoint it came from).
std::vector<NamedWeight> decoder_weights(const DecoderModel& model);
// The logits a residual stream x [B, S, H] would give as the last layer's output: lm_head(model.norm(x)).
Tensor decoder_unembed(const DecoderModel& model, const Tensor& x);

}  // namespace attn
