#include "core/model/decoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/base/error.hpp"
#include "core/base/memory.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/pretrained_parts.hpp"

namespace attn {
namespace {

// --- config.json ---

struct Family {
  const char *model_type, *architecture;
  size_t vocab, intermediate, kv_heads, max_positions;  // transformers' defaults for the family
  bool qkv_bias, qk_norm;
};
// {Llama,Mistral,Qwen2,Qwen3}Config's defaults (hidden 4096, 32 layers, 32 heads in all four).
const Family families[] = {
    {"llama", "LlamaForCausalLM", 32000, 11008, 0, 2048, false, false},
    {"mistral", "MistralForCausalLM", 32000, 14336, 8, 4096 * 32, false, false},
    {"qwen2", "Qwen2ForCausalLM", 151936, 22016, 0, 32768, true, false},
    {"qwen3", "Qwen3ForCausalLM", 151936, 22016, 0, 32768, false, true},
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

// rope_scaling (transformers before 4.56; "type" before 4.45) or rope_parameters (later, rope_theta
// inside it); null or absent: the default rotation.
void read_rope(const Json& j, const std::string& file, DecoderConfig& c) {
  const char* key = j.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
  if (!j.contains(key) || j[key].is_null()) return;
  if (!j[key].is_object()) throw InputError(file + ": '" + key + "' must be an object");
  const std::string where = file + ": '" + key + "'";
  const ConfigReader r{j[key], where};
  c.rope_theta = r.number("rope_theta", c.rope_theta);
  const std::string type = r.text("rope_type", r.text("type", "default"));
  RopeScaling& s = c.rope;
  s.type = parse_rope_type(type, r.file);
  if (s.type == RopeType::default_) return;
  if (!j[key].contains("factor")) throw InputError(r.file + " needs a 'factor' for rope type \"" + type + "\"");
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
    if (j[key].contains(later)) throw InputError(r.file + ": yarn's '" + std::string(later) + "' is not supported yet");
}

// What the tensors alone cannot tell apart, checked against each other.
void check_decoder_config(const DecoderConfig& c, const std::string& file) {
  if (c.num_heads % c.num_kv_heads)
    throw InputError(file + ": num_attention_heads (" + std::to_string(c.num_heads) +
                     ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_kv_heads) + ")");
  if (c.head_dim % 2) throw InputError(file + ": the head dimension must be even for the rotation");
}

}  // namespace

bool is_decoder_config(const Json& j) { return j.is_object() && find_family(j) != nullptr; }

DecoderConfig decoder_config_from_json(const Json& j, const std::string& file) {
  const Family* f = j.is_object() ? find_family(j) : nullptr;
  if (!f) throw InputError(file + ": not a decoder of the Llama family (LlamaForCausalLM, MistralForCausalLM, "
                                  "Qwen2ForCausalLM, Qwen3ForCausalLM)");
  const ConfigReader r{j, file};
  DecoderConfig c;
  c.model_type = f->model_type;
  c.architecture = first_architecture(j).empty() ? f->architecture : first_architecture(j);
  c.vocab_size = r.size("vocab_size", f->vocab);
  c.hidden_size = r.size("hidden_size", 4096);
  c.intermediate_size = r.size("intermediate_size", f->intermediate);
  c.num_layers = r.size("num_hidden_layers", 32);
  c.num_heads = r.size("num_attention_heads", 32);
  c.num_kv_heads = r.size("num_key_value_heads", f->kv_heads ? f->kv_heads : c.num_heads);
  c.max_positions = r.size("max_position_embeddings", f->max_positions);
  if (!j.contains("head_dim") && c.hidden_size % c.num_heads)
    throw InputError(file + ": hidden_size must be a multiple of num_attention_heads when head_dim is not given");
  c.head_dim = r.size("head_dim", c.hidden_size / c.num_heads);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.rope_theta = r.number("rope_theta", 10000.0);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  const bool attention_bias = r.flag("attention_bias", false);
  c.qkv_bias = f->qkv_bias || attention_bias;
  c.o_bias = attention_bias && !f->qkv_bias;  // Qwen2's o_proj never has one
  c.qk_norm = f->qk_norm;
  if (c.model_type == std::string("mistral")) c.sliding_window = r.size("sliding_window", 4096, false);
  read_rope(j, file, c);
  if (r.text("hidden_act", "silu") != "silu") throw InputError(file + ": only hidden_act \"silu\" is supported");
  if (r.flag("mlp_bias", false)) throw InputError(file + ": mlp_bias is not supported");
  if (r.flag("use_sliding_window", false))
    throw InputError(file + ": use_sliding_window (Qwen's windowed layers) is not supported yet");
  if (j.contains("partial_rotary_factor") && r.number("partial_rotary_factor", 1.0) != 1.0)
    throw InputError(file + ": partial_rotary_factor is not supported for " + c.model_type);
  check_decoder_config(c, file);
  return c;
}

namespace {

// --- tensors ---

struct Expected {
  Shape shape;
  Tensor* into;
  bool required;
};

std::map<std::string, Expected> expected_tensors(DecoderModel& m) {
  const DecoderConfig& c = m.config;
  const size_t H = c.hidden_size, I = c.intermediate_size, d = c.head_dim, q = c.num_heads * d, kv = c.num_kv_heads * d;
  std::map<std::string, Expected> e;
  auto add = [&](const std::string& name, Shape shape, Tensor& into, bool required = true) {
    e[name] = {std::move(shape), &into, required};
  };
  add("model.embed_tokens.weight", {c.vocab_size, H}, m.embed_tokens);
  add("model.norm.weight", {H}, m.norm);
  // Tied: a checkpoint may still store lm_head.weight (a copy); the embedding is what transformers uses.
  add("lm_head.weight", {c.vocab_size, H}, m.lm_head, !c.tie_word_embeddings);
  for (size_t i = 0; i < c.num_layers; ++i) {
    DecoderLayer& l = m.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {H}, l.input_norm);
    add(p + "post_attention_layernorm.weight", {H}, l.post_attention_norm);
    const struct { const char* name; Linear& into; size_t out, in; bool bias; } linears[] = {
        {"self_attn.q_proj", l.q_proj, q, H, c.qkv_bias},   {"self_attn.k_proj", l.k_proj, kv, H, c.qkv_bias},
        {"self_attn.v_proj", l.v_proj, kv, H, c.qkv_bias},  {"self_attn.o_proj", l.o_proj, H, q, c.o_bias},
        {"mlp.gate_proj", l.gate_proj, I, H, false},        {"mlp.up_proj", l.up_proj, I, H, false},
        {"mlp.down_proj", l.down_proj, H, I, false}};
    for (const auto& x : linears) {
      add(p + x.name + ".weight", {x.out, x.in}, x.into.weight);
      if (x.bias) add(p + x.name + ".bias", {x.out}, x.into.bias);
    }
    if (c.qk_norm) add(p + "self_attn.q_norm.weight", {d}, l.q_norm), add(p + "self_attn.k_norm.weight", {d}, l.k_norm);
  }
  return e;
}

}  // namespace

DecoderModel load_decoder(const DecoderConfig& config, std::vector<NamedTensor> tensors, const std::string& file) {
  DecoderModel m;
  m.config = config;
  m.layers.resize(config.num_layers);
  std::map<std::string, Expected> expected = expected_tensors(m);
  std::vector<std::string> problems;
  std::map<std::string, bool> seen;
  for (NamedTensor& t : tensors) {
    auto e = expected.find(t.name);
    if (e == expected.end()) {
      m.ignored.push_back(t.name);
      continue;
    }
    const Shape got(t.value.shape().begin(), t.value.shape().end());
    if (got != e->second.shape)
      problems.push_back(t.name + " has shape " + shape_text(got) + ", the config needs " + shape_text(e->second.shape));
    *e->second.into = std::move(t.value);
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
  std::sort(m.ignored.begin(), m.ignored.end());
  return m;
}

DecoderModel read_decoder_weights(const DecoderConfig& config, const std::string& path, const std::string& file_name,
                                  const ReadProgress& progress) {
  std::vector<std::string> buffers;
  DecoderModel m = load_decoder(config, read_safetensors(path, nullptr, &buffers, progress), file_name);
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

namespace {

// --- forward ---

struct Rotary {
  Tensor cos, sin;  // [1, S, rotary_dim], the attention factor included
};

// What every layer of one pass shares: the rotation of its S positions, which follow `past` cached ones.
struct Positions {
  Rotary rot;
  size_t past = 0;
  KeyValueCache* cache = nullptr;
};

// LlamaRotaryEmbedding.forward: angles = positions ⊗ inv_freq, repeated for both halves; cos and sin
// times the attention factor. Recorded once: every layer rotates by the same angles.
Rotary rotary(const DecoderConfig& c, size_t past, size_t S, Trace& t) {
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
  t.record("model.rotary_emb.angles", std::move(angles));
  t.record("model.rotary_emb.cos", r.cos);
  t.record("model.rotary_emb.sin", r.sin);
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

// LlamaRMSNorm over the last dimension: weight · (x · rsqrt(mean(x²) + eps)), in float32.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  const size_t n = weight.size();
  Tensor out = Tensor::from_shape(x.shape());
  for (size_t row = 0; row < x.size() / n; ++row) {
    const float* in = x.data() + row * n;
    double squares = 0;
    for (size_t i = 0; i < n; ++i) squares += double(in[i]) * in[i];
    const float scale = float(1.0 / std::sqrt(float(squares / double(n)) + eps));
    for (size_t i = 0; i < n; ++i) out.data()[row * n + i] = weight.data()[i] * (in[i] * scale);
  }
  return out;
}

Tensor project(const Tensor& x, const Linear& l) { return linear(x, l.weight, l.bias.dimension() ? &l.bias : nullptr); }

// repeat_kv: key/value head j serves query heads j·g … j·g + g − 1 ([B, n_kv, S, d] → [B, n_kv·g, S, d]).
Tensor repeat_kv(const Tensor& x, size_t g) {
  const size_t B = x.shape(0), kv = x.shape(1), S = x.shape(2), d = x.shape(3);
  Tensor out = Tensor::from_shape({B, kv * g, S, d});
  for (size_t head = 0; head < B * kv; ++head)
    for (size_t r = 0; r < g; ++r) std::copy_n(x.data() + head * S * d, S * d, out.data() + (head * g + r) * S * d);
  return out;
}

// LlamaAttention.forward (eager_attention_forward) from the input norm's output h [B, S, H]; with a
// cache, the rotated keys and the values join it (DynamicCache.update) before the heads attend.
Tensor attention(const DecoderModel& m, size_t index, const Tensor& h, const Positions& pos, const Recorder& rec) {
  const DecoderConfig& c = m.config;
  const DecoderLayer& l = m.layers[index];
  const Rotary& rot = pos.rot;
  Tensor q = rec("self_attn.q_proj", split_heads(project(h, l.q_proj), c.num_heads));
  Tensor k = rec("self_attn.k_proj", split_heads(project(h, l.k_proj), c.num_kv_heads));
  Tensor v = rec("self_attn.v_proj", split_heads(project(h, l.v_proj), c.num_kv_heads));
  if (c.qk_norm) {  // Qwen3: RMSNorm over each head's values, before the rotation
    q = rec("self_attn.q_norm", rms_norm(q, l.q_norm, c.rms_norm_eps));
    k = rec("self_attn.k_norm", rms_norm(k, l.k_norm, c.rms_norm_eps));
  }
  q = rec("self_attn.queries_rotated", rotate(q, rot));
  k = rec("self_attn.keys_rotated", rotate(k, rot));
  if (pos.cache) pos.cache->extend(index, pos.past, k, v);
  const size_t past = pos.past, Sk = k.shape(2), window = c.sliding_window;
  // The causal mask (and Mistral's window) adds finfo(float32).min to the keys a query cannot see; ÷ √d
  // where transformers multiplies by d^−0.5 (they differ in the last bit).
  const HeadAttention a = attend_heads(
      q, repeat_kv(k, c.group()), repeat_kv(v, c.group()), float(std::sqrt(double(c.head_dim))),
      [window, past, Sk](float* row, size_t, size_t query) {
        const size_t at = past + query;  // the query's position
        for (size_t key = 0; key < Sk; ++key)
          if (key > at || (window && key + window <= at)) row[key] += std::numeric_limits<float>::lowest();
      },
      rec, "self_attn.scores", "self_attn.attn_weights");
  const Tensor merged = rec("self_attn.merged", merge_heads(a.context));
  return rec("self_attn.o_proj", project(merged, l.o_proj));
}

// LlamaMLP: down_proj(silu(gate_proj(x)) · up_proj(x)).
Tensor mlp(const DecoderLayer& l, const Tensor& x, const Recorder& rec) {
  const Tensor gate = rec("mlp.gate_proj", project(x, l.gate_proj));
  const Tensor up = rec("mlp.up_proj", project(x, l.up_proj));
  Tensor act = Tensor::from_shape(gate.shape());
  for (size_t i = 0; i < gate.size(); ++i) act.data()[i] = gate.data()[i] / (1.0f + std::exp(-gate.data()[i]));
  act = rec("mlp.act", std::move(act));
  Tensor product = Tensor::from_shape(act.shape());
  multiply(act.data(), up.data(), product.data(), act.size());
  return rec("mlp.down_proj", project(product, l.down_proj));
}

// LlamaDecoderLayer.forward: x + attention(input_layernorm(x)), then + mlp(post_attention_layernorm(·)).
Tensor layer(const DecoderModel& m, size_t index, const Tensor& x, const Positions& pos, const Recorder& rec) {
  const double eps = m.config.rms_norm_eps;
  const DecoderLayer& l = m.layers[index];
  const Tensor h = rec("input_layernorm", rms_norm(x, l.input_norm, eps));
  const Tensor residual = rec("residual", add(x, attention(m, index, h, pos, rec)));
  const Tensor h2 = rec("post_attention_layernorm", rms_norm(residual, l.post_attention_norm, eps));
  return add(residual, mlp(l, h2, rec));
}

void check_decoder_input(const DecoderModel& m, const std::vector<int64_t>& ids, size_t batch, size_t seq, size_t past) {
  const DecoderConfig& c = m.config;
  if (batch == 0 || seq == 0 || ids.size() != batch * seq) throw InputError("no tokens to run the model on");
  if (past + seq > c.max_positions)
    throw InputError("a sequence has " + std::to_string(past + seq) + " tokens, more than the model's " +
                     std::to_string(c.max_positions) + " positions (max_position_embeddings)");
  // Per layer about a dozen [B, S, H] stages, three [B, S, I], four [B, n, S, d] and two [B, n, S, S].
  const double tokens = double(batch) * double(seq), heads = double(c.num_heads);
  const double per_layer = tokens * (12.0 * double(c.hidden_size) + 3.0 * double(c.intermediate_size) +
                                     heads * (4.0 * double(c.head_dim) + 2.0 * double(past + seq)));
  check_fits_in_memory(4.0 * (per_layer * double(c.num_layers) + (tokens + double(batch)) * double(c.vocab_size)),
                       "the trace of " + std::to_string(batch) + " sequences of " + std::to_string(seq) + " tokens");
}

}  // namespace

Trace decoder_forward(const DecoderModel& m, const std::vector<int64_t>& ids, size_t batch, size_t seq,
                      const Hooks* hooks, KeyValueCache* cache) {
  if (cache) cache->prepare(m.layers.size());
  Positions pos{{}, cache ? cache->length() : 0, cache};
  check_decoder_input(m, ids, batch, seq, pos.past);
  Trace t(hooks);
  t.record("input_ids", ids_tensor(ids, batch, seq), PrintDtype::int64);
  Tensor x = lookup(m.embed_tokens, ids, batch, seq, "token id");
  t.stage("model.embed_tokens", x);
  pos.rot = rotary(m.config, pos.past, seq, t);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const std::string p = "model.layers." + std::to_string(i);
    x = layer(m, i, x, pos, Recorder{t, p + "."});
    t.stage(p, x);
  }
  Tensor final = rms_norm(x, m.norm, m.config.rms_norm_eps);
  t.stage("model.norm", final);
  Tensor logits = linear(final, m.lm_head);
  t.stage("logits", logits);
  t.record("next_token_probs", next_token_probs(logits, std::vector<size_t>(batch, seq)));
  if (hooks) hooks->check_reached(t);
  return t;
}

std::vector<NamedTensor> decoder_state_dict(const DecoderModel& m) {
  std::vector<NamedTensor> out;
  // expected_tensors hands out the tensors' addresses to load into; here they are only read. The one
  // tensor not required is a tied lm_head.
  for (const auto& [name, e] : expected_tensors(const_cast<DecoderModel&>(m)))
    if (e.required) out.push_back({name, *e.into});
  return out;
}

Tensor decoder_unembed(const DecoderModel& m, const Tensor& x) {
  return linear(rms_norm(x, m.norm, m.config.rms_norm_eps), m.lm_head);
}

}  // namespace attn
