#include "core/model/pretrained.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/kernels/kernels.hpp"
#include "core/io/safetensors_index.hpp"
#include "core/base/memory.hpp"
#include "core/model/decoder.hpp"
#include "core/model/gpt2.hpp"
#include "core/model/pretrained_parts.hpp"

namespace attn {
namespace {

// --- config.json ---

ModelFamily detect_family(const Json& j, const std::string& file) {
  std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  if (type.empty() && j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    const std::string arch = j["architectures"][0].get<std::string>();
    if (arch.rfind("Bert", 0) == 0) type = "bert";
    if (arch.rfind("GPT2", 0) == 0) type = "gpt2";
  }
  if (type == "bert") return ModelFamily::bert;
  if (type == "gpt2") return ModelFamily::gpt2;
  if (is_decoder_config(j))
    throw InputError(file + ": a Llama-family decoder runs only in attn encode, generate, heads and patch so far "
                            "(docs/decoders.md)");
  throw InputError(file + ": model family " + (type.empty() ? std::string("not given") : "'" + type + "'") +
                   " is not supported (supported architectures: BertModel and its task models, GPT2LMHeadModel, " +
                   decoder_architectures() + ")");
}

HiddenAct parse_hidden_act(const std::string& name, const std::string& file, const char* key) {
  if (name == "gelu") return HiddenAct::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return HiddenAct::gelu_new;
  if (name == "relu") return HiddenAct::relu;
  throw InputError(file + ": '" + key + "' \"" + name + "\" is not supported (gelu, gelu_new, relu)");
}

void read_bert_config(const ConfigReader& r, PretrainedConfig& c) {
  c.vocab_size = r.size("vocab_size", 30522);
  c.hidden_size = r.size("hidden_size", 768);
  c.num_heads = r.size("num_attention_heads", 12);
  c.num_layers = r.size("num_hidden_layers", 12);
  c.intermediate_size = r.size("intermediate_size", 3072);
  c.max_positions = r.size("max_position_embeddings", 512);
  c.type_vocab_size = r.size("type_vocab_size", 2);
  c.layer_norm_eps = r.number("layer_norm_eps", 1e-12);
  c.activation = parse_hidden_act(r.text("hidden_act", "gelu"), r.file, "hidden_act");
  if (r.text("position_embedding_type", "absolute") != "absolute")
    throw InputError(r.file + ": only absolute position embeddings are supported (position_embedding_type)");
  if (r.flag("is_decoder", false) || r.flag("add_cross_attention", false))
    throw InputError(r.file + ": BERT as a decoder (is_decoder, add_cross_attention) is not supported");
}

void read_gpt2_config(const ConfigReader& r, PretrainedConfig& c) {
  c.vocab_size = r.size("vocab_size", 50257);
  c.hidden_size = r.size("n_embd", 768);
  c.num_heads = r.size("n_head", 12);
  c.num_layers = r.size("n_layer", 12);
  c.intermediate_size = r.size("n_inner", 4 * c.hidden_size, false);  // 0: attention-only (gpt2.hpp)
  c.max_positions = r.size("n_positions", 1024);
  c.layer_norm_eps = r.number("layer_norm_epsilon", 1e-5);
  c.activation = parse_hidden_act(r.text("activation_function", "gelu_new"), r.file, "activation_function");
  c.scale_by_layer = r.flag("scale_attn_by_inverse_layer_idx", false);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", true);
  c.embd_pdrop = r.probability("embd_pdrop", 0.1);
  c.resid_pdrop = r.probability("resid_pdrop", 0.1);
  c.attn_pdrop = r.probability("attn_pdrop", 0.1);
  c.initializer_range = r.number("initializer_range", 0.02);
  if (!r.flag("scale_attn_weights", true))
    throw InputError(r.file + ": scale_attn_weights false is not supported");
  if (r.flag("add_cross_attention", false))
    throw InputError(r.file + ": GPT-2 with cross-attention (add_cross_attention) is not supported");
}

// --- tensors: each expected name with its shape and where it goes ---

struct Slot {
  Shape shape;
  std::function<void(Tensor&&)> store;
  bool required = true;
};

// Rows [part·n, part·n + n) of t (its first dimension).
Tensor rows_of(const Tensor& t, size_t part, size_t n) {
  Shape shape(t.shape().begin(), t.shape().end());
  const size_t row = t.size() / shape[0];
  shape[0] = n;
  Tensor out = Tensor::from_shape(shape);
  std::copy_n(t.data() + part * n * row, n * row, out.data());
  return out;
}

using Slots = std::map<std::string, Slot>;

void add_linear(Slots& s, const std::string& name, Linear& into, size_t in, size_t out) {
  s[name + ".weight"] = {{out, in}, [&into](Tensor&& t) { into.weight = std::move(t); }};
  s[name + ".bias"] = {{out}, [&into](Tensor&& t) { into.bias = std::move(t); }};
}
void add_norm(Slots& s, const std::string& name, LayerNorm& into, size_t h) {
  s[name + ".weight"] = {{h}, [&into](Tensor&& t) { into.weight = std::move(t); }};
  s[name + ".bias"] = {{h}, [&into](Tensor&& t) { into.bias = std::move(t); }};
}
void add_table(Slots& s, const std::string& name, Tensor& into, size_t rows, size_t h) {
  s[name] = {{rows, h}, [&into](Tensor&& t) { into = std::move(t); }};
}
// GPT-2's Conv1D: weight [in, out] (x · W + b), stored here as nn.Linear's [out, in].
void add_conv1d(Slots& s, const std::string& name, Linear& into, size_t in, size_t out) {
  s[name + ".weight"] = {{in, out}, [&into](Tensor&& t) { into.weight = transposed(t); }};
  s[name + ".bias"] = {{out}, [&into](Tensor&& t) { into.bias = std::move(t); }};
}
// c_attn packs query, key and value along its output.
void add_packed_attention(Slots& s, const std::string& name, EncoderLayer& l, size_t h) {
  s[name + ".weight"] = {{h, 3 * h}, [&l, h](Tensor&& t) {
                           const Tensor w = transposed(t);
                           l.query.weight = rows_of(w, 0, h), l.key.weight = rows_of(w, 1, h);
                           l.value.weight = rows_of(w, 2, h);
                         }};
  s[name + ".bias"] = {{3 * h}, [&l, h](Tensor&& t) {
                         l.query.bias = rows_of(t, 0, h), l.key.bias = rows_of(t, 1, h), l.value.bias = rows_of(t, 2, h);
                       }};
}

Slots bert_slots(PretrainedModel& m) {
  const PretrainedConfig& c = m.config;
  const size_t h = c.hidden_size;
  Slots s;
  add_table(s, "embeddings.word_embeddings.weight", m.word_embeddings, c.vocab_size, h);
  add_table(s, "embeddings.position_embeddings.weight", m.position_embeddings, c.max_positions, h);
  add_table(s, "embeddings.token_type_embeddings.weight", m.token_type_embeddings, c.type_vocab_size, h);
  add_norm(s, "embeddings.LayerNorm", m.embeddings_norm, h);
  for (size_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    EncoderLayer& l = m.layers[i];
    add_linear(s, p + "attention.self.query", l.query, h, h);
    add_linear(s, p + "attention.self.key", l.key, h, h);
    add_linear(s, p + "attention.self.value", l.value, h, h);
    add_linear(s, p + "attention.output.dense", l.output, h, h);
    add_norm(s, p + "attention.output.LayerNorm", l.norm1, h);
    add_linear(s, p + "intermediate.dense", l.linear1, h, c.intermediate_size);
    add_linear(s, p + "output.dense", l.linear2, c.intermediate_size, h);
    add_norm(s, p + "output.LayerNorm", l.norm2, h);
  }
  add_linear(s, "pooler.dense", m.pooler, h, h);
  s["pooler.dense.weight"].required = s["pooler.dense.bias"].required = false;  // add_pooling_layer=False
  return s;
}

Slots gpt2_slots(PretrainedModel& m) {
  const PretrainedConfig& c = m.config;
  const size_t h = c.hidden_size;
  Slots s;
  add_table(s, "wte.weight", m.word_embeddings, c.vocab_size, h);
  add_table(s, "wpe.weight", m.position_embeddings, c.max_positions, h);
  for (size_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    EncoderLayer& l = m.layers[i];
    add_norm(s, p + "ln_1", l.norm1, h);
    add_packed_attention(s, p + "attn.c_attn", l, h);
    add_conv1d(s, p + "attn.c_proj", l.output, h, h);
    add_norm(s, p + "ln_2", l.norm2, h);
    add_conv1d(s, p + "mlp.c_fc", l.linear1, h, c.intermediate_size);
    add_conv1d(s, p + "mlp.c_proj", l.linear2, c.intermediate_size, h);
  }
  add_norm(s, "ln_f", m.final_norm, h);
  if (!c.tie_word_embeddings) add_table(s, "lm_head.weight", m.lm_head, c.vocab_size, h);  // beside the base model
  return s;
}

// The name inside the base model: the task model's prefix dropped, old LayerNorm names renamed.
std::string base_name(std::string name, const std::string& prefix) {
  if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
  for (const auto& [old_suffix, suffix] : {std::pair<std::string, std::string>{".gamma", ".weight"}, {".beta", ".bias"}})
    if (name.size() > old_suffix.size() && name.compare(name.size() - old_suffix.size(), old_suffix.size(), old_suffix) == 0 &&
        name.find("LayerNorm") != std::string::npos)
      name.replace(name.size() - old_suffix.size(), old_suffix.size(), suffix);
  return name;
}

void check_config(const PretrainedConfig& c, const std::string& file) {
  if (c.hidden_size % c.num_heads != 0)
    throw InputError(file + ": hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
                     std::to_string(c.num_heads) + " heads");
  const double h = double(c.hidden_size), i = double(c.intermediate_size);
  const double tables = double(c.vocab_size * (c.tie_word_embeddings ? 1 : 2) + c.max_positions + c.type_vocab_size) * h;
  const double per_layer = 4 * h * h + 2 * h * i + 9 * h + i + 512;  // + the tensors' own bookkeeping
  check_fits_in_memory(4.0 * (tables + double(c.num_layers) * per_layer + h * h),
                       file + ": the weights of a " + family_name(c.family) + " model of this size");
}

}  // namespace

// --- pieces BERT's and GPT-2's forwards share (core/model/pretrained_parts.hpp) ---

Tensor transposed(const Tensor& t) {  // [r, c] → [c, r]
  const size_t rows = t.shape(0), cols = t.shape(1);
  Tensor out = Tensor::from_shape({cols, rows});
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) out.data()[c * rows + r] = t.data()[r * cols + c];
  return out;
}

// x ⊕ y of two tensors of one shape; rows: y broadcast over x's leading dimensions.
Tensor add_rows(const Tensor& x, const Tensor& rows) {
  Tensor out = Tensor::from_shape(x.shape());
  for (size_t at = 0; at < x.size(); at += rows.size()) attn::add(x.data() + at, rows.data(), out.data() + at, rows.size());
  return out;
}

// Rows of `table` picked by ids → [B, S, H]; an id outside the table is an InputError.
Tensor last_position(const Tensor& x) {
  const size_t B = x.shape(0), S = x.shape(1), H = x.shape(2);
  Tensor last = Tensor::from_shape({B, 1, H});
  for (size_t b = 0; b < B; ++b) std::copy_n(x.data() + (b * S + S - 1) * H, H, last.data() + b * H);
  return last;
}

namespace {

// [B, S, H] from the rows `ids` picks of a [rows, H] table, each copied by copy_row(row, out).
template <class CopyRow>
Tensor lookup_rows(size_t rows, size_t h, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what,
                   CopyRow copy_row) {
  Tensor out = Tensor::from_shape({batch, seq, h});
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || size_t(ids[i]) >= rows)
      throw InputError(std::string(what) + " " + std::to_string(ids[i]) + " is outside the model's " +
                       std::to_string(rows) + " rows");
    copy_row(size_t(ids[i]), out.data() + i * h);
  }
  return out;
}

}  // namespace

Tensor lookup(const Weight& table, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what) {
  return lookup_rows(table.shape(0), table.shape(1), ids, batch, seq, what,
                     [&](size_t row, float* out) { table.widen_rows(row, 1, out); });
}

Tensor lookup(const Tensor& table, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what) {
  const size_t h = table.shape(1);
  return lookup_rows(table.shape(0), h, ids, batch, seq, what,
                     [&](size_t row, float* out) { std::copy_n(table.data() + row * h, h, out); });
}

Tensor ids_tensor(const std::vector<int64_t>& ids, size_t batch, size_t seq) {
  Tensor t = Tensor::from_shape({batch, seq});
  std::copy(ids.begin(), ids.end(), t.begin());
  return t;
}

void check_pretrained_input(const PretrainedModel& m, const PretrainedInput& in, size_t past) {
  if (in.batch == 0 || in.seq == 0 || in.ids.size() != in.batch * in.seq || in.lengths.size() != in.batch)
    throw InputError("no tokens to run the model on");
  if (past + in.seq > m.config.max_positions)
    throw InputError("a sequence has " + std::to_string(past + in.seq) + " tokens, more than the model's " +
                     std::to_string(m.config.max_positions) + " positions");
  check_fits_in_memory(4.0 * pretrained_trace_floats(m.config, in.batch, in.seq),
                       "the trace of " + std::to_string(in.batch) + " sentences of " + std::to_string(in.seq) + " tokens");
}

// The residual stream a resumed run starts from, handed on as `stage` (the embeddings or the previous
// layer's output).
Tensor resumed(const LayerStart& start, const std::string& stage, Trace& t) {
  Tensor x = start.residual;
  t.stage(stage, x);
  return x;
}

HeadAttention attend_heads(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                           const std::function<void(float* row_scores, size_t b, size_t query)>& mask_scores,
                           const Recorder& rec, const std::string& scores_name, const std::string& weights_name) {
  const size_t B = q.shape(0), n = q.shape(1), Sq = q.shape(2), Sk = k.shape(2), d = q.shape(3);
  HeadAttention a{Tensor::from_shape({B, n, Sq, Sk}), {}, Tensor::from_shape({B, n, Sq, d})};
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < n; ++h) {
      const size_t head = b * n + h;
      float* scores = a.scores.data() + head * Sq * Sk;
      matmul_nt(q.data() + head * Sq * d, k.data() + head * Sk * d, scores, Sq, d, Sk);
      divide_scalar(scores, Sq * Sk, scale);
      for (size_t i = 0; i < Sq; ++i) mask_scores(scores + i * Sk, b, i);
    }
  a.scores = rec(scores_name, std::move(a.scores));
  a.weights = a.scores;
  softmax_rows(a.weights.data(), B * n * Sq, Sk);
  a.weights = rec(weights_name, std::move(a.weights));
  for (size_t head = 0; head < B * n; ++head)
    matmul(a.weights.data() + head * Sq * Sk, v.data() + head * Sk * d, a.context.data() + head * Sq * d, Sq, Sk, d);
  return a;
}


namespace {

// --- forward ---

Tensor bert_embeddings(const PretrainedModel& m, const PretrainedInput& in, Trace& t) {
  const size_t B = in.batch, S = in.seq, H = m.config.hidden_size;
  const std::vector<int64_t> types = in.type_ids.empty() ? std::vector<int64_t>(in.ids.size(), 0) : in.type_ids;
  Tensor mask = Tensor::from_shape({B, S});
  for (size_t b = 0; b < B; ++b)
    for (size_t s = 0; s < S; ++s) mask(b, s) = s < in.lengths[b] ? 1.0f : 0.0f;
  t.record("input_ids", ids_tensor(in.ids, B, S), PrintDtype::int64);
  t.record("token_type_ids", ids_tensor(types, B, S), PrintDtype::int64);
  t.record("attention_mask", mask, PrintDtype::int64);
  const Tensor word = lookup(m.word_embeddings, in.ids, B, S, "token id");
  Tensor position = Tensor::from_shape({S, H});
  std::copy_n(m.position_embeddings.data(), S * H, position.data());
  const Tensor type = lookup(m.token_type_embeddings, types, B, S, "token type id");
  t.record("embeddings.word_embeddings", word);
  t.record("embeddings.position_embeddings", position);
  t.record("embeddings.token_type_embeddings", type);
  // BertEmbeddings: (inputs_embeds + token_type_embeddings) + position_embeddings, then LayerNorm.
  const Tensor sum = add_rows(add(word, type), position);
  Tensor x = layer_norm(sum, m.embeddings_norm, float(m.config.layer_norm_eps));
  t.stage("embeddings", x);
  return x;
}

Tensor bert_layer(const PretrainedModel& m, const EncoderLayer& l, const Tensor& x, const std::vector<size_t>& lengths,
                  const Recorder& rec) {
  const PretrainedConfig& c = m.config;
  const float eps = float(c.layer_norm_eps);
  const Tensor q = rec("attention.self.query", split_heads(linear(x, l.query.weight, &l.query.bias), c.num_heads));
  const Tensor k = rec("attention.self.key", split_heads(linear(x, l.key.weight, &l.key.bias), c.num_heads));
  const Tensor v = rec("attention.self.value", split_heads(linear(x, l.value.weight, &l.value.bias), c.num_heads));
  // The extended mask (1 − mask) · finfo(float32).min, added to the padded keys' scores.
  const float lowest = std::numeric_limits<float>::lowest();
  const HeadAttention a = attend_heads(q, k, v, float(std::sqrt(double(c.head_dim()))), [&](float* row, size_t b, size_t) {
    for (size_t key = lengths[b]; key < x.shape(1); ++key) row[key] += lowest;
  }, rec, "attention.self.attention_scores", "attention.self.attention_probs");
  const Tensor context = rec("attention.self.context", merge_heads(a.context));
  const Tensor dense = rec("attention.output.dense", linear(context, l.output.weight, &l.output.bias));
  const Tensor attended = rec("attention.output", layer_norm(add(dense, x), l.norm1, eps));
  Tensor hidden = linear(attended, l.linear1.weight, &l.linear1.bias);
  activate(hidden, c.activation);
  hidden = rec("intermediate", std::move(hidden));
  const Tensor out = rec("output.dense", linear(hidden, l.linear2.weight, &l.linear2.bias));
  return rec("output", layer_norm(add(out, attended), l.norm2, eps));
}

Tensor bert_pooler(const PretrainedModel& m, const Tensor& hidden) {
  const size_t B = hidden.shape(0), S = hidden.shape(1), H = hidden.shape(2);
  Tensor first = Tensor::from_shape({B, H});
  for (size_t b = 0; b < B; ++b) std::copy_n(hidden.data() + b * S * H, H, first.data() + b * H);
  Tensor pooled = linear(first, m.pooler.weight, &m.pooler.bias);
  for (float& v : pooled) v = std::tanh(v);
  return pooled;
}

}  // namespace

double pretrained_trace_floats(const PretrainedConfig& c, size_t batch, size_t seq) {
  // Per layer about a dozen [B, S, H] stages, two [B, S, I] and three [B, n, S, S]; GPT-2's logits.
  const double tokens = double(batch) * double(seq);
  const double per_layer = tokens * (12.0 * double(c.hidden_size) + 2.0 * double(c.intermediate_size) +
                                     3.0 * double(c.num_heads) * double(seq));
  const double logits = c.family == ModelFamily::gpt2 ? (tokens + double(batch)) * double(c.vocab_size) : 0.0;
  return per_layer * double(c.num_layers) + logits + 8.0 * tokens * double(c.hidden_size);
}

std::string family_name(ModelFamily family) { return family == ModelFamily::bert ? "bert" : "gpt2"; }

PretrainedConfig pretrained_config_from_json(const Json& j, const std::string& file) {
  if (!j.is_object()) throw InputError(file + ": a model config must be a JSON object");
  PretrainedConfig c;
  c.family = detect_family(j, file);
  const ConfigReader r{j, file};
  if (c.family == ModelFamily::bert)
    read_bert_config(r, c);
  else
    read_gpt2_config(r, c);
  c.architecture = c.family == ModelFamily::bert ? "BertModel" : "GPT2Model";
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  check_config(c, file);
  return c;
}

PretrainedModel load_pretrained(const PretrainedConfig& config, std::vector<NamedTensor> tensors, const std::string& file) {
  PretrainedModel m;
  m.config = config;
  m.layers.resize(config.num_layers);
  Slots slots = config.family == ModelFamily::bert ? bert_slots(m) : gpt2_slots(m);
  const std::string prefix = config.family == ModelFamily::bert ? "bert." : "transformer.";
  std::vector<std::string> problems;
  std::map<std::string, bool> seen;
  for (NamedTensor& t : tensors) {
    const std::string name = base_name(t.name, prefix);
    auto slot = slots.find(name);
    if (slot == slots.end()) {
      m.ignored.push_back(t.name);
      continue;
    }
    const Shape got(t.value.shape().begin(), t.value.shape().end());
    if (got != slot->second.shape)
      problems.push_back(t.name + " has shape " + shape_text(got) + ", the config needs " + shape_text(slot->second.shape));
    else
      slot->second.store(std::move(t.value));
    t.value = Tensor();  // a store that transposes copied it: free the file's copy now (peak memory)
    seen[name] = true;
  }
  for (const auto& [name, slot] : slots)
    if (slot.required && !seen.count(name)) problems.push_back(name + " is missing");
  if (!problems.empty()) {
    std::string message = file + " does not fit its " + family_name(config.family) + " config:";
    for (const std::string& p : problems) message += "\n  " + p;
    throw InputError(message);
  }
  return m;
}

PretrainedModel read_pretrained_weights(const PretrainedConfig& config, const std::string& path,
                                        const std::string& file_name, const ReadProgress& progress) {
  std::vector<std::string> buffers;
  std::vector<NamedTensor> tensors = read_checkpoint(path, &buffers, progress);
  PretrainedModel m = load_pretrained(config, std::move(tensors), file_name);
  m.ignored.insert(m.ignored.end(), buffers.begin(), buffers.end());
  std::sort(m.ignored.begin(), m.ignored.end());
  return m;
}

void for_each_tensor(PretrainedModel& m, const std::function<void(Tensor&)>& visit) {
  auto given = [&](Tensor& t) {
    if (t.dimension() > 0) visit(t);  // a default Tensor is 0-dimensional: not in the checkpoint
  };
  for (Tensor* t : {&m.word_embeddings, &m.position_embeddings, &m.token_type_embeddings, &m.embeddings_norm.weight,
                    &m.embeddings_norm.bias, &m.final_norm.weight, &m.final_norm.bias, &m.pooler.weight, &m.pooler.bias})
    given(*t);
  for (EncoderLayer& l : m.layers) {
    for (Linear* x : {&l.query, &l.key, &l.value, &l.output, &l.linear1, &l.linear2}) given(x->weight), given(x->bias);
    for (LayerNorm* x : {&l.norm1, &l.norm2}) given(x->weight), given(x->bias);
  }
  given(m.lm_head);
}

void for_each_tensor(const PretrainedModel& m, const std::function<void(const Tensor&)>& visit) {
  for_each_tensor(const_cast<PretrainedModel&>(m), [&](Tensor& t) { visit(t); });  // visits read only
}

std::vector<NamedTensor> pretrained_state_dict(const PretrainedModel& m) {
  if (m.config.family == ModelFamily::gpt2) return gpt2_state_dict(m);
  std::vector<NamedTensor> out;
  auto add = [&](const std::string& name, const Tensor& weight, const Tensor& bias) {
    out.push_back({name + ".weight", weight});
    out.push_back({name + ".bias", bias});
  };
  out.push_back({"embeddings.word_embeddings.weight", m.word_embeddings});
  out.push_back({"embeddings.position_embeddings.weight", m.position_embeddings});
  out.push_back({"embeddings.token_type_embeddings.weight", m.token_type_embeddings});
  add("embeddings.LayerNorm", m.embeddings_norm.weight, m.embeddings_norm.bias);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer& l = m.layers[i];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    add(p + "attention.self.query", l.query.weight, l.query.bias);
    add(p + "attention.self.key", l.key.weight, l.key.bias);
    add(p + "attention.self.value", l.value.weight, l.value.bias);
    add(p + "attention.output.dense", l.output.weight, l.output.bias);
    add(p + "attention.output.LayerNorm", l.norm1.weight, l.norm1.bias);
    add(p + "intermediate.dense", l.linear1.weight, l.linear1.bias);
    add(p + "output.dense", l.linear2.weight, l.linear2.bias);
    add(p + "output.LayerNorm", l.norm2.weight, l.norm2.bias);
  }
  if (m.has_pooler()) add("pooler.dense", m.pooler.weight, m.pooler.bias);
  return out;
}

size_t parameter_count(const PretrainedModel& m) {
  size_t n = 0;
  for_each_tensor(m, [&](const Tensor& t) { n += t.size(); });
  return n;
}

Trace bert_forward(const PretrainedModel& m, const PretrainedInput& in, const Hooks* hooks, const LayerStart* start) {
  check_pretrained_input(m, in);
  Trace t(hooks);
  const auto output = [](size_t i) { return "encoder.layer." + std::to_string(i) + ".output"; };
  Tensor x = start ? resumed(*start, start->layer ? output(start->layer - 1) : "embeddings", t) : bert_embeddings(m, in, t);
  for (size_t i = start ? start->layer : 0; i < m.layers.size(); ++i)
    x = bert_layer(m, m.layers[i], x, in.lengths, Recorder{t, "encoder.layer." + std::to_string(i) + "."});
  t.stage("last_hidden_state", x);
  if (m.has_pooler()) {
    Tensor pooled = bert_pooler(m, x);
    t.stage("pooler_output", pooled);
  }
  if (hooks) hooks->check_reached(t);
  return t;
}

Trace pretrained_forward(const PretrainedModel& model, const PretrainedInput& input, const Hooks* hooks,
                         const LayerStart* start) {
  return model.config.family == ModelFamily::bert ? bert_forward(model, input, hooks, start)
                                                  : gpt2_forward(model, input, hooks, start);
}

std::string attention_weights_stage(ModelFamily family, size_t layer) {
  return family == ModelFamily::bert ? "encoder.layer." + std::to_string(layer) + ".attention.self.attention_probs"
                                     : "h." + std::to_string(layer) + ".attn.attn_weights";
}

}  // namespace attn
