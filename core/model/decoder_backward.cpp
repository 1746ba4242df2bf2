// The Llama family's backward pass for the input's gradient (decoder_input_gradient, decoder.hpp): each
// step of decoder.cpp's forward undone in reverse, reading the activations its trace recorded (the stage
// names of docs/decoders.md), as autograd reads what the forward saved. In double where the forward's
// reductions are (the norms), else float as the forward computes.
#include <cmath>
#include <string>

#include "core/kernels/kernels.hpp"
#include "core/model/attention.hpp"
#include "core/model/decoder.hpp"
#include "core/model/layers.hpp"

namespace attn {
namespace {

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

void add_to(Tensor& into, const Tensor& t) { add(into.data(), t.data(), into.data(), into.size()); }

// y = (offset + w) · x · s over each row of n, s = 1 / √(mean(x²) + eps): with a = (offset + w) · g,
// dx = s · a − x · s³ · mean(a · x).
Tensor rms_norm_backward(const Tensor& x, const Tensor& weight, double eps, float offset, const Tensor& grad) {
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
  }
  return out;
}

Tensor norm_backward(const DecoderConfig& c, const Tensor& x, const LayerNorm& n, const Tensor& grad) {
  if (c.norm == NormKind::layer_norm) {
    LayerNorm frozen;
    return layer_norm_backward(x, n, grad, frozen, float(c.rms_norm_eps));
  }
  return rms_norm_backward(x, n.weight, c.rms_norm_eps, c.norm == NormKind::rms_one_plus ? 1.0f : 0.0f, grad);
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
  std::string p;  // "model.layers.{i}."
  const Tensor& operator()(const std::string& name) const { return t.at(p + name); }
};

// LlamaMLP / GPTNeoXMLP backward from the gradient of down_proj's output to that of its input (the norm's
// output).
Tensor mlp_backward(const DecoderConfig& c, const DecoderLayer& l, const LayerStages& at, const Tensor& grad) {
  const bool gated = c.mlp == MlpKind::gated;
  Tensor g = through(grad, l.down_proj);
  if (!gated) {
    activate_backward(g, at("mlp.up_proj"), c.act);
    return through(g, l.up_proj);
  }
  const Tensor &act = at("mlp.act"), &up = at("mlp.up_proj");
  Tensor g_up = Tensor::from_shape(g.shape());
  multiply(g.data(), act.data(), g_up.data(), g.size());
  multiply(g.data(), up.data(), g.data(), g.size());
  activate_backward(g, at("mlp.gate_proj"), c.act);
  Tensor g_in = through(g, l.gate_proj);
  add_to(g_in, through(g_up, l.up_proj));
  return g_in;
}

// LlamaAttention backward from the gradient of o_proj's output to that of its input (the input norm's
// output): o_proj, the heads' softmax(QKᵀ / divisor (capped, masked)) · V with grouped key/value heads
// (each key/value head's gradient sums its query heads'), the rotation, Qwen3's and Gemma 3's q/k norms,
// then the projections.
Tensor attention_backward(const DecoderModel& m, size_t index, const LayerStages& at, const Tensor& grad) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  const Tensor g_context = split_heads(through(grad, l.o_proj), c.num_heads);
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
    dq = rms_norm_backward(at("self_attn.q_proj"), l.q_norm, c.rms_norm_eps, offset, dq);
    dk = rms_norm_backward(at("self_attn.k_proj"), l.k_norm, c.rms_norm_eps, offset, dk);
  }
  Tensor g_in = through(merge_heads(dq), l.q_proj);
  add_to(g_in, through(merge_heads(dk), l.k_proj));
  add_to(g_in, through(merge_heads(dv), l.v_proj));
  return g_in;
}

// One layer's backward (decoder.cpp's layer()): the gradient of its input from that of its output.
Tensor layer_backward(const DecoderModel& m, size_t index, const Tensor& x, const LayerStages& at, Tensor grad) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  if (c.parallel_residual) {  // x + attn(norm1(x)) + mlp(norm2(x))
    Tensor g_x = grad;
    add_to(g_x, norm_backward(c, x, l.post_attention_norm, mlp_backward(c, l, at, grad)));
    add_to(g_x, norm_backward(c, x, l.input_norm, attention_backward(m, index, at, grad)));
    return g_x;
  }
  // out = residual + [post_feedforward_norm](mlp(pre-MLP norm(residual)))
  Tensor branch = grad;
  if (c.sandwich_norms) branch = norm_backward(c, at("mlp.down_proj"), l.post_feedforward_norm, branch);
  const LayerNorm& pre_mlp = c.sandwich_norms ? l.pre_feedforward_norm : l.post_attention_norm;
  add_to(grad, norm_backward(c, at("residual"), pre_mlp, mlp_backward(c, l, at, branch)));
  // residual = x + [post_attention_norm](attention(input_norm(x)))
  branch = grad;
  if (c.sandwich_norms) branch = norm_backward(c, at("self_attn.o_proj"), l.post_attention_norm, branch);
  add_to(grad, norm_backward(c, x, l.input_norm, attention_backward(m, index, at, branch)));
  return grad;
}

}  // namespace

Tensor decoder_input_gradient(const DecoderModel& m, const Trace& t, const Tensor& grad_normed) {
  const size_t L = m.layers.size();
  const auto input_of = [&](size_t i) -> const Tensor& {
    return t.at(i ? "model.layers." + std::to_string(i - 1) : "model.embed_tokens");
  };
  Tensor grad = norm_backward(m.config, input_of(L), m.norm, grad_normed);
  for (size_t i = L; i-- > 0;)
    grad = layer_backward(m, i, input_of(i), LayerStages{t, "model.layers." + std::to_string(i) + "."}, std::move(grad));
  multiply_scalar(grad.data(), grad.size(), decoder_embed_scale(m.config));  // Gemma's × √hidden
  return grad;
}

}  // namespace attn
