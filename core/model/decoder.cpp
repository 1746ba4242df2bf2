#include "core/model/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "core/base/error.hpp"
#include "core/base/memory.hpp"
#include "core/io/safetensors_index.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/pretrained_parts.hpp"

namespace attn {
namespace {

// --- config.json ---

// Each family's config keys beyond the shared ones, into the one decoder's fields.
struct Family;
using ReadFamily = void (*)(const ConfigReader&, const Family&, DecoderConfig&);

struct Family {
  const char *model_type, *architecture;
  size_t vocab, hidden, layers, heads, kv_heads, head_dim, intermediate, max_positions;  // 0: derived
  double rope_theta;
  bool tied;  // tie_word_embeddings
  ReadFamily read;
};

void read_llama(const ConfigReader& r, const Family&, DecoderConfig& c) {
  const bool attention_bias = r.flag("attention_bias", false);
  c.qkv_bias = c.o_bias = attention_bias;
  if (r.text("hidden_act", "silu") != "silu") throw InputError(r.file + ": only hidden_act \"silu\" is supported");
  if (r.flag("mlp_bias", false)) throw InputError(r.file + ": mlp_bias is not supported");
}

// sliding_window: null (Mistral v0.2 on) turns it off.
size_t read_window(const ConfigReader& r) {
  return r.j.contains("sliding_window") && r.j["sliding_window"].is_null() ? 0 : r.size("sliding_window", 4096, false);
}

void read_mistral(const ConfigReader& r, const Family& f, DecoderConfig& c) {
  read_llama(r, f, c);
  c.sliding_window = read_window(r);
  c.sliding_layers.assign(c.num_layers, true);
}

void read_qwen2(const ConfigReader& r, const Family& f, DecoderConfig& c) {
  read_llama(r, f, c);
  c.qkv_bias = true;
  c.o_bias = false;  // Qwen2's o_proj never has one
  if (r.flag("use_sliding_window", false))
    throw InputError(r.file + ": use_sliding_window (Qwen's windowed layers) is not supported yet");
}

void read_qwen3(const ConfigReader& r, const Family& f, DecoderConfig& c) {
  read_llama(r, f, c);
  c.qk_norm = true;
}

DecoderAct read_activation(const ConfigReader& r, const char* key, const std::string& fallback) {
  const std::string name = r.text(key, fallback);
  if (name == "silu") return DecoderAct::silu;
  if (name == "gelu") return DecoderAct::gelu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") return DecoderAct::gelu_tanh;
  throw InputError(r.file + ": " + key + " \"" + name + "\" is not supported (silu, gelu, gelu_pytorch_tanh)");
}

// A soft cap: absent takes the family's default, null turns it off.
double read_cap(const ConfigReader& r, const char* key, double fallback) {
  return r.j.contains(key) && r.j[key].is_null() ? 0.0 : r.number(key, fallback);
}

// layer_types (transformers >= 4.54) when given, else `sliding(i)`: which layers see only the window.
void read_layer_types(const ConfigReader& r, DecoderConfig& c, const std::function<bool(size_t)>& sliding) {
  c.sliding_layers.resize(c.num_layers);
  for (size_t i = 0; i < c.num_layers; ++i) c.sliding_layers[i] = sliding(i);
  if (!r.j.contains("layer_types")) return;
  const Json& types = r.j["layer_types"];
  if (!types.is_array() || types.size() != c.num_layers)
    throw InputError(r.file + ": 'layer_types' must list one type per layer (" + std::to_string(c.num_layers) + ")");
  for (size_t i = 0; i < c.num_layers; ++i) {
    const std::string type = types[i].is_string() ? types[i].get<std::string>() : "";
    if (type != "sliding_attention" && type != "full_attention")
      throw InputError(r.file + ": 'layer_types' holds \"" + type + "\" (sliding_attention or full_attention)");
    c.sliding_layers[i] = type == "sliding_attention";
  }
}

// Gemma 2 (and 3): Gemma's RMSNorm, scaled embeddings, sandwich norms, query_pre_attn_scalar, soft caps.
void read_gemma2(const ConfigReader& r, const Family& f, DecoderConfig& c) {
  c.norm = NormKind::rms_one_plus;
  c.embed_scale = c.sandwich_norms = true;
  c.qkv_bias = c.o_bias = r.flag("attention_bias", false);
  c.act = read_activation(r, r.j.contains("hidden_activation") ? "hidden_activation" : "hidden_act", "gelu_pytorch_tanh");
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 256);
  const bool gemma3 = f.model_type == std::string("gemma3_text");
  c.attn_softcap = read_cap(r, "attn_logit_softcapping", gemma3 ? 0.0 : 50.0);
  c.final_softcap = read_cap(r, "final_logit_softcapping", gemma3 ? 0.0 : 30.0);
  c.sliding_window = read_window(r);
  read_layer_types(r, c, [](size_t i) { return i % 2 == 0; });  // Gemma2DecoderLayer: not layer_idx % 2
}

void read_gemma3(const ConfigReader& r, const Family& f, DecoderConfig& c) {
  read_gemma2(r, f, c);
  c.qk_norm = true;
  c.local_rope_theta = r.number("rope_local_base_freq", 10000.0);
  const size_t pattern = r.size("sliding_window_pattern", 6);  // every pattern-th layer global
  read_layer_types(r, c, [pattern](size_t i) { return (i + 1) % pattern != 0; });
}

// GPT-NeoX (Pythia): LayerNorm, fused per-head q/k/v, partial rotation, a plain GELU MLP with biases.
void read_neox(const ConfigReader& r, const Family&, DecoderConfig& c) {
  c.norm = NormKind::layer_norm;
  c.mlp = MlpKind::plain;
  c.fused_qkv = c.mlp_bias = true;
  c.num_kv_heads = c.num_heads;
  c.rms_norm_eps = r.number("layer_norm_eps", 1e-5);
  c.rope_theta = r.number("rotary_emb_base", c.rope_theta);
  c.partial_rotary_factor = r.number("rotary_pct", r.number("partial_rotary_factor", 0.25));
  c.parallel_residual = r.flag("use_parallel_residual", true);
  c.qkv_bias = c.o_bias = r.flag("attention_bias", true);
  c.act = read_activation(r, "hidden_act", "gelu");
}

// transformers' defaults per family (its {Llama,…,GPTNeoX}Config).
const Family families[] = {
    {"llama", "LlamaForCausalLM", 32000, 4096, 32, 32, 0, 0, 11008, 2048, 10000.0, false, read_llama},
    {"mistral", "MistralForCausalLM", 32000, 4096, 32, 32, 8, 0, 14336, 4096 * 32, 10000.0, false, read_mistral},
    {"qwen2", "Qwen2ForCausalLM", 151936, 4096, 32, 32, 0, 0, 22016, 32768, 10000.0, false, read_qwen2},
    {"qwen3", "Qwen3ForCausalLM", 151936, 4096, 32, 32, 0, 0, 22016, 32768, 10000.0, false, read_qwen3},
    {"gemma2", "Gemma2ForCausalLM", 256000, 2304, 26, 8, 4, 256, 9216, 8192, 10000.0, true, read_gemma2},
    {"gemma3_text", "Gemma3ForCausalLM", 262208, 2304, 26, 8, 4, 256, 9216, 131072, 1000000.0, true, read_gemma3},
    {"gpt_neox", "GPTNeoXForCausalLM", 50432, 6144, 44, 64, 0, 0, 24576, 2048, 10000.0, false, read_neox},
};

std::string first_architecture(const Json& j) {
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string())
    return j["architectures"][0].get<std::string>();
  return "";
}

const Family* find_family(const Json& j) {
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  const std::string arch = first_architecture(j);
  for (const Family& f : families)
    if (type == f.model_type || (type.empty() && arch == f.architecture)) return &f;
  return nullptr;
}

RopeType parse_rope_type(const std::string& name, const std::string& where) {
  if (name == "default") return RopeType::default_;
  if (name == "linear") return RopeType::linear;
  if (name == "dynamic") return RopeType::dynamic;
  if (name == "llama3") return RopeType::llama3;
  if (name == "yarn") return RopeType::yarn;
  throw InputError(where + " rope type \"" + name + "\" is not supported (default, linear, dynamic, llama3, yarn)");
}

// One rope dict (rope_theta may sit inside it).
void read_rope_object(const Json& rope, const std::string& where, DecoderConfig& c) {
  if (!rope.is_object()) throw InputError(where + " must be an object");
  const ConfigReader r{rope, where};
  c.rope_theta = r.number("rope_theta", c.rope_theta);
  c.partial_rotary_factor = r.number("partial_rotary_factor", c.partial_rotary_factor);  // NeoX, >= 4.56
  const std::string type = r.text("rope_type", r.text("type", "default"));
  RopeScaling& s = c.rope;
  s.type = parse_rope_type(type, r.file);
  if (s.type == RopeType::default_) return;
  if (!rope.contains("factor")) throw InputError(r.file + " needs a 'factor' for rope type \"" + type + "\"");
  s.factor = r.number("factor", 1.0);
  s.low_freq_factor = r.number("low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = r.number("high_freq_factor", s.high_freq_factor);
  s.original_max_positions = r.size("original_max_position_embeddings", 0);
  s.attention_factor = r.number("attention_factor", 0.0);
  s.beta_fast = r.number("beta_fast", s.beta_fast);
  s.beta_slow = r.number("beta_slow", s.beta_slow);
  if (s.type == RopeType::llama3 && s.original_max_positions == 0)
    throw InputError(r.file + " needs 'original_max_position_embeddings' for rope type \"llama3\"");
  if (s.type == RopeType::llama3 && !(s.high_freq_factor > s.low_freq_factor))
    throw InputError(r.file + ": 'high_freq_factor' must be above 'low_freq_factor'");
  for (const char* later : {"mscale", "mscale_all_dim", "truncate"})
    if (rope.contains(later)) throw InputError(r.file + ": yarn's '" + std::string(later) + "' is not supported yet");
}

// rope_scaling (transformers before 4.56; "type" before 4.45) or rope_parameters (later, rope_theta
// inside it; Gemma 3's one per layer type); null or absent: the default rotation.
void read_rope(const Json& j, const std::string& file, DecoderConfig& c) {
  const char* key = j.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!j.contains(key) || j[key].is_null()) return;
  const std::string where = file + ": '" + key + "'";
  const Json& rope = j[key];
  if (!rope.is_object() || !rope.contains("full_attention")) return read_rope_object(rope, where, c);
  read_rope_object(rope["full_attention"], where + "['full_attention']", c);
  if (!rope.contains("sliding_attention")) return;
  DecoderConfig local = c;
  local.rope = RopeScaling{};
  read_rope_object(rope["sliding_attention"], where + "['sliding_attention']", local);
  if (local.rope.type != RopeType::default_)
    throw InputError(where + "['sliding_attention'] must be the default rotation");
  c.local_rope_theta = local.rope_theta;
}

// What the tensors alone cannot tell apart, checked against each other.
void check_decoder_config(const DecoderConfig& c, const std::string& file) {
  if (c.num_heads % c.num_kv_heads)
    throw InputError(file + ": num_attention_heads (" + std::to_string(c.num_heads) +
                     ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_kv_heads) + ")");
  if (c.rotary_dim() % 2 || c.rotary_dim() == 0)
    throw InputError(file + ": the rotated part of a head (" + std::to_string(c.rotary_dim()) + " of " +
                     std::to_string(c.head_dim) + " values) must be even and not empty");
}

}  // namespace

std::string decoder_architectures() {
  std::string list;
  for (const Family& f : families) list += (list.empty() ? "" : ", ") + std::string(f.architecture);
  return list;
}

bool is_decoder_config(const Json& j) { return j.is_object() && find_family(j) != nullptr; }

DecoderConfig decoder_config_from_json(const Json& j, const std::string& file) {
  const Family* f = j.is_object() ? find_family(j) : nullptr;
  if (!f) throw InputError(file + ": not a supported decoder (" + decoder_architectures() + ")");
  const ConfigReader r{j, file};
  DecoderConfig c;
  c.model_type = f->model_type;
  c.architecture = first_architecture(j).empty() ? f->architecture : first_architecture(j);
  c.vocab_size = r.size("vocab_size", f->vocab);
  c.hidden_size = r.size("hidden_size", f->hidden);
  c.intermediate_size = r.size("intermediate_size", f->intermediate);
  c.num_layers = r.size("num_hidden_layers", f->layers);
  c.num_heads = r.size("num_attention_heads", f->heads);
  c.num_kv_heads = r.size("num_key_value_heads", f->kv_heads ? f->kv_heads : c.num_heads);
  c.max_positions = r.size("max_position_embeddings", f->max_positions);
  if (!j.contains("head_dim") && !f->head_dim && c.hidden_size % c.num_heads)
    throw InputError(file + ": hidden_size must be a multiple of num_attention_heads when head_dim is not given");
  c.head_dim = r.size("head_dim", f->head_dim ? f->head_dim : c.hidden_size / c.num_heads);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.rope_theta = r.number("rope_theta", f->rope_theta);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", f->tied);
  c.partial_rotary_factor = r.number("partial_rotary_factor", 1.0);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    const Json& e = j["eos_token_id"];
    for (const Json& id : e.is_array() ? e : Json::array({e}))
      c.eos_token_ids.push_back(json_integer<int64_t>(id, file + ": \"eos_token_id\"", 0));
  }
  f->read(r, *f, c);
  read_rope(j, file, c);
  if (f->read != read_neox && c.partial_rotary_factor != 1.0)
    throw InputError(file + ": partial_rotary_factor is not supported for " + c.model_type);
  if (c.partial_rotary_factor > 1) throw InputError(file + ": the rotated part of a head must be at most all of it");
  check_decoder_config(c, file);
  return c;
}

namespace {

// --- tensors ---

// Where a checkpoint tensor goes: a matrix kept as stored, or a small float32 tensor (norms, biases).
struct Expected {
  Shape shape;
  Weight* matrix;
  Tensor* tensor;
  bool required;
};

// The checkpoint's names: the Llama layout (Gemma adds its sandwich norms) or GPT-NeoX's.
struct TensorNames {
  const char *embed, *final_norm, *head, *layers, *input_norm, *post_attention_norm, *o_proj, *up, *down;
};
const TensorNames llama_names = {"model.embed_tokens", "model.norm", "lm_head", "model.layers.", "input_layernorm",
                                 "post_attention_layernorm", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj"};
const TensorNames neox_names = {"gpt_neox.embed_in", "gpt_neox.final_layer_norm", "embed_out", "gpt_neox.layers.",
                                "input_layernorm", "post_attention_layernorm", "attention.dense",
                                "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"};

struct ExpectedTensors {
  std::map<std::string, Expected> e;
  bool biased_norms;
  void add(const std::string& name, Shape shape, Tensor& into) { e[name] = {std::move(shape), nullptr, &into, true}; }
  void add(const std::string& name, Shape shape, Weight& into, bool required = true) {
    e[name] = {std::move(shape), &into, nullptr, required};
  }
  void norm(const std::string& name, size_t n, LayerNorm& into) {
    add(name + ".weight", {n}, into.weight);
    if (biased_norms) add(name + ".bias", {n}, into.bias);
  }
  void linear(const std::string& name, size_t out, size_t in, StoredLinear& into, bool bias) {
    add(name + ".weight", {out, in}, into.weight);
    if (bias) add(name + ".bias", {out}, into.bias);
  }
};

void expected_layer(const DecoderConfig& c, const TensorNames& n, const std::string& p, DecoderLayer& l,
                    ExpectedTensors& e) {
  const size_t H = c.hidden_size, I = c.intermediate_size, d = c.head_dim, q = c.num_heads * d, kv = c.num_kv_heads * d;
  e.norm(p + n.input_norm, H, l.input_norm);
  e.norm(p + n.post_attention_norm, H, l.post_attention_norm);
  if (c.sandwich_norms) {
    e.norm(p + "pre_feedforward_layernorm", H, l.pre_feedforward_norm);
    e.norm(p + "post_feedforward_layernorm", H, l.post_feedforward_norm);
  }
  if (c.fused_qkv) {  // split into q_proj, k_proj and v_proj by split_fused_qkv
    e.linear(p + "attention.query_key_value", q + 2 * kv, H, l.q_proj, c.qkv_bias);
  } else {
    e.linear(p + "self_attn.q_proj", q, H, l.q_proj, c.qkv_bias);
    e.linear(p + "self_attn.k_proj", kv, H, l.k_proj, c.qkv_bias);
    e.linear(p + "self_attn.v_proj", kv, H, l.v_proj, c.qkv_bias);
  }
  e.linear(p + n.o_proj, H, q, l.o_proj, c.o_bias);
  if (c.qk_norm) e.add(p + "self_attn.q_norm.weight", {d}, l.q_norm), e.add(p + "self_attn.k_norm.weight", {d}, l.k_norm);
  if (c.mlp == MlpKind::gated) e.linear(p + "mlp.gate_proj", I, H, l.gate_proj, c.mlp_bias);
  e.linear(p + n.up, I, H, l.up_proj, c.mlp_bias);
  e.linear(p + n.down, H, I, l.down_proj, c.mlp_bias);
}

std::map<std::string, Expected> expected_tensors(DecoderModel& m) {
  const DecoderConfig& c = m.config;
  const TensorNames& n = c.fused_qkv ? neox_names : llama_names;
  ExpectedTensors e{{}, c.norm == NormKind::layer_norm};
  e.add(n.embed + std::string(".weight"), {c.vocab_size, c.hidden_size}, m.embed_tokens);
  e.norm(n.final_norm, c.hidden_size, m.norm);
  // Tied: a checkpoint may still store lm_head.weight (a copy); the embedding is what transformers uses.
  e.add(n.head + std::string(".weight"), {c.vocab_size, c.hidden_size}, m.lm_head, !c.tie_word_embeddings);
  for (size_t i = 0; i < c.num_layers; ++i) expected_layer(c, n, n.layers + std::to_string(i) + ".", m.layers[i], e);
  return e.e;
}

// GPTNeoXAttention: query_key_value's output viewed as [heads, 3·head_dim], each head's q, k, v in turn.
void split_fused_qkv(DecoderLayer& l, size_t heads, size_t d) {
  const StoredLinear fused = l.q_proj;
  for (size_t part = 0; part < 3; ++part) {
    StoredLinear& into = part == 0 ? l.q_proj : part == 1 ? l.k_proj : l.v_proj;
    std::vector<size_t> rows;
    for (size_t h = 0; h < heads; ++h)
      for (size_t r = 0; r < d; ++r) rows.push_back((h * 3 + part) * d + r);
    into.weight = fused.weight.rows(rows);
    if (!fused.bias.dimension()) continue;
    into.bias = Tensor::from_shape({heads * d});
    for (size_t i = 0; i < rows.size(); ++i) into.bias.data()[i] = fused.bias.data()[rows[i]];
  }
}

// Each layer holds at least four weights (queries, the output projection, the MLP's two or three): a
// config claiming more layers than a quarter of the file's tensors is refused before anything is sized
// by it (a config.json may say 10⁹ layers).
void check_layer_count(const DecoderConfig& c, size_t tensors, const std::string& file) {
  if (c.num_layers > tensors / 4)
    throw InputError(file + " holds " + std::to_string(tensors) + " tensors, too few for the config's " +
                     std::to_string(c.num_layers) + " layers");
}

}  // namespace

DecoderModel load_decoder(const DecoderConfig& config, std::vector<NamedWeight> tensors, const std::string& file) {
  check_layer_count(config, tensors.size(), file);
  DecoderModel m;
  m.config = config;
  m.layers.resize(config.num_layers);
  std::map<std::string, Expected> expected = expected_tensors(m);
  std::vector<std::string> problems;
  std::map<std::string, bool> seen;
  for (NamedWeight& t : tensors) {
    auto e = expected.find(t.name);
    if (e == expected.end()) {
      m.ignored.push_back(t.name);
      continue;
    }
    if (t.value.shape() != e->second.shape)
      problems.push_back(t.name + " has shape " + shape_text(t.value.shape()) + ", the config needs " +
                         shape_text(e->second.shape));
    else if (e->second.matrix)
      *e->second.matrix = std::move(t.value);
    else
      *e->second.tensor = t.value.widened();
    seen[t.name] = true;
  }
  for (const auto& [name, e] : expected)
    if (e.required && !seen.count(name)) problems.push_back(name + " is missing");
  if (!problems.empty()) {
    std::string message = file + " does not fit its " + config.model_type + " config:";
    for (const std::string& p : problems) message += "\n  " + p;
    throw InputError(message);
  }
  if (config.tie_word_embeddings) m.lm_head = m.embed_tokens;
  if (config.fused_qkv)
    for (DecoderLayer& l : m.layers) split_fused_qkv(l, config.num_heads, config.head_dim);
  std::sort(m.ignored.begin(), m.ignored.end());
  return m;
}

namespace {

// Integer and boolean tensors are skipped as buffers: one the model needs is named, not called missing.
void check_skipped(const DecoderConfig& config, const std::vector<std::string>& skipped, const std::string& file) {
  DecoderModel probe;
  probe.config = config;
  probe.layers.resize(config.num_layers);
  const std::map<std::string, Expected> expected = expected_tensors(probe);
  for (const std::string& name : skipped)
    if (expected.count(name)) throw InputError(file + ": " + name + " is not floating point (F32, F16, BF16 or F64)");
}

}  // namespace

void for_each_tensor(const DecoderModel& m, const std::function<void(const void*, size_t, size_t)>& visit) {
  auto given = [&](const Tensor& t) {
    if (t.size() > 0 && t.dimension() > 0) visit(t.data(), t.size() * sizeof(float), t.size());
  };
  auto matrix = [&](const Weight& w) {
    if (w.size() > 0 && w.dimension() > 0) visit(w.data(), w.bytes(), w.size());
  };
  auto norm = [&](const LayerNorm& n) { given(n.weight), given(n.bias); };
  matrix(m.embed_tokens);
  for (const DecoderLayer& l : m.layers) {
    for (const LayerNorm* n : {&l.input_norm, &l.post_attention_norm, &l.pre_feedforward_norm, &l.post_feedforward_norm})
      norm(*n);
    for (const StoredLinear* x : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj})
      matrix(x->weight), given(x->bias);
    given(l.q_norm), given(l.k_norm);
  }
  norm(m.norm);
  if (m.lm_head.data() != m.embed_tokens.data()) matrix(m.lm_head);
}

std::string decoder_weight_dtype(const DecoderModel& m) {
  return m.embed_tokens.half() ? half_name(m.embed_tokens.half_type()) : "float32";
}

size_t decoder_weight_bytes(const DecoderModel& m) {
  size_t bytes = 0;
  for_each_tensor(m, [&](const void*, size_t b, size_t) { bytes += b; });
  return bytes;
}

DecoderModel read_decoder_weights(const DecoderConfig& config, const std::string& path, const std::string& file_name,
                                  const ReadProgress& progress, bool widen) {
  std::vector<std::string> buffers;
  std::vector<NamedWeight> tensors = read_checkpoint_weights(path, &buffers, progress);
  if (widen)
    for (NamedWeight& t : tensors) t.value = t.value.widened();
  check_skipped(config, buffers, file_name);
  DecoderModel m = load_decoder(config, std::move(tensors), file_name);
  m.ignored.insert(m.ignored.end(), buffers.begin(), buffers.end());
  std::sort(m.ignored.begin(), m.ignored.end());
  return m;
}

// --- rotary position embeddings (transformers' modeling_rope_utils.py) ---

namespace {

// _compute_default_rope_parameters: 1 / base^(2i / dim), in float32 as PyTorch computes it.
std::vector<float> default_inv_freq(double base, size_t dim) {
  std::vector<float> inv(dim / 2);
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / std::pow(float(base), float(2 * i) / float(dim));
  return inv;
}

// _compute_llama3_parameters: wavelengths longer than original / low_freq_factor are divided by the
// factor, shorter than original / high_freq_factor kept, those between smoothly interpolated.
void llama3_inv_freq(std::vector<float>& inv, const RopeScaling& s) {
  const double old = double(s.original_max_positions), low_wavelen = old / s.low_freq_factor,
               high_wavelen = old / s.high_freq_factor;
  for (float& f : inv) {
    const double wavelen = 2 * M_PI / f, scaled = wavelen > low_wavelen ? f / s.factor : f;
    const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    f = float(medium ? (1 - smooth) * scaled / s.factor + smooth * scaled : scaled);
  }
}

// _compute_yarn_parameters: a linear ramp between the dimensions that rotate beta_fast and beta_slow
// times over the original context mixes the interpolated (÷ factor) and the original frequencies.
void yarn_inv_freq(std::vector<float>& inv, const RopeScaling& s, double base, size_t dim, size_t max_positions) {
  const double positions = double(s.original_max_positions ? s.original_max_positions : max_positions);
  const auto correction_dim = [&](double rotations) {
    return double(dim) * std::log(positions / (rotations * 2 * M_PI)) / (2 * std::log(base));
  };
  const double low = std::max(std::floor(correction_dim(s.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(s.beta_slow)), double(dim - 1));
  if (low == high) high += 0.001;  // linear_ramp_factor's guard against a zero width
  for (size_t i = 0; i < inv.size(); ++i) {
    const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0), extrapolation = 1 - ramp;
    inv[i] = float(inv[i] / s.factor * (1 - extrapolation) + inv[i] * extrapolation);
  }
}

}  // namespace

RotaryFrequencies rotary_frequencies(const DecoderConfig& c) {
  const size_t dim = c.rotary_dim();
  RotaryFrequencies r{default_inv_freq(c.rope_theta, dim), 1.0f};
  const RopeScaling& s = c.rope;
  if (s.type == RopeType::linear)
    for (float& f : r.inv_freq) f = float(f / s.factor);
  // dynamic equals the default up to max_position_embeddings, past which decoder_forward refuses to go.
  if (s.type == RopeType::llama3) llama3_inv_freq(r.inv_freq, s);
  if (s.type == RopeType::yarn) {
    yarn_inv_freq(r.inv_freq, s, c.rope_theta, dim, c.max_positions);
    r.attention_factor = float(s.attention_factor > 0 ? s.attention_factor : 0.1 * std::log(s.factor) + 1.0);
  }
  return r;
}

DecoderConfig local_rotary_config(const DecoderConfig& c) {
  DecoderConfig local = c;
  local.rope_theta = c.local_rope_theta;
  local.rope = RopeScaling{};
  return local;
}

namespace {

// --- forward ---

struct Rotary {
  Tensor cos, sin;  // [1, S, rotary_dim], the attention factor included
};

// What every layer of one pass shares: its S positions follow `past` cached ones, which `cache` holds.
struct Positions {
  size_t past = 0;
  KeyValueCache* cache = nullptr;
};

// LlamaRotaryEmbedding.forward: angles = positions ⊗ inv_freq, repeated for both halves; cos and sin
// times the attention factor. Recorded once under `name`: every layer of a kind rotates by the same angles;
// the S positions follow `past` cached ones.
Rotary rotary(const DecoderConfig& c, size_t past, size_t S, Trace& t, const std::string& name) {
  const RotaryFrequencies f = rotary_frequencies(c);
  const size_t half = f.inv_freq.size(), dim = 2 * half;
  Tensor angles = Tensor::from_shape({1, S, dim});
  for (size_t s = 0; s < S; ++s)
    for (size_t i = 0; i < dim; ++i) angles.data()[s * dim + i] = float(past + s) * f.inv_freq[i % half];
  Rotary r{angles, angles};
  for (size_t i = 0; i < angles.size(); ++i) {
    r.cos.data()[i] = std::cos(angles.data()[i]) * f.attention_factor;
    r.sin.data()[i] = std::sin(angles.data()[i]) * f.attention_factor;
  }
  t.record(name + ".angles", std::move(angles));
  t.record(name + ".cos", r.cos);
  t.record(name + ".sin", r.sin);
  return r;
}

// apply_rotary_pos_emb on x [B, heads, S, d]: x·cos + rotate_half(x)·sin over the first rotary_dim
// values of each head (rotate_half(x) = [−x₂, x₁], halves of those); the rest pass unrotated.
Tensor rotate(const Tensor& x, const Rotary& r) {
  const size_t S = x.shape(2), d = x.shape(3), dim = r.cos.shape(2), half = dim / 2;
  Tensor out = x;
  for (size_t row = 0; row < x.size() / d; ++row) {
    const float* in = x.data() + row * d;
    const float *cos = r.cos.data() + (row % S) * dim, *sin = r.sin.data() + (row % S) * dim;
    for (size_t i = 0; i < dim; ++i) {
      const float rotated = i < half ? -in[i + half] : in[i - half];
      out.data()[row * d + i] = in[i] * cos[i] + rotated * sin[i];
    }
  }
  return out;
}

// LlamaRMSNorm over the last dimension: weight · (x · rsqrt(mean(x²) + eps)), in float32; Gemma's
// multiplies by (1 + weight) instead (`offset` 1).
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, float offset) {
  const size_t n = weight.size();
  Tensor out = Tensor::from_shape(x.shape());
  for (size_t row = 0; row < x.size() / n; ++row) {
    const float* in = x.data() + row * n;
    double squares = 0;
    for (size_t i = 0; i < n; ++i) squares += double(in[i]) * in[i];
    const float scale = float(1.0 / std::sqrt(float(squares / double(n)) + eps));
    for (size_t i = 0; i < n; ++i) out.data()[row * n + i] = (offset + weight.data()[i]) * (in[i] * scale);
  }
  return out;
}

Tensor norm(const DecoderConfig& c, const Tensor& x, const LayerNorm& n) {
  if (c.norm == NormKind::layer_norm) return layer_norm(x, n, float(c.rms_norm_eps));
  return rms_norm(x, n.weight, c.rms_norm_eps, c.norm == NormKind::rms_one_plus ? 1.0f : 0.0f);
}

Tensor project(const Tensor& x, const StoredLinear& l) {
  return linear(x, l.weight, l.bias.dimension() ? &l.bias : nullptr);
}

// repeat_kv: key/value head j serves query heads j·g … j·g + g − 1 ([B, n_kv, S, d] → [B, n_kv·g, S, d]).
Tensor repeat_kv(const Tensor& x, size_t g) {
  const size_t B = x.shape(0), kv = x.shape(1), S = x.shape(2), d = x.shape(3);
  Tensor out = Tensor::from_shape({B, kv * g, S, d});
  for (size_t head = 0; head < B * kv; ++head)
    for (size_t r = 0; r < g; ++r) std::copy_n(x.data() + head * S * d, S * d, out.data() + (head * g + r) * S * d);
  return out;
}

// tanh(x / cap) · cap, as Gemma caps attention scores and logits.
void soft_cap(float* x, size_t n, double cap) {
  for (size_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] / float(cap)) * float(cap);
}

// lm_head on the final norm's output, Gemma's final cap applied.
Tensor logits_of(const DecoderModel& m, const Tensor& normed) {
  Tensor logits = linear(normed, m.lm_head);
  if (m.config.final_softcap > 0) soft_cap(logits.data(), logits.size(), m.config.final_softcap);
  return logits;
}


// What one layer's attention depends on besides its weights.
struct LayerAttention {
  const Rotary& rotary;
  size_t window;  // 0: every earlier key
};

// LlamaAttention.forward (eager_attention_forward) from the input norm's output h [B, S, H]; with a
// cache, the rotated keys and the values join it (DynamicCache.update) before the heads attend.
Tensor attention(const DecoderModel& m, size_t index, const Tensor& h, const LayerAttention& a, const Positions& pos,
                 const Recorder& rec) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  Tensor q = rec("self_attn.q_proj", split_heads(project(h, l.q_proj), c.num_heads));
  Tensor k = rec("self_attn.k_proj", split_heads(project(h, l.k_proj), c.num_kv_heads));
  Tensor v = rec("self_attn.v_proj", split_heads(project(h, l.v_proj), c.num_kv_heads));
  if (c.qk_norm) {  // Qwen3, Gemma 3: RMSNorm over each head's values, before the rotation
    const float offset = c.norm == NormKind::rms_one_plus ? 1.0f : 0.0f;
    q = rec("self_attn.q_norm", rms_norm(q, l.q_norm, c.rms_norm_eps, offset));
    k = rec("self_attn.k_norm", rms_norm(k, l.k_norm, c.rms_norm_eps, offset));
  }
  q = rec("self_attn.queries_rotated", rotate(q, a.rotary));
  k = rec("self_attn.keys_rotated", rotate(k, a.rotary));
  if (pos.cache) pos.cache->extend(index, pos.past, k, v);
  const size_t past = pos.past, Sk = k.shape(2), window = a.window;
  const double cap = c.attn_softcap;
  // Gemma's cap comes before the mask; the causal mask (and the window) adds finfo(float32).min to the
  // keys a query cannot see.
  const HeadAttention heads = attend_heads(
      q, repeat_kv(k, c.group()), repeat_kv(v, c.group()), decoder_score_divisor(c),
      [window, past, Sk, cap](float* row, size_t, size_t query) {
        if (cap > 0) soft_cap(row, Sk, cap);
        const size_t at = past + query;  // the query's position
        for (size_t key = 0; key < Sk; ++key)
          if (key > at || (window && key + window <= at)) row[key] += std::numeric_limits<float>::lowest();
      },
      rec, "self_attn.scores", "self_attn.attn_weights");
  const Tensor merged = rec("self_attn.merged", merge_heads(heads.context));
  return rec("self_attn.o_proj", project(merged, l.o_proj));
}

void activate(Tensor& x, DecoderAct act) {
  if (act == DecoderAct::silu)
    for (size_t i = 0; i < x.size(); ++i) x.data()[i] = x.data()[i] / (1.0f + std::exp(-x.data()[i]));
  else
    activate(x, act == DecoderAct::gelu ? HiddenAct::gelu : HiddenAct::gelu_new);  // gelu_new: the tanh form
}

// LlamaMLP: down_proj(act(gate_proj(x)) · up_proj(x)); GPTNeoXMLP: dense_4h_to_h(act(dense_h_to_4h(x)))
// under the names up_proj and down_proj.
Tensor mlp(const DecoderConfig& c, const DecoderLayer& l, const Tensor& x, const Recorder& rec) {
  const bool gated = c.mlp == MlpKind::gated;
  Tensor act = rec(gated ? "mlp.gate_proj" : "mlp.up_proj", project(x, gated ? l.gate_proj : l.up_proj));
  activate(act, c.act);
  act = rec("mlp.act", std::move(act));
  if (!gated) return rec("mlp.down_proj", project(act, l.down_proj));
  const Tensor up = rec("mlp.up_proj", project(x, l.up_proj));
  Tensor product = Tensor::from_shape(act.shape());
  multiply(act.data(), up.data(), product.data(), act.size());
  return rec("mlp.down_proj", project(product, l.down_proj));
}

// LlamaDecoderLayer.forward: x + attention(input_layernorm(x)), then + mlp(post_attention_layernorm(·));
// Gemma's norms each branch's output too (post_attention_layernorm, post_feedforward_layernorm, its
// pre-MLP norm pre_feedforward_layernorm); GPT-NeoX's parallel residual adds both branches to x.
Tensor layer(const DecoderModel& m, size_t index, const Tensor& x, const LayerAttention& a, const Positions& pos,
             const Recorder& rec) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  const Tensor h = rec("input_layernorm", norm(c, x, l.input_norm));
  Tensor attended = attention(m, index, h, a, pos, rec);
  if (c.parallel_residual) {
    const Tensor h2 = rec("post_attention_layernorm", norm(c, x, l.post_attention_norm));
    return add(add(mlp(c, l, h2, rec), attended), x);
  }
  if (c.sandwich_norms) attended = rec("post_attention_layernorm", norm(c, attended, l.post_attention_norm));
  const Tensor residual = rec("residual", add(x, attended));
  const LayerNorm& pre_mlp = c.sandwich_norms ? l.pre_feedforward_norm : l.post_attention_norm;
  const Tensor h2 = rec(c.sandwich_norms ? "pre_feedforward_layernorm" : "post_attention_layernorm",
                        norm(c, residual, pre_mlp));
  Tensor out = mlp(c, l, h2, rec);
  if (c.sandwich_norms) out = rec("post_feedforward_layernorm", norm(c, out, l.post_feedforward_norm));
  return add(residual, out);
}

}  // namespace

// Scores are divided by √scalar where transformers multiplies by scalar^−½ (the last bit differs).
float decoder_score_divisor(const DecoderConfig& c) {
  return float(std::sqrt(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : double(c.head_dim)));
}

std::string decoder_rotary_stage(const DecoderConfig& c, size_t layer) {
  const bool sliding = layer < c.sliding_layers.size() && c.sliding_layers[layer];
  return sliding && c.local_rope_theta > 0 ? "model.rotary_emb_local" : "model.rotary_emb";
}

float decoder_embed_scale(const DecoderConfig& c) {
  return c.embed_scale ? float(std::sqrt(double(c.hidden_size))) : 1.0f;
}

double decoder_trace_floats(const DecoderConfig& c, size_t batch, size_t seq, size_t past) {
  // Per layer about a dozen [B, S, H] stages, three [B, S, I], four [B, n, S, d] and two [B, n, S, S].
  const double tokens = double(batch) * double(seq), heads = double(c.num_heads);
  const double per_layer = tokens * (12.0 * double(c.hidden_size) + 3.0 * double(c.intermediate_size) +
                                     heads * (4.0 * double(c.head_dim) + 2.0 * double(past + seq)));
  return per_layer * double(c.num_layers) + (tokens + double(batch)) * double(c.vocab_size);
}

namespace {

void check_decoder_input(const DecoderModel& m, const std::vector<int64_t>& ids, size_t batch, size_t seq, size_t past) {
  const DecoderConfig& c = m.config;
  if (batch == 0 || seq == 0 || ids.size() != batch * seq) throw InputError("no tokens to run the model on");
  if (past + seq > c.max_positions)
    throw InputError("a sequence has " + std::to_string(past + seq) + " tokens, more than the model's " +
                     std::to_string(c.max_positions) + " positions (max_position_embeddings)");
  check_fits_in_memory(4.0 * decoder_trace_floats(c, batch, seq, past),
                       "the trace of " + std::to_string(batch) + " sequences of " + std::to_string(seq) + " tokens");
}

Tensor scale_embeddings(const DecoderConfig& c, Tensor x) {
  const float scale = decoder_embed_scale(c);
  if (scale != 1.0f)
    for (size_t i = 0; i < x.size(); ++i) x.data()[i] *= scale;
  return x;
}

Tensor embed(const DecoderModel& m, const std::vector<int64_t>& ids, size_t batch, size_t seq) {
  return scale_embeddings(m.config, lookup(m.embed_tokens, ids, batch, seq, "token id"));
}

}  // namespace

namespace {

// From the embeddings on (x: embed_tokens' output, Gemma's scale applied): the rotations, the layers,
// the final norm and the logits (`last_logits`: of each row's last position alone, [B, 1, V]), into `t`.
void run_layers(const DecoderModel& m, Tensor x, const Positions& pos, const std::vector<size_t>& lengths, Trace& t,
                bool last_logits = false) {
  const DecoderConfig& c = m.config;
  const size_t batch = x.shape(0), seq = x.shape(1);
  t.stage("model.embed_tokens", x);
  const Rotary global = rotary(c, pos.past, seq, t, "model.rotary_emb");
  const std::optional<Rotary> local =
      c.local_rope_theta > 0
          ? std::optional<Rotary>(rotary(local_rotary_config(c), pos.past, seq, t, "model.rotary_emb_local"))
          : std::nullopt;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const bool sliding = i < c.sliding_layers.size() && c.sliding_layers[i];
    const LayerAttention a{decoder_rotary_stage(c, i) == "model.rotary_emb_local" ? *local : global,
                           sliding ? c.sliding_window : 0};
    const std::string p = "model.layers." + std::to_string(i);
    x = layer(m, i, x, a, pos, Recorder{t, p + "."});
    t.stage(p, x);
  }
  Tensor final = norm(c, x, m.norm);
  t.stage("model.norm", final);
  Tensor logits = logits_of(m, last_logits ? last_position(final) : final);
  t.stage("logits", logits);
  const size_t rows = last_logits ? 1 : seq;
  t.record("next_token_probs", next_token_probs(logits, lengths.empty() ? std::vector<size_t>(batch, rows) : lengths));
}

}  // namespace

Trace decoder_forward(const DecoderModel& m, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                      const Hooks* hooks, KeyValueCache* cache, const std::vector<size_t>& lengths) {
  if (cache) cache->prepare(m.layers.size());
  const Positions pos{cache ? cache->length() : 0, cache};
  check_decoder_input(m, ids, batch, seq, pos.past);
  for (size_t length : lengths)
    if (lengths.size() != batch || length == 0 || length > seq) throw std::logic_error("decoder_forward: bad lengths");
  Trace t(hooks);
  t.record("input_ids", ids_tensor(ids, batch, seq), PrintDtype::int64);
  run_layers(m, embed(m, ids, batch, seq), pos, lengths, t);
  if (hooks) hooks->check_reached(t);
  return t;
}

Trace decoder_forward_embeddings(const DecoderModel& m, const Tensor& token_embeddings, const Hooks* hooks) {
  const size_t batch = token_embeddings.shape(0), seq = token_embeddings.shape(1);
  if (token_embeddings.dimension() != 3 || token_embeddings.shape(2) != m.config.hidden_size)
    throw InputError("the token embeddings must be [batch, seq, hidden_size]");
  check_decoder_input(m, std::vector<int64_t>(batch * seq), batch, seq, 0);
  Trace t(hooks);
  run_layers(m, scale_embeddings(m.config, token_embeddings), Positions{}, {}, t, true);
  if (hooks) hooks->check_reached(t);
  return t;
}

Tensor decoder_unmasked_weights(const DecoderConfig& c, const Trace& trace, size_t layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
  const Tensor keys = repeat_kv(trace.at(p + "keys_rotated"), c.group());
  const double cap = c.attn_softcap;
  Trace scratch;
  return attend_heads(trace.at(p + "queries_rotated"), keys, keys, decoder_score_divisor(c),  // values do not matter
                      [cap, Sk = keys.shape(2)](float* row, size_t, size_t) {
                        if (cap > 0) soft_cap(row, Sk, cap);
                      },
                      Recorder{scratch, ""}, "scores", "weights")
      .weights;
}

namespace {

// NeoX's query_key_value weight (or bias) as the checkpoint holds it, from the split q_proj, k_proj and
// v_proj: each head's q, k and v rows in turn (split_fused_qkv's inverse), in float32.
Tensor fused_qkv(const DecoderLayer& l, size_t heads, size_t d, bool bias) {
  const StoredLinear* parts[3] = {&l.q_proj, &l.k_proj, &l.v_proj};
  const size_t in = l.q_proj.weight.shape(1);
  Tensor out = Tensor::from_shape(bias ? Shape{3 * heads * d} : Shape{3 * heads * d, in});
  for (size_t h = 0; h < heads; ++h)
    for (size_t part = 0; part < 3; ++part) {
      const size_t row = (h * 3 + part) * d;
      if (bias)
        std::copy_n(parts[part]->bias.data() + h * d, d, out.data() + row);
      else
        parts[part]->weight.widen_rows(h * d, d, out.data() + row * in);
    }
  return out;
}

}  // namespace

std::vector<NamedWeight> decoder_weights(const DecoderModel& m) {
  const DecoderConfig& c = m.config;
  std::vector<NamedWeight> out;
  // expected_tensors hands out the tensors' addresses to load into; here they are only read. The one
  // tensor not required is a tied lm_head. NeoX's fused query_key_value points at the split q_proj.
  for (const auto& [name, e] : expected_tensors(const_cast<DecoderModel&>(m))) {
    if (!e.required) continue;
    const size_t fused = name.find(".attention.query_key_value.");
    if (c.fused_qkv && fused != std::string::npos) {
      const size_t start = std::strlen(neox_names.layers), layer = std::stoul(name.substr(start, fused - start));
      const bool bias = name.compare(name.size() - 5, 5, ".bias") == 0;
      out.push_back({name, fused_qkv(m.layers.at(layer), c.num_heads, c.head_dim, bias)});
    } else {
      out.push_back({name, e.matrix ? *e.matrix : Weight(*e.tensor)});
    }
  }
  return out;
}

std::vector<NamedTensor> decoder_state_dict(const DecoderModel& m) {
  std::vector<NamedTensor> out;
  for (const NamedWeight& w : decoder_weights(m)) out.push_back({w.name, w.value.widened()});
  return out;
}

Tensor decoder_unembed(const DecoderModel& m, const Tensor& x) { return logits_of(m, norm(m.config, x, m.norm)); }

}  // namespace attn
