#include "ui/model_files.hpp"

#include <filesystem>
#include <fstream>
#include <utility>

#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#include "core/io/safetensors.hpp"
#include "ui/strings.hpp"

namespace attn::ui {
namespace {

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Null when the file is not a JSON document (the reader that gets it then says why).
Json try_read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A config holds only the keys config_to_json writes; a vocabulary's keys are its tokens.
bool looks_like_config(const std::string& path) {
  const Json j = try_read_json(path);
  if (!j.is_object() || j.empty()) return false;
  const Json known = config_to_json(TransformerConfig());
  for (const auto& item : j.items())
    if (!known.contains(item.key())) return false;
  return true;
}

enum class Role { weights, config, vocab };

Role role_of(const std::string& path) {
  const std::string name = lower(file_name(path));
  if (ends_with(name, ".safetensors")) return Role::weights;
  if (name.find("config") != std::string::npos) return Role::config;
  if (name.find("vocab") != std::string::npos) return Role::vocab;
  return looks_like_config(path) ? Role::config : Role::vocab;
}

void assign(std::string& slot, const std::string& path, const char* role) {
  if (!slot.empty())
    throw InputError(std::string("two ") + role + " files: '" + file_name(slot) + "' and '" + file_name(path) + "'");
  slot = path;
}

TransformerConfig read_config(const std::string& path) {
  if (path.empty()) return TransformerConfig();  // `attn encode` without --config
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read config file '" + file_name(path) + "'");
  const Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded()) throw InputError("config file '" + file_name(path) + "' is not valid JSON");
  try {
    return config_from_json(j);
  } catch (const InputError& e) {
    throw InputError("config file '" + file_name(path) + "': " + e.what());
  }
}

// The embedding's rows, when the weights have one (the classifier's `embedding.weight`).
size_t embedding_rows(const std::vector<NamedTensor>& tensors) {
  for (const auto& t : tensors)
    if (t.name == "embedding.weight" && t.value.dimension() == 2) return t.value.shape(0);
  return 0;
}

std::string joined_names(const ModelFiles& f) {
  std::string name = file_name(f.weights);
  for (const std::string* p : {&f.config, &f.vocab})
    if (!p->empty()) name += " + " + file_name(*p);
  return name;
}

}  // namespace

bool LoadedModel::causal_lm() const {
  return decoder || (pretrained && pretrained->model.config.family == ModelFamily::gpt2);
}

std::string shown_token(std::string label) {
  for (size_t at = label.find("\u2581"); at != std::string::npos; at = label.find("\u2581", at)) label.replace(at, 3, "\u00b7");
  return label;
}

std::string LoadedModel::token(int64_t id) const { return shown_token(engine().token(id)); }

size_t LoadedModel::layers() const {
  return pretrained ? pretrained->model.config.num_layers : decoder ? decoder->config.num_layers : model.config.num_layers;
}

CausalLM LoadedModel::generation_lm() const {
  if (decoder) {
    if (!decoder_tokenizer) throw InputError(tr(Str::decoder_no_tokenizer));
    return attn::causal_lm(*decoder, decoder_tokenizer.get(), decoder->config.eos_token_ids);
  }
  if (!pretrained) throw InputError(tr(Str::generate_needs_model));
  return attn::causal_lm(*pretrained);
}

std::vector<int64_t> LoadedModel::prompt_ids(const std::string& prompt) const {
  if (prompt.empty()) throw InputError("the prompt is empty: give the text to continue");
  if (decoder && decoder_tokenizer) return decoder_tokenizer->encode(prompt).ids;
  if (pretrained) return tokenize_pretrained(*pretrained, {prompt}).input.ids;
  throw InputError(tr(Str::generate_needs_model));
}

attn::LoadedModel LoadedModel::engine() const {
  attn::LoadedModel m;
  m.pretrained = pretrained;
  m.decoder = decoder;
  m.decoder_tokenizer = decoder_tokenizer;
  return m;
}

// A checkpoint's files: a folder, or files transformers names (config.json with model_type, vocab.txt,
// merges.txt).
bool is_checkpoint(const std::vector<std::string>& paths) {
  std::error_code ec;
  if (paths.size() == 1 && std::filesystem::is_directory(paths[0], ec)) return true;
  for (const auto& p : paths) {
    const std::string name = file_name(p);
    if (name == "vocab.txt" || name == "merges.txt" || (name == "config.json" && is_pretrained_config(try_read_json(p))))
      return true;
  }
  return false;
}

ModelFiles sort_model_files(const std::vector<std::string>& paths) {
  ModelFiles f;
  if (is_checkpoint(paths)) {
    std::error_code ec;
    f.pretrained = std::filesystem::is_directory(paths[0], ec) ? pretrained_files_in(paths[0]) : sort_pretrained_files(paths);
    return f;
  }
  for (const auto& p : paths) {
    switch (role_of(p)) {
      case Role::weights: assign(f.weights, p, "weights"); break;
      case Role::config: assign(f.config, p, "config"); break;
      case Role::vocab: assign(f.vocab, p, "vocabulary"); break;
    }
  }
  if (f.weights.empty())
    throw InputError("no weights: choose a .safetensors file (with its config and vocabulary JSON files)");
  return f;
}

namespace {

// A reader's message names the path it was given; the UI shows the file's name (in the browser the path
// is a temporary MEMFS folder the user never chose).
std::string with_file_names(std::string message, const ModelFiles& f) {
  for (const std::string* p : {&f.weights, &f.config, &f.vocab}) {
    if (p->empty()) continue;
    const std::string name = file_name(*p);
    for (size_t at = message.find(*p); at != std::string::npos; at = message.find(*p, at + name.size()))
      message.replace(at, p->size(), name);
  }
  return message;
}

std::string architecture(const LoadedModel& m) {
  return m.decoder ? m.decoder->config.architecture : m.pretrained->model.config.architecture;
}

std::shared_ptr<const LoadedModel> read_model(const ModelFiles& files, const ReadProgress& progress) {
  auto out = std::make_shared<LoadedModel>();
  TransformerConfig config = read_config(files.config);
  if (!files.vocab.empty()) out->vocab = read_vocab_file(files.vocab);
  const std::vector<NamedTensor> tensors = read_safetensors(files.weights, nullptr, nullptr, progress);
  if (config.vocab_size == 0) config.vocab_size = embedding_rows(tensors);
  if (config.vocab_size == 0 && out->vocab) config.vocab_size = out->vocab->size();
  if (out->vocab && out->vocab->size() > config.vocab_size)
    throw InputError("the vocabulary has " + std::to_string(out->vocab->size()) + " tokens, the model's embedding only " +
                     std::to_string(config.vocab_size));
  try {
    out->model = load_transformer(config, tensors);
  } catch (const InputError& e) {
    throw InputError("'" + file_name(files.weights) + "': " + e.what());
  }
  out->name = joined_names(files);
  return out;
}

}  // namespace

std::shared_ptr<const LoadedModel> hub_model(const LoadedModel& model, const std::string& hub) {
  auto out = std::make_shared<LoadedModel>(model);
  out->hub = hub;
  out->name = (model.checkpoint() ? architecture(model) + ": " : "") + hub;
  return out;
}

std::shared_ptr<const LoadedModel> load_model(const ModelFiles& files, const ReadProgress& progress) {
  if (files.pretrained) {
    auto out = std::make_shared<LoadedModel>();
    const PretrainedFiles& f = *files.pretrained;
    const attn::LoadedModel m = load_checkpoint(f, progress);
    out->pretrained = m.pretrained;
    out->decoder = m.decoder;
    out->decoder_tokenizer = m.decoder_tokenizer;
    // The files' names: in the browser their folder is a temporary one the user never chose.
    out->name = architecture(*out) + ": " + file_name(f.config) + " + " + file_name(f.weights);
    for (const std::string* p : {&f.vocab, &f.merges, &f.tokenizer_json})
      if (!p->empty()) out->name += " + " + file_name(*p);
    return out;
  }
  if (files.weights.empty()) throw InputError("no weights file given (.safetensors)");
  try {
    return read_model(files, progress);
  } catch (const InputError& e) {
    throw InputError(with_file_names(e.what(), files));
  }
}

LoadResult read_model_files(const ModelFiles& files, const ReadProgress& progress) {
  try {
    return {load_model(files, progress), ""};
  } catch (const InputError& e) {
    return {nullptr, e.what()};
  } catch (const std::bad_alloc&) {
    return {nullptr, tr(Str::read_out_of_memory)};
  } catch (const std::exception& e) {
    return {nullptr, std::string("error: ") + e.what()};
  }
}

void ModelLoader::start(ModelFiles files) {
  cancel();
  read_ = total_ = 0;
  cancelled_ = done_ = false;
  pending_ = true;
  auto job = [this, files = std::move(files)] {
    result_ = read_model_files(files, [this](uint64_t read, uint64_t total) {
      if (cancelled_) throw InputError("cancelled");
      read_ = read, total_ = total;
    });
    done_ = true;
  };
  if (threads_available) thread_ = std::thread(std::move(job));
  else job();
}

void ModelLoader::cancel() {
  cancelled_ = true;
  if (thread_.joinable()) thread_.join();
  pending_ = false;
  result_ = {};
}

std::optional<LoadResult> ModelLoader::take() {
  if (!pending_ || !done_) return std::nullopt;
  if (thread_.joinable()) thread_.join();
  pending_ = false;
  return std::exchange(result_, {});
}

}  // namespace attn::ui
