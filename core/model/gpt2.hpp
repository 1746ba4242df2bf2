// GPT-2 (GPT2LMHeadModel), the one decoder: loading a checkpoint, generation, training and the
// playground all run gpt2.cpp's forward (gpt2_forward, declared in pretrained.hpp, is its traced
// form). Training adds what this file declares: the forward in training mode with PyTorch's dropout,
// the next-token loss, the backward beside the forward, initialisation as transformers does it, and the
// checkpoint's names and layouts (docs/training-lm.md).
#pragma once
#include <cstdint>
#include <vector>

#include "core/io/safetensors.hpp"
#include "core/model/layers.hpp"
#include "core/model/pretrained.hpp"
#include "core/torch/rng.hpp"

namespace attn {

// What a block's forward keeps for its backward (the tensors autograd saves).
struct Gpt2BlockSaved {
  AttentionSaved attention;  // input = ln_1's output; query/key/value [B·n, S, d]; weights and dropout noise
  Tensor input;              // the block's input (ln_1's)
  Tensor attention_noise;    // resid_dropout's after attn.c_proj
  Tensor residual, ln_2;     // ln_2's input and output
  Tensor c_fc, act;          // mlp.c_fc's output (the activation's input) and the activation (mlp.c_proj's input)
  Tensor act_tanh;           // gelu_new's tanh values (empty for other activations)
  Tensor mlp_noise;          // the MLP's dropout
};
struct Gpt2Saved {
  std::vector<int64_t> ids;  // [B, S]
  size_t batch = 0, seq = 0;
  Tensor embeddings_noise;  // embd_pdrop's
  std::vector<Gpt2BlockSaved> blocks;
  Tensor final_input, final;  // ln_f's input and output (the LM head's input)
  bool last_logits = false;   // the logits were the last position's alone
};

// GPT2LMHeadModel.forward in training mode (model.train()) on ids [B, S]: dropout drawn from `dropout`
// in PyTorch's order (embd_pdrop on the embeddings; per block attn_pdrop on the attention weights, then
// resid_pdrop after attn.c_proj and after mlp.c_proj); null = evaluation mode. Returns the logits
// [B, S, V]; `saved` receives what gpt2_backward reads. `token_embeddings` [B, S, H], when given, stand
// in for wte[ids] (attribution's scaled inputs: inputs_embeds); the positions' wpe is added as ever.
// `last_logits`: the LM head on each row's last position alone, [B, 1, V] (attribution's target logit;
// on GPT-2 small the head costs more than a layer per position).
Tensor gpt2_train_forward(const PretrainedModel& model, const PretrainedInput& input, TorchGenerator* dropout,
                          Gpt2Saved& saved, const Tensor* token_embeddings = nullptr, bool last_logits = false);
// The labels GPT2LMHeadModel(labels=input_ids) predicts, at each position s: the token at s + 1 when
// that position is a real token (s + 1 < lengths[b]), else −100 (ignored: the last position and padding).
std::vector<int64_t> next_token_labels(const PretrainedInput& input);
// Adds the gradients of the loss whose gradient of the logits is `grad_logits` to `grads` (zeros, or an
// earlier sum, of the model's shapes): a tied LM head and wte are one tensor, so both gradients add there.
// Returns the gradient of the embeddings [B, S, H] (wte[ids] + wpe's, so also of each of them).
Tensor gpt2_backward(const PretrainedModel& model, const Gpt2Saved& saved, const Tensor& grad_logits,
                   PretrainedModel& grads);

// A model of `model`'s shapes holding zeros (a gradient accumulator).
PretrainedModel zeros_like(const PretrainedModel& model);
// A model of `model`'s layers whose every gradient is frozen (core/model/attention.hpp): gpt2_backward
// then computes the gradient of the embeddings alone.
PretrainedModel frozen_like(const PretrainedModel& model);
// The weights GPT2Model(config) holds after torch.manual_seed(seed) (transformers' construction draws,
// then post_init's _init_weights: wte and wpe, every Conv1D ~ N(0, initializer_range), biases 0,
// LayerNorms 1 and 0, then each attn.c_proj and mlp.c_proj again ~ N(0, initializer_range / √(2·n_layer))),
// drawn from `g`, which training's dropout continues. Untied (tie_word_embeddings false), GPT2LMHeadModel's
// lm_head then: nn.Linear's kaiming-uniform draw, and post_init's N(0, initializer_range).
PretrainedModel gpt2_init(const PretrainedConfig& config, TorchGenerator& g);
// GPT2LMHeadModel.state_dict() as save_pretrained writes it: "transformer.wte.weight", …,
// "transformer.h.{i}.attn.c_attn.weight" [H, 3H] (Conv1D's [in, out]), … (a tied lm_head left out; an
// untied one last, "lm_head.weight").
std::vector<NamedTensor> gpt2_state_dict(const PretrainedModel& model);
// config.json as GPT2Config.to_json_string writes it for this config.
Json gpt2_config_json(const PretrainedConfig& config);

}  // namespace attn
