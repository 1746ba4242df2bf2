#include "core/device_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace attn {

namespace {

BufferPtr upload(Backend& backend, const Tensor& t) {
  BufferPtr b = backend.allocate(t.size());
  backend.upload(*b, t.data(), t.size());
  return b;
}

struct DeviceLinear {
  BufferPtr weight, bias;
  size_t in = 0, out = 0;
};
struct DeviceNorm {
  BufferPtr weight, bias;
};
struct DeviceLayer {
  DeviceLinear query, key, value, output, linear1, linear2;
  DeviceNorm norm1, norm2;
};

DeviceLinear upload(Backend& backend, const Linear& l) {
  const size_t in = l.weight.shape(1), out = l.weight.shape(0);
  return {backend.upload_weight(l.weight.data(), in, out, true), upload(backend, l.bias), in, out};
}
DeviceNorm upload(Backend& backend, const LayerNorm& n) {
  return {upload(backend, n.weight), upload(backend, n.bias)};
}

}  // namespace

struct DeviceModel::Weights {
  std::vector<DeviceLayer> layers;
  DeviceNorm final_norm;
};

// Activations for one batch shape, reused from layer to layer and from call to call.
struct DeviceModel::Activations {
  size_t batch = 0, seq = 0;
  BufferPtr x, h, q, k, v, attention, projected, hidden, keep, weights;
};

DeviceModel::DeviceModel(Backend& backend, const TransformerModel& model)
    : backend_(backend), config_(model.config), model_(model), weights_(new Weights), act_(new Activations) {
  for (const EncoderLayer& l : model.layers)
    weights_->layers.push_back({upload(backend, l.query), upload(backend, l.key), upload(backend, l.value),
                                upload(backend, l.output), upload(backend, l.linear1), upload(backend, l.linear2),
                                upload(backend, l.norm1), upload(backend, l.norm2)});
  if (config_.final_norm) weights_->final_norm = upload(backend, model.final_norm);
}

DeviceModel::~DeviceModel() = default;

void DeviceModel::ensure_activations(size_t batch, size_t seq) {
  Activations& a = *act_;
  if (a.batch == batch && a.seq == seq) return;
  const size_t rows = batch * seq, d = config_.d_model;
  for (BufferPtr* b : {&a.x, &a.h, &a.q, &a.k, &a.v, &a.attention, &a.projected}) *b = backend_.allocate(rows * d);
  a.hidden = backend_.allocate(rows * config_.ff_width());
  a.keep = backend_.allocate(rows);
  a.weights.reset();  // allocated when a layer's weights are asked for
  a.batch = batch, a.seq = seq;
}

Tensor DeviceModel::pull(const Buffer& buffer, const Shape& shape) {
  Tensor t = Tensor::from_shape(shape);
  backend_.download(buffer, t.data(), t.size());
  return t;
}

namespace {

void linear(Backend& backend, const Buffer& x, const DeviceLinear& l, Buffer& y, size_t rows) {
  backend.matmul(x, *l.weight, y, rows, l.in, l.out, true);
  backend.add_bias(y, *l.bias, rows, l.out);
}

}  // namespace

// One encoder layer on act_->x, in place; the stage names are classify()'s.
void DeviceModel::layer_forward(size_t index, size_t batch, size_t seq, bool causal, bool masked, Trace* trace) {
  Activations& a = *act_;
  const DeviceLayer& l = weights_->layers[index];
  const size_t rows = batch * seq, d = config_.d_model, H = config_.num_heads;
  const std::string p = "layers." + std::to_string(index) + ".";
  auto record = [&](const std::string& name, const Buffer& b, Shape shape) {
    if (trace && wanted(p + name)) trace->record(p + name, pull(b, shape));
  };
  auto record_heads = [&](const std::string& name, const Buffer& b) {
    if (trace && wanted(p + name)) trace->record(p + name, split_heads(pull(b, {batch, seq, d}), H));
  };
  const std::string weights_name = p + "self_attn.attention_weights";
  const bool keep_weights = trace && !wanted_.empty() && wanted(weights_name);
  if (keep_weights && !a.weights) a.weights = backend_.allocate(batch * H * seq * seq);
  Backend& be = backend_;
  const Buffer& attn_in = config_.norm_first ? *a.h : *a.x;
  if (config_.norm_first) {
    be.layer_norm(*a.x, *l.norm1.weight, *l.norm1.bias, *a.h, rows, d, 1e-5f);
    record("norm1", *a.h, {batch, seq, d});
  }
  linear(be, attn_in, l.query, *a.q, rows);
  linear(be, attn_in, l.key, *a.k, rows);
  linear(be, attn_in, l.value, *a.v, rows);
  record_heads("self_attn.query", *a.q);
  record_heads("self_attn.key", *a.k);
  record_heads("self_attn.value", *a.v);
  AttentionShape shape{batch, H, seq, seq, config_.head_dim(), 1.0f / std::sqrt(float(config_.head_dim())), causal};
  be.attention(*a.q, *a.k, *a.v, masked ? a.keep.get() : nullptr, *a.attention, shape,
               keep_weights ? a.weights.get() : nullptr);
  if (keep_weights) trace->record(weights_name, pull(*a.weights, {batch, H, seq, seq}));
  record("self_attn.attention_output", *a.attention, {batch, seq, d});
  linear(be, *a.attention, l.output, *a.projected, rows);
  record("self_attn.output", *a.projected, {batch, seq, d});
  if (config_.norm_first) {
    be.add(*a.x, *a.projected, *a.x, rows * d);
    be.layer_norm(*a.x, *l.norm2.weight, *l.norm2.bias, *a.h, rows, d, 1e-5f);
    record("norm2", *a.h, {batch, seq, d});
  } else {
    be.add(*a.x, *a.projected, *a.h, rows * d);
    be.layer_norm(*a.h, *l.norm1.weight, *l.norm1.bias, *a.x, rows, d, 1e-5f);
    record("norm1", *a.x, {batch, seq, d});
  }
  const Buffer& ffn_in = config_.norm_first ? *a.h : *a.x;
  linear(be, ffn_in, l.linear1, *a.hidden, rows);
  be.activation(*a.hidden, rows * config_.ff_width(), config_.activation);
  linear(be, *a.hidden, l.linear2, *a.projected, rows);
  record("ffn.output", *a.projected, {batch, seq, d});
  if (config_.norm_first) {
    be.add(*a.x, *a.projected, *a.x, rows * d);
  } else {
    be.add(*a.x, *a.projected, *a.h, rows * d);
    be.layer_norm(*a.h, *l.norm2.weight, *l.norm2.bias, *a.x, rows, d, 1e-5f);
    record("norm2", *a.x, {batch, seq, d});
  }
  record("output", *a.x, {batch, seq, d});
}

bool DeviceModel::wanted(const std::string& stage) const {
  return wanted_.empty() || std::find(wanted_.begin(), wanted_.end(), stage) != wanted_.end();
}

Tensor DeviceModel::encode(const Tensor& x, const uint8_t* key_keep, bool causal, Trace* trace) {
  const size_t batch = x.shape(0), seq = x.shape(1), d = config_.d_model;
  if (x.dimension() != 3 || x.shape(2) != d) throw InputError("the encoder takes [batch, seq, d_model] vectors");
  ensure_activations(batch, seq);
  Activations& a = *act_;
  backend_.upload(*a.x, x.data(), x.size());
  if (key_keep) {
    std::vector<float> keep(key_keep, key_keep + batch * seq);
    backend_.upload(*a.keep, keep.data(), keep.size());
  }
  for (size_t i = 0; i < weights_->layers.size(); ++i) layer_forward(i, batch, seq, causal, key_keep != nullptr, trace);
  if (config_.final_norm) {
    backend_.layer_norm(*a.x, *weights_->final_norm.weight, *weights_->final_norm.bias, *a.h, batch * seq, d, 1e-5f);
    return pull(*a.h, {batch, seq, d});
  }
  return pull(*a.x, {batch, seq, d});
}

Tensor DeviceModel::classify(const std::vector<int64_t>& ids, size_t batch, size_t seq, MaskKind mask,
                             Trace* trace) {
  Trace local;
  Trace& t = trace ? *trace : local;
  const Tensor x = classifier_input(model_, ids, batch, seq, nullptr, t);
  std::vector<uint8_t> keep(batch * seq);
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = ids[i] != 0;
  const bool padding = masks_padding(mask), causal = masks_future(mask);
  classifier_output(model_, encode(x, padding ? keep.data() : nullptr, causal, trace), t);
  return t.stages().back().value;
}

}  // namespace attn
