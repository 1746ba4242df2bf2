#include "core/model/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/kernels/kernels.hpp"
#include "core/base/memory.hpp"

namespace attn {

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

Activation parse_activation(const std::string& text) {
  if (text == "relu") return Activation::relu;
  if (text == "gelu") return Activation::gelu;
  throw InputError("unknown activation '" + text + "' (expected relu or gelu)");
}

namespace {

// In double: the products can exceed size_t where it is 32 bits (WebAssembly).
double parameter_floats(const TransformerConfig& c) {
  const double d = double(c.d_model), ff = double(c.ff_width());
  const double per_layer = 4 * (d * d + d) + (ff * d + ff) + (d * ff + d) + 4 * d;
  return double(c.vocab_size) * d + double(c.num_layers) * per_layer + 2 * d +
         (c.classifier_head ? double(c.num_classes) * (d + 1) : 0.0);
}

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

}  // namespace

void validate(const TransformerConfig& c) {
  require(c.d_model >= 2 && c.d_model % 2 == 0,
          "d_model must be an even number >= 2 (the sinusoidal positional encoding pairs sin and cos), got " +
              std::to_string(c.d_model));
  require(c.num_heads >= 1 && c.d_model % c.num_heads == 0,
          "num_heads (" + std::to_string(c.num_heads) + ") must divide d_model (" + std::to_string(c.d_model) + ")");
  require(c.num_layers >= 1, "num_layers must be at least 1");
  require(c.max_len >= 1, "max_len must be at least 1");
  require(!c.classifier_head || c.num_classes >= 1, "num_classes must be at least 1");
  require(c.dropout >= 0.0 && c.dropout < 1.0, "dropout must be in [0, 1), got " + std::to_string(c.dropout));
  check_fits_in_memory(4.0 * parameter_floats(c) + 4.0 * double(c.max_len) * double(c.d_model), "this model");
}

TransformerConfig config_from_json(const Json& j) {
  require(j.is_object(), "model config must be a JSON object");
  TransformerConfig c;
  auto size = [&](const std::string& key, size_t& out) {
    if (!j.contains(key)) return;
    out = json_integer<size_t>(j[key], "config '" + key + "'", 0);
  };
  auto flag = [&](const std::string& key, bool& out) {
    if (!j.contains(key)) return;
    require(j[key].is_boolean(), "config '" + key + "' must be true or false");
    out = j[key].get<bool>();
  };
  static const std::set<std::string> known = {"vocab_size", "d_model", "num_heads", "num_layers", "d_ff",
                                               "max_len", "num_classes", "dropout", "norm_first", "activation",
                                               "pooling", "layer_style", "final_norm", "classifier_head"};
  for (const auto& [key, value] : j.items()) require(known.count(key) != 0, "unknown config key '" + key + "'");
  size("vocab_size", c.vocab_size);
  size("d_model", c.d_model);
  size("num_heads", c.num_heads);
  size("num_layers", c.num_layers);
  size("d_ff", c.d_ff);
  size("max_len", c.max_len);
  size("num_classes", c.num_classes);
  if (j.contains("dropout")) {
    c.dropout = json_number(j["dropout"], "config 'dropout'");
  }
  flag("norm_first", c.norm_first);
  flag("final_norm", c.final_norm);
  flag("classifier_head", c.classifier_head);
  if (j.contains("activation")) {
    require(j["activation"].is_string(), "config 'activation' must be \"relu\" or \"gelu\"");
    c.activation = parse_activation(j["activation"].get<std::string>());
  }
  if (j.contains("pooling"))
    require(j["pooling"] == "mean", "config 'pooling' must be \"mean\" (the tutorial's x.mean(dim=1))");
  if (j.contains("layer_style")) {
    require(j["layer_style"] == "tutorial" || j["layer_style"] == "torch",
            "config 'layer_style' must be \"tutorial\" or \"torch\" (nn.TransformerEncoderLayer)");
    c.layer_style = j["layer_style"] == "torch" ? LayerStyle::torch : LayerStyle::tutorial;
  }
  return c;
}

Json config_to_json(const TransformerConfig& c) {
  return {{"vocab_size", c.vocab_size},
          {"d_model", c.d_model},
          {"num_heads", c.num_heads},
          {"num_layers", c.num_layers},
          {"d_ff", c.ff_width()},
          {"max_len", c.max_len},
          {"num_classes", c.num_classes},
          {"dropout", float(c.dropout)},
          {"norm_first", c.norm_first},
          {"activation", c.activation == Activation::relu ? "relu" : "gelu"},
          {"pooling", "mean"},
          {"layer_style", c.layer_style == LayerStyle::torch ? "torch" : "tutorial"},
          {"final_norm", c.final_norm},
          {"classifier_head", c.classifier_head}};
}

// ---------------------------------------------------------------------------------------------
// Parameters: construction in PyTorch's order, and the state_dict names
// ---------------------------------------------------------------------------------------------

namespace {

Linear make_linear(TorchGenerator& g, size_t out_features, size_t in_features) {
  Linear l{Tensor::from_shape({out_features, in_features}), Tensor::from_shape({out_features})};
  linear_init(g, l.weight.data(), l.bias.data(), out_features, in_features);
  return l;
}

LayerNorm make_layer_norm(size_t d) {
  return {xt::ones<float>({d}), xt::zeros<float>({d})};
}

void xavier(TorchGenerator& g, Tensor& w) { xavier_uniform_(g, w.data(), w.shape(0), w.shape(1)); }

Tensor rows(const Tensor& t, size_t begin, size_t count) {
  Shape shape(t.shape().begin(), t.shape().end());
  const size_t row = t.size() / shape[0];
  shape[0] = count;
  Tensor out = Tensor::from_shape(shape);
  std::copy_n(t.data() + begin * row, count * row, out.data());
  return out;
}

template <class L, class Visit>
void visit_linear(const std::string& name, L& l, Visit&& visit) {
  visit(name + ".weight", l.weight);
  visit(name + ".bias", l.bias);
}

template <class N, class Visit>
void visit_norm(const std::string& name, N& n, Visit&& visit) {
  visit(name + ".weight", n.weight);
  visit(name + ".bias", n.bias);
}

// nn.MultiheadAttention's constructor: out_proj, an nn.Linear, draws its init before
// _reset_parameters draws xavier_uniform_ for the packed [3d, d] in_proj weight and zeroes both biases.
void init_torch_attention(EncoderLayer& l, size_t d, TorchGenerator& gen) {
  l.output = make_linear(gen, d, d);
  Tensor in_proj = Tensor::from_shape({3 * d, d});
  xavier(gen, in_proj);
  const Tensor zero = xt::zeros<float>({d});
  l.query = {rows(in_proj, 0, d), zero};
  l.key = {rows(in_proj, d, d), zero};
  l.value = {rows(in_proj, 2 * d, d), zero};
  l.output.bias = zero;
}

}  // namespace

void init_attention(EncoderLayer& layer, size_t d_model, TorchGenerator& gen) {
  layer.query = make_linear(gen, d_model, d_model);
  layer.key = make_linear(gen, d_model, d_model);
  layer.value = make_linear(gen, d_model, d_model);
  layer.output = make_linear(gen, d_model, d_model);
}

void init_feed_forward(EncoderLayer& layer, size_t d_model, size_t d_ff, TorchGenerator& gen) {
  layer.linear1 = make_linear(gen, d_ff, d_model);
  layer.linear2 = make_linear(gen, d_model, d_ff);
}

EncoderLayer init_encoder_layer(const TransformerConfig& config, TorchGenerator& gen) {
  const size_t d = config.d_model;
  EncoderLayer l;
  if (config.layer_style == LayerStyle::torch)
    init_torch_attention(l, d, gen);
  else
    init_attention(l, d, gen);
  init_feed_forward(l, d, config.ff_width(), gen);
  l.norm1 = make_layer_norm(d);
  l.norm2 = make_layer_norm(d);
  return l;
}

TransformerModel init_encoder(const TransformerConfig& config, TorchGenerator& gen) {
  validate(config);
  if (!bare_encoder(config)) throw InputError("a bare encoder has no embedding and no classifier head");
  TransformerModel m{config, {}, {}, {}, make_layer_norm(config.d_model), {}};
  if (config.layer_style == LayerStyle::torch)
    m.layers.assign(config.num_layers, init_encoder_layer(config, gen));
  else
    for (size_t i = 0; i < config.num_layers; ++i) m.layers.push_back(init_encoder_layer(config, gen));
  return m;
}

TransformerModel init_transformer(const TransformerConfig& config, TorchGenerator& gen) {
  validate(config);
  if (config.layer_style != LayerStyle::tutorial)
    throw InputError("seeded initialisation builds the tutorial's modules; load nn.TransformerEncoderLayer "
                     "weights from a safetensors file instead");
  if (config.vocab_size == 0) throw InputError("vocab_size must be at least 1");
  const size_t d = config.d_model;
  TransformerModel m{config, Tensor::from_shape({config.vocab_size, d}), {}, {}, {}, {}};
  embedding_init(gen, m.embedding.data(), config.vocab_size, d, std::nullopt);
  m.positional_encoding = reshaped(positional_encoding_table(config.max_len, d), {1, config.max_len, d});
  for (size_t i = 0; i < config.num_layers; ++i) m.layers.push_back(init_encoder_layer(config, gen));
  m.final_norm = make_layer_norm(d);
  if (config.classifier_head) m.fc = make_linear(gen, config.num_classes, d);
  // TransformerClassifier._init_weights: xavier_uniform_ on every parameter with dim > 1, in order.
  xavier(gen, m.embedding);
  for (auto& l : m.layers)
    for (Tensor* w : {&l.query.weight, &l.key.weight, &l.value.weight, &l.output.weight, &l.linear1.weight,
                      &l.linear2.weight})
      xavier(gen, *w);
  if (config.classifier_head) xavier(gen, m.fc.weight);
  return m;
}

namespace {

// Calls visit(name, tensor) for every parameter in state_dict order. For torch-style layers the
// packed in_proj tensors are passed as temporaries through `packed` (pack/unpack around the call).
template <class Model, class Visit, class Packed>
void visit_state(Model& m, Visit&& visit, Packed&& packed) {
  const TransformerConfig& c = m.config;
  const bool bare = bare_encoder(c);
  const std::string enc = bare ? "" : "encoder.";
  if (!bare) {
    visit("embedding.weight", m.embedding);
    visit("pos_encoding.pe", m.positional_encoding);  // a buffer, but in the state_dict
  }
  for (size_t i = 0; i < m.layers.size(); ++i) {
    auto& l = m.layers[i];
    const std::string p = enc + "layers." + std::to_string(i) + ".";
    if (c.layer_style == LayerStyle::tutorial) {
      visit_linear(p + "self_attn.W_Q", l.query, visit);
      visit_linear(p + "self_attn.W_K", l.key, visit);
      visit_linear(p + "self_attn.W_V", l.value, visit);
      visit_linear(p + "self_attn.W_O", l.output, visit);
      visit_linear(p + "ffn.linear1", l.linear1, visit);
      visit_linear(p + "ffn.linear2", l.linear2, visit);
    } else {
      packed(p + "self_attn.in_proj_", l);
      visit_linear(p + "self_attn.out_proj", l.output, visit);
      visit_linear(p + "linear1", l.linear1, visit);
      visit_linear(p + "linear2", l.linear2, visit);
    }
    visit_norm(p + "norm1", l.norm1, visit);
    visit_norm(p + "norm2", l.norm2, visit);
  }
  if (c.final_norm) visit_norm(enc + "norm", m.final_norm, visit);
  if (c.classifier_head) visit_linear("fc", m.fc, visit);
}

Shape expected_shape(const TransformerConfig& c, const std::string& name) {
  const size_t d = c.d_model, ff = c.ff_width();
  auto ends = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (name == "embedding.weight") return {c.vocab_size, d};
  if (name == "pos_encoding.pe") return {1, c.max_len, d};
  if (name == "fc.weight") return {c.num_classes, d};
  if (name == "fc.bias") return {c.num_classes};
  if (ends("in_proj_weight")) return {3 * d, d};
  if (ends("in_proj_bias")) return {3 * d};
  if (ends("linear1.weight")) return {ff, d};
  if (ends("linear1.bias")) return {ff};
  if (ends("linear2.weight")) return {d, ff};
  if (ends(".weight") && name.find("norm") == std::string::npos) return {d, d};
  return {d};
}

}  // namespace

void for_each_state(const TransformerModel& model, const StateVisitor& visit) {
  auto stacked = [&](const std::string& name, const std::vector<const Tensor*>& parts) {
    Shape shape(parts[0]->shape().begin(), parts[0]->shape().end());
    shape[0] = 0;
    for (const Tensor* t : parts) shape[0] += t->shape(0);
    visit(name, shape, parts);
  };
  visit_state(
      model, [&](const std::string& name, const Tensor& t) { stacked(name, {&t}); },
      [&](const std::string& p, const EncoderLayer& l) {
        stacked(p + "weight", {&l.query.weight, &l.key.weight, &l.value.weight});
        stacked(p + "bias", {&l.query.bias, &l.key.bias, &l.value.bias});
      });
}

std::vector<std::pair<std::string, Tensor*>> parameters(TransformerModel& model) {
  std::vector<std::pair<std::string, Tensor*>> out;
  visit_state(
      model,
      [&](const std::string& name, Tensor& t) {
        if (name != "pos_encoding.pe") out.emplace_back(name, &t);
      },
      [&](const std::string& p, EncoderLayer& l) {
        for (const char* kind : {"weight", "bias"}) {
          const bool weight = kind[0] == 'w';
          out.emplace_back(p + kind + ".q", weight ? &l.query.weight : &l.query.bias);
          out.emplace_back(p + kind + ".k", weight ? &l.key.weight : &l.key.bias);
          out.emplace_back(p + kind + ".v", weight ? &l.value.weight : &l.value.bias);
        }
      });
  return out;
}

std::vector<NamedTensor> state_dict(const TransformerModel& model) {
  std::vector<NamedTensor> out;
  for_each_state(model, [&](const std::string& name, const Shape& shape, const std::vector<const Tensor*>& parts) {
    if (parts.size() == 1) return out.push_back({name, *parts[0]});
    Tensor t = Tensor::from_shape(shape);
    float* dst = t.data();
    for (const Tensor* part : parts) dst = std::copy(part->begin(), part->end(), dst);
    out.push_back({name, std::move(t)});
  });
  return out;
}

TransformerModel load_transformer(const TransformerConfig& config, const std::vector<NamedTensor>& tensors) {
  validate(config);
  std::map<std::string, const Tensor*> given;
  for (const auto& t : tensors) given[t.name] = &t.value;
  TransformerModel m{config, {}, {}, std::vector<EncoderLayer>(config.num_layers), {}, {}};
  std::vector<std::string> missing, wrong_shape;
  std::set<std::string> used;
  auto take = [&](const std::string& name, Tensor& slot) {
    auto it = given.find(name);
    if (it == given.end()) return missing.push_back(name);
    used.insert(name);
    const Shape want = expected_shape(config, name);
    if (Shape(it->second->shape().begin(), it->second->shape().end()) != want) {
      std::string got;
      for (size_t s : it->second->shape()) got += (got.empty() ? "" : ", ") + std::to_string(s);
      std::string need;
      for (size_t s : want) need += (need.empty() ? "" : ", ") + std::to_string(s);
      return wrong_shape.push_back(name + " [" + got + "], expected [" + need + "]");
    }
    slot = *it->second;
  };
  visit_state(m, take, [&](const std::string& p, EncoderLayer& l) {
    Tensor w, b;
    take(p + "weight", w);
    take(p + "bias", b);
    if (w.dimension() != 2 || b.dimension() != 1) return;
    const size_t d = config.d_model;
    l.query = {rows(w, 0, d), rows(b, 0, d)};
    l.key = {rows(w, d, d), rows(b, d, d)};
    l.value = {rows(w, 2 * d, d), rows(b, 2 * d, d)};
  });
  std::vector<std::string> unexpected;
  for (const auto& t : tensors)
    if (!used.count(t.name)) unexpected.push_back(t.name);
  if (!missing.empty() || !unexpected.empty() || !wrong_shape.empty()) {
    std::string msg = "weights do not match the model";
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      msg += std::string("; ") + what + ":";
      for (const auto& n : names) msg += " " + n;
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("wrong shape", wrong_shape);
    throw InputError(msg);
  }
  return m;
}

size_t parameter_count(const TransformerModel& model) {
  size_t n = 0;
  for_each_state(model, [&](const std::string& name, const Shape&, const std::vector<const Tensor*>& parts) {
    if (name == "pos_encoding.pe") return;  // a buffer, not a parameter
    for (const Tensor* t : parts) n += t->size();
  });
  return n;
}

// ---------------------------------------------------------------------------------------------
// The encoder stack (its layers: core/model/layers.hpp)
// ---------------------------------------------------------------------------------------------

Tensor encoder_forward(const TransformerModel& model, Tensor x, const MaskTensor* mask, TorchGenerator* dropout_gen,
                       Trace* trace, EncoderSaved* saved, size_t first_layer) {
  const TransformerConfig& c = model.config;
  if (saved) saved->layers.assign(model.layers.size(), {});
  for (size_t i = first_layer; i < model.layers.size(); ++i)
    x = encoder_layer_forward(model.layers[i], c.layer_config(), std::move(x), mask, dropout_gen, trace,
                              "layers." + std::to_string(i) + ".", saved ? &saved->layers[i] : nullptr);
  if (saved) saved->final_norm_input = x;
  return c.final_norm ? layer_norm(x, model.final_norm) : x;
}

Tensor encoder_backward(const TransformerModel& model, const EncoderSaved& saved, const MaskTensor* mask,
                        const Tensor& grad_output, TransformerModel& grads) {
  const TransformerConfig& c = model.config;
  Tensor grad = c.final_norm ? layer_norm_backward(saved.final_norm_input, model.final_norm, grad_output, grads.final_norm)
                             : grad_output;
  for (size_t i = model.layers.size(); i-- > 0;)
    grad = encoder_layer_backward(model.layers[i], c.layer_config(), saved.layers[i], mask, std::move(grad),
                                  grads.layers[i]);
  return grad;
}

// A model without embedding and head is a bare nn.TransformerEncoder: its names have no "encoder.".
bool bare_encoder(const TransformerConfig& c) { return c.vocab_size == 0 && !c.classifier_head; }

Tensor classifier_input(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                        TorchGenerator* dropout_gen, Trace& t, Tensor* noise, const Tensor* token_embeddings) {
  const TransformerConfig& c = model.config;
  if (bare_encoder(c)) throw InputError("this model has no embedding: it takes vectors, not token ids");
  if (seq > c.max_len)
    throw InputError("a sequence has " + std::to_string(seq) + " tokens, more than max_len " + std::to_string(c.max_len));
  Tensor id_tensor = Tensor::from_shape({batch, seq});
  std::copy(ids.begin(), ids.end(), id_tensor.begin());
  t.record("token_ids", id_tensor, PrintDtype::int64);
  if (token_embeddings && token_embeddings->size() != batch * seq * c.d_model)
    throw InputError("the token embeddings must be [batch, seq, d_model]");
  t.record("embedding", token_embeddings ? *token_embeddings : embed(model.embedding, ids, batch, seq));
  // pe[:, :S] of the model's buffer, as PositionalEncoding.forward takes it (sin and cos of the whole
  // [max_len, d/2] table in PyTorch's vectors of 8, whose lanes can share a branch across rows).
  Tensor table = Tensor::from_shape({seq, c.d_model});
  std::copy_n(model.positional_encoding.data(), table.size(), table.data());
  t.record("positional_encoding", reshaped(table, {1, seq, c.d_model}));
  Tensor x = add_positional_encoding(t.at("embedding"), table);
  dropout(dropout_gen, x, c.dropout, noise);
  t.stage("embedded", x);
  return x;
}

Tensor mean_pool(const Tensor& x) {
  const size_t batch = x.shape(0), seq = x.shape(1), d = x.shape(2);
  Tensor pooled = Tensor::from_shape({batch, d});
  for (size_t b = 0; b < batch; ++b)
    for (size_t i = 0; i < d; ++i) {
      float sum = 0.0f;
      for (size_t s = 0; s < seq; ++s) sum = sum + x(b, s, i);
      pooled(b, i) = sum / float(seq);
    }
  return pooled;
}

void classifier_output(const TransformerModel& model, Tensor x, Trace& t) {
  t.stage("encoder_output", x);
  if (!model.config.classifier_head) return;
  Tensor pooled = mean_pool(x);
  t.stage("pooled", pooled);
  Tensor logits = linear(pooled, model.fc.weight, &model.fc.bias);
  t.stage("logits", logits);
}

Trace classify(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
               MaskKind mask_kind, TorchGenerator* dropout_gen, const Hooks* hooks, const LayerStart* start) {
  Trace t(hooks);
  Tensor x;
  if (start) {
    x = start->residual;
    t.stage(start->layer == 0 ? "embedded" : "layers." + std::to_string(start->layer - 1) + ".output", x);
  } else {
    x = classifier_input(model, ids, batch, seq, dropout_gen, t);
  }
  const MaskTensor mask = attention_mask(mask_kind, ids, batch, seq);
  x = encoder_forward(model, x, mask_kind == MaskKind::none ? nullptr : &mask, dropout_gen, &t, nullptr,
                      start ? start->layer : 0);
  classifier_output(model, std::move(x), t);
  if (hooks) hooks->check_reached(t);
  return t;
}

Tensor classifier_forward(const TransformerModel& model, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                          MaskKind mask_kind, TorchGenerator* dropout_gen, ClassifierSaved& saved,
                          const Tensor* token_embeddings) {
  if (!model.config.classifier_head) throw InputError("this model has no classifier head to train");
  Trace t;
  saved = {ids, batch, seq, mask_kind, attention_mask(mask_kind, ids, batch, seq), {}, {}, {}};
  Tensor x = classifier_input(model, ids, batch, seq, dropout_gen, t, &saved.embedded_noise, token_embeddings);
  x = encoder_forward(model, x, mask_kind == MaskKind::none ? nullptr : &saved.mask, dropout_gen, nullptr,
                      &saved.encoder);
  classifier_output(model, x, t);
  saved.pooled = t.at("pooled");
  return t.at("logits");
}

// fc, mean pooling (÷ S to every position), the encoder, dropout, then the embedding rows (× √d_model,
// added per occurrence); the positional table is a buffer and gets no gradient.
Tensor classifier_backward(const TransformerModel& model, const ClassifierSaved& saved, const Tensor& grad_logits,
                           TransformerModel& grads) {
  const size_t B = saved.batch, S = saved.seq, d = model.config.d_model;
  const Tensor grad_pooled = linear_backward(saved.pooled, model.fc.weight, grad_logits, grads.fc.weight, &grads.fc.bias);
  Tensor grad = Tensor::from_shape({B, S, d});
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < d; ++i) grad(b, s, i) = grad_pooled(b, i) / float(S);
  grad = encoder_backward(model, saved.encoder, saved.mask_kind == MaskKind::none ? nullptr : &saved.mask, grad, grads);
  dropout_backward(grad, saved.embedded_noise);
  if (frozen(grads.embedding)) return grad;
  Tensor rows = grad;
  multiply_scalar(rows.data(), rows.size(), float(std::sqrt(double(d))));
  for (size_t t = 0; t < B * S; ++t)
    attn::add(grads.embedding.data() + size_t(saved.ids[t]) * d, rows.data() + t * d,
              grads.embedding.data() + size_t(saved.ids[t]) * d, d);
  return grad;
}

TransformerModel zeros_like(const TransformerModel& model) {
  TransformerModel g = model;
  auto zero = [](Tensor& t) { t.fill(0.0f); };
  visit_state(
      g, [&](const std::string&, Tensor& t) { zero(t); },
      [&](const std::string&, EncoderLayer& l) {
        for (Linear* part : {&l.query, &l.key, &l.value}) zero(part->weight), zero(part->bias);
      });
  return g;
}

TransformerModel frozen_like(const TransformerModel& model) {
  TransformerModel g;
  g.config = model.config;
  g.layers.resize(model.layers.size());
  return g;
}

}  // namespace attn
