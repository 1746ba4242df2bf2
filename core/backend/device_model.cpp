#include "core/backend/device_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"

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

// Activations for up to `rows` rows, reused from layer to layer and from call to call (grown, never
// shrunk, so batches of varying shapes do not allocate every call).
struct DeviceModel::Activations {
  size_t rows = 0, weights_size = 0;
  BufferPtr x, h, q, k, v, attention, projected, hidden, keep, weights;
};

// The rows an encoder pass computes and where its stages go: [batch, seq] rows into one trace, or
// packed sequences into one trace each.
struct DeviceModel::Layout {
  size_t batch = 0, seq = 0;
  std::vector<size_t> offsets;           // packed: sequence b is rows offsets[b] … offsets[b + 1]
  Trace* trace = nullptr;                // [batch, seq]: the batch's trace, or null
  std::vector<Trace>* traces = nullptr;  // packed: one per sequence, or null
  size_t rows() const { return offsets.empty() ? batch * seq : offsets.back(); }
  size_t sequence_length(size_t b) const { return offsets[b + 1] - offsets[b]; }
  size_t weights_size(size_t heads) const {
    if (offsets.empty()) return batch * heads * seq * seq;
    size_t size = 0;
    for (size_t b = 0; b < batch; ++b) size += heads * sequence_length(b) * sequence_length(b);
    return size;
  }
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

void DeviceModel::ensure_activations(size_t rows) {
  Activations& a = *act_;
  if (a.rows >= rows) return;
  rows = std::max(rows, a.rows + a.rows / 4);  // batches' sizes creep up: few reallocations
  const size_t d = config_.d_model;
  for (BufferPtr* b : {&a.x, &a.h, &a.q, &a.k, &a.v, &a.attention, &a.projected}) *b = backend_.allocate(rows * d);
  a.hidden = backend_.allocate(rows * config_.ff_width());
  a.keep = backend_.allocate(rows);
  a.rows = rows;
}

Tensor DeviceModel::pull(const Buffer& buffer, const Shape& shape) {
  Tensor t = Tensor::from_shape(shape);
  backend_.download(buffer, t.data(), t.size());
  return t;
}

// A [rows, d] stage: [B, S, d] (split into [B, H, S, D] when `heads`) for a batch, and each sequence's
// [1, S_b, d] for packed ones.
void DeviceModel::record_rows(const Layout& layout, const std::string& name, const Buffer& buffer, bool heads) {
  if (!(layout.trace || layout.traces) || !wanted(name)) return;
  const size_t d = config_.d_model;
  auto shaped = [&](Tensor t) { return heads ? split_heads(t, config_.num_heads) : t; };
  const Tensor all = pull(buffer, {layout.rows(), d});
  if (layout.trace) {
    layout.trace->record(name, shaped(reshaped(all, {layout.batch, layout.seq, d})));
    return;
  }
  for (size_t b = 0; b < layout.batch; ++b) {
    Tensor t = Tensor::from_shape({1, layout.sequence_length(b), d});
    std::copy_n(all.data() + layout.offsets[b] * d, t.size(), t.data());
    (*layout.traces)[b].record(name, shaped(std::move(t)));
  }
}

// The attention weights in act_->weights: [B, H, S, S], or each sequence's [1, H, S_b, S_b].
void DeviceModel::record_weights(const Layout& layout, const std::string& name) {
  const size_t H = config_.num_heads;
  const Tensor all = pull(*act_->weights, {layout.weights_size(H)});
  if (layout.trace) {
    layout.trace->record(name, reshaped(all, {layout.batch, H, layout.seq, layout.seq}));
    return;
  }
  const float* from = all.data();
  for (size_t b = 0; b < layout.batch; ++b) {
    const size_t S = layout.sequence_length(b);
    Tensor t = Tensor::from_shape({1, H, S, S});
    std::copy_n(from, t.size(), t.data());
    from += t.size();
    (*layout.traces)[b].record(name, std::move(t));
  }
}

namespace {

void linear(Backend& backend, const Buffer& x, const DeviceLinear& l, Buffer& y, size_t rows,
            std::optional<Activation> activation = std::nullopt) {
  backend.linear(x, *l.weight, *l.bias, y, rows, l.in, l.out, activation);
}

}  // namespace

// One encoder layer on act_->x, in place; the stage names are classify()'s.
void DeviceModel::layer_forward(size_t index, const Layout& layout, bool causal, bool masked) {
  Activations& a = *act_;
  const DeviceLayer& l = weights_->layers[index];
  const size_t rows = layout.rows(), d = config_.d_model, H = config_.num_heads;
  const std::string p = "layers." + std::to_string(index) + ".";
  auto record = [&](const std::string& name, const Buffer& b) { record_rows(layout, p + name, b, false); };
  auto record_heads = [&](const std::string& name, const Buffer& b) { record_rows(layout, p + name, b, true); };
  const std::string weights_name = p + "self_attn.attention_weights";
  const bool keep_weights = (layout.trace || layout.traces) && !wanted_.empty() && wanted(weights_name);
  if (keep_weights && a.weights_size < layout.weights_size(H)) {
    a.weights_size = layout.weights_size(H);
    a.weights = backend_.allocate(a.weights_size);
  }
  Backend& be = backend_;
  const Buffer& attn_in = config_.norm_first ? *a.h : *a.x;
  if (config_.norm_first) {
    be.layer_norm(*a.x, *l.norm1.weight, *l.norm1.bias, *a.h, rows, d, 1e-5f);
    record("norm1", *a.h);
  }
  linear(be, attn_in, l.query, *a.q, rows);
  linear(be, attn_in, l.key, *a.k, rows);
  linear(be, attn_in, l.value, *a.v, rows);
  record_heads("self_attn.query", *a.q);
  record_heads("self_attn.key", *a.k);
  record_heads("self_attn.value", *a.v);
  AttentionShape shape{layout.batch, H, layout.seq, layout.seq, config_.head_dim(),
                       1.0f / std::sqrt(float(config_.head_dim())), causal};
  if (!layout.offsets.empty()) shape.offsets = layout.offsets.data();
  be.attention(*a.q, *a.k, *a.v, masked ? a.keep.get() : nullptr, *a.attention, shape,
               keep_weights ? a.weights.get() : nullptr);
  if (keep_weights) record_weights(layout, weights_name);
  record("self_attn.attention_output", *a.attention);
  linear(be, *a.attention, l.output, *a.projected, rows);
  record("self_attn.output", *a.projected);
  if (config_.norm_first) {
    be.add(*a.x, *a.projected, *a.x, rows * d);
    be.layer_norm(*a.x, *l.norm2.weight, *l.norm2.bias, *a.h, rows, d, 1e-5f);
    record("norm2", *a.h);
  } else {
    be.add(*a.x, *a.projected, *a.h, rows * d);
    be.layer_norm(*a.h, *l.norm1.weight, *l.norm1.bias, *a.x, rows, d, 1e-5f);
    record("norm1", *a.x);
  }
  const Buffer& ffn_in = config_.norm_first ? *a.h : *a.x;
  linear(be, ffn_in, l.linear1, *a.hidden, rows, config_.activation);
  linear(be, *a.hidden, l.linear2, *a.projected, rows);
  record("ffn.output", *a.projected);
  if (config_.norm_first) {
    be.add(*a.x, *a.projected, *a.x, rows * d);
  } else {
    be.add(*a.x, *a.projected, *a.h, rows * d);
    be.layer_norm(*a.h, *l.norm2.weight, *l.norm2.bias, *a.x, rows, d, 1e-5f);
    record("norm2", *a.x);
  }
  record("output", *a.x);
}

bool DeviceModel::wanted(const std::string& stage) const {
  return wanted_.empty() || std::find(wanted_.begin(), wanted_.end(), stage) != wanted_.end();
}

// The encoder stack (and final norm) on x [rows, d]; key_keep [rows] or null. The output [rows, d].
Tensor DeviceModel::run_encoder(const Layout& layout, const float* x, const uint8_t* key_keep, bool causal) {
  const size_t rows = layout.rows(), d = config_.d_model;
  ensure_activations(rows);
  Activations& a = *act_;
  backend_.upload(*a.x, x, rows * d);
  if (key_keep) {
    std::vector<float> keep(key_keep, key_keep + rows);
    backend_.upload(*a.keep, keep.data(), keep.size());
  }
  for (size_t i = 0; i < weights_->layers.size(); ++i) layer_forward(i, layout, causal, key_keep != nullptr);
  if (!config_.final_norm) return pull(*a.x, {rows, d});
  backend_.layer_norm(*a.x, *weights_->final_norm.weight, *weights_->final_norm.bias, *a.h, rows, d, 1e-5f);
  return pull(*a.h, {rows, d});
}

Tensor DeviceModel::encode(const Tensor& x, const uint8_t* key_keep, bool causal, Trace* trace) {
  const size_t d = config_.d_model;
  if (x.dimension() != 3 || x.shape(2) != d) throw InputError("the encoder takes [batch, seq, d_model] vectors");
  Layout layout;
  layout.batch = x.shape(0), layout.seq = x.shape(1), layout.trace = trace;
  return reshaped(run_encoder(layout, x.data(), key_keep, causal), {layout.batch, layout.seq, d});
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

std::vector<Trace> DeviceModel::classify_packed(const std::vector<std::vector<int64_t>>& sequences, MaskKind mask) {
  if (!backend_.packs_sequences())
    throw std::logic_error("DeviceModel::classify_packed: the " + backend_.name() + " backend does not pack");
  const size_t d = config_.d_model;
  std::vector<Trace> traces(sequences.size());
  Layout layout;
  layout.batch = sequences.size(), layout.traces = &traces;
  layout.offsets.push_back(0);
  for (const auto& ids : sequences) layout.offsets.push_back(layout.offsets.back() + ids.size());
  std::vector<float> x(layout.rows() * d);
  std::vector<uint8_t> keep;
  for (size_t b = 0; b < sequences.size(); ++b) {
    const Tensor embedded = classifier_input(model_, sequences[b], 1, sequences[b].size(), nullptr, traces[b]);
    std::copy_n(embedded.data(), embedded.size(), x.data() + layout.offsets[b] * d);
    for (int64_t id : sequences[b]) keep.push_back(id != 0);
  }
  const Tensor encoded = run_encoder(layout, x.data(), masks_padding(mask) ? keep.data() : nullptr, masks_future(mask));
  for (size_t b = 0; b < sequences.size(); ++b) {
    Tensor item = Tensor::from_shape({1, layout.sequence_length(b), d});
    std::copy_n(encoded.data() + layout.offsets[b] * d, item.size(), item.data());
    classifier_output(model_, item, traces[b]);
  }
  return traces;
}

}  // namespace attn
