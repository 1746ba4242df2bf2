#include "core/model/attention.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/torch/rng.hpp"
#include "core/torch/torch_math.hpp"

namespace attn {

Tensor embed(const Tensor& weight, const std::vector<int64_t>& ids, size_t batch, size_t seq) {
  const size_t vocab = weight.shape(0), d = weight.shape(1);
  Tensor out = Tensor::from_shape({batch, seq, d});
  for (size_t t = 0; t < batch * seq; ++t) {
    if (ids[t] < 0 || size_t(ids[t]) >= vocab)
      throw InputError("token id " + std::to_string(ids[t]) + " is outside the embedding table (" +
                       std::to_string(vocab) + " rows)");
    std::copy_n(weight.data() + size_t(ids[t]) * d, d, out.data() + t * d);
  }
  // Python's math.sqrt(d_model) is a double; PyTorch multiplies a float tensor by it as float32.
  multiply_scalar(out.data(), out.size(), float(std::sqrt(double(d))));
  return out;
}

Tensor positional_encoding_table(size_t max_len, size_t d_model) {
  if (d_model % 2 != 0)
    throw InputError("d_model must be even for the sinusoidal positional encoding (got " +
                     std::to_string(d_model) + "; PyTorch's PositionalEncoding fails on odd sizes)");
  // PyTorch's float32 steps: div_term = exp(arange(0, d, 2) * (-ln(10000) / d)); angle = position ·
  // div_term as one [max_len, d/2] tensor; sin and cos of it with PyTorch's own functions.
  const size_t half = d_model / 2;
  const float factor = float(-std::log(10000.0) / double(d_model));
  std::vector<float> div_term(half), angle(max_len * half), sin(angle.size()), cos(angle.size());
  for (size_t i = 0; i < half; ++i) div_term[i] = torch_expf(float(2 * i) * factor);
  for (size_t pos = 0; pos < max_len; ++pos)
    for (size_t i = 0; i < half; ++i) angle[pos * half + i] = float(pos) * div_term[i];
  torch_sin(angle.data(), sin.data(), angle.size());
  torch_cos(angle.data(), cos.data(), angle.size());
  Tensor pe = Tensor::from_shape({max_len, d_model});
  for (size_t j = 0; j < angle.size(); ++j) {
    pe.data()[2 * j] = sin[j];
    pe.data()[2 * j + 1] = cos[j];
  }
  return pe;
}

Tensor add_positional_encoding(const Tensor& x, const Tensor& table) {
  const size_t batch = x.shape(0), seq = x.shape(1), d = x.shape(2);
  if (seq > table.shape(0))
    throw InputError("sequence length " + std::to_string(seq) + " exceeds max_len " +
                     std::to_string(table.shape(0)));
  Tensor out = Tensor::from_shape(x.shape());
  for (size_t b = 0; b < batch; ++b)
    add(x.data() + b * seq * d, table.data(), out.data() + b * seq * d, seq * d);
  return out;
}

namespace {

// y [..., out] for x [..., in] through a weight [out, in]: the product's output, shaped.
Tensor linear_output(const Tensor& x, size_t out_features, size_t in_features) {
  if (x.shape().back() != in_features)
    throw InputError("linear layer expects " + std::to_string(in_features) + " input features, got " +
                     std::to_string(x.shape().back()));
  Shape shape(x.shape().begin(), x.shape().end());
  shape.back() = out_features;
  return Tensor::from_shape(shape);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias, bool relu) {
  const size_t out_features = weight.shape(0), in_features = weight.shape(1);
  Tensor y = linear_output(x, out_features, in_features);
  const size_t rows = x.size() / in_features;
  matmul_nt(x.data(), weight.data(), y.data(), rows, in_features, out_features, bias ? bias->data() : nullptr, relu);
  return y;
}

Tensor linear(const Tensor& x, const Weight& weight, const Tensor* bias) {
  if (!weight.half()) return linear(x, weight.values(), bias);
  const size_t out_features = weight.shape(0), in_features = weight.shape(1);
  Tensor y = linear_output(x, out_features, in_features);
  matmul_nt(x.data(), HalfMatrix{weight.bits(), weight.half_type()}, y.data(), x.size() / in_features, in_features,
            out_features, bias ? bias->data() : nullptr);
  return y;
}

namespace {

void add_to(Tensor& into, const Tensor& add_this) {
  add(into.data(), add_this.data(), into.data(), into.size());
}

}  // namespace

// Each product sums over its contracted index in order, as the reference BLAS and bmm's loop do.
Tensor linear_backward(const Tensor& x, const Tensor& weight, const Tensor& grad_y, Tensor& grad_weight,
                       Tensor* grad_bias) {
  const size_t out_features = weight.shape(0), in_features = weight.shape(1), rows = x.size() / in_features;
  Tensor grad_x = Tensor::from_shape(x.shape());
  matmul(grad_y.data(), weight.data(), grad_x.data(), rows, out_features, in_features);
  if (!frozen(grad_weight)) linear_weight_backward(x, grad_y, grad_weight, grad_bias);
  return grad_x;
}

void linear_weight_backward(const Tensor& x, const Tensor& grad_y, Tensor& grad_weight, Tensor* grad_bias) {
  const size_t out_features = grad_weight.shape(0), in_features = grad_weight.shape(1), rows = x.size() / in_features;
  Tensor grad_w = Tensor::from_shape({out_features, in_features});
  matmul_tn(grad_y.data(), x.data(), grad_w.data(), out_features, rows, in_features);
  add_to(grad_weight, grad_w);
  if (!grad_bias) return;
  Tensor grad_b = Tensor::from_shape({out_features});
  column_sums(grad_y.data(), rows, out_features, grad_b.data());
  add_to(*grad_bias, grad_b);
}

MaskKind parse_mask_kind(const std::string& text) {
  if (text == "none") return MaskKind::none;
  if (text == "padding") return MaskKind::padding;
  if (text == "causal") return MaskKind::causal;
  if (text == "padding+causal" || text == "causal+padding") return MaskKind::padding_causal;
  throw InputError("unknown mask '" + text + "' (expected none, padding, causal or padding+causal)");
}

std::string mask_kind_name(MaskKind kind) {
  switch (kind) {
    case MaskKind::none: return "none";
    case MaskKind::padding: return "padding";
    case MaskKind::causal: return "causal";
    case MaskKind::padding_causal: return "padding+causal";
  }
  return "?";
}

MaskTensor padding_mask(const std::vector<int64_t>& ids, size_t batch, size_t seq) {
  MaskTensor mask = MaskTensor::from_shape({batch, seq});
  for (size_t t = 0; t < batch * seq; ++t) mask.data()[t] = ids[t] != 0;
  return mask;
}

MaskTensor attention_mask(MaskKind kind, const std::vector<int64_t>& ids, size_t batch, size_t seq) {
  const bool padding = masks_padding(kind), causal = masks_future(kind);
  MaskTensor mask = MaskTensor::from_shape({batch, seq, seq});
  for (size_t b = 0; b < batch; ++b)
    for (size_t i = 0; i < seq; ++i)
      for (size_t j = 0; j < seq; ++j)
        mask(b, i, j) = (!padding || ids[b * seq + j] != 0) && (!causal || j <= i);
  return mask;
}

AttentionSteps attention_scores(const Tensor& q, const Tensor& k, const AttentionOptions& options) {
  const size_t batch = q.shape(0), sq = q.shape(1), dk = q.shape(2), sk = k.shape(1);
  if (k.shape(0) != batch || k.shape(2) != dk) throw InputError("attention: query and key shapes do not agree");
  const float sqrt_dk = float(std::sqrt(double(dk)));
  std::optional<Tensor> scaled_q;
  if (options.scale_query_first) {
    scaled_q = q;
    divide_scalar(scaled_q->data(), scaled_q->size(), sqrt_dk);
  }
  const Tensor& query = scaled_q ? *scaled_q : q;
  AttentionSteps s;
  s.scores = Tensor::from_shape({batch, sq, sk});
  for (size_t b = 0; b < batch; ++b)
    matmul_nt(query.data() + b * sq * dk, k.data() + b * sk * dk, s.scores.data() + b * sq * sk, sq, dk, sk);
  s.scaled_scores = s.scores;
  if (!options.scale_query_first) divide_scalar(s.scaled_scores.data(), s.scaled_scores.size(), sqrt_dk);
  if (options.layer_divisor != 1.0f) divide_scalar(s.scaled_scores.data(), s.scaled_scores.size(), options.layer_divisor);
  s.masked_scores = s.scaled_scores;
  if (const MaskTensor* mask = options.mask) {
    if (mask->shape() != s.scores.shape()) throw InputError("attention: mask shape does not match the scores");
    masked_fill(s.masked_scores.data(), mask->data(), mask->size(), options.mask_value);
  }
  return s;
}

void attention_weights_and_output(AttentionSteps& s, const Tensor& v, const AttentionOptions& options) {
  const size_t batch = s.masked_scores.shape(0), sq = s.masked_scores.shape(1), sk = s.masked_scores.shape(2);
  if (v.shape(0) != batch || v.shape(1) != sk) throw InputError("attention: key and value shapes do not agree");
  s.attention_weights = s.masked_scores;
  softmax_rows(s.attention_weights.data(), batch * sq, sk);
  std::optional<Tensor> dropped;
  if (options.dropout && options.dropout_p > 0) {
    dropped = s.attention_weights;
    s.dropout_noise = Tensor::from_shape(dropped->shape());
    options.dropout->dropout_(dropped->data(), dropped->size(), options.dropout_p, s.dropout_noise.data());
  }
  s.attention_output = Tensor::from_shape({batch, sq, v.shape(2)});
  attend_to_values(dropped ? *dropped : s.attention_weights, v, s.attention_output);
}

AttentionSteps scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionOptions& options) {
  AttentionSteps s = attention_scores(q, k, options);
  attention_weights_and_output(s, v, options);
  return s;
}

void attend_to_values(const Tensor& weights, const Tensor& v, Tensor& out) {
  const size_t batch = weights.shape(0), sq = weights.shape(1), sk = weights.shape(2), dv = v.shape(2);
  for (size_t b = 0; b < batch; ++b)
    matmul(weights.data() + b * sq * sk, v.data() + b * sk * dv, out.data() + b * sq * dv, sq, sk, dv);
}

// autograd's steps in reverse: bmm, dropout (× its noise), softmax, masked_fill (masked entries get
// none), ÷ the layer's divisor, ÷ √d_k, bmm.
AttentionGrads scaled_dot_product_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                     const AttentionSteps& steps, const Tensor& grad_output,
                                                     const AttentionOptions& options) {
  const size_t batch = q.shape(0), sq = q.shape(1), dk = q.shape(2), sk = k.shape(1), dv = v.shape(2);
  const float sqrt_dk = float(std::sqrt(double(dk)));
  Tensor weights = steps.attention_weights;  // as they multiplied V: after dropout
  if (steps.dropout_noise.dimension()) multiply(weights.data(), steps.dropout_noise.data(), weights.data(), weights.size());
  Tensor query = q;
  if (options.scale_query_first) divide_scalar(query.data(), query.size(), sqrt_dk);
  AttentionGrads g{Tensor::from_shape(q.shape()), Tensor::from_shape(k.shape()), Tensor::from_shape(v.shape())};
  Tensor grad_scores = Tensor::from_shape({batch, sq, sk});
  for (size_t b = 0; b < batch; ++b) {
    const float* dout = grad_output.data() + b * sq * dv;
    matmul_nt(dout, v.data() + b * sk * dv, grad_scores.data() + b * sq * sk, sq, dv, sk);
    matmul_tn(weights.data() + b * sq * sk, dout, g.value.data() + b * sk * dv, sk, sq, dv);
  }
  if (steps.dropout_noise.dimension())
    multiply(grad_scores.data(), steps.dropout_noise.data(), grad_scores.data(), grad_scores.size());
  softmax_backward_rows(steps.attention_weights.data(), grad_scores.data(), batch * sq, sk);
  if (options.mask) masked_fill(grad_scores.data(), options.mask->data(), grad_scores.size(), 0.0f);
  if (options.layer_divisor != 1.0f) divide_scalar(grad_scores.data(), grad_scores.size(), options.layer_divisor);
  if (!options.scale_query_first) divide_scalar(grad_scores.data(), grad_scores.size(), sqrt_dk);
  for (size_t b = 0; b < batch; ++b) {
    const float* ds = grad_scores.data() + b * sq * sk;
    matmul(ds, k.data() + b * sk * dk, g.query.data() + b * sq * dk, sq, sk, dk);
    matmul_tn(ds, query.data() + b * sq * dk, g.key.data() + b * sk * dk, sk, sq, dk);
  }
  if (options.scale_query_first) divide_scalar(g.query.data(), g.query.size(), sqrt_dk);
  return g;
}

}  // namespace attn
