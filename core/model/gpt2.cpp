#include "core/model/gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/pretrained_parts.hpp"

namespace attn {
namespace {

// --- one pass, traced (evaluation, hooks, a key/value cache) or training (dropout, saved tensors) ---

struct Pass {
  Trace* trace = nullptr;
  KeyValueCache* cache = nullptr;
  size_t past = 0;                     // the positions the cache held before this pass
  TorchGenerator* dropout = nullptr;   // training mode
  Gpt2Saved* saved = nullptr;
  const Tensor* token_embeddings = nullptr;  // [B, S, H] in place of wte[ids] (attribution's scaled inputs)
  bool last_logits = false;                  // the LM head on each row's last position alone
  void stage(const std::string& name, Tensor& t) const {
    if (trace) trace->stage(name, t);
  }
};

// Each head's causal mask [B·n, Sq, Sk] for Sq new positions after `past` cached ones.
MaskTensor causal_mask(size_t heads, size_t sq, size_t past) {
  const size_t sk = past + sq;
  MaskTensor mask = MaskTensor::from_shape({heads, sq, sk});
  for (size_t h = 0; h < heads; ++h)
    for (size_t i = 0; i < sq; ++i)
      for (size_t j = 0; j < sk; ++j) mask(h, i, j) = j <= past + i;
  return mask;
}

// GPT2Attention._attn: ÷ full([], d ** 0.5) (÷ layer_idx + 1 as well with scale_attn_by_inverse_layer_idx,
// a second step), torch.where(causal, w, finfo.min), softmax, attn_dropout, · V.
AttentionOptions attention_options(const PretrainedConfig& c, size_t layer, const MaskTensor& mask,
                                   TorchGenerator* dropout) {
  AttentionOptions o;
  o.mask = &mask;
  o.mask_value = std::numeric_limits<float>::lowest();
  o.layer_divisor = c.scale_by_layer ? float(layer + 1) : 1.0f;
  o.dropout = dropout;
  o.dropout_p = c.attn_pdrop;
  return o;
}

// [B, n, S1, d] then [B, n, S2, d] along the positions: [B, n, S1 + S2, d].
Tensor concat_positions(const Tensor& a, const Tensor& b) {
  const size_t B = a.shape(0), n = a.shape(1), s1 = a.shape(2), s2 = b.shape(2), d = a.shape(3);
  Tensor out = Tensor::from_shape({B, n, s1 + s2, d});
  for (size_t head = 0; head < B * n; ++head) {
    std::copy_n(a.data() + head * s1 * d, s1 * d, out.data() + head * (s1 + s2) * d);
    std::copy_n(b.data() + head * s2 * d, s2 * d, out.data() + (head * (s1 + s2) + s1) * d);
  }
  return out;
}

// GPT2Attention.forward from ln_1's output h [B, S, H]: c_attn (split into query, key, value), the
// heads' attention, c_proj. With a cache, the new keys and values join it and the queries attend to
// every cached position too.
Tensor attention(const PretrainedModel& m, size_t index, const Tensor& h, const Pass& pass, const std::string& p,
                 AttentionSaved* saved) {
  const PretrainedConfig& c = m.config;
  const EncoderLayer& l = m.layers[index];
  const size_t B = h.shape(0), S = h.shape(1), n = c.num_heads, d = c.head_dim();
  Tensor q = split_heads(linear(h, l.query.weight, &l.query.bias), n);
  Tensor k = split_heads(linear(h, l.key.weight, &l.key.bias), n);
  Tensor v = split_heads(linear(h, l.value.weight, &l.value.bias), n);
  pass.stage(p + "query", q);
  pass.stage(p + "key", k);
  pass.stage(p + "value", v);
  if (pass.cache) pass.cache->extend(index, pass.past, k, v);
  const size_t Sk = k.shape(2);
  const MaskTensor mask = causal_mask(B * n, S, pass.past);
  const AttentionOptions options = attention_options(c, index, mask, pass.dropout);
  q = reshaped(std::move(q), {B * n, S, d});
  k = reshaped(std::move(k), {B * n, Sk, d});
  v = reshaped(std::move(v), {B * n, Sk, d});
  AttentionSteps a = attention_scores(q, k, options);
  Tensor scores = reshaped(std::move(a.masked_scores), {B, n, S, Sk});
  pass.stage(p + "scores", scores);
  a.masked_scores = reshaped(std::move(scores), {B * n, S, Sk});
  attention_weights_and_output(a, v, options);
  if (pass.trace) {
    const std::string name = p + "attn_weights";
    const bool replaced = pass.trace->hooked(name);
    Tensor w = reshaped(std::move(a.attention_weights), {B, n, S, Sk});
    pass.stage(name, w);
    a.attention_weights = reshaped(std::move(w), {B * n, S, Sk});
    if (replaced) attend_to_values(a.attention_weights, v, a.attention_output);  // pattern · V again
  }
  a.scores = a.scaled_scores = a.masked_scores = Tensor();  // the backward reads the weights and the noise
  Tensor merged = merge_heads(reshaped(std::move(a.attention_output), {B, n, S, d}));
  pass.stage(p + "merged", merged);
  Tensor out = linear(merged, l.output.weight, &l.output.bias);
  if (saved) *saved = {h, std::move(q), std::move(k), std::move(v), std::move(a), std::move(merged)};
  return out;
}

// Each row of [B, S, H] set to `bias`: what GPT2MLP adds with n_inner 0, its c_proj of no inputs.
Tensor bias_rows(const Tensor& bias, size_t B, size_t S) {
  const size_t H = bias.size();
  Tensor out = Tensor::from_shape({B, S, H});
  for (size_t r = 0; r < B * S; ++r) std::copy_n(bias.data(), H, out.data() + r * H);
  return out;
}

// GPT2Block's MLP on ln_2's output: mlp.c_proj(act(mlp.c_fc(h2))), or with n_inner 0 (attention-only)
// c_proj's bias alone: its stages ln_2, mlp.c_fc and mlp.act are then not recorded, having no width.
Tensor mlp(const PretrainedModel& m, size_t index, const Tensor& residual, const Pass& pass, const std::string& p,
           Gpt2BlockSaved& s, bool saving) {
  const PretrainedConfig& c = m.config;
  const EncoderLayer& l = m.layers[index];
  if (c.intermediate_size == 0) return bias_rows(l.linear2.bias, residual.shape(0), residual.shape(1));
  Tensor h2 = layer_norm(residual, l.norm2, float(c.layer_norm_eps));
  pass.stage(p + "ln_2", h2);
  Tensor fc = linear(h2, l.linear1.weight, &l.linear1.bias);
  pass.stage(p + "mlp.c_fc", fc);
  Tensor act = saving ? Tensor(fc) : std::move(fc);
  activate(act, c.activation, saving && c.activation == HiddenAct::gelu_new ? &s.act_tanh : nullptr);
  pass.stage(p + "mlp.act", act);
  Tensor out = linear(act, l.linear2.weight, &l.linear2.bias);
  if (saving) s.ln_2 = std::move(h2), s.c_fc = std::move(fc), s.act = std::move(act);
  return out;
}

// GPT2Block.forward: x + attn(ln_1(x)), then + mlp(ln_2(·)), each branch's dropout (resid_pdrop) last.
Tensor block(const PretrainedModel& m, size_t index, const Tensor& x, const Pass& pass, const std::string& p,
             Gpt2BlockSaved* saved) {
  const PretrainedConfig& c = m.config;
  const EncoderLayer& l = m.layers[index];
  Gpt2BlockSaved scratch;
  Gpt2BlockSaved& s = saved ? *saved : scratch;
  Tensor h = layer_norm(x, l.norm1, float(c.layer_norm_eps));
  pass.stage(p + "ln_1", h);
  Tensor projected = attention(m, index, h, pass, p + "attn.", saved ? &s.attention : nullptr);
  dropout(pass.dropout, projected, c.resid_pdrop, &s.attention_noise);
  pass.stage(p + "attn.c_proj", projected);
  Tensor residual = add(projected, x);
  pass.stage(p + "residual", residual);
  Tensor branch = mlp(m, index, residual, pass, p, s, saved != nullptr);
  dropout(pass.dropout, branch, c.resid_pdrop, &s.mlp_noise);
  pass.stage(p + "mlp.c_proj", branch);
  Tensor out = add(residual, branch);
  if (saved) s.input = x, s.residual = std::move(residual);
  return out;
}

// GPT2Model's embeddings: wte[ids] + wpe[past …], then embd_pdrop's dropout.
Tensor embeddings(const PretrainedModel& m, const PretrainedInput& in, const Pass& pass) {
  const size_t S = in.seq, H = m.config.hidden_size;
  if (pass.trace) pass.trace->record("input_ids", ids_tensor(in.ids, in.batch, S), PrintDtype::int64);
  Tensor wte = pass.token_embeddings ? *pass.token_embeddings : lookup(m.word_embeddings, in.ids, in.batch, S, "token id");
  Tensor wpe = Tensor::from_shape({S, H});
  std::copy_n(m.position_embeddings.data() + pass.past * H, S * H, wpe.data());
  if (pass.trace) pass.trace->record("wte", wte), pass.trace->record("wpe", wpe);
  Tensor x = add_rows(wte, wpe);
  dropout(pass.dropout, x, m.config.embd_pdrop, pass.saved ? &pass.saved->embeddings_noise : nullptr);
  pass.stage("embeddings", x);
  return x;
}

// The blocks from `first` on, ln_f and the LM head (wte, or its own when untied): the logits [B, S, V], or with a cache
// (generation: rows of one length) or `last_logits` [B, 1, V], the last position's alone, as nanoGPT's
// sampling computes them; the LM head is a third of GPT-2 small's weights.
Tensor run(const PretrainedModel& m, Tensor x, size_t first, const Pass& pass) {
  if (pass.saved) pass.saved->blocks.resize(m.layers.size());
  for (size_t i = first; i < m.layers.size(); ++i) {
    const std::string p = "h." + std::to_string(i);
    x = block(m, i, x, pass, p + ".", pass.saved ? &pass.saved->blocks[i] : nullptr);
    pass.stage(p, x);
  }
  Tensor final = layer_norm(x, m.final_norm, float(m.config.layer_norm_eps));
  pass.stage("ln_f", final);
  Tensor logits = linear(pass.cache || pass.last_logits ? last_position(final) : final, m.unembedding());
  if (pass.saved) pass.saved->final_input = std::move(x), pass.saved->final = std::move(final);
  return logits;
}

void add_to(Tensor& into, const Tensor& t) { attn::add(into.data(), t.data(), into.data(), into.size()); }

// The block's backward, reading what block() saved.
Tensor block_backward(const PretrainedModel& m, size_t index, const Gpt2BlockSaved& s, Tensor grad,
                      EncoderLayer& g) {
  const PretrainedConfig& c = m.config;
  const EncoderLayer& l = m.layers[index];
  const float eps = float(c.layer_norm_eps);
  // out = residual + dropout(mlp.c_proj(act(mlp.c_fc(ln_2(residual))))), or + dropout(c_proj.bias)
  Tensor branch = grad;
  dropout_backward(branch, s.mlp_noise);
  if (c.intermediate_size == 0) {  // c_proj's bias alone: its gradient is the rows' sum, as linear_backward's
    if (!frozen(g.linear2.bias)) {
      Tensor sums = Tensor::from_shape({c.hidden_size});
      column_sums(branch.data(), branch.size() / c.hidden_size, c.hidden_size, sums.data());
      add_to(g.linear2.bias, sums);
    }
  } else {
    branch = linear_backward(s.act, l.linear2.weight, branch, g.linear2.weight, &g.linear2.bias);
    activate_backward(branch, s.c_fc, c.activation, s.act_tanh.dimension() ? &s.act_tanh : nullptr);
    branch = linear_backward(s.ln_2, l.linear1.weight, branch, g.linear1.weight, &g.linear1.bias);
    add_to(grad, layer_norm_backward(s.residual, l.norm2, branch, g.norm2, eps));
  }
  // residual = x + dropout(attn(ln_1(x)))
  branch = grad;
  dropout_backward(branch, s.attention_noise);
  const size_t B = s.input.shape(0), S = s.input.shape(1), n = c.num_heads;
  const MaskTensor mask = causal_mask(B * n, S, 0);
  branch = self_attention_backward(l, n, s.attention, attention_options(c, index, mask, nullptr), branch, g);
  add_to(grad, layer_norm_backward(s.input, l.norm1, branch, g.norm1, eps));
  return grad;
}

}  // namespace

Tensor next_token_probs(const Tensor& logits, const std::vector<size_t>& lengths) {
  const size_t B = logits.shape(0), S = logits.shape(1), V = logits.shape(2);
  Tensor probs = Tensor::from_shape({B, V});
  for (size_t b = 0; b < B; ++b) std::copy_n(logits.data() + (b * S + lengths[b] - 1) * V, V, probs.data() + b * V);
  softmax_rows(probs.data(), B, V);
  return probs;
}

void KeyValueCache::prepare(size_t layers) {
  if (keys.size() != layers) *this = {std::vector<Tensor>(layers), std::vector<Tensor>(layers)};
}

void KeyValueCache::extend(size_t layer, size_t past, Tensor& k, Tensor& v) {
  keys[layer] = past ? concat_positions(keys[layer], k) : std::move(k);
  values[layer] = past ? concat_positions(values[layer], v) : std::move(v);
  k = keys[layer], v = values[layer];
}

Trace gpt2_forward(const PretrainedModel& m, const PretrainedInput& in, const Hooks* hooks, const LayerStart* start,
                   KeyValueCache* cache) {
  if (cache && start) throw InputError("a run resumed at a layer cannot also use a key/value cache");
  if (cache) cache->prepare(m.layers.size());
  const size_t past = cache ? cache->length() : 0;
  check_pretrained_input(m, in, past);
  Trace t(hooks);
  const Pass pass{&t, cache, past};
  Tensor x = start ? resumed(*start, start->layer ? "h." + std::to_string(start->layer - 1) : "embeddings", t)
                   : embeddings(m, in, pass);
  Tensor logits = run(m, std::move(x), start ? start->layer : 0, pass);
  t.stage("logits", logits);
  t.record("next_token_probs", next_token_probs(logits, cache ? std::vector<size_t>(in.batch, 1) : in.lengths));
  if (hooks) hooks->check_reached(t);
  return t;
}

Tensor gpt2_train_forward(const PretrainedModel& m, const PretrainedInput& in, TorchGenerator* dropout, Gpt2Saved& saved,
                          const Tensor* token_embeddings, bool last_logits) {
  if (in.batch == 0 || in.seq == 0 || in.ids.size() != in.batch * in.seq || in.seq > m.config.max_positions)
    throw InputError("a training batch must hold 1 to n_positions tokens per row");
  if (token_embeddings && token_embeddings->size() != in.batch * in.seq * m.config.hidden_size)
    throw InputError("the token embeddings must be [batch, seq, n_embd]");
  saved = Gpt2Saved();
  saved.ids = in.ids, saved.batch = in.batch, saved.seq = in.seq, saved.last_logits = last_logits;
  const Pass pass{nullptr, nullptr, 0, dropout, &saved, token_embeddings, last_logits};
  return run(m, embeddings(m, in, pass), 0, pass);
}

std::vector<int64_t> next_token_labels(const PretrainedInput& in) {
  std::vector<int64_t> labels(in.batch * in.seq, -100);
  for (size_t b = 0; b < in.batch; ++b)
    for (size_t s = 0; s + 1 < in.lengths[b]; ++s) labels[b * in.seq + s] = in.ids[b * in.seq + s + 1];
  return labels;
}

// The LM head's backward: the gradient of ln_f's output [B, S, H], zero where no logit was computed.
Tensor head_backward(const PretrainedModel& m, const Gpt2Saved& s, const Tensor& grad_logits, PretrainedModel& g) {
  if (!s.last_logits) return linear_backward(s.final, m.unembedding(), grad_logits, g.unembedding(), nullptr);
  const Tensor last = linear_backward(last_position(s.final), m.unembedding(), grad_logits, g.unembedding(), nullptr);
  const size_t S = s.seq, H = m.config.hidden_size;
  Tensor grad = Tensor::from_shape(s.final.shape());
  grad.fill(0.0f);
  for (size_t b = 0; b < s.batch; ++b) std::copy_n(last.data() + b * H, H, grad.data() + (b * S + S - 1) * H);
  return grad;
}

Tensor gpt2_backward(const PretrainedModel& m, const Gpt2Saved& s, const Tensor& grad_logits, PretrainedModel& g) {
  Tensor grad = head_backward(m, s, grad_logits, g);
  grad = layer_norm_backward(s.final_input, m.final_norm, grad, g.final_norm, float(m.config.layer_norm_eps));
  for (size_t i = m.layers.size(); i-- > 0;) grad = block_backward(m, i, s.blocks[i], std::move(grad), g.layers[i]);
  dropout_backward(grad, s.embeddings_noise);
  if (frozen(g.word_embeddings)) return grad;
  // embeddings = wte[ids] + wpe[positions]: each row's gradient goes to its token's and its position's row.
  const size_t H = m.config.hidden_size;
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t pos = 0; pos < s.seq; ++pos) {
      const float* row = grad.data() + (b * s.seq + pos) * H;
      float* token = g.word_embeddings.data() + size_t(s.ids[b * s.seq + pos]) * H;
      float* position = g.position_embeddings.data() + pos * H;
      attn::add(token, row, token, H);
      attn::add(position, row, position, H);
    }
  return grad;
}

PretrainedModel zeros_like(const PretrainedModel& m) {
  PretrainedModel z = m;
  for_each_tensor(z, [](Tensor& t) { t.fill(0.0f); });
  return z;
}

PretrainedModel frozen_like(const PretrainedModel& m) {
  PretrainedModel z;
  z.config = m.config;
  z.layers.resize(m.layers.size());
  return z;
}

namespace {

// Conv1D(nf, nx) as transformers builds it: weight [nx, nf] ~ N(0, 0.02), bias zeros.
Tensor conv1d_weight(TorchGenerator& g, size_t in, size_t out, double std) {
  Tensor w = Tensor::from_shape({in, out});
  g.normal_(w.data(), w.size(), 0.0, std);
  return w;
}

Tensor filled(const Shape& shape, float value) {
  Tensor t = Tensor::from_shape(shape);
  t.fill(value);
  return t;
}

}  // namespace

PretrainedModel gpt2_init(const PretrainedConfig& c, TorchGenerator& g) {
  const size_t V = c.vocab_size, P = c.max_positions, H = c.hidden_size, I = c.intermediate_size, L = c.num_layers;
  const double r = c.initializer_range, scaled = r / std::sqrt(2.0 * double(L));
  std::vector<NamedTensor> t;
  auto table = [&](const std::string& name, size_t rows, double std) {
    Tensor w = Tensor::from_shape({rows, H});
    g.normal_(w.data(), w.size(), 0.0, std);
    t.push_back({name, std::move(w)});
  };
  auto conv = [&](const std::string& name, size_t in, size_t out, double std) {
    t.push_back({name + ".weight", conv1d_weight(g, in, out, std)});
    t.push_back({name + ".bias", filled({out}, 0.0f)});
  };
  auto norm = [&](const std::string& name) {
    t.push_back({name + ".weight", filled({H}, 1.0f)});
    t.push_back({name + ".bias", filled({H}, 0.0f)});
  };
  // Construction: nn.Embedding's N(0, 1), each Conv1D's N(0, 0.02), module by module.
  table("wte.weight", V, 1.0);
  table("wpe.weight", P, 1.0);
  for (size_t i = 0; i < L; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    norm(p + "ln_1");
    conv(p + "attn.c_attn", H, 3 * H, 0.02);
    conv(p + "attn.c_proj", H, H, 0.02);
    norm(p + "ln_2");
    conv(p + "mlp.c_fc", H, I, 0.02);
    conv(p + "mlp.c_proj", I, H, 0.02);
  }
  norm("ln_f");
  // post_init: self.apply(_init_weights) visits children before their parent, so each attention's and
  // MLP's c_proj is drawn twice: as a Conv1D, then by its parent's "c_proj.weight" rule.
  t.clear();
  table("wte.weight", V, r);
  table("wpe.weight", P, r);
  for (size_t i = 0; i < L; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    norm(p + "ln_1");
    conv(p + "attn.c_attn", H, 3 * H, r);
    conv(p + "attn.c_proj", H, H, r);
    t[t.size() - 2].value = conv1d_weight(g, H, H, scaled);
    norm(p + "ln_2");
    conv(p + "mlp.c_fc", H, I, r);
    conv(p + "mlp.c_proj", I, H, r);
    t[t.size() - 2].value = conv1d_weight(g, I, H, scaled);
  }
  norm("ln_f");
  if (!c.tie_word_embeddings) {  // GPT2LMHeadModel's own nn.Linear(H, V, bias=False), then post_init's N(0, r)
    Tensor w = Tensor::from_shape({V, H});
    kaiming_uniform_(g, w.data(), V, H, std::sqrt(5.0));
    g.normal_(w.data(), w.size(), 0.0, r);
    t.push_back({"lm_head.weight", std::move(w)});
  }
  return load_pretrained(c, std::move(t), "the initialised model");
}

std::vector<NamedTensor> gpt2_state_dict(const PretrainedModel& m) {
  const std::string T = "transformer.";
  std::vector<NamedTensor> out;
  auto conv = [&](const std::string& name, const Linear& l) {
    out.push_back({name + ".weight", transposed(l.weight)});
    out.push_back({name + ".bias", l.bias});
  };
  auto norm = [&](const std::string& name, const LayerNorm& n) {
    out.push_back({name + ".weight", n.weight});
    out.push_back({name + ".bias", n.bias});
  };
  out.push_back({T + "wte.weight", m.word_embeddings});
  out.push_back({T + "wpe.weight", m.position_embeddings});
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer& l = m.layers[i];
    const std::string p = T + "h." + std::to_string(i) + ".";
    norm(p + "ln_1", l.norm1);
    // c_attn packs query, key and value along its output.
    const size_t H = l.query.weight.shape(0);
    Linear packed{Tensor::from_shape({3 * H, H}), Tensor::from_shape({3 * H})};
    const Linear* parts[] = {&l.query, &l.key, &l.value};
    for (size_t k = 0; k < 3; ++k) {
      std::copy_n(parts[k]->weight.data(), H * H, packed.weight.data() + k * H * H);
      std::copy_n(parts[k]->bias.data(), H, packed.bias.data() + k * H);
    }
    conv(p + "attn.c_attn", packed);
    conv(p + "attn.c_proj", l.output);
    norm(p + "ln_2", l.norm2);
    conv(p + "mlp.c_fc", l.linear1);
    conv(p + "mlp.c_proj", l.linear2);
  }
  norm(T + "ln_f", m.final_norm);
  if (m.lm_head.dimension()) out.push_back({"lm_head.weight", m.lm_head});
  return out;
}

Json gpt2_config_json(const PretrainedConfig& c) {
  return Json{{"activation_function", c.activation == HiddenAct::gelu_new ? "gelu_new"
                                      : c.activation == HiddenAct::gelu   ? "gelu"
                                                                          : "relu"},
              {"architectures", {"GPT2LMHeadModel"}},
              {"attn_pdrop", c.attn_pdrop},
              {"embd_pdrop", c.embd_pdrop},
              {"initializer_range", c.initializer_range},
              {"layer_norm_epsilon", c.layer_norm_eps},
              {"model_type", "gpt2"},
              {"n_ctx", c.max_positions},
              {"n_embd", c.hidden_size},
              {"n_head", c.num_heads},
              {"n_inner", c.intermediate_size},
              {"n_layer", c.num_layers},
              {"n_positions", c.max_positions},
              {"resid_pdrop", c.resid_pdrop},
              {"scale_attn_by_inverse_layer_idx", c.scale_by_layer},
              {"scale_attn_weights", true},
              {"tie_word_embeddings", c.tie_word_embeddings},
              {"torch_dtype", "float32"},
              {"vocab_size", c.vocab_size}};
}

}  // namespace attn
