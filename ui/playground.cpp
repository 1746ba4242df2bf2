#include "ui/playground.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "core/model/attention.hpp"
#include "core/model/decoder_views.hpp"
#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "core/model/hub_cache.hpp"
#include "core/torch/rng.hpp"
#include "ui/model_files.hpp"
#include "ui/strings.hpp"
#include "ui/tour.hpp"
#include "ui/training.hpp"


namespace attn::ui {

bool PlaygroundConfig::operator==(const PlaygroundConfig& o) const {
  return model == o.model && sentences == o.sentences && seed == o.seed && d_model == o.d_model &&
         max_len == o.max_len && mask == o.mask && num_heads == o.num_heads && num_layers == o.num_layers &&
         d_ff == o.d_ff && num_classes == o.num_classes && dropout == o.dropout && train == o.train &&
         norm_first == o.norm_first && loaded == o.loaded && training == o.training && lang == o.lang &&
         tour == o.tour && ablation == o.ablation && patching == o.patching && hub == o.hub &&
         hub_endpoint == o.hub_endpoint;
}

PlaygroundConfig defaults_for(ModelKind kind, const PlaygroundConfig& keep) {
  PlaygroundConfig c;
  c.model = kind;
  c.sentences = keep.sentences;
  c.seed = keep.seed;
  if (kind == ModelKind::loaded) c.hub = keep.hub;
  c.hub_endpoint = keep.hub_endpoint;
  c.mask = keep.mask;
  c.training = keep.training;
  c.lang = keep.lang;
  c.tour = keep.tour;
  c.ablation = keep.ablation;
  c.patching = keep.patching;
  if (kind != ModelKind::tutorial) {
    const TransformerConfig t;
    c.d_model = t.d_model;
    c.max_len = t.max_len;
    c.num_heads = t.num_heads;
    c.num_layers = t.num_layers;
    c.d_ff = t.d_ff;
    c.num_classes = t.num_classes;
    c.dropout = t.dropout;
  }
  attach_model(c, keep.loaded);
  return c;
}

namespace {

// A checkpoint's sizes (BERT, GPT-2, a decoder): no classes, no dropout, evaluation mode.
void set_checkpoint_sizes(PlaygroundConfig& c, size_t hidden, size_t positions, size_t heads, size_t layers,
                          size_t intermediate, bool norm_first) {
  c.d_model = hidden;
  c.max_len = positions;
  c.num_heads = heads;
  c.num_layers = layers;
  c.d_ff = intermediate;
  c.num_classes = 0;
  c.dropout = 0;
  c.norm_first = norm_first;
  c.train = false;
}

}  // namespace

void attach_model(PlaygroundConfig& c, std::shared_ptr<const LoadedModel> model) {
  c.loaded = std::move(model);
  if (c.model != ModelKind::loaded || !c.loaded) return;
  if (const auto& p = c.loaded->pretrained) {
    const PretrainedConfig& t = p->model.config;
    return set_checkpoint_sizes(c, t.hidden_size, t.max_positions, t.num_heads, t.num_layers, t.intermediate_size,
                                t.family == ModelFamily::gpt2);
  }
  if (const auto& d = c.loaded->decoder) {
    const DecoderConfig& t = d->config;
    return set_checkpoint_sizes(c, t.hidden_size, t.max_positions, t.num_heads, t.num_layers, t.intermediate_size, true);
  }
  const TransformerConfig& t = c.loaded->model.config;
  c.d_model = t.d_model;
  c.max_len = t.max_len;
  c.num_heads = t.num_heads;
  c.num_layers = t.num_layers;
  c.d_ff = t.ff_width();
  c.num_classes = t.num_classes;
  c.dropout = t.dropout;
  c.norm_first = t.norm_first;
}

std::string model_kind_name(ModelKind kind) {
  return kind == ModelKind::tutorial ? "tutorial" : kind == ModelKind::transformer ? "transformer" : "loaded";
}

Lang language_of(const PlaygroundConfig& c) { return c.lang.empty() ? default_language() : parse_lang(c.lang); }

ModelKind parse_model_kind(const std::string& text) {
  if (text == "tutorial") return ModelKind::tutorial;
  if (text == "transformer") return ModelKind::transformer;
  if (text == "loaded") return ModelKind::loaded;
  throw InputError("model must be 'tutorial', 'transformer' or 'loaded' (got '" + text + "')");
}

namespace {

// The value of model=…: a kind, or a Hub repository ORG/NAME[@REVISION] (the loaded kind, that model).
void set_model(PlaygroundConfig& c, const std::string& text) {
  if (text == "tutorial" || text == "transformer" || text == "loaded") {
    const ModelKind kind = parse_model_kind(text);
    if (kind != c.model) c = defaults_for(kind, c);
    if (kind != ModelKind::loaded || (c.loaded && c.loaded->hub.empty())) c.hub.clear();
    return;
  }
  hub::Reference ref;
  try {
    ref = hub::parse_reference(text);
  } catch (const InputError& e) {
    throw InputError("model must be 'tutorial', 'transformer', 'loaded' or a Hugging Face repository "
                     "ORG/NAME[@REVISION]: " + std::string(e.what()));
  }
  if (c.model != ModelKind::loaded) c = defaults_for(ModelKind::loaded, c);
  c.hub = hub_name(ref);
}

}  // namespace

std::string hub_name(const hub::Reference& ref) {
  return ref.repo_id + (ref.revision == "main" ? "" : "@" + ref.revision);
}

std::string model_setting(const PlaygroundConfig& c) {
  return c.model == ModelKind::loaded && !c.hub.empty() ? c.hub : model_kind_name(c.model);
}

bool awaits_hub_model(const PlaygroundConfig& c) {
  return c.model == ModelKind::loaded && !c.hub.empty() && (!c.loaded || c.loaded->hub != c.hub);
}

// --- URL hash ---

std::string percent_encode(const std::string& text) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string percent_decode(const std::string& text) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw InputError("bad percent escape in '" + text + "'");
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size()) throw InputError("bad percent escape in '" + text + "'");
      out += char(nibble(text[i + 1]) * 16 + nibble(text[i + 2]));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

namespace {

// The shortest decimal that reads back as `v` (a float or a double).
template <class T>
std::string number_text(T v) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, double(v));
    if (T(std::strtod(text, nullptr)) == v) break;
  }
  return text;
}

size_t parse_count(const std::string& key, const std::string& value, size_t min) {
  if (value.empty() || value.size() > 12 || !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw InputError(key + " must be a whole number (got '" + value + "')");
  const size_t n = size_t(std::stoull(value));
  if (n < min) throw InputError(key + " must be at least " + std::to_string(min) + " (got " + value + ")");
  return n;
}

// hub=…: the Hub's address, http(s)://HOST[:PORT][/PATH] without a trailing '/' (huggingface_hub's
// HF_ENDPOINT); empty: the shell's default.
std::string parse_endpoint(std::string value) {
  while (!value.empty() && value.back() == '/') value.pop_back();
  const std::string origin = hub::url_origin(value);
  const bool http = origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0;
  const bool host = origin.size() > origin.find("://") + 3 && value.find_first_of(" \t\r\n\"'<>\\`") == std::string::npos;
  if (!value.empty() && !(http && host))
    throw InputError("hub must be the Hub's address, https://HOST or http://HOST:PORT (got '" + value + "')");
  return value;
}

uint64_t parse_seed_text(const std::string& value) {
  const bool negative = !value.empty() && value[0] == '-';
  const std::string digits = negative ? value.substr(1) : value;
  if (digits.empty() || digits.size() > 20 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw InputError("seed must be an integer (got '" + value + "')");
  errno = 0;
  const unsigned long long n = std::strtoull(digits.c_str(), nullptr, 10);
  if (errno == ERANGE || (negative && n > (1ULL << 63))) throw InputError("seed out of range: " + value);
  return negative ? uint64_t(0) - uint64_t(n) : uint64_t(n);
}

// Settings JSON holds float32 numbers (core/base/json.hpp): a dropout probability is the shortest
// decimal of its float32, so that it reads the same from the URL hash, from attnlab.set and back
// (0.1, not 0.10000000149011612).
double parse_dropout(const std::string& value) {
  char* end = nullptr;
  const float p = std::strtof(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !(p >= 0.0f && p < 1.0f))
    throw InputError("dropout must be a number in [0, 1) (got '" + value + "')");
  return std::strtod(number_text(p).c_str(), nullptr);
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  throw InputError(key + " must be 0 or 1 (got '" + value + "')");
}

int parse_tour_step(const std::string& value) {
  const size_t step = parse_count("tour", value, 0);
  if (step > size_t(tour_length))
    throw InputError("tour must be 0 (no tour) to " + std::to_string(tour_length) + " (got " + value + ")");
  return int(step);
}

constexpr const char* patching_keys[] = {"patch.clean", "patch.corrupted", "patch.answer", "patch.wrong", "patch.label"};

// A loaded model's sizes come from its config file: setting them would describe another model.
void check_not_fixed(const PlaygroundConfig& c, const std::string& key) {
  static const char* const fixed[] = {"d_model", "max_len", "num_heads", "num_layers", "d_ff", "num_classes",
                                      "dropout", "norm_first"};
  if (c.model != ModelKind::loaded) return;
  for (const char* k : fixed)
    if (key == k) throw InputError("'" + key + "' is set by the loaded model's config");
}

// The patching setting "patch.KEY" names, or null (P: the settings, const or not).
template <class P>
auto* patching_field(P& p, const std::string& key) {
  decltype(&p.clean) const fields[] = {&p.clean, &p.corrupted, &p.answer, &p.wrong, &p.label};
  for (size_t i = 0; i < std::size(patching_keys); ++i)
    if (key == patching_keys[i]) return fields[i];
  return decltype(&p.clean)(nullptr);
}

// One setting by name, from its text form (the URL hash) — shared with apply_settings.
void set_field(PlaygroundConfig& c, const std::string& key, const std::string& value) {
  check_not_fixed(c, key);
  if (key == "seed") c.seed = parse_seed_text(value);
  else if (key == "d_model") c.d_model = parse_count(key, value, 1);
  else if (key == "max_len") c.max_len = parse_count(key, value, 1);
  else if (key == "num_heads") c.num_heads = parse_count(key, value, 1);
  else if (key == "num_layers") c.num_layers = parse_count(key, value, 0);
  else if (key == "d_ff") c.d_ff = parse_count(key, value, 0);
  else if (key == "num_classes") c.num_classes = parse_count(key, value, 1);
  else if (key == "mask") c.mask = parse_mask_kind(value);
  else if (key == "dropout") c.dropout = parse_dropout(value);
  else if (key == "train") c.train = parse_bool(key, value);
  else if (key == "norm_first") c.norm_first = parse_bool(key, value);
  else if (key == "lang") c.lang = value.empty() ? "" : lang_code(parse_lang(value));
  else if (key == "tour") c.tour = parse_tour_step(value);
  else if (key == "ablate") c.ablation.heads = value.empty() ? std::vector<HeadIndex>() : parse_head_list(value, key);
  else if (key == "ablate_mlp") c.ablation.mlps = value.empty() ? std::vector<size_t>() : parse_layer_list(value, key);
  else if (key == "ablation") c.ablation.kind = parse_ablation_kind(value);
  else if (key == "hub") c.hub_endpoint = parse_endpoint(value);
  else if (std::string* field = patching_field(c.patching, key)) *field = value;
  else throw InputError("unknown setting '" + key + "'");
}

// The first tutorial has one head, no layers, classifier or dropout: settings of the Transformer keep
// their defaults there (checked, not kept), so that a configuration and its URL hash say the same.
PlaygroundConfig without_unused(PlaygroundConfig c) {
  if (c.model != ModelKind::tutorial) return c;
  const PlaygroundConfig d = defaults_for(ModelKind::tutorial);
  c.num_heads = d.num_heads, c.num_layers = d.num_layers, c.d_ff = d.d_ff, c.num_classes = d.num_classes;
  c.dropout = d.dropout, c.train = d.train, c.norm_first = d.norm_first;
  return c;
}

}  // namespace

std::string to_hash(const PlaygroundConfig& c) {
  const PlaygroundConfig d = defaults_for(c.model);
  std::vector<std::string> parts;
  auto add = [&](const std::string& key, const std::string& value) { parts.push_back(key + "=" + percent_encode(value)); };
  if (c.model != ModelKind::tutorial) add("model", model_setting(c));
  if (!c.hub_endpoint.empty()) add("hub", c.hub_endpoint);
  if (c.sentences != d.sentences)
    for (const auto& s : c.sentences) add("s", s);
  if (c.seed != d.seed) add("seed", std::to_string(c.seed));
  if (c.d_model != d.d_model && c.model != ModelKind::loaded) add("d_model", std::to_string(c.d_model));
  if (c.max_len != d.max_len && c.model != ModelKind::loaded) add("max_len", std::to_string(c.max_len));
  if (c.mask != d.mask) add("mask", mask_kind_name(c.mask));
  if (c.model == ModelKind::loaded && c.train) add("train", "1");
  if (c.model == ModelKind::transformer) {
    if (c.num_heads != d.num_heads) add("num_heads", std::to_string(c.num_heads));
    if (c.num_layers != d.num_layers) add("num_layers", std::to_string(c.num_layers));
    if (c.d_ff != d.d_ff) add("d_ff", std::to_string(c.d_ff));
    if (c.num_classes != d.num_classes) add("num_classes", std::to_string(c.num_classes));
    if (c.dropout != d.dropout) add("dropout", number_text(c.dropout));
    if (c.train != d.train) add("train", c.train ? "1" : "0");
    if (c.norm_first != d.norm_first) add("norm_first", c.norm_first ? "1" : "0");
  }
  for (const auto& [key, value] : training_hash_pairs(c.training)) add(key, value);
  if (!c.ablation.heads.empty()) add("ablate", head_list_text(c.ablation.heads));
  if (!c.ablation.mlps.empty()) add("ablate_mlp", layer_list_text(c.ablation.mlps));
  if (c.ablation.kind != AblationKind::zero) add("ablation", ablation_kind_name(c.ablation.kind));
  for (const char* key : patching_keys)
    if (const std::string* value = patching_field(c.patching, key); !value->empty()) add(key, *value);
  if (!c.lang.empty()) add("lang", c.lang);
  if (c.tour) add("tour", std::to_string(c.tour));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "&") + p;
  return out;
}

namespace {

using HashPairs = std::vector<std::pair<std::string, std::string>>;

HashPairs hash_pairs(const std::string& hash) {
  const std::string text = !hash.empty() && hash[0] == '#' ? hash.substr(1) : hash;
  HashPairs pairs;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find('&', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      if (eq == std::string::npos) throw InputError("URL setting '" + part + "' has no '='");
      pairs.emplace_back(percent_decode(part.substr(0, eq)), percent_decode(part.substr(eq + 1)));
    }
    start = end + 1;
  }
  return pairs;
}

// compare=1 and a.KEY: run A's settings, not the configuration's.
bool is_compare_key(const std::string& key) { return key == "compare" || key.rfind("a.", 0) == 0; }

PlaygroundConfig config_from_pairs(const HashPairs& pairs) {
  PlaygroundConfig c = defaults_for(ModelKind::tutorial);
  for (const auto& [k, v] : pairs)
    if (k == "model") set_model(c, v);
  std::vector<std::string> sentences;
  for (const auto& [k, v] : pairs) {
    if (k == "model") continue;
    if (k == "s") sentences.push_back(v);
    else if (k.rfind("train.", 0) == 0) c.training[k.substr(6)] = training_from_hash_value(k.substr(6), v);
    else set_field(c, k, v);
  }
  if (!sentences.empty()) c.sentences = sentences;
  return without_unused(tour_config(c, c.tour));  // a step of the second tutorial shows the Transformer
}

}  // namespace

PlaygroundConfig from_hash(const std::string& hash) {
  HashPairs pairs = hash_pairs(hash);
  pairs.erase(std::remove_if(pairs.begin(), pairs.end(), [](const auto& p) { return is_compare_key(p.first); }),
              pairs.end());
  return config_from_pairs(pairs);
}

std::string run_summary(const PlaygroundConfig& c) {
  std::string sentences;
  for (const auto& s : c.sentences) sentences += (sentences.empty() ? "" : " | ") + s;
  std::string model = c.model == ModelKind::loaded && c.loaded ? c.loaded->name : model_kind_name(c.model);
  if (!c.ablation.empty()) {  // before the sentences, which a narrow view cuts
    std::string what = head_list_text(c.ablation.heads);
    if (!c.ablation.mlps.empty()) what += (what.empty() ? "mlp " : " mlp ") + layer_list_text(c.ablation.mlps);
    model += format(Str::compare_ablated, (what + " (" + ablation_kind_name(c.ablation.kind) + ")").c_str());
  }
  return format(Str::compare_run, model.c_str(), std::to_string(c.seed).c_str(), mask_kind_name(c.mask).c_str(),
                sentences.c_str());
}

std::optional<PlaygroundConfig> compare_from_hash(const std::string& hash) {
  HashPairs a;
  bool compare = false;
  for (const auto& [k, v] : hash_pairs(hash)) {
    if (k == "compare" && v != "1") throw InputError("URL setting compare must be 1 (got '" + v + "')");
    if (k == "compare") compare = true;
    else if (k.rfind("a.", 0) == 0) a.emplace_back(k.substr(2), v);
  }
  if (!compare && a.empty()) return std::nullopt;
  if (!compare) throw InputError("URL settings a.* (run A) need compare=1");
  try {
    return config_from_pairs(a);
  } catch (const InputError& e) {
    throw InputError(std::string("run A (a.*): ") + e.what());
  }
}

PlaygroundConfig apply_settings(const PlaygroundConfig& base, const Json& settings) {
  if (!settings.is_object()) throw InputError("settings must be an object");
  PlaygroundConfig c = base;
  if (settings.contains("model")) {
    if (!settings.at("model").is_string()) throw InputError("model must be a string");
    set_model(c, settings.at("model").get<std::string>());
  }
  for (const auto& [key, value] : settings.items()) {
    if (key == "model") continue;
    if (key == "sentences") {
      if (!value.is_array() || value.empty()) throw InputError("sentences must be a non-empty array of strings");
      std::vector<std::string> s;
      for (const auto& v : value) {
        if (!v.is_string()) throw InputError("sentences must be strings");
        s.push_back(v.get<std::string>());
      }
      c.sentences = s;
    } else if (value.is_string()) {
      set_field(c, key, value.get<std::string>());
    } else if (value.is_boolean()) {
      set_field(c, key, value.get<bool>() ? "1" : "0");
    } else if (value.is_number_integer()) {
      set_field(c, key, value.dump());  // the integer's digits, which set_field parses as the hash's text
    } else if (value.is_number_float()) {
      if (key != "dropout") throw InputError(key + " must be a whole number");
      set_field(c, key, number_text(value.get<float>()));
    } else {
      throw InputError("setting '" + key + "' has a value of the wrong type");
    }
  }
  return without_unused(settings.contains("tour") ? tour_config(c, c.tour) : c);  // as the hash: the step's model
}

Json settings_json(const PlaygroundConfig& c) {
  Json j = {{"model", model_setting(c)}, {"hub", c.hub_endpoint}, {"sentences", c.sentences}, {"seed", c.seed},
            {"mask", mask_kind_name(c.mask)}, {"train", c.train}, {"lang", c.lang}, {"tour", c.tour},
            {"ablate", head_list_text(c.ablation.heads)}, {"ablate_mlp", layer_list_text(c.ablation.mlps)},
            {"ablation", ablation_kind_name(c.ablation.kind)}};
  for (const char* key : patching_keys) j[key] = *patching_field(c.patching, key);
  if (c.model == ModelKind::loaded) return j;  // its sizes are the file's, not settings (apply_settings refuses them)
  j.update({{"d_model", c.d_model}, {"max_len", c.max_len}, {"num_heads", c.num_heads}, {"num_layers", c.num_layers},
            {"d_ff", c.d_ff}, {"num_classes", c.num_classes}, {"dropout", c.dropout}, {"norm_first", c.norm_first}});
  return j;
}

std::string sentences_text(const std::vector<std::string>& sentences) {
  std::string out;
  for (size_t i = 0; i < sentences.size(); ++i) out += (i ? "\n" : "") + sentences[i];
  return out;
}

std::vector<std::string> parse_sentences_text(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!split_words(line).empty()) out.push_back(line);
    start = end + 1;
  }
  return out;
}

// --- computing ---

namespace {

[[noreturn]] void too_big(double floats) {
  throw InputError("too big for the playground: the trace would hold " + std::to_string(size_t(floats)) +
                   " numbers (at most " + std::to_string(size_t(max_trace_floats)) + ")");
}

TransformerConfig transformer_config(const PlaygroundConfig& c, size_t vocab_size) {
  TransformerConfig t;
  t.vocab_size = vocab_size;
  t.d_model = c.d_model;
  t.num_heads = c.num_heads;
  t.num_layers = c.num_layers;
  t.d_ff = c.d_ff;
  t.max_len = c.max_len;
  t.num_classes = c.num_classes;
  t.dropout = c.dropout;
  t.norm_first = c.norm_first;
  return t;
}

// The playground draws every stage: refuse what would not be drawable before computing.
void check_drawable(const TransformerConfig& t, const TokenBatch& batch) {
  if (batch.seq > t.max_len)
    throw InputError("a sentence has " + std::to_string(batch.seq) + " tokens, more than max_len " +
                     std::to_string(t.max_len));
  const double bs = double(batch.batch) * double(batch.seq);
  const double per_layer = 12.0 * double(t.d_model) + 2.0 * double(t.num_heads) * double(batch.seq) + double(t.ff_width());
  const double floats = 8.0 * bs * double(t.d_model) + double(t.num_layers) * bs * per_layer;
  if (floats > max_trace_floats) too_big(floats);
}

// The whole sinusoidal table, or the previous result's when it has the same shape.
Tensor pe_table(size_t max_len, size_t d_model, const Computed* previous) {
  if (previous && previous->pe_table.shape() == std::vector<size_t>{max_len, d_model}) return previous->pe_table;
  return positional_encoding_table(max_len, d_model);
}

bool reusable_model(const Computed* previous, const TransformerConfig& t, uint64_t seed) {
  return previous && previous->seeded_model && previous->model && previous->after_init.initial_seed() == seed &&
         config_to_json(previous->model->config) == config_to_json(t);
}

void compute_tutorial(const PlaygroundConfig& c, const Computed* previous, Computed& out) {
  TutorialConfig t;
  t.sentences = c.sentences;
  t.seed = c.seed;
  t.d_model = c.d_model;
  t.max_len = c.max_len;
  t.mask = c.mask;
  {
    Vocab v;
    const TokenBatch b = tokenize_batch(c.sentences, v);
    const double floats = double(b.batch) * double(b.seq) * (8.0 * double(c.d_model) + 6.0 * double(b.seq));
    if (floats > max_trace_floats) too_big(floats);
  }
  TutorialRun run = run_tutorial(t);
  out.stages = model_stages(t);
  if (!c.ablation.empty())  // the clean run is `run`; the ablated one replaces its trace
    run.trace = ablated_trace(c.ablation, out.stages, run.batch.lengths,
                              [&](const Hooks* h) { return h ? run_tutorial(t, h).trace : run.trace; },
                              "attention_output", &out.clean_output);
  out.vocab = run.vocab;
  out.tokens = run.batch.tokens;
  out.header = tutorial_json(TutorialRun{run.config, run.vocab, run.batch, TutorialParameters(), Trace()});
  out.header.erase("stages");
  out.pe_table = pe_table(c.max_len, c.d_model, previous);
  out.parameter_count = run.vocab.size() * c.d_model + 3 * c.d_model * c.d_model;
  out.mask = run.trace.at("mask");
  out.trace = std::move(run.trace);
}

// The model initialised from the seed, or the previous result's when it was initialised from the same
// seed and sizes; `gen` is left as initialisation leaves it.
std::shared_ptr<const TransformerModel> seeded_model(const PlaygroundConfig& c, size_t vocab_size, const TokenBatch& batch,
                                                     const Computed* previous, TorchGenerator& gen) {
  const TransformerConfig t = transformer_config(c, vocab_size);
  validate(t);
  check_drawable(t, batch);
  if (reusable_model(previous, t, c.seed)) {
    gen = previous->after_init;
    return previous->model;
  }
  return std::make_shared<const TransformerModel>(init_transformer(t, gen));
}

// The `attn encode --json` document without its stages.
Json transformer_header(const Computed& out, const Vocab& vocab, const TokenBatch& batch, bool train) {
  Json doc = {{"config", config_to_json(out.model->config)},
              {"mode", train ? "train" : "eval"},
              {"parameter_count", out.parameter_count}};
  Json vj = Json::object();
  for (size_t id = 0; id < vocab.size(); ++id) vj[vocab.tokens()[id]] = id;
  doc["vocab"] = std::move(vj);
  doc["tokens"] = batch.tokens;
  return doc;
}

// The classifier on the sentences, with the loaded model or a seeded one.
void compute_transformer(const PlaygroundConfig& c, const Computed* previous, const BackendPath& path,
                         Computed& out) {
  const LoadedModel* loaded = c.model == ModelKind::loaded ? c.loaded.get() : nullptr;
  Vocab vocab = loaded && loaded->vocab ? *loaded->vocab : Vocab();
  TokenBatch batch = tokenize_batch(c.sentences, vocab, !(loaded && loaded->vocab));
  TorchGenerator gen(c.seed);
  if (loaded) {
    check_drawable(loaded->model.config, batch);
    out.model = std::shared_ptr<const TransformerModel>(c.loaded, &loaded->model);  // shares the LoadedModel
  } else {
    out.model = seeded_model(c, vocab.size(), batch, previous, gen);
    out.seeded_model = true;
    out.after_init = gen;
  }
  const TransformerConfig& t = out.model->config;
  out.stages = model_stages(t);
  if (path.backend && c.train) {
    out.path_note = {Str::path_train_mode, path.backend->name()};
  } else if (path.backend && !c.ablation.empty()) {
    out.path_note = {Str::path_ablation, path.backend->name()};
  }
  if (path.backend && !c.train && c.ablation.empty()) {
    DeviceModel device(*path.backend, *out.model);
    const size_t layer = std::min(path.layer, t.num_layers ? t.num_layers - 1 : 0);
    std::vector<std::string> wanted = fused_layer_stages(layer);
    if (t.num_layers == 0) wanted = {"none"};  // nothing of the layers (empty would mean every stage)
    device.record_only(std::move(wanted));
    device.classify(batch.ids, batch.batch, batch.seq, c.mask, &out.trace);
    out.computed_by = path.backend->name();
    if (t.num_layers) {
      out.not_computed = {"layers." + std::to_string(layer) + ".self_attn.scores"};
      out.path_note = {Str::path_pulled_back, out.computed_by, layer};
    } else {
      out.path_note = {Str::path_computed_on, out.computed_by};
    }
  } else {
    const auto run = [&](const Hooks* hooks) {  // the clean and ablated runs draw the same dropout
      TorchGenerator dropout = gen;
      return classify(*out.model, batch.ids, batch.batch, batch.seq, c.mask, c.train ? &dropout : nullptr, hooks);
    };
    out.trace = ablated_trace(c.ablation, out.stages, batch.lengths, run, t.classifier_head ? "logits" : nullptr,
                              &out.clean_output);
  }
  out.parameter_count = parameter_count(*out.model);
  out.header = transformer_header(out, vocab, batch, c.train);
  out.pe_table = pe_table(t.max_len, t.d_model, previous);
  out.num_layers = t.num_layers;
  out.scale_query_first = t.layer_style == LayerStyle::torch;
  out.mask = to_tensor(attention_mask(c.mask, batch.ids, batch.batch, batch.seq));
  out.vocab = std::move(vocab);
  out.tokens = std::move(batch.tokens);
  out.ids = std::move(batch.ids);
  out.lengths = std::move(batch.lengths);
}

// A checkpoint's mask [B, S, S]: 1 where a query may attend a key, a real token (before its row's length)
// and, for a causal model, not after the query.
Tensor checkpoint_mask(const std::vector<size_t>& lengths, size_t S, bool causal) {
  Tensor mask = Tensor::from_shape({lengths.size(), S, S});
  for (size_t b = 0; b < lengths.size(); ++b)
    for (size_t q = 0; q < S; ++q)
      for (size_t k = 0; k < S; ++k) mask(b, q, k) = k < lengths[b] && (!causal || k <= q) ? 1.0f : 0.0f;
  return mask;
}

// A checkpoint on the sentences: its own tokenizer, its own mask (BERT: padding, GPT-2: the future).
void compute_pretrained(const Pretrained& p, const PlaygroundConfig& c, Computed& out) {
  PretrainedBatch batch = tokenize_pretrained(p, c.sentences);
  const PretrainedConfig& t = p.model.config;
  const size_t B = batch.input.batch, S = batch.input.seq;
  if (S > t.max_positions)
    throw InputError("a sentence has " + std::to_string(S) + " tokens, more than the model's " +
                     std::to_string(t.max_positions) + " positions");
  if (const double floats = pretrained_trace_floats(t, B, S); floats > max_trace_floats) too_big(floats);
  const auto run = [&](const Hooks* hooks) { return pretrained_forward(p.model, batch.input, hooks); };
  out.stages = model_stages(t);
  out.trace = ablated_trace(c.ablation, out.stages, batch.input.lengths, run,
                            t.family == ModelFamily::gpt2 ? "next_token_probs" : nullptr, &out.clean_output);
  out.mask = checkpoint_mask(batch.input.lengths, S, t.family == ModelFamily::gpt2);
  out.num_layers = t.num_layers;
  out.layer_names = layer_names_of(t.family);
  out.pe_table = p.model.position_embeddings;
  out.positions = Computed::Positions::learned;
  out.parameter_count = parameter_count(p.model);
  out.header = {{"family", family_name(t.family)}, {"architecture", t.architecture},
                {"parameter_count", out.parameter_count}, {"ignored", p.model.ignored}, {"tokens", batch.tokens}};
  out.tokens = std::move(batch.tokens);
  out.ids = batch.input.ids;
  out.lengths = batch.input.lengths;
  out.pretrained_input = std::move(batch.input);
}

// A Llama-family decoder on the sentences: its tokenizer.json, the causal mask (a window on sliding layers
// is in their scores), rotary angles in place of a positional table.
void compute_decoder(const LoadedModel& loaded, const PlaygroundConfig& c, Computed& out) {
  if (!loaded.decoder_tokenizer) throw InputError(tr(Str::decoder_no_tokenizer));
  const attn::LoadedModel m = loaded.engine();
  ModelInput in = m.tokenize(c.sentences);  // InputError past the model's positions
  const DecoderConfig& t = loaded.decoder->config;
  const size_t B = in.batch, S = in.seq;
  if (const double floats = decoder_trace_floats(t, B, S); floats > max_trace_floats) too_big(floats);
  out.stages = m.stages();
  out.trace = ablated_trace(c.ablation, out.stages, in.lengths, [&](const Hooks* hooks) { return m.forward(in, hooks); },
                            "next_token_probs", &out.clean_output);
  out.mask = checkpoint_mask(in.lengths, S, true);
  out.num_layers = t.num_layers;
  out.layer_names = {"model.layers.", "self_attn.queries_rotated", "self_attn.keys_rotated", "self_attn.attn_weights"};
  const Tensor& angles = out.trace.at("model.rotary_emb.angles");  // [1, S, d]
  out.pe_table = reshaped(angles, {angles.shape(1), angles.shape(2)});
  out.positions = Computed::Positions::rotary;
  size_t parameters = 0;
  for_each_tensor(*loaded.decoder, [&](const void*, size_t, size_t values) { parameters += values; });
  out.parameter_count = parameters;
  // attn encode --json's document (less its next_tokens and config), transformers' tokens in it.
  std::vector<std::vector<int64_t>> rows;
  for (size_t b = 0; b < B; ++b) rows.emplace_back(in.ids.begin() + long(b * S), in.ids.begin() + long((b + 1) * S));
  const DecoderModel& decoder = *loaded.decoder;
  out.header = {{"family", t.model_type},   {"architecture", t.architecture},
                {"weights", {{"dtype", decoder_weight_dtype(decoder)}, {"bytes", decoder_weight_bytes(decoder)}}},
                {"ignored", decoder.ignored}, {"input_ids", rows},
                {"lengths", in.lengths},   {"tokens", in.tokens},
                {"first_token_attention", first_token_attention(out.trace, t.num_layers)}};
  out.decoder = loaded.decoder;
  for (auto& row : in.tokens)
    for (std::string& token : row) token = shown_token(std::move(token));
  out.tokens = std::move(in.tokens);
  out.ids = in.ids;
  out.lengths = in.lengths;
  out.pretrained_input = {std::move(in.ids), {}, std::move(in.lengths), B, S};
}

// [B, H, S, d] → [B·H, S, d] (the same values, a new shape).
Tensor fold_heads(const Tensor& t) {
  const auto& s = t.shape();
  Tensor out = Tensor::from_shape({s[0] * s[1], s[2], s[3]});
  std::copy(t.begin(), t.end(), out.begin());
  return out;
}

}  // namespace

std::vector<std::string> fused_layer_stages(size_t layer) {
  static const char* const names[] = {"norm1", "self_attn.query", "self_attn.key", "self_attn.value",
                                      "self_attn.attention_weights", "self_attn.attention_output",
                                      "self_attn.output", "norm2", "ffn.output", "output"};
  const std::string p = "layers." + std::to_string(layer) + ".";
  std::vector<std::string> out;
  for (const char* n : names) out.push_back(p + n);
  return out;
}

std::unique_ptr<Computed> compute(const PlaygroundConfig& c, const Computed* previous, const BackendPath& path) {
  const auto start = std::chrono::steady_clock::now();
  auto out = std::make_unique<Computed>();
  if (c.sentences.empty()) throw InputError(tr(Str::no_sentence));
  if (awaits_hub_model(c)) throw InputError(format(Str::hub_not_loaded, c.hub.c_str()));
  if (c.model == ModelKind::loaded && !c.loaded) throw InputError(tr(Str::no_model_files));
  if (c.model == ModelKind::tutorial) {
    compute_tutorial(c, previous, *out);
    if (path.backend)
      out->path_note = {Str::path_first_tutorial, path.backend->name()};
  } else if (c.model == ModelKind::loaded && c.loaded->decoder) {
    compute_decoder(*c.loaded, c, *out);
    if (path.backend)
      out->path_note = {Str::path_checkpoint, path.backend->name()};
  } else if (c.model == ModelKind::loaded && c.loaded->pretrained) {
    compute_pretrained(*c.loaded->pretrained, c, *out);
    if (path.backend)
      out->path_note = {Str::path_checkpoint, path.backend->name()};
  } else {
    compute_transformer(c, previous, path, *out);
  }
  out->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

LayerNames layer_names_of(ModelFamily family) {
  if (family == ModelFamily::bert)
    return {"encoder.layer.", "attention.self.query", "attention.self.key", "attention.self.attention_probs"};
  return {"h.", "attn.query", "attn.key", "attn.attn_weights"};
}

std::vector<HeadScores> sentence_head_scores(const Computed& r) {
  if (r.stages.family == StageFamily::tutorial) throw InputError(tr(Str::tutorial_no_detectors));
  return detect_heads(r.stages, r.trace, r.ids, r.lengths,
                      {HeadKind::previous_token, HeadKind::duplicate_token, HeadKind::induction}, {});
}

attn::LoadedModel engine_model(const PlaygroundConfig& c, const Computed& r) {
  if (c.model == ModelKind::loaded && c.loaded && c.loaded->checkpoint()) return c.loaded->engine();
  attn::LoadedModel m;
  m.classifier = r.model;
  m.mask = c.mask;
  m.vocab = r.vocab;
  return m;
}

std::string weights_stage_name(const Computed& r, size_t layer) {
  if (r.num_layers == 0) return "attention_weights";
  return r.layer_names.prefix + std::to_string(layer) + "." + r.layer_names.weights;
}

Tensor unmasked_weights(const Computed& r, size_t layer) {
  if (r.num_layers == 0)
    return scaled_dot_product_attention(r.trace.at("query"), r.trace.at("key"), r.trace.at("value")).attention_weights;
  if (layer >= r.num_layers)
    throw InputError("layer " + std::to_string(layer) + " does not exist (" + std::to_string(r.num_layers) + " layers)");
  if (r.decoder) return decoder_unmasked_weights(r.decoder->config, r.trace, layer);
  const std::string p = r.layer_names.prefix + std::to_string(layer) + ".";
  const Tensor& q = r.trace.at(p + r.layer_names.query);
  const Tensor k = fold_heads(r.trace.at(p + r.layer_names.key));
  AttentionOptions options;  // no mask, no dropout; the layer's own scaling order
  options.scale_query_first = r.scale_query_first;
  Tensor w = scaled_dot_product_attention(fold_heads(q), k, k, options).attention_weights;  // V does not matter
  const auto& s = q.shape();
  Tensor shaped = Tensor::from_shape({s[0], s[1], s[2], s[2]});
  std::copy(w.begin(), w.end(), shaped.begin());
  return shaped;
}

Tensor layer_mask(const Computed& r, size_t layer) {
  Tensor mask = r.mask;
  if (!r.decoder) return mask;
  const DecoderConfig& c = r.decoder->config;
  const size_t window = layer < c.sliding_layers.size() && c.sliding_layers[layer] ? c.sliding_window : 0;
  if (window == 0) return mask;
  const size_t B = mask.shape(0), S = mask.shape(1);
  for (size_t b = 0; b < B; ++b)
    for (size_t q = 0; q < S; ++q)
      for (size_t k = 0; k + window <= q; ++k) mask(b, q, k) = 0.0f;
  return mask;
}

Json Computed::json() const {
  Json doc = header;
  doc["stages"] = stages_json(trace);
  return doc;
}

void Playground::set_config(const PlaygroundConfig& config) {
  if (config == config_) return;
  PlaygroundConfig computed = config;  // the language, the tour step and patching inputs change no number
  computed.lang = config_.lang;
  computed.tour = config_.tour;
  computed.patching = config_.patching;
  if (computed != config_) dirty_ = true;
  config_ = config;
  ++config_generation_;
}

const BackendChoice& Playground::select_backend(const std::string& name, const BackendFactory& factory) {
  if (name == choice_.name && choice_.error.empty()) return choice_;
  const bool had_backend = backend_ != nullptr;
  backend_.reset();  // the old one first (one device context at a time)
  choice_ = BackendChoice();
  if (name != "exact") {
    try {
      if (!factory) throw InputError("no compute backends in this build");
      std::string note;
      backend_ = factory(name, note);
      if (!backend_) throw InputError("backend '" + name + "' could not be made");
      choice_.name = name;
      choice_.note = note;
    } catch (const InputError& e) {
      backend_.reset();
      choice_.error = std::string(e.what()) + " (using the exact path)";
    } catch (const std::exception& e) {
      backend_.reset();
      choice_.error = "backend '" + name + "': " + e.what() + " (using the exact path)";
    }
  }
  if (had_backend || backend_) dirty_ = true;
  return choice_;
}

void Playground::set_shown_layer(size_t layer) {
  if (layer == shown_layer_) return;
  shown_layer_ = layer;
  if (backend_ && config_.model != ModelKind::tutorial && !config_.train) dirty_ = true;
}

// --- the compare view's run A ---

namespace {
// What of a configuration A keeps: what it computes (the UI's language, tour and the other tabs' inputs are B's).
PlaygroundConfig computed_part(PlaygroundConfig c) {
  c.lang.clear();
  c.tour = 0;
  c.patching = PlaygroundConfig::Patching();
  c.training = Json::object();
  return c;
}
}  // namespace

void Playground::pin() {
  if (!result_) return;
  pinned_ = result_;
  pinned_config_ = computed_part(config_);
  ++pinned_generation_;
  ++config_generation_;
}

void Playground::pin_config(const PlaygroundConfig& config) {
  const PlaygroundConfig a = computed_part(config);
  if (pinned_ && a == pinned_config_) return;
  try {
    pinned_ = compute(a);
  } catch (const std::bad_alloc&) {
    throw InputError(tr(Str::compute_out_of_memory));
  }
  pinned_config_ = a;
  ++pinned_generation_;
  ++config_generation_;
}

void Playground::unpin() {
  if (!pinned_) return;
  pinned_.reset();
  diff_.reset();
  ++pinned_generation_;
  ++config_generation_;
}

void Playground::set_tolerance(Tolerance tolerance) {
  if (tolerance.rtol == tolerance_.rtol && tolerance.atol == tolerance_.atol) return;
  if (!(tolerance.rtol >= 0) || !(tolerance.atol >= 0)) throw InputError("rtol and atol must be numbers >= 0");
  tolerance_ = tolerance;
  diff_.reset();
}

const TraceDiff* Playground::compare() {
  if (!pinned_ || !result_) return nullptr;
  if (!diff_ || diff_pinned_ != pinned_generation_ || diff_result_ != result_generation_) {
    diff_ = diff_traces(pinned_->trace.stages(), result_->trace.stages(), tolerance_);
    diff_pinned_ = pinned_generation_;
    diff_result_ = result_generation_;
  }
  return &*diff_;
}

std::string compare_hash(const PlaygroundConfig& a) {
  std::string hash = "compare=1";
  const std::string pairs = to_hash(a);
  for (size_t start = 0; start < pairs.size();) {
    const size_t end = std::min(pairs.find('&', start), pairs.size());
    hash += "&a." + pairs.substr(start, end - start);
    start = end + 1;
  }
  return hash;
}

std::string Playground::hash() const {
  const std::string hash = to_hash(config_);
  if (!pinned_ || pinned_config_.model == ModelKind::loaded) return hash;
  return hash + (hash.empty() ? "" : "&") + compare_hash(pinned_config_);
}

void Playground::set_hash(const std::string& hash) {
  PlaygroundConfig config = from_hash(hash);
  std::optional<PlaygroundConfig> a = compare_from_hash(hash);
  attach_model(config, config_.loaded);
  if (a) {
    attach_model(*a, config_.loaded);
    pin_config(*a);
  } else if (pinned_config_.model != ModelKind::loaded) {
    unpin();
  }
  set_config(config);
}

bool Playground::update() {
  if (!dirty_) return false;
  dirty_ = false;
  ++compute_count_;
  ++result_generation_;
  try {
    // The old result lends its unaffected parts.
    result_ = compute(config_, result_.get(), BackendPath{backend_.get(), shown_layer_});
    error_.clear();
  } catch (const InputError& e) {
    result_.reset();
    error_ = e.what();
  } catch (const std::bad_alloc&) {
    result_.reset();
    error_ = tr(Str::compute_out_of_memory);
  } catch (const std::exception& e) {
    result_.reset();
    error_ = std::string("error: ") + e.what();
  }
  return true;
}

// --- stage views ---

namespace {
// string_view: comparing against literals must not build strings (the UI calls this every frame).
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

int stage_layer(const std::string& n) {
  const auto layer = layer_of_stage(n);
  return layer ? int(layer->index) : -1;
}

std::string stage_in_layer(const std::string& n, size_t layer) {
  const auto l = layer_of_stage(n);
  if (!l) return n;
  return n.substr(0, l->number_at) + std::to_string(layer) + (l->rest.empty() ? "" : "." + std::string(l->rest));
}

const char* stage_formula(const std::string& n) {
  struct Rule {
    const char* suffix;
    const char* formula;
    const char* korean = nullptr;  // where its words need translating
  };
  static const Rule rules[] = {
      // BERT and GPT-2 checkpoints (docs/pretrained.md), before the tutorials' shorter suffixes
      {"input_ids", "the model's tokenizer: WordPiece (BERT) or byte-level BPE (GPT-2)", "모델의 토크나이저: WordPiece (BERT) 또는 바이트 단위 BPE (GPT-2)"},
      {"attention_mask", "1 = token, 0 = padding", "1 = 토큰, 0 = 패딩"},
      {"embeddings.word_embeddings", "word_embeddings[ids]"},
      {"embeddings.position_embeddings", "position_embeddings[0:S]   (learned)", "position_embeddings[0:S]   (학습된 값)"},
      {"embeddings.token_type_embeddings", "token_type_embeddings[segment]", "token_type_embeddings[세그먼트]"},
      {"attention.self.attention_scores", "Q K^T / sqrt(d) + (1 - mask) * finfo.min"},
      {"attention_probs", "softmax(scores, dim=-1)   rows = queries, cols = keys", "softmax(scores, dim=-1)   행 = 쿼리, 열 = 키"},
      {"attention.self.context", "probs V, heads merged", "probs V, 헤드를 합침"},
      {"attention.output.dense", "context W_O^T + b"},
      {"attention.output", "LayerNorm(dense + x)"},
      {"intermediate", "act(x W_1^T + b)"},
      {"output.dense", "intermediate W_2^T + b", "중간층 W_2^T + b"},
      {"last_hidden_state", "the last layer's output", "마지막 층의 출력"},
      {"pooler_output", "tanh([CLS] W^T + b)"},
      {"wte", "wte[ids]"},
      {"wpe", "wpe[0:S]   (learned)", "wpe[0:S]   (학습된 값)"},
      {"ln_1", "LayerNorm(x)"},
      {"attn.scores", "Q K^T / sqrt(d), the future = finfo.min", "Q K^T / sqrt(d), 미래 = finfo.min"},
      {"attn_weights", "softmax(scores, dim=-1)   rows = queries, cols = keys", "softmax(scores, dim=-1)   행 = 쿼리, 열 = 키"},
      {"attn.merged", "weights V, heads merged", "weights V, 헤드를 합침"},
      {"attn.c_proj", "merged W + b   (Conv1D)"},
      {"residual", "x + attention", "x + 어텐션"},
      {"ln_2", "LayerNorm(residual)", "LayerNorm(x + 어텐션)"},
      {"mlp.c_fc", "x W_fc + b   (Conv1D)"},
      {"mlp.act", "gelu_new(c_fc)   (tanh approximation)", "gelu_new(c_fc)   (tanh 근사)"},
      {"mlp.c_proj", "act W_proj + b; the block's output = residual + this", "act W_proj + b; 블록의 출력 = (x + 어텐션) + 이 값"},
      {"ln_f", "final LayerNorm", "마지막 LayerNorm"},
      {"next_token_probs", "softmax(logits at the last token)", "softmax(마지막 토큰의 logits)"},
      {"embeddings", "word + position (+ token type, then LayerNorm: BERT)", "단어 + 위치 (+ 토큰 종류, 그리고 LayerNorm: BERT)"},
      {"token_ids", "vocab[word]   ([PAD] = 0)", "vocab[단어]   ([PAD] = 0)"},
      {"positional_encoding", "PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(...)"},
      {"embedding", "Embedding(ids) * sqrt(d_model)"},
      {"embedded", "embedding + PE[:S]"},
      {"self_attn.query", "X W_Q^T + b, split into heads", "X W_Q^T + b, 헤드로 나눔"},
      {"self_attn.key", "X W_K^T + b, split into heads", "X W_K^T + b, 헤드로 나눔"},
      {"self_attn.value", "X W_V^T + b, split into heads", "X W_V^T + b, 헤드로 나눔"},
      {"query", "Q = X W_Q^T"},
      {"key", "K = X W_K^T"},
      {"value", "V = X W_V^T"},
      {"mask", "1 = may attend, 0 = masked", "1 = 볼 수 있음, 0 = 마스크됨"},
      {"self_attn.scores", "Q K^T / sqrt(d_k), masked_fill(mask == 0, -1e9)"},
      {"masked_scores", "masked_fill(mask == 0, -1e9)"},
      {"scaled_scores", "Q K^T / sqrt(d_k)"},
      {"scores", "Q K^T"},
      {"attention_weights", "softmax(scores, dim=-1)   rows = queries, cols = keys", "softmax(scores, dim=-1)   행 = 쿼리, 열 = 키"},
      {"self_attn.attention_output", "weights V, heads merged", "weights V, 헤드를 합침"},
      {"attention_output", "weights V"},
      {"self_attn.output", "concat(heads) W_O^T + b", "concat(헤드들) W_O^T + b"},
      {"norm1", "LayerNorm(x + dropout(attention))", "LayerNorm(x + dropout(어텐션))"},
      {"ffn.output", "linear2(dropout(relu(linear1(x))))"},
      {"norm2", "LayerNorm(x + dropout(ffn))"},
      {".output", "the layer's output", "층의 출력"},
      {"encoder_output", "final LayerNorm", "마지막 LayerNorm"},
      {"pooled", "mean over positions", "위치에 걸친 평균"},
      {"logits", "fc(pooled); GPT-2: ln_f wte^T"},
  };
  // The Llama family's stages (docs/decoders.md), all under model.: their suffixes would match the rules above.
  static const Rule decoder_rules[] = {
      {"embed_tokens", "embed_tokens[ids]   (Gemma: x sqrt(hidden_size))"},
      {"angles", "position x inv_freq: each pair's rotation angle", "위치 x inv_freq: 각 쌍의 회전 각도"},
      {".cos", "cos(angles) x attention_scaling", "cos(각도) x attention_scaling"},
      {".sin", "sin(angles) x attention_scaling", "sin(각도) x attention_scaling"},
      {"layernorm", "RMSNorm: x / sqrt(mean(x^2) + eps) * w   (Gemma: (1 + w); NeoX: LayerNorm)"},
      {"q_proj", "x W_Q^T (+ b), split into query heads", "x W_Q^T (+ b), 쿼리 헤드로 나눔"},
      {"k_proj", "x W_K^T (+ b), split into key/value heads", "x W_K^T (+ b), 키/값 헤드로 나눔"},
      {"v_proj", "x W_V^T (+ b), split into key/value heads", "x W_V^T (+ b), 키/값 헤드로 나눔"},
      {"_norm", "RMSNorm over each head's values", "헤드마다 RMSNorm"},
      {"_rotated", "x cos + rotate_half(x) sin   (rotary positions)", "x cos + rotate_half(x) sin   (회전 위치)"},
      {"scores", "Q repeat_kv(K)^T / sqrt(d) (Gemma: capped), the future = finfo.min",
       "Q repeat_kv(K)^T / sqrt(d) (Gemma: 제한), 미래 = finfo.min"},
      {"attn_weights", "softmax(scores, dim=-1)   rows = queries, cols = keys", "softmax(scores, dim=-1)   행 = 쿼리, 열 = 키"},
      {"merged", "weights repeat_kv(V), heads merged", "weights repeat_kv(V), 헤드를 합침"},
      {"o_proj", "merged W_O^T"},
      {"residual", "x + attention", "x + 어텐션"},
      {"gate_proj", "x W_gate^T"},
      {"up_proj", "x W_up^T"},
      {"mlp.act", "act(gate)   (silu; Gemma: gelu tanh)", "act(gate)   (silu; Gemma: gelu tanh)"},
      {"down_proj", "(act * up) W_down^T"},
      {"model.norm", "final RMSNorm", "마지막 RMSNorm"},
  };
  const auto pick = [](const Rule& r) { return r.korean && language() == Lang::ko ? r.korean : r.formula; };
  if (n.rfind("model.", 0) == 0) {
    if (layer_of_stage(n) && layer_of_stage(n)->rest.empty()) return pick({"", "the layer's output", "층의 출력"});
    for (const Rule& r : decoder_rules)
      if (ends_with(n, r.suffix)) return pick(r);
  }
  for (const Rule& r : rules)
    if (ends_with(n, r.suffix)) return pick(r);
  return "";
}

std::string stage_json_text(const Stage& stage) {
  Trace one;
  one.record(stage.name, stage.value, stage.dtype);
  return stages_json(one).at(0).dump();
}

std::vector<uint8_t> stage_npy_bytes(const Tensor& t) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / "attnlab-export.npy").string();
  write_npy(path, t);
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return bytes;
}

}  // namespace attn::ui
