// Checkpoints people bring: Hugging Face BERT-family encoders (BertModel) and GPT-2 (GPT2Model,
// GPT2LMHeadModel), read from their own config.json and model.safetensors and run stage by stage under
// the model's own module names (docs/pretrained.md lists the stages and the PyTorch code of each).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/io/safetensors.hpp"
#include "core/model/trace.hpp"
#include "core/model/transformer.hpp"

namespace attn {

enum class ModelFamily { bert, gpt2 };

struct PretrainedConfig {
  ModelFamily family = ModelFamily::bert;
  std::string architecture;  // architectures[0], else the family's base model
  size_t vocab_size = 0, hidden_size = 0, num_heads = 0, num_layers = 0, intermediate_size = 0;
  size_t max_positions = 0, type_vocab_size = 0;  // type_vocab_size: BERT's segments; 0 for GPT-2
  double layer_norm_eps = 1e-12;
  HiddenAct activation = HiddenAct::gelu;
  bool scale_by_layer = false;  // GPT-2's scale_attn_by_inverse_layer_idx
  bool tie_word_embeddings = true;  // GPT-2: false gives the LM head its own weight (lm_head.weight)
  // GPT-2's training settings: dropout after the embeddings, on each residual branch and on the
  // attention weights; the std its weights are initialised with.
  double embd_pdrop = 0.1, resid_pdrop = 0.1, attn_pdrop = 0.1, initializer_range = 0.02;

  size_t head_dim() const { return hidden_size / num_heads; }
};

std::string family_name(ModelFamily family);  // "bert" or "gpt2"
// A config.json as transformers writes it (missing keys take transformers' defaults); `file` names it
// in messages. Throws InputError for an unknown family, a bad value or an option not implemented here.
PretrainedConfig pretrained_config_from_json(const Json& json, const std::string& file);

struct PretrainedModel {
  PretrainedConfig config;
  Tensor word_embeddings;        // [V, H] (GPT-2: wte, also the LM head when tied)
  Tensor lm_head;                // [V, H]: GPT-2's own LM head (tie_word_embeddings false); else empty
  Tensor position_embeddings;    // [max_positions, H] (GPT-2: wpe)
  Tensor token_type_embeddings;  // [type_vocab_size, H]; BERT only
  LayerNorm embeddings_norm;     // BERT: embeddings.LayerNorm
  // One layer each: BERT's attention.self.{query,key,value}, attention.output.dense, its LayerNorm
  // (norm1), intermediate.dense (linear1), output.dense (linear2), output.LayerNorm (norm2); GPT-2's
  // c_attn split into query/key/value and c_proj as output (Conv1D weights transposed to [out, in]),
  // ln_1 (norm1), mlp.c_fc (linear1), mlp.c_proj (linear2), ln_2 (norm2).
  std::vector<EncoderLayer> layers;
  LayerNorm final_norm;  // GPT-2: ln_f
  Linear pooler;         // BERT: pooler.dense; empty tensors when the checkpoint has none
  std::vector<std::string> ignored;  // the file's tensors outside the base model (task heads, buffers)

  bool has_pooler() const { return pooler.weight.size() > 0 && pooler.weight.dimension() == 2; }
  // GPT-2's unembedding [V, H]: lm_head, or wte when tied.
  const Tensor& unembedding() const { return lm_head.dimension() ? lm_head : word_embeddings; }
  Tensor& unembedding() { return lm_head.dimension() ? lm_head : word_embeddings; }  // (a gradient's: zeros_like)
};

// The base model from a checkpoint's tensors: a "bert." / "transformer." prefix is dropped, the old
// gamma/beta LayerNorm names accepted, tensors outside the base model listed in `ignored`. Missing and
// wrongly shaped tensors are one InputError naming `file` and each tensor.
PretrainedModel load_pretrained(const PretrainedConfig& config, std::vector<NamedTensor> tensors,
                                const std::string& file);
// load_pretrained on a model.safetensors file or a shard index (read_checkpoint); its integer buffers (BERT's
// position_ids) join `ignored`.
// `progress` as read_safetensors takes it.
PretrainedModel read_pretrained_weights(const PretrainedConfig& config, const std::string& path,
                                        const std::string& file_name, const ReadProgress& progress = nullptr);
// Every tensor the checkpoint gave (those a family lacks, such as GPT-2's token types, are skipped).
void for_each_tensor(const PretrainedModel& model, const std::function<void(const Tensor&)>& visit);
void for_each_tensor(PretrainedModel& model, const std::function<void(Tensor&)>& visit);
size_t parameter_count(const PretrainedModel& model);
// BertModel.state_dict() (its parameters; the position_ids buffer aside), or GPT-2's (gpt2_state_dict):
// what load_state_dict(strict=True) of the base model takes.
std::vector<NamedTensor> pretrained_state_dict(const PretrainedModel& model);

struct PretrainedInput {
  std::vector<int64_t> ids, type_ids;  // [B, S]; type_ids BERT only (empty = all 0)
  std::vector<size_t> lengths;         // each row's real tokens (right padding after them)
  size_t batch = 0, seq = 0;
};

// BertModel.forward in evaluation mode, recording input_ids, token_type_ids, attention_mask,
// embeddings.*, encoder.layer.{i}.… (attention.self.query/key/value, attention_scores, attention_probs,
// context, attention.output.dense, attention.output, intermediate, output.dense, output),
// last_hidden_state and pooler_output.
Trace bert_forward(const PretrainedModel& model, const PretrainedInput& input, const Hooks* hooks = nullptr,
                   const LayerStart* start = nullptr);
// GPT2LMHeadModel.forward: input_ids, wte, wpe, embeddings, h.{i}.… (ln_1, attn.query/key/value,
// attn.scores, attn.attn_weights, attn.merged, attn.c_proj, residual, ln_2, mlp.c_fc, mlp.act,
// mlp.c_proj, the block's output), ln_f, logits [B, S, V] and next_token_probs [B, V] (softmax of each
// row's last real position's logits).
// With `cache` (generation), the input's tokens come after the positions it holds (one row, or rows of
// one length): their keys and values join it, their queries attend to every cached position, and the
// attention stages are [B, n, S, past + S], the logits [B, 1, V] (the last position's); an empty cache
// starts one.
struct KeyValueCache {
  std::vector<Tensor> keys, values;  // per layer [B, n, positions, head_dim]; empty before the first run
  size_t length() const { return keys.empty() || keys[0].dimension() == 0 ? 0 : keys[0].shape(2); }
  // Ready for a model of `layers` layers (a new cache starts empty).
  void prepare(size_t layers);
  // Layer `layer`'s new keys and values [B, n, S, d] kept after the `past` positions it holds; k and v
  // become all of them, [B, n, past + S, d].
  void extend(size_t layer, size_t past, Tensor& k, Tensor& v);
};
Trace gpt2_forward(const PretrainedModel& model, const PretrainedInput& input, const Hooks* hooks = nullptr,
                   const LayerStart* start = nullptr, KeyValueCache* cache = nullptr);
// Either family; `hooks`, when given, intervene on the named stages (core/model/trace.hpp); `start`,
// when given, resumes a run at a layer (core/model/transformer.hpp).
Trace pretrained_forward(const PretrainedModel& model, const PretrainedInput& input, const Hooks* hooks = nullptr,
                         const LayerStart* start = nullptr);
// About how many floats a trace of `batch` sequences of `seq` tokens holds (memory checks).
double pretrained_trace_floats(const PretrainedConfig& config, size_t batch, size_t seq);

// The attention weights stage of layer i under the family's name, and the layer stage prefix.
std::string attention_weights_stage(ModelFamily family, size_t layer);

}  // namespace attn
