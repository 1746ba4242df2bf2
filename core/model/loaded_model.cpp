#include "core/model/loaded_model.hpp"

#include <filesystem>

#include "core/base/error.hpp"
#include "core/model/attention.hpp"

namespace attn {

ModelStages LoadedModel::stages() const {
  if (decoder) return model_stages(decoder->config);
  return pretrained ? model_stages(pretrained->model.config) : model_stages(classifier->config);
}

std::string LoadedModel::description() const {
  const ModelStages m = stages();
  if (decoder)
    return decoder->config.architecture + ": " + std::to_string(m.layers) + " layers, " + std::to_string(m.heads) +
           " query heads on " + std::to_string(m.kv_heads) + " key/value heads of " + std::to_string(m.head_dim);
  return stage_family_name(m.family) + ": " + std::to_string(m.layers) + " layers, " + std::to_string(m.heads) + " heads of " +
         std::to_string(m.head_dim);
}

size_t LoadedModel::vocab_size() const {
  if (decoder) return decoder->config.vocab_size;
  return pretrained ? pretrained->model.config.vocab_size : classifier->config.vocab_size;
}

size_t LoadedModel::max_positions() const {
  if (decoder) return decoder->config.max_positions;
  return pretrained ? pretrained->model.config.max_positions : classifier->config.max_len;
}

std::string LoadedModel::token(int64_t id) const {
  if (decoder)
    return decoder_tokenizer && id >= 0 && size_t(id) < decoder_tokenizer->size() ? decoder_tokenizer->label(id)
                                                                                 : "<id " + std::to_string(id) + ">";
  if (pretrained) return token_label(*pretrained, id);
  return id >= 0 && size_t(id) < vocab.size() ? vocab.token(id) : "<id " + std::to_string(id) + ">";
}

namespace {

ModelInput from_pretrained_batch(PretrainedBatch b) {
  PretrainedInput& in = b.input;
  return {std::move(in.ids), std::move(in.type_ids), std::move(in.lengths), in.batch, in.seq, std::move(b.tokens)};
}

void check_fits(const ModelInput& in, size_t max_positions) {
  if (in.seq > max_positions)
    throw InputError("the input has " + std::to_string(in.seq) + " tokens; the model takes at most " +
                     std::to_string(max_positions));
}

// A Llama-family decoder when config.json names one (its tokenizer.json too, when there is one).
bool load_decoder_files(const PretrainedFiles& files, LoadedModel& m, const ReadProgress& progress) {
  const Json config = read_json_file(files.config, "model config");
  if (!is_decoder_config(config)) return false;
  const auto name = [](const std::string& path) { return std::filesystem::path(path).filename().string(); };
  m.decoder = std::make_shared<const DecoderModel>(
      read_decoder_weights(decoder_config_from_json(config, name(files.config)), files.weights, name(files.weights), progress));
  if (!files.tokenizer_json.empty())
    m.decoder_tokenizer = std::make_shared<const JsonTokenizer>(JsonTokenizer::from_file(files.tokenizer_json));
  return true;
}

}  // namespace

ModelInput LoadedModel::tokenize(const std::vector<std::string>& sentences) const {
  ModelInput in;
  if (decoder) {
    if (!decoder_tokenizer)
      throw InputError("sentences need the model's tokenizer.json, which its folder lacks: give token ids");
    std::vector<std::vector<int64_t>> rows;
    for (const std::string& s : sentences) rows.push_back(decoder_tokenizer->encode(s).ids);
    return from_ids(rows);
  }
  if (pretrained) {
    in = from_pretrained_batch(tokenize_pretrained(*pretrained, sentences));
  } else {
    Vocab known = vocab;
    TokenBatch b = tokenize_batch(sentences, known, false);
    in = {std::move(b.ids), {}, std::move(b.lengths), b.batch, b.seq, std::move(b.tokens)};
  }
  check_fits(in, max_positions());
  return in;
}

ModelInput LoadedModel::from_ids(const std::vector<std::vector<int64_t>>& rows) const {
  int64_t pad = 0;
  if (pretrained)
    pad = tokenizer_find(pretrained->tokenizer,
                         pretrained->model.config.family == ModelFamily::bert ? "[PAD]" : "<|endoftext|>")
              .value_or(0);
  ModelInput in;
  in.batch = rows.size();
  for (const auto& row : rows) in.seq = std::max(in.seq, row.size());
  for (const auto& row : rows) {
    if (row.empty()) throw InputError("a sequence has no tokens");
    in.lengths.push_back(row.size());
    in.tokens.emplace_back();
    for (size_t i = 0; i < in.seq; ++i) {
      const int64_t id = i < row.size() ? row[i] : pad;
      if (id < 0 || size_t(id) >= vocab_size())
        throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (" +
                         std::to_string(vocab_size()) + " ids)");
      in.ids.push_back(id);
      in.tokens.back().push_back(token(id));
    }
  }
  check_fits(in, max_positions());
  return in;
}

Trace LoadedModel::forward(const ModelInput& in, const Hooks* hooks, const LayerStart* start) const {
  if (decoder) {
    if (start) throw InputError("a Llama-family decoder's run cannot resume at a layer");
    return decoder_forward(*decoder, in.ids, in.batch, in.seq, hooks, nullptr, in.lengths);
  }
  if (classifier) return classify(*classifier, in.ids, in.batch, in.seq, mask, nullptr, hooks, start);
  const PretrainedInput p{in.ids, in.type_ids, in.lengths, in.batch, in.seq};
  return pretrained_forward(pretrained->model, p, hooks, start);
}

LoadedModel load_checkpoint(const PretrainedFiles& files, const ReadProgress& progress) {
  LoadedModel m;
  if (!load_decoder_files(files, m, progress))
    m.pretrained = std::make_shared<const Pretrained>(load_pretrained_files(files, progress));
  return m;
}

LoadedModel load_model(const ModelOptions& o, const std::vector<std::string>& sentences) {
  if (const auto files = pretrained_files(o)) return load_checkpoint(*files);
  LoadedModel m;
  m.mask = parse_mask_kind(o.mask);
  if (auto vocab = model_vocab(o))
    m.vocab = std::move(*vocab);
  else if (!sentences.empty())
    tokenize_batch(sentences, m.vocab, true);
  TransformerConfig config = model_config(o);
  if (config.vocab_size == 0 && m.vocab.size() <= 1)
    throw InputError("the classifier's vocabulary size is unknown: give --vocab, --vocab-size or a --config "
                     "with vocab_size");
  TorchGenerator gen(parse_seed(o.seed.empty() ? "0" : o.seed));
  m.classifier = std::make_shared<const TransformerModel>(build_model(o, std::move(config), m.vocab.size(), gen));
  return m;
}

}  // namespace attn
