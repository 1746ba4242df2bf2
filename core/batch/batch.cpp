#include "core/batch/batch.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/base/json.hpp"

namespace attn::batch {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// FNV-1a, 64 bits everywhere (std::hash is 32 bits under WebAssembly).
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<int64_t> parse_ids(const Json& ids) {
  if (!ids.is_array()) throw InputError("\"ids\" must be an array of token ids");
  std::vector<int64_t> out;
  for (const Json& id : ids) out.push_back(json_integer<int64_t>(id, "an id in \"ids\"", 0));
  return out;
}

// Fills `raw` field by field, the id first, so that an error record can still name the id.
void parse_json_line(const std::string& text, RawItem& raw) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw InputError(std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError("malformed JSON: a line must be an object {\"id\", \"text\" or \"ids\"}");
  if (j.contains("id")) {
    if (!j["id"].is_string() && !j["id"].is_number_integer()) throw InputError("\"id\" must be a string or an integer");
    raw.id = j["id"];
  }
  if (j.contains("text") == j.contains("ids")) throw InputError("a line needs exactly one of \"text\" and \"ids\"");
  if (j.contains("text")) {
    if (!j["text"].is_string()) throw InputError("\"text\" must be a string");
    raw.text = j["text"].get<std::string>();
  } else {
    raw.ids = parse_ids(j["ids"]);
  }
}

std::vector<std::string> words_of(const std::string& text, const Vocab& vocab) {
  std::vector<std::string> words = split_words(text);
  for (auto& w : words) {
    if (vocab.contains(w)) continue;
    if (!vocab.contains(unknown_token)) throw InputError("unknown token '" + w + "' (the vocabulary has no [UNK])");
    w = unknown_token;
  }
  return words;
}

// The item's row of a batch stage: the stage without its batch dimension (a stage shared by the
// batch, first dimension 1, such as positional_encoding, gives its only row).
Tensor item_row(const Tensor& value, size_t row) {
  const auto& shape = value.shape();
  Shape item_shape(shape.begin() + 1, shape.end());
  const size_t size = value.size() / shape[0];
  Tensor out = Tensor::from_shape(item_shape);
  const auto first = value.begin() + std::ptrdiff_t((shape[0] == 1 ? 0 : row) * size);
  std::copy(first, first + std::ptrdiff_t(size), out.begin());
  return out;
}

// Per-head stages ([B, H, S, S] in the trace, [H, S, S] per item) keep only the selected heads.
Tensor select_heads(const Tensor& value, const std::vector<size_t>& heads) {
  Shape shape(value.shape().begin(), value.shape().end());
  const size_t per_head = value.size() / shape[0];
  shape[0] = heads.size();
  Tensor out = Tensor::from_shape(shape);
  auto dst = out.begin();
  for (size_t h : heads) dst = std::copy(value.begin() + std::ptrdiff_t(h * per_head),
                                         value.begin() + std::ptrdiff_t((h + 1) * per_head), dst);
  return out;
}

Json stage_json(const Tensor& value, PrintDtype dtype) {
  Json data = Json::array();
  for (float v : value) {
    if (dtype == PrintDtype::float32)
      data.push_back(v);
    else
      data.push_back(static_cast<int64_t>(v));
  }
  return {{"shape", Shape(value.shape().begin(), value.shape().end())}, {"data", std::move(data)}};
}

bool is_per_head(const Stage& stage) { return layer_of_stage(stage.name) && stage.value.dimension() == 4; }

// The layer a trace stage belongs to and its name within the layer ("self_attn.attention_weights").
std::optional<std::pair<size_t, std::string>> split_layer_name(const std::string& name) {
  const auto layer = layer_of_stage(name);
  if (!layer || layer->rest.empty()) return std::nullopt;
  return std::make_pair(layer->index, std::string(layer->rest));
}

bool matches(const std::string& stage, const std::string& wanted, const std::vector<size_t>& layers) {
  if (stage == wanted) return true;
  const auto layer = split_layer_name(stage);
  if (!layer) return false;
  const bool selected = layers.empty() || std::count(layers.begin(), layers.end(), layer->first) != 0;
  return selected && (layer->second == wanted || ends_with(layer->second, "." + wanted));
}


void check_indices(const std::vector<size_t>& values, size_t limit, const std::string& what) {
  for (size_t v : values)
    if (v >= limit)
      throw InputError(what + " " + std::to_string(v) + " does not exist (the model has " + std::to_string(limit) + ")");
}

// --heads indexes the query heads; a stage of a decoder's key/value heads has fewer.
void check_head_count(const Stage& stage, const std::vector<size_t>& heads) {
  if (heads.empty() || !is_per_head(stage)) return;
  const size_t count = stage.value.shape(1);
  for (size_t h : heads)
    if (h >= count)
      throw InputError("stage '" + stage.name + "' has " + std::to_string(count) + " heads (the key/value heads), and --heads " +
                       std::to_string(h) + " selects a query head: leave it out of --stages or choose heads below " +
                       std::to_string(count));
}

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw InputError("'" + path + "': " + why);
}

// A checkpoint's tokenizer on one sentence (BERT's "A\tB" a pair), without the length check that
// make_item makes for every item.
void tokenize(const LoadedModel& m, const std::string& text, Item& item) {
  if (m.pretrained) {
    PretrainedBatch b = tokenize_pretrained(*m.pretrained, {text});
    item.tokens = std::move(b.tokens[0]);
    item.ids = std::move(b.input.ids);
    item.type_ids = std::move(b.input.type_ids);
    return;
  }
  if (!m.decoder_tokenizer) throw InputError("a sentence needs the model's tokenizer.json, which its folder lacks: give token ids");
  item.ids = m.decoder_tokenizer->encode(text).ids;
  for (int64_t id : item.ids) item.tokens.push_back(m.token(id));
}

}  // namespace

std::optional<InputFormat> format_from_name(const std::string& path) {
  for (const char* ext : {".jsonl", ".ndjson", ".json"})
    if (ends_with(path, ext)) return InputFormat::jsonl;
  if (ends_with(path, ".txt")) return InputFormat::text;
  return std::nullopt;
}

InputFormat format_from_first_line(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t");
  return first != std::string::npos && line[first] == '{' ? InputFormat::jsonl : InputFormat::text;
}

void strip_line(std::string& text, size_t line) {
  if (line == 1 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  if (!text.empty() && text.back() == '\r') text.pop_back();
}

RawItem parse_line(const std::string& text, InputFormat format) {
  RawItem raw;
  try {
    if (!is_valid_utf8(text)) throw InputError("invalid UTF-8");
    if (split_words(text).empty()) throw InputError("empty line");
    if (format == InputFormat::jsonl)
      parse_json_line(text, raw);
    else
      raw.text = text;
  } catch (const InputError& e) {
    raw.error = e.what();
  }
  return raw;
}

std::optional<size_t> IdRegistry::claim(const Json& id, size_t line) {
  if (id.is_null()) return std::nullopt;
  const auto [it, inserted] = first_line_.emplace(fnv1a(id.dump()), line);
  if (inserted) return std::nullopt;
  return it->second;
}

Item make_item(RawItem raw, size_t line, const ItemRules& rules) {
  Item item{line, std::move(raw.id), {}, std::move(raw.ids), {}};
  if (raw.text && rules.checkpoint) {
    tokenize(*rules.checkpoint, *raw.text, item);
  } else if (raw.text) {
    if (!rules.vocab) throw InputError("a sentence needs a vocabulary (--vocab); give token ids instead");
    item.tokens = words_of(*raw.text, *rules.vocab);
    if (item.tokens.empty()) throw InputError("empty sentence");
    for (const auto& w : item.tokens) item.ids.push_back(rules.vocab->id(w));
  }
  if (item.ids.empty()) throw InputError("no token ids");
  for (int64_t id : item.ids)
    if (size_t(id) >= rules.embedding_rows)
      throw InputError("token id " + std::to_string(id) + " is outside the embedding table (" +
                       std::to_string(rules.embedding_rows) + " rows)");
  if (item.ids.size() > rules.max_len)
    throw InputError(std::to_string(item.ids.size()) + " tokens, more than max_len " + std::to_string(rules.max_len));
  return item;
}

std::vector<std::vector<Item>> group_by_length(std::vector<Item> items, size_t batch_size) {
  std::map<size_t, std::vector<Item>> by_length;
  for (auto& item : items) by_length[item.ids.size()].push_back(std::move(item));
  std::vector<std::vector<Item>> batches;
  for (auto& [length, group] : by_length)
    for (size_t i = 0; i < group.size(); ++i) {
      if (i % batch_size == 0) batches.emplace_back();
      batches.back().push_back(std::move(group[i]));
    }
  return batches;
}

std::vector<std::vector<Item>> group_by_size(std::vector<Item> items, size_t batch_size) {
  std::vector<std::vector<Item>> batches;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i % batch_size == 0) batches.emplace_back();
    batches.back().push_back(std::move(items[i]));
  }
  return batches;
}

std::vector<Trace> compute_packed(const std::vector<Item>& items, MaskKind mask, DeviceModel& device) {
  std::vector<std::vector<int64_t>> sequences;
  for (const auto& item : items) sequences.push_back(item.ids);
  return device.classify_packed(sequences, mask);
}

Trace compute(const TransformerModel& model, const std::vector<Item>& items, MaskKind mask, DeviceModel* device) {
  const size_t seq = items.front().ids.size();
  std::vector<int64_t> ids;
  ids.reserve(items.size() * seq);
  for (const auto& item : items) {
    if (item.ids.size() != seq) throw std::logic_error("batch::compute: items of different lengths");
    ids.insert(ids.end(), item.ids.begin(), item.ids.end());
  }
  if (!device) return classify(model, ids, items.size(), seq, mask, nullptr);
  Trace trace;
  device->classify(ids, items.size(), seq, mask, &trace);
  return trace;
}

Trace compute(const LoadedModel& model, const std::vector<Item>& items) {
  ModelInput in;
  in.batch = items.size();
  in.seq = items.front().ids.size();
  const bool types = model.pretrained && model.pretrained->model.config.family == ModelFamily::bert;
  for (const auto& item : items) {
    if (item.ids.size() != in.seq) throw std::logic_error("batch::compute: items of different lengths");
    in.ids.insert(in.ids.end(), item.ids.begin(), item.ids.end());
    if (types && item.type_ids.empty()) in.type_ids.insert(in.type_ids.end(), in.seq, 0);
    else if (types) in.type_ids.insert(in.type_ids.end(), item.type_ids.begin(), item.type_ids.end());
    in.lengths.push_back(in.seq);
  }
  return model.forward(in);
}

ModelOutline outline(const TransformerConfig& config) {
  ModelOutline m{config.num_layers, config.num_heads, {"tokens", config.classifier_head ? "logits" : "encoder_output"}};
  if (config.num_layers > 0)
    m.default_stages.push_back("layers." + std::to_string(config.num_layers - 1) + ".self_attn.attention_weights");
  return m;
}

ModelOutline outline(const LoadedModel& checkpoint) {
  if (checkpoint.decoder) {
    const DecoderConfig& c = checkpoint.decoder->config;
    return {c.num_layers, c.num_heads,
            {"tokens", "model.layers." + std::to_string(c.num_layers - 1) + ".self_attn.attn_weights", "next_token_probs"}};
  }
  const PretrainedConfig& config = checkpoint.pretrained->model.config;
  const bool bert = config.family == ModelFamily::bert;
  return {config.num_layers, config.num_heads,
          {"tokens", attention_weights_stage(config.family, config.num_layers - 1),
           bert ? "last_hidden_state" : "next_token_probs"}};
}

StageSelection select_stages(const Trace& sample, const TransformerConfig& config,
                             const std::vector<std::string>& requested, const std::vector<size_t>& layers,
                             const std::vector<size_t>& heads) {
  return select_stages(sample, outline(config), requested, layers, heads);
}

StageSelection select_stages(const Trace& sample, const ModelOutline& model, const std::vector<std::string>& requested,
                             const std::vector<size_t>& layers, const std::vector<size_t>& heads) {
  check_indices(layers, model.num_layers, "layer");
  check_indices(heads, model.num_heads, "head");
  StageSelection selection;
  selection.heads = heads;
  const std::vector<std::string>& wanted = requested.empty() ? model.default_stages : requested;
  std::vector<bool> keep(sample.stages().size(), false);
  for (const auto& w : wanted) {
    if (w == "tokens") {
      selection.tokens = true;
      continue;
    }
    bool found = false;
    for (size_t i = 0; i < keep.size(); ++i)
      if (matches(sample.stages()[i].name, w, layers)) keep[i] = found = true;
    if (!found) {
      std::string names = "tokens";
      for (const auto& s : sample.stages()) names += ", " + s.name;
      throw InputError("unknown stage '" + w + "' (for the selected layers); stages: " + names);
    }
  }
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) {
      check_head_count(sample.stages()[i], heads);
      selection.names.push_back(sample.stages()[i].name);
      selection.dtypes.push_back(sample.stages()[i].dtype);
    }
  return selection;
}

ItemArrays item_arrays(const Item& item, const Trace& trace, size_t row, const StageSelection& selection) {
  ItemArrays out{item.line, item.id, item.tokens, item.ids, {}};
  for (const auto& stage : trace.stages()) {
    if (std::find(selection.names.begin(), selection.names.end(), stage.name) == selection.names.end()) continue;
    Tensor value = item_row(stage.value, row);
    if (is_per_head(stage) && !selection.heads.empty()) value = select_heads(value, selection.heads);
    out.stages.push_back(std::move(value));
  }
  if (out.stages.size() != selection.names.size()) throw std::logic_error("batch::item_arrays: a stage is missing");
  return out;
}

std::string item_record(const ItemArrays& item, const StageSelection& selection) {
  Json record = {{"line", item.line}, {"id", item.id}};
  if (selection.tokens) {
    if (!item.tokens.empty()) record["tokens"] = item.tokens;
    record["ids"] = item.ids;
  }
  Json stages = Json::object();
  for (size_t i = 0; i < selection.names.size(); ++i)
    stages[selection.names[i]] = stage_json(item.stages[i], selection.dtypes[i]);
  record["stages"] = std::move(stages);
  return record.dump() + "\n";
}

std::string item_record(const Item& item, const Trace& trace, size_t row, const StageSelection& selection) {
  return item_record(item_arrays(item, trace, row, selection), selection);
}

std::string index_record(const ItemArrays& item, const StageSelection& selection, bool with_ids) {
  Json record = {{"line", item.line}, {"id", item.id}, {"length", item.ids.size()}};
  if (selection.tokens && !item.tokens.empty()) record["tokens"] = item.tokens;
  if (selection.tokens && with_ids) record["ids"] = item.ids;
  return record.dump() + "\n";
}

namespace {

// Each selected stage's shape at lengths 1 and 2: fixed when they are the same.
std::vector<StageLayout> layouts_of(const std::function<Trace(const Item&)>& compute_one, const StageSelection& selection) {
  const Item one{1, nullptr, {}, {0}, {}}, two{1, nullptr, {}, {0, 0}, {}};
  const ItemArrays a = item_arrays(one, compute_one(one), 0, selection);
  const ItemArrays b = item_arrays(two, compute_one(two), 0, selection);
  std::vector<StageLayout> layouts;
  for (size_t i = 0; i < selection.names.size(); ++i) {
    const Shape sa(a.stages[i].shape().begin(), a.stages[i].shape().end());
    const Shape sb(b.stages[i].shape().begin(), b.stages[i].shape().end());
    layouts.push_back({selection.names[i], sa == sb, sa});
  }
  return layouts;
}

}  // namespace

std::vector<StageLayout> stage_layouts(const TransformerModel& model, MaskKind mask, const StageSelection& selection) {
  return layouts_of([&](const Item& item) { return compute(model, {item}, mask); }, selection);
}

std::vector<StageLayout> stage_layouts(const LoadedModel& model, const StageSelection& selection) {
  return layouts_of([&](const Item& item) { return compute(model, {item}); }, selection);
}

size_t dtype_size(const std::string& dtype) {
  if (dtype == "F32") return 4;
  if (dtype == "I64") return 8;
  if (dtype == "U8") return 1;
  throw InputError("dtype '" + dtype + "' is not one attn batch writes (F32, I64, U8)");
}

std::string safetensors_header(const std::vector<TensorEntry>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name == "__metadata__" || header.contains(t.name))
      throw std::logic_error("batch::safetensors_header: tensor name '" + t.name + "' twice or reserved");
    uint64_t bytes = dtype_size(t.dtype);
    for (size_t d : t.shape) bytes *= d;
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = char((uint64_t(text.size()) >> (8 * i)) & 0xFF);
  return out + text;
}

SafetensorsHeader parse_safetensors_header(const std::string& path, const std::string& json_text,
                                           uint64_t file_size) {
  const auto fail = [&](const std::string& why) { bad_file(path, why); };
  SafetensorsHeader out;
  out.data_start = 8 + json_text.size();
  if (file_size < out.data_start) fail("truncated safetensors header");
  Json header;
  try {
    header = Json::parse(json_text);
  } catch (const Json::exception& e) {
    fail(std::string("the safetensors header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("the safetensors header is not a JSON object");
  try {
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [key, text] : value.items()) out.metadata[key] = text.get<std::string>();
        continue;
      }
      StoredTensor t;
      t.entry = {name, value.at("dtype").get<std::string>(), {}};
      const Json& shape = value.at("shape");
      const Json& offsets = value.at("data_offsets");
      if (!shape.is_array()) fail("tensor '" + name + "': shape must be an array");
      if (!offsets.is_array() || offsets.size() != 2) fail("tensor '" + name + "': data_offsets must be [begin, end]");
      try {
        for (const Json& d : shape) t.entry.shape.push_back(json_integer<size_t>(d, "tensor '" + name + "': shape", 0));
        t.begin = json_integer<uint64_t>(offsets[0], "tensor '" + name + "': data_offsets", 0);
        t.end = json_integer<uint64_t>(offsets[1], "tensor '" + name + "': data_offsets", 0);
      } catch (const InputError& e) {
        fail(e.what());
      }
      if (t.entry.dtype != "F32" && t.entry.dtype != "I64" && t.entry.dtype != "U8")
        fail("tensor '" + name + "': dtype '" + t.entry.dtype + "' is not one attn batch writes (F32, I64, U8)");
      uint64_t bytes = dtype_size(t.entry.dtype);
      for (size_t d : t.entry.shape)
        if (__builtin_mul_overflow(bytes, uint64_t(d), &bytes)) fail("tensor '" + name + "': shape too large");
      if (t.end < t.begin || t.end - t.begin != bytes)
        fail("tensor '" + name + "': data_offsets do not match its dtype and shape");
      out.tensors.push_back(std::move(t));
    }
  } catch (const Json::exception& e) {
    fail(std::string("malformed safetensors header: ") + e.what());
  }
  // Stable: empty tensors share an offset, and the header's order is the writer's.
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [](const StoredTensor& a, const StoredTensor& b) { return a.begin < b.begin; });
  uint64_t offset = 0;
  for (const auto& t : out.tensors) {
    if (t.begin != offset) fail("tensor '" + t.entry.name + "': the data has a gap or an overlap before it");
    offset = t.end;
  }
  if (offset != file_size - out.data_start)
    fail("the tensors hold " + std::to_string(offset) + " bytes of data, the file has " +
         std::to_string(file_size - out.data_start) + " (truncated or changed)");
  return out;
}

void Fnv1a::update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t h = h_;
  for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  h_ = h;
}

std::string Fnv1a::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (size_t i = 0; i < 16; ++i) out[15 - i] = digits[(h_ >> (4 * i)) & 0xF];
  return out;
}

Json vocab_identity(const Vocab* vocab) {
  if (!vocab) return nullptr;
  Fnv1a h;
  for (const auto& token : vocab->tokens()) h.update(token.c_str(), token.size() + 1);
  return {{"size", vocab->size()}, {"fnv1a64", h.hex()}};
}

Json model_identity(const TransformerModel& model) {
  Fnv1a h;
  for_each_state(model, [&](const std::string& name, const Shape& shape, const std::vector<const Tensor*>& parts) {
    h.update(name.c_str(), name.size() + 1);
    for (size_t d : shape) {
      const uint64_t dim = d;
      h.update(&dim, sizeof dim);
    }
    for (const Tensor* t : parts) h.update(t->data(), t->size() * sizeof(float));
  });
  return {{"config", config_to_json(model.config)}, {"fnv1a64", h.hex()}};
}

Json model_identity(const Pretrained& p) {
  const PretrainedModel& m = p.model;
  Fnv1a h;
  for_each_tensor(m, [&](const Tensor& t) { h.update(t.data(), t.size() * sizeof(float)); });
  Fnv1a tokens;
  for (int64_t id = 0; id < int64_t(tokenizer_size(p.tokenizer)); ++id) {
    const std::string& t = tokenizer_token(p.tokenizer, id);
    tokens.update(t.c_str(), t.size() + 1);
  }
  const PretrainedConfig& c = m.config;
  return {{"family", family_name(c.family)}, {"architecture", c.architecture},
          {"sizes", {c.vocab_size, c.hidden_size, c.num_heads, c.num_layers, c.intermediate_size, c.max_positions}},
          {"fnv1a64", h.hex()}, {"tokens_fnv1a64", tokens.hex()}};
}

Json model_identity(const LoadedModel& checkpoint) {
  if (checkpoint.pretrained) return model_identity(*checkpoint.pretrained);
  const DecoderModel& m = *checkpoint.decoder;
  Fnv1a h;
  for_each_tensor(m, [&](const void* data, size_t bytes, size_t) { h.update(data, bytes); });
  Json tokens = nullptr;
  if (const JsonTokenizer* t = checkpoint.decoder_tokenizer.get()) {
    Fnv1a hashed;
    for (int64_t id = 0; id < int64_t(t->size()); ++id) hashed.update(t->token(id).c_str(), t->token(id).size() + 1);
    tokens = hashed.hex();
  }
  const DecoderConfig& c = m.config;
  return {{"family", c.model_type}, {"architecture", c.architecture},
          {"sizes", {c.vocab_size, c.hidden_size, c.num_heads, c.num_kv_heads, c.num_layers, c.intermediate_size,
                     c.max_positions}},
          {"fnv1a64", h.hex()}, {"tokens_fnv1a64", tokens}};
}

void add_sentence_words(Vocab& vocab, const RawItem& raw) {
  if (!raw.error.empty() || !raw.text || !is_valid_utf8(*raw.text)) return;
  for (const auto& word : split_words(*raw.text)) vocab.add(word);
}

std::string vocab_json(const Vocab& vocab) {
  std::string out = "{";
  for (size_t id = 0; id < vocab.size(); ++id)
    out += (id ? ", " : "") + Json(vocab.tokens()[id]).dump() + ": " + std::to_string(id);
  return out + "}\n";
}

std::string error_record(size_t line, const Json& id, const std::string& reason) {
  return Json{{"line", line}, {"id", id}, {"reason", reason}}.dump() + "\n";
}

size_t record_line(const std::string& record) {
  static const std::string prefix = "{\"line\":";
  size_t end = prefix.size();
  while (end < record.size() && end < prefix.size() + 19 && record[end] >= '0' && record[end] <= '9') ++end;
  if (record.compare(0, prefix.size(), prefix) != 0 || end == prefix.size() || end >= record.size() ||
      (record[end] != ',' && record[end] != '}'))
    throw InputError("not a record of attn batch (it must start with {\"line\":N)");
  return static_cast<size_t>(std::stoull(record.substr(prefix.size(), end - prefix.size())));
}

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](const std::string& part) {
    bool ok = !part.empty() && part.size() <= 18 && part.find_first_not_of("0123456789") == std::string::npos;
    return ok ? size_t(std::stoull(part)) : size_t(0);
  };
  Shard shard;
  if (slash != std::string::npos) shard = {number(text.substr(0, slash)), number(text.substr(slash + 1))};
  if (slash == std::string::npos || shard.index == 0 || shard.index > shard.count)
    throw InputError("--shard expects K/N with 1 <= K <= N, got '" + text + "'");
  return shard;
}

}  // namespace attn::batch
