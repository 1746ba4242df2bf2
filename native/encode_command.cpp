#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/npy.hpp"
#include "core/tokenizer.hpp"
#include "core/torch_print.hpp"
#include "core/transformer.hpp"
#include "core/tutorial.hpp"
#include "native/commands.hpp"

namespace attn::cli {
namespace {

Json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "'");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    throw InputError(what + " '" + path + "' is not valid JSON: " + e.what());
  }
}

double parse_probability(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0.0 && v < 1.0))
    throw InputError(flag + " expects a number in [0, 1), got '" + text + "'");
  return v;
}

// --config, then the size flags on top of it.
TransformerConfig model_config(const EncodeOptions& o) {
  Json j = o.config_file.empty() ? Json::object() : read_json_file(o.config_file, "config file");
  if (!j.is_object()) throw InputError("config file '" + o.config_file + "' must hold a JSON object");
  const std::pair<const char*, const std::string*> sizes[] = {
      {"vocab_size", &o.vocab_size}, {"d_model", &o.d_model},   {"num_heads", &o.num_heads},
      {"num_layers", &o.num_layers}, {"d_ff", &o.d_ff},         {"max_len", &o.max_len},
      {"num_classes", &o.num_classes}};
  for (const auto& [key, text] : sizes)
    if (!text->empty()) j[key] = parse_size(std::string("--") + key, *text, 0);
  if (!o.dropout.empty()) j["dropout"] = parse_probability("--dropout", o.dropout);
  if (!o.activation.empty()) j["activation"] = o.activation;
  if (!o.pooling.empty()) j["pooling"] = o.pooling;
  if (!o.layer_style.empty()) j["layer_style"] = o.layer_style;
  if (o.norm_first) j["norm_first"] = true;
  if (o.post_norm) j["norm_first"] = false;
  if (o.encoder_only) j["classifier_head"] = false;
  return config_from_json(j);
}

struct Inputs {
  std::vector<int64_t> ids;
  size_t batch = 0, seq = 0;
  std::vector<std::vector<std::string>> tokens;  // empty for --ids without --vocab
  Vocab vocab;
  bool has_vocab = false;
};

std::vector<int64_t> parse_id_list(const std::string& text, size_t row) {
  std::istringstream in(text);
  std::vector<int64_t> ids;
  std::string word;
  while (in >> word) ids.push_back(int64_t(parse_size("--ids (sequence " + std::to_string(row) + ")", word, 0)));
  if (ids.empty()) throw InputError("--ids sequence " + std::to_string(row) + " is empty");
  return ids;
}

Inputs read_inputs(const EncodeOptions& o) {
  Inputs in;
  if (!o.vocab.empty()) {
    in.vocab = read_vocab_file(o.vocab);
    in.has_vocab = true;
  }
  if (o.ids.empty()) {
    TokenBatch batch = tokenize_batch(o.sentences.resolve(tutorial_sentences()), in.vocab, !in.has_vocab);
    in.has_vocab = true;
    in.ids = std::move(batch.ids);
    in.batch = batch.batch;
    in.seq = batch.seq;
    in.tokens = std::move(batch.tokens);
    return in;
  }
  std::vector<std::vector<int64_t>> rows;
  for (size_t r = 0; r < o.ids.size(); ++r) {
    rows.push_back(parse_id_list(o.ids[r], r + 1));
    in.seq = std::max(in.seq, rows.back().size());
  }
  in.batch = rows.size();
  for (auto& row : rows) {
    row.resize(in.seq, 0);
    in.ids.insert(in.ids.end(), row.begin(), row.end());
    if (in.has_vocab) {
      in.tokens.emplace_back();
      for (int64_t id : row) in.tokens.back().push_back(in.vocab.token(id));
    }
  }
  return in;
}

TransformerModel build_model(const EncodeOptions& o, TransformerConfig config, const Inputs& in, TorchGenerator& gen) {
  if (config.vocab_size == 0)  // not given: as many as the inputs need
    config.vocab_size = in.has_vocab ? in.vocab.size() : size_t(*std::max_element(in.ids.begin(), in.ids.end())) + 1;
  if (!o.weights.empty()) return load_transformer(config, read_safetensors(o.weights));
  return init_transformer(config, gen);
}

std::string text_report(const TransformerModel& model, const Inputs& in, const Trace& trace, bool train) {
  const TransformerConfig& c = model.config;
  std::ostringstream out;
  out << (c.classifier_head ? "TransformerClassifier" : "TransformerEncoder") << ": " << c.num_layers
      << " layers, d_model " << c.d_model << ", " << c.num_heads << " heads, d_ff " << c.ff_width() << ", "
      << (c.norm_first ? "pre-norm" : "post-norm") << ", " << (c.activation == Activation::relu ? "relu" : "gelu");
  if (c.classifier_head) out << ", " << c.num_classes << " classes";
  out << "\nparameters: " << parameter_count(model) << "\nmode: "
      << (train ? "training (dropout " + std::to_string(c.dropout) + " drawn from the seeded generator)"
                : std::string("evaluation (dropout is the identity)"))
      << "\n";
  for (const auto& tokens : in.tokens) out << python_list_repr(tokens) << "\n";
  for (const Stage& s : trace.stages())
    out << "\n" << s.name << " " << torch_size_repr(Shape(s.value.shape().begin(), s.value.shape().end())) << "\n"
        << torch_repr(s.value, s.dtype) << "\n";
  return out.str();
}

void save_npy_dir(const std::string& dir, const Trace& trace) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create folder '" + dir + "': " + ec.message());
  for (const Stage& s : trace.stages()) write_npy(dir + "/" + s.name + ".npy", s.value);
}

void run(const EncodeOptions& o) {
  if (!o.seed.empty() && !o.weights.empty()) throw InputError("give --seed or --weights, not both");
  const Inputs in = read_inputs(o);
  TorchGenerator gen(parse_seed(o.seed.empty() ? "0" : o.seed));
  const TransformerModel model = build_model(o, model_config(o), in, gen);
  const Trace trace = classify(model, in.ids, in.batch, in.seq, parse_mask_kind(o.mask), o.train ? &gen : nullptr);
  if (!o.save_weights.empty()) write_safetensors(o.save_weights, state_dict(model));
  if (!o.save_npy.empty()) save_npy_dir(o.save_npy, trace);
  if (!o.json) return print(text_report(model, in, trace, o.train));
  Json doc = {{"config", config_to_json(model.config)},
              {"mode", o.train ? "train" : "eval"},
              {"parameter_count", parameter_count(model)}};
  if (in.has_vocab) {
    Json vocab = Json::object();
    for (size_t id = 0; id < in.vocab.size(); ++id) vocab[in.vocab.tokens()[id]] = id;
    doc["vocab"] = std::move(vocab);
    doc["tokens"] = in.tokens;
  }
  doc["stages"] = stages_json(trace);
  print(doc.dump() + "\n");
}

}  // namespace

void add_encode_command(CLI::App& app, EncodeOptions& o) {
  auto* cmd = app.add_subcommand("encode", "Run the second tutorial's Transformer classifier (or just its "
                                           "encoder) on sentences or token ids, printing every stage");
  cmd->add_option("--config", o.config_file, "model config JSON: vocab_size, d_model, num_heads, num_layers, d_ff, "
                                             "max_len, num_classes, dropout, norm_first, activation, pooling, "
                                             "layer_style, final_norm, classifier_head");
  auto* seed = cmd->add_option("--seed", o.seed, "initialise as PyTorch does after torch.manual_seed(N) (default 0)");
  cmd->add_option("--weights", o.weights, "load a PyTorch state_dict saved as safetensors")->excludes(seed);
  cmd->add_option("--vocab", o.vocab, "vocabulary JSON {token: id}; default: built from the sentences");
  add_sentence_options(*cmd, o.sentences, "default: the first tutorial's four");
  cmd->add_option("--ids", o.ids, "token ids of one sequence, e.g. \"1 2 3\" (repeatable; padded with 0)");
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal")->capture_default_str();
  cmd->add_option("--vocab-size", o.vocab_size, "embedding rows (default: what the input needs)");
  cmd->add_option("--d-model", o.d_model, "model width (default 128)");
  cmd->add_option("--num-heads", o.num_heads, "attention heads; must divide d_model (default 8)");
  cmd->add_option("--num-layers", o.num_layers, "encoder layers (default 4)");
  cmd->add_option("--d-ff", o.d_ff, "feed-forward width (default 4 x d_model)");
  cmd->add_option("--max-len", o.max_len, "positional-encoding rows (default 512)");
  cmd->add_option("--num-classes", o.num_classes, "classifier outputs (default 5)");
  cmd->add_option("--dropout", o.dropout, "dropout probability (default 0.1; used with --train)");
  cmd->add_option("--activation", o.activation, "relu | gelu (default relu)");
  cmd->add_option("--pooling", o.pooling, "mean (the tutorial's x.mean(dim=1))");
  cmd->add_option("--layer-style", o.layer_style, "tutorial | torch (nn.TransformerEncoderLayer weights)");
  auto* pre = cmd->add_flag("--norm-first", o.norm_first, "pre-norm layers");
  cmd->add_flag("--post-norm", o.post_norm, "post-norm layers (the tutorial's; default)")->excludes(pre);
  cmd->add_flag("--encoder-only", o.encoder_only, "no pooling and fc: stop at the encoder output");
  cmd->add_flag("--train", o.train, "training mode: dropout draws from the generator, as PyTorch's train()");
  cmd->add_flag("--json", o.json, "print the trace as one JSON document");
  cmd->add_option("--save-weights", o.save_weights, "write the model's state_dict as safetensors");
  cmd->add_option("--save-npy", o.save_npy, "write every stage as FOLDER/<stage>.npy");
  cmd->callback([&o] { run(o); });
}

}  // namespace attn::cli
