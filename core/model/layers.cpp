#include "core/model/layers.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/torch/torch_math.hpp"

namespace attn {

Tensor reshaped(Tensor t, const Shape& shape) {
  t.reshape(shape);
  return t;
}

namespace {

void record(Trace* trace, const std::string& name, const Tensor& t) {
  if (trace) trace->record(name, t);
}

// A stage the pass continues from: its hooks (interventions) change `t` first.
void stage(Trace* trace, const std::string& name, Tensor& t) {
  if (trace) trace->stage(name, t);
}

double gelu_cdf(double x) { return 0.5 * (1.0 + std::erf(x * 0.70710678118654752440)); }

}  // namespace

void dropout(TorchGenerator* gen, Tensor& x, double p, Tensor* noise) {
  if (!gen || p <= 0) return;
  if (noise) *noise = Tensor::from_shape(x.shape());
  gen->dropout_(x.data(), x.size(), p, noise ? noise->data() : nullptr);
}

void dropout_backward(Tensor& grad, const Tensor& noise) {
  if (noise.dimension()) attn::multiply(grad.data(), noise.data(), grad.data(), grad.size());
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::from_shape(a.shape());
  attn::add(a.data(), b.data(), out.data(), a.size());
  return out;
}

// [B, H, S, dk] → [B, S, H·dk]
Tensor merge_heads(const Tensor& x) {
  const size_t B = x.shape(0), H = x.shape(1), S = x.shape(2), dk = x.shape(3);
  Tensor out = Tensor::from_shape({B, S, H * dk});
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t s = 0; s < S; ++s)
        std::copy_n(x.data() + ((b * H + h) * S + s) * dk, dk, out.data() + ((b * S + s) * H + h) * dk);
  return out;
}

void activate(Tensor& x, Activation activation) {
  for (float& v : x) {
    if (activation == Activation::relu)
      v = v < 0.0f ? 0.0f : v;
    else  // exact GELU: x · Φ(x)
      v = float(double(v) * gelu_cdf(double(v)));
  }
}

namespace {

void add_to(Tensor& into, const Tensor& add_this) {
  attn::add(into.data(), add_this.data(), into.data(), into.size());
}

}  // namespace

// ReLU: the gradient where the input was positive; GELU: × (Φ(x) + x·φ(x)).
void activate_backward(Tensor& grad, const Tensor& input, Activation activation) {
  for (size_t i = 0; i < grad.size(); ++i) {
    const double x = input.data()[i];
    if (activation == Activation::relu)
      grad.data()[i] = x > 0 ? grad.data()[i] : 0.0f;
    else
      grad.data()[i] = float(grad.data()[i] * (gelu_cdf(x) + x * std::exp(-0.5 * x * x) * 0.39894228040143267794));
  }
}

namespace {

// gelu_new's tanh(√(2/π)·(x + 0.044715·x³)) as transformers' NewGELUActivation computes it in float32
// (torch.pow(x, 3.0) is x·x·x; torch.tanh is Sleef's).
float gelu_new_tanh(float v) {
  const float k = float(std::sqrt(2.0 / M_PI)), cube = v * v * v;
  return torch_tanhf(k * (v + 0.044715f * cube));
}

}  // namespace

void activate(Tensor& x, HiddenAct activation, Tensor* tanh) {
  if (activation != HiddenAct::gelu_new) return activate(x, activation == HiddenAct::gelu ? Activation::gelu : Activation::relu);
  if (tanh) *tanh = Tensor::from_shape(x.shape());
  gelu_new(x.data(), tanh ? tanh->data() : nullptr, x.size());
}

// gelu_new: with t = tanh(k·(x + c·x³)), y' = ½(1 + t) + ½·x·(1 − t²)·k·(1 + 3c·x²).
void activate_backward(Tensor& grad, const Tensor& input, HiddenAct activation, const Tensor* tanh) {
  if (activation != HiddenAct::gelu_new)
    return activate_backward(grad, input, activation == HiddenAct::gelu ? Activation::gelu : Activation::relu);
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  parallel_pieces(grad.size(), 1 << 14, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const double x = input.data()[i], t = tanh ? tanh->data()[i] : gelu_new_tanh(input.data()[i]);
      grad.data()[i] = float(grad.data()[i] * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x)));
    }
  });
}

Tensor split_heads(const Tensor& x, size_t heads) {
  const size_t B = x.shape(0), S = x.shape(1), dk = x.shape(2) / heads;
  Tensor out = Tensor::from_shape({B, heads, S, dk});
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s)
      for (size_t h = 0; h < heads; ++h)
        std::copy_n(x.data() + ((b * S + s) * heads + h) * dk, dk, out.data() + ((b * heads + h) * S + s) * dk);
  return out;
}

namespace {

constexpr size_t layer_norm_rows = 64;  // rows per piece when a LayerNorm spreads over the threads

// A row's mean and 1/√(var + eps), in double: within an ulp of PyTorch's float Welford.
std::pair<double, double> moments(const float* x, size_t d, float eps) {
  double mean = 0, var = 0;
  for (size_t i = 0; i < d; ++i) mean += x[i];
  mean /= double(d);
  for (size_t i = 0; i < d; ++i) var += (x[i] - mean) * (x[i] - mean);
  return {mean, 1.0 / std::sqrt(var / double(d) + double(eps))};
}

}  // namespace

Tensor layer_norm(const Tensor& x, const LayerNorm& norm, float eps) {
  const size_t d = x.shape().back(), rows_count = x.size() / d;
  Tensor out = Tensor::from_shape(x.shape());
  const float *weight = norm.weight.data(), *bias = norm.bias.data();  // raw: the loop then vectorises
  parallel_pieces(rows_count, layer_norm_rows, [&](size_t first, size_t last) {
    for (size_t r = first; r < last; ++r) {
      const float* in = x.data() + r * d;
      float* y = out.data() + r * d;
      const auto [mean, rstd] = moments(in, d, eps);
      for (size_t i = 0; i < d; ++i) y[i] = float((in[i] - mean) * rstd * double(weight[i]) + double(bias[i]));
    }
  });
  return out;
}

namespace {

// One row of LayerNorm's backward into dx; with `sums`, the row's terms of grad_γ and grad_β added there
// ([2d]: γ's, then β's). x̂ and g are the caller's scratch rows of d.
void layer_norm_backward_row(const float* in, const float* dy, const float* weight, size_t d, float eps, float* dx,
                             double* sums, std::vector<double>& x_hat, std::vector<double>& g) {
  const auto [mean, rstd] = moments(in, d, eps);
  double mean_g = 0, mean_g_x_hat = 0;
  for (size_t i = 0; i < d; ++i) {
    x_hat[i] = (in[i] - mean) * rstd;
    g[i] = double(dy[i]) * double(weight[i]);
    mean_g += g[i];
    mean_g_x_hat += g[i] * x_hat[i];
  }
  if (sums)
    for (size_t i = 0; i < d; ++i) sums[i] += double(dy[i]) * x_hat[i], sums[d + i] += dy[i];
  mean_g /= double(d);
  mean_g_x_hat /= double(d);
  for (size_t i = 0; i < d; ++i) dx[i] = float(rstd * (g[i] - mean_g - x_hat[i] * mean_g_x_hat));
}

}  // namespace

// With x̂ = (x − mean)·rstd and g = grad_y·γ: grad_x = rstd·(g − mean(g) − x̂·mean(g·x̂)); grad_γ = Σ grad_y·x̂,
// grad_β = Σ grad_y over rows. In double, rounded once. Frozen parameters leave the rows independent, so
// they spread over the threads; the sums keep the rows' order.
Tensor layer_norm_backward(const Tensor& x, const LayerNorm& norm, const Tensor& grad_y, LayerNorm& grads,
                           float eps) {
  const size_t d = x.shape().back(), rows_count = x.size() / d;
  Tensor grad_x = Tensor::from_shape(x.shape());
  const auto rows = [&](size_t first, size_t last, double* sums) {
    std::vector<double> x_hat(d), g(d);
    for (size_t r = first; r < last; ++r)
      layer_norm_backward_row(x.data() + r * d, grad_y.data() + r * d, norm.weight.data(), d, eps,
                              grad_x.data() + r * d, sums, x_hat, g);
  };
  if (frozen(grads.weight)) {
    parallel_pieces(rows_count, layer_norm_rows, [&](size_t first, size_t last) { rows(first, last, nullptr); });
    return grad_x;
  }
  std::vector<double> sums(2 * d, 0.0);
  rows(0, rows_count, sums.data());
  for (size_t i = 0; i < d; ++i) {
    grads.weight(i) += float(sums[i]);
    grads.bias(i) += float(sums[d + i]);
  }
  return grad_x;
}

MaskTensor head_mask(const MaskTensor& mask, size_t heads) {
  const size_t B = mask.shape(0), Sq = mask.shape(1), Sk = mask.shape(2);
  MaskTensor out = MaskTensor::from_shape({B * heads, Sq, Sk});
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < heads; ++h) std::copy_n(mask.data() + b * Sq * Sk, Sq * Sk, out.data() + (b * heads + h) * Sq * Sk);
  return out;
}

namespace {

AttentionOptions attention_options(const LayerConfig& config, const MaskTensor* head_mask,
                                   TorchGenerator* dropout_gen) {
  AttentionOptions options;
  options.mask = head_mask;
  options.scale_query_first = config.layer_style == LayerStyle::torch;
  // nn.MultiheadAttention drops attention weights; the tutorial's MultiHeadAttention never uses its dropout.
  if (config.layer_style == LayerStyle::torch) options.dropout = dropout_gen;
  options.dropout_p = config.dropout;
  return options;
}

// multi_head_attention, in training mode when `dropout_gen` is non-null.
Tensor attend(const EncoderLayer& layer, const LayerConfig& config, const Tensor& q_in, const Tensor& kv_in,
              const MaskTensor* mask, TorchGenerator* dropout_gen, Trace* trace, const std::string& prefix,
              AttentionSaved* saved) {
  const size_t B = q_in.shape(0), Sq = q_in.shape(1), Sk = kv_in.shape(1), H = config.num_heads;
  const size_t dk = layer.query.weight.shape(0) / H;
  Tensor q = split_heads(linear(q_in, layer.query.weight, &layer.query.bias), H);
  Tensor k = split_heads(linear(kv_in, layer.key.weight, &layer.key.bias), H);
  Tensor v = split_heads(linear(kv_in, layer.value.weight, &layer.value.bias), H);
  stage(trace, prefix + "query", q);
  stage(trace, prefix + "key", k);
  stage(trace, prefix + "value", v);
  const MaskTensor heads_mask = mask ? head_mask(*mask, H) : MaskTensor();
  const AttentionOptions options = attention_options(config, mask ? &heads_mask : nullptr, dropout_gen);
  q = reshaped(std::move(q), {B * H, Sq, dk});
  k = reshaped(std::move(k), {B * H, Sk, dk});
  v = reshaped(std::move(v), {B * H, Sk, dk});
  AttentionSteps a = scaled_dot_product_attention(q, k, v, options);
  // The trace takes the steps' tensors, but copies the weights, which the backward reads.
  if (trace) {
    record(trace, prefix + "scores", reshaped(std::move(a.scores), {B, H, Sq, Sk}));
    const std::string weights = prefix + "attention_weights";
    if (trace->hooked(weights)) {
      // A replaced pattern: the heads' outputs are recomputed from it (pattern · V).
      Tensor w = reshaped(std::move(a.attention_weights), {B, H, Sq, Sk});
      stage(trace, weights, w);
      a.attention_weights = reshaped(std::move(w), {B * H, Sq, Sk});
      attend_to_values(a.attention_weights, v, a.attention_output);
    } else {
      record(trace, weights,
             reshaped(saved ? Tensor(a.attention_weights) : std::move(a.attention_weights), {B, H, Sq, Sk}));
    }
  }
  a.scores = a.scaled_scores = a.masked_scores = Tensor();  // the backward reads only the weights and the noise
  Tensor merged = merge_heads(reshaped(std::move(a.attention_output), {B, H, Sq, dk}));
  stage(trace, prefix + "attention_output", merged);
  Tensor out = linear(merged, layer.output.weight, &layer.output.bias);
  stage(trace, prefix + "output", out);
  if (saved) *saved = {q_in, std::move(q), std::move(k), std::move(v), std::move(a), std::move(merged)};
  return out;
}

// Heads [B·H, S, dk] as [B, S, H·dk], the projections' output layout.
Tensor merged_heads(Tensor t, size_t batch, size_t heads) {
  const size_t S = t.shape(1), dk = t.shape(2);
  return merge_heads(reshaped(std::move(t), {batch, heads, S, dk}));
}

}  // namespace

Tensor self_attention_backward(const EncoderLayer& layer, size_t H, const AttentionSaved& saved,
                               const AttentionOptions& options, const Tensor& grad_output, EncoderLayer& grads) {
  const size_t B = saved.input.shape(0), S = saved.input.shape(1);
  const Tensor grad_merged =
      linear_backward(saved.merged, layer.output.weight, grad_output, grads.output.weight, &grads.output.bias);
  const AttentionGrads g = scaled_dot_product_attention_backward(
      saved.query, saved.key, saved.value, saved.steps,
      reshaped(split_heads(grad_merged, H), {B * H, S, saved.query.shape(2)}), options);
  Tensor grad_input = linear_backward(saved.input, layer.value.weight, merged_heads(g.value, B, H),
                                      grads.value.weight, &grads.value.bias);
  add_to(grad_input, linear_backward(saved.input, layer.key.weight, merged_heads(g.key, B, H),
                                         grads.key.weight, &grads.key.bias));
  add_to(grad_input, linear_backward(saved.input, layer.query.weight, merged_heads(g.query, B, H),
                                         grads.query.weight, &grads.query.bias));
  return grad_input;
}

namespace {

// The encoders' self-attention backward: their options, the mask repeated per head.
Tensor attend_backward(const EncoderLayer& layer, const LayerConfig& config, const AttentionSaved& saved,
                       const MaskTensor* mask, const Tensor& grad_output, EncoderLayer& grads) {
  const MaskTensor heads_mask = mask ? head_mask(*mask, config.num_heads) : MaskTensor();
  return self_attention_backward(layer, config.num_heads, saved,
                                 attention_options(config, mask ? &heads_mask : nullptr, nullptr), grad_output, grads);
}

Tensor feed_forward_impl(const EncoderLayer& layer, const LayerConfig& config, const Tensor& x,
                         TorchGenerator* dropout_gen, Trace* trace, const std::string& prefix, FeedForwardSaved* saved) {
  // ReLU runs in linear1's epilogue; its backward needs only where its input was positive, which its
  // output tells as well.
  const bool relu = config.activation == Activation::relu;
  Tensor hidden = linear(x, layer.linear1.weight, &layer.linear1.bias, relu);
  Tensor h = saved ? Tensor(hidden) : std::move(hidden);
  if (!relu) activate(h, config.activation);
  Tensor noise;
  dropout(dropout_gen, h, config.dropout, &noise);
  Tensor out = linear(h, layer.linear2.weight, &layer.linear2.bias);
  stage(trace, prefix + "output", out);
  if (saved) *saved = {x, std::move(hidden), std::move(h), std::move(noise)};
  return out;
}

Tensor feed_forward_backward(const EncoderLayer& layer, const LayerConfig& config, const FeedForwardSaved& saved,
                             const Tensor& grad_output, EncoderLayer& grads) {
  Tensor grad = linear_backward(saved.activated, layer.linear2.weight, grad_output, grads.linear2.weight,
                                &grads.linear2.bias);
  dropout_backward(grad, saved.noise);
  activate_backward(grad, saved.hidden, config.activation);
  return linear_backward(saved.input, layer.linear1.weight, grad, grads.linear1.weight, &grads.linear1.bias);
}

}  // namespace

Tensor multi_head_attention(const EncoderLayer& layer, const LayerConfig& config, const Tensor& q_in,
                            const Tensor& kv_in, const MaskTensor* mask, Trace* trace, const std::string& prefix) {
  return attend(layer, config, q_in, kv_in, mask, nullptr, trace, prefix, nullptr);
}

Tensor feed_forward(const EncoderLayer& layer, const LayerConfig& config, const Tensor& x,
                    TorchGenerator* dropout_gen, Trace* trace, const std::string& prefix) {
  return feed_forward_impl(layer, config, x, dropout_gen, trace, prefix, nullptr);
}

Tensor encoder_layer_forward(const EncoderLayer& l, const LayerConfig& c, Tensor x, const MaskTensor* mask,
                             TorchGenerator* dropout_gen, Trace* trace, const std::string& p, EncoderLayerSaved* saved) {
  EncoderLayerSaved scratch;
  EncoderLayerSaved& s = saved ? *saved : scratch;
  AttentionSaved* attention_saved = saved ? &s.attention : nullptr;
  FeedForwardSaved* ffn_saved = saved ? &s.feed_forward : nullptr;
  Tensor* attention_noise = saved ? &s.attention_noise : nullptr;
  Tensor* ffn_noise = saved ? &s.feed_forward_noise : nullptr;
  if (c.norm_first) {
    if (saved) s.norm1_input = x;
    Tensor h = layer_norm(x, l.norm1);
    stage(trace, p + "norm1", h);
    Tensor a = attend(l, c, h, h, mask, dropout_gen, trace, p + "self_attn.", attention_saved);
    dropout(dropout_gen, a, c.dropout, attention_noise);
    x = add(x, a);
    if (saved) s.norm2_input = x;
    Tensor h2 = layer_norm(x, l.norm2);
    stage(trace, p + "norm2", h2);
    Tensor f = feed_forward_impl(l, c, h2, dropout_gen, trace, p + "ffn.", ffn_saved);
    dropout(dropout_gen, f, c.dropout, ffn_noise);
    x = add(x, f);
  } else {
    Tensor a = attend(l, c, x, x, mask, dropout_gen, trace, p + "self_attn.", attention_saved);
    dropout(dropout_gen, a, c.dropout, attention_noise);
    x = add(x, a);
    if (saved) s.norm1_input = x;
    x = layer_norm(x, l.norm1);
    stage(trace, p + "norm1", x);
    Tensor f = feed_forward_impl(l, c, x, dropout_gen, trace, p + "ffn.", ffn_saved);
    dropout(dropout_gen, f, c.dropout, ffn_noise);
    x = add(x, f);
    if (saved) s.norm2_input = x;
    x = layer_norm(x, l.norm2);
    stage(trace, p + "norm2", x);
  }
  stage(trace, p + "output", x);
  return x;
}

Tensor encoder_layer_backward(const EncoderLayer& l, const LayerConfig& c, const EncoderLayerSaved& s,
                              const MaskTensor* mask, Tensor grad, EncoderLayer& g) {
  // Each residual block: grad flows to its input directly and through its branch.
  auto branch = [&](const Tensor& grad_out, const Tensor& noise, auto&& backward) {
    Tensor grad_branch = grad_out;
    dropout_backward(grad_branch, noise);
    return backward(grad_branch);
  };
  auto ffn_back = [&](const Tensor& gb) { return feed_forward_backward(l, c, s.feed_forward, gb, g); };
  auto attn_back = [&](const Tensor& gb) { return attend_backward(l, c, s.attention, mask, gb, g); };
  if (c.norm_first) {
    Tensor through = layer_norm_backward(s.norm2_input, l.norm2, branch(grad, s.feed_forward_noise, ffn_back), g.norm2);
    add_to(grad, through);
    through = layer_norm_backward(s.norm1_input, l.norm1, branch(grad, s.attention_noise, attn_back), g.norm1);
    add_to(grad, through);
  } else {
    grad = layer_norm_backward(s.norm2_input, l.norm2, grad, g.norm2);
    add_to(grad, branch(grad, s.feed_forward_noise, ffn_back));
    grad = layer_norm_backward(s.norm1_input, l.norm1, grad, g.norm1);
    add_to(grad, branch(grad, s.attention_noise, attn_back));
  }
  return grad;
}

// log_softmax in double; the loss is (1 − ε)·nll + ε·mean over classes of −log p, averaged over the rows
// not ignored, and its gradient (softmax − ((1 − ε)·onehot + ε/C)) / their count.
float cross_entropy(const Tensor& logits, const std::vector<int64_t>& labels, double label_smoothing, Tensor* grad) {
  constexpr int64_t ignored = -100;
  const size_t C = logits.shape().back(), N = logits.size() / C;
  const size_t counted = N - size_t(std::count(labels.begin(), labels.end(), ignored));
  if (counted == 0) throw InputError("no position has a target to predict");
  if (grad) *grad = Tensor::from_shape(logits.shape()), grad->fill(0.0f);
  double total = 0;
  for (size_t b = 0; b < N; ++b) {
    if (labels[b] == ignored) continue;
    if (labels[b] < 0 || size_t(labels[b]) >= C)
      throw InputError("label " + std::to_string(labels[b]) + " is outside [0, " + std::to_string(C) + ")");
    const float* x = logits.data() + b * C;
    const double max = *std::max_element(x, x + C);
    double sum = 0;
    for (size_t c = 0; c < C; ++c) sum += std::exp(x[c] - max);
    const double log_sum = max + std::log(sum);
    double smooth = 0;
    for (size_t c = 0; c < C; ++c) {
      smooth -= x[c] - log_sum;
      const double target = (1 - label_smoothing) * (size_t(labels[b]) == c) + label_smoothing / double(C);
      if (grad) grad->data()[b * C + c] = float((std::exp(x[c] - log_sum) - target) / double(counted));
    }
    total += (1 - label_smoothing) * (log_sum - x[labels[b]]) + label_smoothing * smooth / double(C);
  }
  return float(total / double(counted));
}

}  // namespace attn
