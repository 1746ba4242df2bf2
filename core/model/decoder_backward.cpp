// The Llama family's backward pass (decoder_input_gradient and decoder_weight_gradients, decoder.hpp):
// each step of decoder.cpp's forward undone in reverse, reading the activations its trace recorded (the
// stage names of docs/decoders.md), as autograd reads what the forward saved. In double where the
// forward's reductions are (the norms), else float as the forward computes. The weights' gradients are
// gathered per layer when asked (LayerGrads; attribution asks for the input's gradient alone).
#include <cmath>
#include <string>

#include "core/kernels/kernels.hpp"
#include "core/model/attention.hpp"
#include "core/model/decoder.hpp"
#include "core/model/layers.hpp"

namespace attn {
namespace {

void add_to(Tensor& into, const Tensor& t) { add(into.data(), t.data(), into.data(), into.size()); }

// A gradient to accumulate into: zeros of the shape.
Tensor zeros(const Shape& shape) {
  Tensor out = Tensor::from_shape(shape);
  out.fill(0.0f);
  return out;
}

// Zeros of t's shape, or an empty tensor for an empty t (an absent bias).
Tensor zeros_like(const Tensor& t) { return t.dimension() ? zeros(Shape(t.shape().begin(), t.shape().end())) : Tensor(); }

// The gradients of a layer's weights, added up over the backward: matrices and biases by through(),
// norms' weights (and NeoX's biases) by norm_backward.
struct LinearGrad {
  Tensor weight, bias;
};
struct LayerGrads {
  LinearGrad q, k, v, o, gate, up, down;
  LayerNorm input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;
  Tensor q_norm, k_norm;
};

LinearGrad zeros_like(const StoredLinear& l) {
  return l.weight.dimension() ? LinearGrad{zeros(l.weight.shape()), zeros_like(l.bias)} : LinearGrad{};
}

LayerNorm zeros_like(const LayerNorm& n) { return {zeros_like(n.weight), zeros_like(n.bias)}; }

LayerGrads zeros_like(const DecoderLayer& l) {
  return {zeros_like(l.q_proj),       zeros_like(l.k_proj),       zeros_like(l.v_proj),
          zeros_like(l.o_proj),       zeros_like(l.gate_proj),    zeros_like(l.up_proj),
          zeros_like(l.down_proj),    zeros_like(l.input_norm),   zeros_like(l.post_attention_norm),
          zeros_like(l.pre_feedforward_norm), zeros_like(l.post_feedforward_norm), zeros_like(l.q_norm),
          zeros_like(l.k_norm)};
}

// grad_y [..., out] · W [out, in]: a linear layer's input gradient.
Tensor through(const Tensor& grad_y, const StoredLinear& l) {
  const Weight& w = l.weight;
  const size_t out = w.shape(0), in = w.shape(1), rows = grad_y.size() / out;
  Shape shape(grad_y.shape().begin(), grad_y.shape().end());
  shape.back() = in;
  Tensor grad_x = Tensor::from_shape(shape);
  if (w.half())
    matmul(grad_y.data(), HalfMatrix{w.bits(), w.half_type()}, grad_x.data(), rows, out, in);
  else
    matmul(grad_y.data(), w.values().data(), grad_x.data(), rows, out, in);
  return grad_x;
}

// The same, and the weights' gradients from x (the layer's input) when g is non-null.
Tensor through(const Tensor& grad_y, const StoredLinear& l, const Tensor& x, LinearGrad* g) {
  if (g) linear_weight_backward(x, grad_y, g->weight, g->bias.dimension() ? &g->bias : nullptr);
  return through(grad_y, l);
}

// y = (offset + w) · x · s over each row of n, s = 1 / √(mean(x²) + eps): with a = (offset + w) · g,
// dx = s · a − x · s³ · mean(a · x); dw += g · x · s (when grad_weight is non-null).
Tensor rms_norm_backward(const Tensor& x, const Tensor& weight, double eps, float offset, const Tensor& grad,
                         Tensor* grad_weight = nullptr) {
  const size_t n = weight.size();
  Tensor out = Tensor::from_shape(x.shape());
  for (size_t row = 0; row < x.size() / n; ++row) {
    const float *in = x.data() + row * n, *g = grad.data() + row * n;
    double squares = 0, dot = 0;
    for (size_t i = 0; i < n; ++i) squares += double(in[i]) * in[i];
    const double s = 1.0 / std::sqrt(double(float(squares / double(n))) + eps);
    for (size_t i = 0; i < n; ++i) dot += (offset + double(weight.data()[i])) * g[i] * in[i];
    for (size_t i = 0; i < n; ++i)
      out.data()[row * n + i] =
          float(s * (offset + double(weight.data()[i])) * g[i] - double(in[i]) * s * s * s * dot / double(n));
    if (grad_weight)
      for (size_t i = 0; i < n; ++i) grad_weight->data()[i] += float(double(g[i]) * double(float(in[i] * float(s))));
  }
  return out;
}

// A norm's backward; its weight's (and bias's) gradients added to `grads` when non-null.
Tensor norm_backward(const DecoderConfig& c, const Tensor& x, const LayerNorm& n, const Tensor& grad,
                     LayerNorm* grads = nullptr) {
  if (c.norm == NormKind::layer_norm) {
    LayerNorm frozen;
    return layer_norm_backward(x, n, grad, grads ? *grads : frozen, float(c.rms_norm_eps));
  }
  const float offset = c.norm == NormKind::rms_one_plus ? 1.0f : 0.0f;
  return rms_norm_backward(x, n.weight, c.rms_norm_eps, offset, grad, grads ? &grads->weight : nullptr);
}

// apply_rotary_pos_emb's transpose: out_i = x_i cos_i + r_i sin_i with r = [−x₂, x₁] over the first
// rotary_dim values, so dx_j = g_j cos_j + (j < half ? g_{j+half} sin_{j+half} : −g_{j−half} sin_{j−half}).
Tensor rotate_backward(const Tensor& grad, const Tensor& cos, const Tensor& sin) {
  const size_t S = grad.shape(2), d = grad.shape(3), dim = cos.shape(2), half = dim / 2;
  Tensor out = grad;
  for (size_t row = 0; row < grad.size() / d; ++row) {
    const float* g = grad.data() + row * d;
    const float *c = cos.data() + (row % S) * dim, *s = sin.data() + (row % S) * dim;
    for (size_t j = 0; j < dim; ++j)
      out.data()[row * d + j] = g[j] * c[j] + (j < half ? g[j + half] * s[j + half] : -g[j - half] * s[j - half]);
  }
  return out;
}

// The activation's derivative at its input z, times grad.
void activate_backward(Tensor& grad, const Tensor& z, DecoderAct act) {
  if (act != DecoderAct::silu)
    return activate_backward(grad, z, act == DecoderAct::gelu ? HiddenAct::gelu : HiddenAct::gelu_new);
  for (size_t i = 0; i < grad.size(); ++i) {  // silu' = σ(z) (1 + z (1 − σ(z)))
    const double v = z.data()[i], sigma = 1.0 / (1.0 + std::exp(-v));
    grad.data()[i] = float(grad.data()[i] * sigma * (1.0 + v * (1.0 - sigma)));
  }
}

struct LayerStages {
  const Trace& t;
  std::string p;     // "model.layers.{i}."
  LayerGrads* grads;  // null: the input's gradient alone
  const Tensor& operator()(const std::string& name) const { return t.at(p + name); }
  LinearGrad* operator()(LinearGrad LayerGrads::*member) const { return grads ? &(grads->*member) : nullptr; }
  LayerNorm* operator()(LayerNorm LayerGrads::*member) const { return grads ? &(grads->*member) : nullptr; }
};

// LlamaMLP / GPTNeoXMLP backward from the gradient of down_proj's output to that of its input x (the
// norm's output).
Tensor mlp_backward(const DecoderConfig& c, const DecoderLayer& l, const LayerStages& at, const Tensor& x,
                    const Tensor& grad) {
  const bool gated = c.mlp == MlpKind::gated;
  const Tensor& act = at("mlp.act");
  if (!gated) {
    Tensor g = through(grad, l.down_proj, act, at(&LayerGrads::down));
    activate_backward(g, at("mlp.up_proj"), c.act);
    return through(g, l.up_proj, x, at(&LayerGrads::up));
  }
  const Tensor& up = at("mlp.up_proj");
  Tensor product;  // down_proj's input, as the forward made it: for its weight's gradient
  if (at.grads) {
    product = Tensor::from_shape(act.shape());
    multiply(act.data(), up.data(), product.data(), act.size());
  }
  Tensor g = through(grad, l.down_proj, product, at(&LayerGrads::down));
  Tensor g_up = Tensor::from_shape(g.shape());
  multiply(g.data(), act.data(), g_up.data(), g.size());
  multiply(g.data(), up.data(), g.data(), g.size());
  activate_backward(g, at("mlp.gate_proj"), c.act);
  Tensor g_in = through(g, l.gate_proj, x, at(&LayerGrads::gate));
  add_to(g_in, through(g_up, l.up_proj, x, at(&LayerGrads::up)));
  return g_in;
}

// LlamaAttention backward from the gradient of o_proj's output to that of its input (the input norm's
// output): o_proj, the heads' softmax(QKᵀ / divisor (capped, masked)) · V with grouped key/value heads
// (each key/value head's gradient sums its query heads'), the rotation, Qwen3's and Gemma 3's q/k norms,
// then the projections.
Tensor attention_backward(const DecoderModel& m, size_t index, const LayerStages& at, const Tensor& x,
                          const Tensor& grad) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  const Tensor g_context = split_heads(through(grad, l.o_proj, at("self_attn.merged"), at(&LayerGrads::o)), c.num_heads);
  const Tensor &weights = at("self_attn.attn_weights"), &scores = at("self_attn.scores");
  const Tensor &q = at("self_attn.queries_rotated"), &k = at("self_attn.keys_rotated"), &v = at("self_attn.v_proj");
  const size_t B = q.shape(0), n = c.num_heads, kv = c.num_kv_heads, g = c.group(), S = q.shape(2), d = q.shape(3);
  Tensor dq = Tensor::from_shape(q.shape()), dk = Tensor::from_shape(k.shape()), dv = Tensor::from_shape(v.shape());
  dk.fill(0.0f), dv.fill(0.0f);
  const float divisor = decoder_score_divisor(c), cap = float(c.attn_softcap);
  std::vector<float> dp(S * S), part(S * d);
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < n; ++h) {
      const size_t head = b * n + h, kv_head = b * kv + h / g;
      const float *p = weights.data() + head * S * S, *dout = g_context.data() + head * S * d;
      const float *kh = k.data() + kv_head * S * d, *vh = v.data() + kv_head * S * d;
      matmul_tn(p, dout, part.data(), S, S, d);  // dV += Pᵀ · dO
      add(dv.data() + kv_head * S * d, part.data(), dv.data() + kv_head * S * d, S * d);
      matmul_nt(dout, vh, dp.data(), S, d, S);  // dP = dO · Vᵀ
      softmax_backward_rows(p, dp.data(), S, S);
      for (size_t i = 0; i < S * S; ++i) {
        if (dp[i] == 0.0f) continue;  // masked keys (weight 0), whose capped scores are the lowest float
        if (cap > 0) dp[i] *= 1.0f - (scores.data()[head * S * S + i] / cap) * (scores.data()[head * S * S + i] / cap);
        dp[i] /= divisor;
      }
      matmul(dp.data(), kh, dq.data() + head * S * d, S, S, d);  // dQ = dS · K
      matmul_tn(dp.data(), q.data() + head * S * d, part.data(), S, S, d);  // dK += dSᵀ · Q
      add(dk.data() + kv_head * S * d, part.data(), dk.data() + kv_head * S * d, S * d);
    }
  const std::string rotary = decoder_rotary_stage(c, index);
  const Tensor &cos = at.t.at(rotary + ".cos"), &sin = at.t.at(rotary + ".sin");
  dq = rotate_backward(dq, cos, sin);
  dk = rotate_backward(dk, cos, sin);
  if (c.qk_norm) {
    const float offset = c.norm == NormKind::rms_one_plus ? 1.0f : 0.0f;
    dq = rms_norm_backward(at("self_attn.q_proj"), l.q_norm, c.rms_norm_eps, offset, dq,
                           at.grads ? &at.grads->q_norm : nullptr);
    dk = rms_norm_backward(at("self_attn.k_proj"), l.k_norm, c.rms_norm_eps, offset, dk,
                           at.grads ? &at.grads->k_norm : nullptr);
  }
  Tensor g_in = through(merge_heads(dq), l.q_proj, x, at(&LayerGrads::q));
  add_to(g_in, through(merge_heads(dk), l.k_proj, x, at(&LayerGrads::k)));
  add_to(g_in, through(merge_heads(dv), l.v_proj, x, at(&LayerGrads::v)));
  return g_in;
}

// One layer's backward (decoder.cpp's layer()): the gradient of its input from that of its output.
Tensor layer_backward(const DecoderModel& m, size_t index, const Tensor& x, const LayerStages& at, Tensor grad) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  const Tensor& h = at("input_layernorm");
  if (c.parallel_residual) {  // x + attn(norm1(x)) + mlp(norm2(x))
    Tensor g_x = grad;
    const Tensor mlp_grad = mlp_backward(c, l, at, at("post_attention_layernorm"), grad);
    add_to(g_x, norm_backward(c, x, l.post_attention_norm, mlp_grad, at(&LayerGrads::post_attention_norm)));
    const Tensor attention_grad = attention_backward(m, index, at, h, grad);
    add_to(g_x, norm_backward(c, x, l.input_norm, attention_grad, at(&LayerGrads::input_norm)));
    return g_x;
  }
  // out = residual + [post_feedforward_norm](mlp(pre-MLP norm(residual)))
  Tensor branch = grad;
  if (c.sandwich_norms)
    branch = norm_backward(c, at("mlp.down_proj"), l.post_feedforward_norm, branch, at(&LayerGrads::post_feedforward_norm));
  const LayerNorm& pre_mlp = c.sandwich_norms ? l.pre_feedforward_norm : l.post_attention_norm;
  const Tensor& mlp_input = at(c.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm");
  const Tensor mlp_grad = mlp_backward(c, l, at, mlp_input, branch);
  add_to(grad, norm_backward(c, at("residual"), pre_mlp, mlp_grad,
                             at(c.sandwich_norms ? &LayerGrads::pre_feedforward_norm : &LayerGrads::post_attention_norm)));
  // residual = x + [post_attention_norm](attention(input_norm(x)))
  branch = grad;
  if (c.sandwich_norms)
    branch = norm_backward(c, at("self_attn.o_proj"), l.post_attention_norm, branch, at(&LayerGrads::post_attention_norm));
  add_to(grad, norm_backward(c, x, l.input_norm, attention_backward(m, index, at, h, branch), at(&LayerGrads::input_norm)));
  return grad;
}

// Every layer's backward, then the embedding scale: the token embeddings' gradient from model.norm's
// output's; the weights' gradients into `layers` and `final_norm` when given.
Tensor backward(const DecoderModel& m, const Trace& t, const Tensor& grad_normed, std::vector<LayerGrads>* layers,
                LayerNorm* final_norm) {
  const size_t L = m.layers.size();
  const auto input_of = [&](size_t i) -> const Tensor& {
    return t.at(i ? "model.layers." + std::to_string(i - 1) : "model.embed_tokens");
  };
  Tensor grad = norm_backward(m.config, input_of(L), m.norm, grad_normed, final_norm);
  for (size_t i = L; i-- > 0;) {
    const LayerStages at{t, "model.layers." + std::to_string(i) + ".", layers ? &(*layers)[i] : nullptr};
    grad = layer_backward(m, i, input_of(i), at, std::move(grad));
  }
  multiply_scalar(grad.data(), grad.size(), decoder_embed_scale(m.config));  // Gemma's × √hidden
  return grad;
}

Weight weight_of(Tensor t) { return t.dimension() ? Weight(std::move(t)) : Weight(); }

}  // namespace

Tensor decoder_input_gradient(const DecoderModel& m, const Trace& t, const Tensor& grad_normed) {
  return backward(m, t, grad_normed, nullptr, nullptr);
}

std::vector<NamedTensor> decoder_weight_gradients(const DecoderModel& m, const Trace& t, const std::vector<int64_t>& ids,
                                                  const Tensor& grad_logits) {
  const DecoderConfig& c = m.config;
  const size_t V = c.vocab_size, H = c.hidden_size, rows = grad_logits.size() / V;
  if (rows != ids.size() || t.at("logits").size() != grad_logits.size())
    throw std::logic_error("decoder_weight_gradients: the logits' gradient does not fit the run");
  Tensor g = grad_logits;  // through Gemma's final cap: d(c·tanh(z/c))/dz = 1 − (y/c)²
  if (c.final_softcap > 0) {
    const float* logits = t.at("logits").data();
    for (size_t i = 0; i < g.size(); ++i) {
      const double y = logits[i] / c.final_softcap;
      g.data()[i] = float(g.data()[i] * (1.0 - y * y));
    }
  }
  Tensor head = Tensor::from_shape({V, H});  // lm_head: gᵀ · model.norm's output
  matmul_tn(g.data(), t.at("model.norm").data(), head.data(), V, rows, H);
  std::vector<LayerGrads> layers;
  for (const DecoderLayer& l : m.layers) layers.push_back(zeros_like(l));
  LayerNorm final_norm = zeros_like(m.norm);
  const Tensor embeds = backward(m, t, through(g, StoredLinear{m.lm_head, Tensor()}), &layers, &final_norm);
  Tensor embed = c.tie_word_embeddings ? head : zeros_like(head);  // each id's row gathers its positions'
  for (size_t p = 0; p < ids.size(); ++p)
    add(embed.data() + size_t(ids[p]) * H, embeds.data() + p * H, embed.data() + size_t(ids[p]) * H, H);
  DecoderModel grads;  // shaped as the model, so that decoder_state_dict names (and fuses) as for weights
  grads.config = c;
  grads.embed_tokens = std::move(embed);
  grads.lm_head = c.tie_word_embeddings ? grads.embed_tokens : Weight(std::move(head));
  grads.norm = std::move(final_norm);
  for (LayerGrads& l : layers) {
    const auto linear = [](LinearGrad& x) { return StoredLinear{weight_of(std::move(x.weight)), std::move(x.bias)}; };
    grads.layers.push_back({std::move(l.input_norm), std::move(l.post_attention_norm), std::move(l.pre_feedforward_norm),
                            std::move(l.post_feedforward_norm), linear(l.q), linear(l.k), linear(l.v), linear(l.o),
                            std::move(l.q_norm), std::move(l.k_norm), linear(l.gate), linear(l.up), linear(l.down)});
  }
  return decoder_state_dict(grads);
}

}  // namespace attn
