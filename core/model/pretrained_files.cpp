#include "core/model/pretrained_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/base/error.hpp"

namespace attn {
namespace {

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void assign(std::string& role, const std::string& path, const char* what) {
  if (!role.empty())
    throw InputError("two " + std::string(what) + " files: '" + file_name(role) + "' and '" + file_name(path) + "'");
  role = path;
}

std::string label(const PretrainedTokenizer& t, const std::string& token) {
  return std::holds_alternative<BytePairTokenizer>(t) ? readable_token(token) : token;
}

Encoding encode(const PretrainedTokenizer& t, const std::string& sentence) {
  if (const auto* bpe = std::get_if<BytePairTokenizer>(&t)) return bpe->encode(sentence);
  const auto& wordpiece = std::get<WordPieceTokenizer>(t);
  const size_t tab = sentence.find('\t');
  if (tab == std::string::npos) return wordpiece.encode(sentence);
  const std::string second = sentence.substr(tab + 1);
  return wordpiece.encode(sentence.substr(0, tab), &second);
}

}  // namespace

size_t tokenizer_size(const PretrainedTokenizer& t) {
  return std::visit([](const auto& tok) { return tok.size(); }, t);
}
const std::string& tokenizer_token(const PretrainedTokenizer& t, int64_t id) {
  return std::visit([id](const auto& tok) -> const std::string& { return tok.token(id); }, t);
}
std::optional<int64_t> tokenizer_find(const PretrainedTokenizer& t, const std::string& token) {
  return std::visit([&](const auto& tok) { return tok.find(token); }, t);
}
std::string token_label(const Pretrained& p, int64_t id) {
  if (id < 0 || size_t(id) >= tokenizer_size(p.tokenizer)) return "<id " + std::to_string(id) + ">";
  return label(p.tokenizer, tokenizer_token(p.tokenizer, id));
}

PretrainedFiles sort_pretrained_files(const std::vector<std::string>& paths) {
  PretrainedFiles f;
  std::string pickle, index;
  std::vector<std::string> safetensors;
  for (const std::string& path : paths) {
    const std::string name = file_name(path);
    if (name == "config.json") assign(f.config, path, "config");
    else if (ends_with(name, ".safetensors")) safetensors.push_back(path);
    else if (ends_with(name, ".safetensors.index.json")) assign(index, path, "shard index (.safetensors.index.json)");
    else if (name == "vocab.txt" || name == "vocab.json") assign(f.vocab, path, "vocabulary");
    else if (name == "merges.txt") assign(f.merges, path, "merges");
    else if (name == "tokenizer_config.json") assign(f.tokenizer_config, path, "tokenizer config");
    else if (name == "tokenizer.json") assign(f.tokenizer_json, path, "tokenizer (tokenizer.json)");
    else if (ends_with(name, ".bin") || ends_with(name, ".pt") || ends_with(name, ".pth")) pickle = name;
  }
  // A shard index reads its shards itself; without one, a single .safetensors file.
  if (!index.empty()) f.weights = index;
  else
    for (const std::string& path : safetensors) assign(f.weights, path, "weights (.safetensors)");
  if (f.weights.empty() && !pickle.empty())
    throw InputError("'" + pickle + "' is a PyTorch pickle, which attnlab does not read (it can run code); convert it "
                     "to model.safetensors first, e.g. in Python: from safetensors.torch import save_file; "
                     "save_file(torch.load('" + pickle + "'), 'model.safetensors')");
  if (f.config.empty()) throw InputError("no config.json among the model's files");
  if (f.weights.empty()) throw InputError("no weights (model.safetensors) among the model's files");
  return f;
}

PretrainedFiles pretrained_files_in(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw InputError("'" + dir + "' is not a folder");
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec)) paths.push_back(entry.path().string());
  if (ec) throw InputError("cannot list '" + dir + "': " + ec.message());
  std::sort(paths.begin(), paths.end());
  try {
    return sort_pretrained_files(paths);
  } catch (const InputError& e) {
    throw InputError(dir + ": " + e.what());
  }
}

bool is_pretrained_config(const Json& j) { return j.is_object() && (j.contains("model_type") || j.contains("architectures")); }

PretrainedConfig read_pretrained_config(const std::string& path) {
  return pretrained_config_from_json(read_json_file(path, "model config"), file_name(path));
}

Pretrained load_pretrained_files(const PretrainedFiles& f, const ReadProgress& progress) {
  const PretrainedConfig config = read_pretrained_config(f.config);
  const std::string family = family_name(config.family);
  auto need = [&](const std::string& path, const std::string& wanted, const char* extension) {
    if (path.empty() || !ends_with(path, extension))
      throw InputError("a " + family + " model needs its " + wanted + (path.empty() ? "" : ", not '" + file_name(path) + "'"));
  };
  std::optional<PretrainedTokenizer> tokenizer;
  if (config.family == ModelFamily::bert) {
    need(f.vocab, "vocab.txt", ".txt");
    const std::string* options = f.tokenizer_config.empty() ? nullptr : &f.tokenizer_config;
    tokenizer.emplace(WordPieceTokenizer::from_files(f.vocab, options));
  } else {
    need(f.vocab, "vocab.json", ".json");
    need(f.merges, "merges.txt", ".txt");
    tokenizer.emplace(BytePairTokenizer::from_files(f.vocab, f.merges));
  }
  if (tokenizer_size(*tokenizer) > config.vocab_size)
    throw InputError(file_name(f.vocab) + " has " + std::to_string(tokenizer_size(*tokenizer)) + " tokens, more than the " +
                     std::to_string(config.vocab_size) + " rows of the model's embedding (vocab_size in " +
                     file_name(f.config) + ")");
  PretrainedModel model = read_pretrained_weights(config, f.weights, file_name(f.weights), progress);
  return {std::move(model), std::move(*tokenizer)};
}

PretrainedBatch tokenize_pretrained(const Pretrained& p, const std::vector<std::string>& sentences) {
  if (sentences.empty()) throw InputError("no sentences to tokenize");
  const bool bert = p.model.config.family == ModelFamily::bert;
  std::vector<Encoding> encoded;
  for (size_t i = 0; i < sentences.size(); ++i) {
    encoded.push_back(encode(p.tokenizer, sentences[i]));
    if (encoded.back().ids.empty()) throw InputError("sentence " + std::to_string(i + 1) + " has no tokens");
  }
  PretrainedBatch out;
  PretrainedInput& in = out.input;
  in.batch = encoded.size();
  for (const Encoding& e : encoded) in.seq = std::max(in.seq, e.ids.size());
  const std::string pad = bert ? "[PAD]" : "<|endoftext|>";
  const int64_t pad_id = tokenizer_find(p.tokenizer, pad).value_or(0);
  for (const Encoding& e : encoded) {
    in.lengths.push_back(e.ids.size());
    in.ids.insert(in.ids.end(), e.ids.begin(), e.ids.end());
    in.ids.insert(in.ids.end(), in.seq - e.ids.size(), pad_id);
    if (bert) {
      in.type_ids.insert(in.type_ids.end(), e.type_ids.begin(), e.type_ids.end());
      in.type_ids.insert(in.type_ids.end(), in.seq - e.ids.size(), 0);
    }
    out.tokens.emplace_back();
    for (const std::string& t : e.tokens) out.tokens.back().push_back(label(p.tokenizer, t));
    out.tokens.back().resize(in.seq, pad);
  }
  return out;
}

std::vector<NextToken> top_next_tokens(const float* logits, size_t V, size_t k, double temperature,
                                       const std::function<std::string(int64_t)>& label) {
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw InputError("the temperature must be a positive number");
  std::vector<double> probs(V);
  const double top = *std::max_element(logits, logits + V) / temperature;
  double sum = 0;
  for (size_t v = 0; v < V; ++v) sum += probs[v] = std::exp(logits[v] / temperature - top);
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, V);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](size_t a, size_t b) { return probs[a] > probs[b]; });
  std::vector<NextToken> out;
  for (size_t i = 0; i < k; ++i) {
    const int64_t id = int64_t(order[i]);
    out.push_back({id, label(id), probs[order[i]] / sum});
  }
  return out;
}

std::vector<NextToken> next_tokens(const Trace& trace, const PretrainedInput& in, size_t row, size_t k,
                                   double temperature, const std::function<std::string(int64_t)>& label) {
  const Tensor& logits = trace.at("logits");
  const size_t V = logits.shape(2);
  const float* last = logits.data() + (row * in.seq + in.lengths.at(row) - 1) * V;
  return top_next_tokens(last, V, k, temperature, label);
}

std::vector<NextToken> next_tokens(const Pretrained& p, const Trace& trace, const PretrainedInput& in, size_t row,
                                   size_t k, double temperature) {
  return next_tokens(trace, in, row, k, temperature, [&p](int64_t id) { return token_label(p, id); });
}

}  // namespace attn
