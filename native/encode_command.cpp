#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/base/memory.hpp"
#include "core/io/npy.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_json.hpp"
#include "core/torch/torch_print.hpp"
#include "core/model/transformer.hpp"
#include "core/model/tutorial.hpp"
#include "native/backends.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"
#include "core/model/decoder.hpp"
#include "core/model/interventions.hpp"
#include "core/model/decoder_views.hpp"
#include "core/model/logit_lens.hpp"
#include "core/model/model_options.hpp"

namespace attn::cli {
namespace {

struct Inputs {
  std::vector<int64_t> ids;
  size_t batch = 0, seq = 0;
  std::vector<std::vector<std::string>> tokens;  // empty for --ids without --vocab
  std::vector<size_t> lengths;                   // each row's ids before the padding
  Vocab vocab;
  bool has_vocab = false;
};

Inputs read_inputs(const EncodeOptions& o) {
  Inputs in;
  if (auto vocab = model_vocab(o.model)) {
    in.vocab = std::move(*vocab);
    in.has_vocab = true;
  }
  if (o.ids.empty()) {
    TokenBatch batch = tokenize_batch(o.sentences.resolve(tutorial_sentences()), in.vocab, !in.has_vocab);
    in.has_vocab = true;
    in.ids = std::move(batch.ids);
    in.batch = batch.batch;
    in.seq = batch.seq;
    in.tokens = std::move(batch.tokens);
    in.lengths = std::move(batch.lengths);
    return in;
  }
  std::vector<std::vector<int64_t>> rows;
  for (size_t r = 0; r < o.ids.size(); ++r) {
    rows.push_back(parse_id_list(o.ids[r], r + 1));
    in.seq = std::max(in.seq, rows.back().size());
  }
  in.batch = rows.size();
  for (auto& row : rows) {
    in.lengths.push_back(row.size());
    row.resize(in.seq, 0);
    in.ids.insert(in.ids.end(), row.begin(), row.end());
    if (in.has_vocab) {
      in.tokens.emplace_back();
      for (int64_t id : row) in.tokens.back().push_back(in.vocab.token(id));
    }
  }
  return in;
}

// Every stage as PyTorch prints it, after its name and torch.Size.
void write_stages(std::ostream& out, const Trace& trace) {
  for (const Stage& s : trace.stages())
    out << "\n" << s.name << " " << torch_size_repr(Shape(s.value.shape().begin(), s.value.shape().end())) << "\n"
        << torch_repr(s.value, s.dtype) << "\n";
}

// Each row's likeliest next tokens: probability, id and, where the model has a tokenizer, the token.
void write_next_tokens(std::ostream& out, const std::vector<std::vector<NextToken>>& next, const char* row_name,
                       bool with_tokens) {
  for (size_t row = 0; row < next.size(); ++row) {
    out << "\nnext token after " << row_name << " " << row + 1 << ":\n";
    for (const NextToken& t : next[row]) {
      char line[64];
      std::snprintf(line, sizeof line, "%8.4f  %6lld", t.probability, static_cast<long long>(t.id));
      out << line << (with_tokens ? "  " + t.token : std::string()) << "\n";
    }
  }
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
  write_stages(out, trace);
  return out.str();
}

void save_npy_dir(const std::string& dir, const Trace& trace) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("cannot create folder '" + dir + "': " + ec.message());
  for (const Stage& s : trace.stages()) write_npy(dir + "/" + s.name + ".npy", s.value);
}

// --- interventions ---

Ablation ablation_of(const EncodeOptions& o, const ModelStages& stages) {
  Ablation a;
  a.kind = parse_ablation_kind(o.ablation);
  if (!o.ablate.empty()) a.heads = parse_heads(o.ablate, stages);
  if (!o.ablate_mlp.empty()) a.mlps = parse_layers(o.ablate_mlp, stages, "--ablate-mlp");
  if (a.empty() && (o.ablation != "zero" || !o.mean_data.empty()))
    throw InputError("--ablation and --mean-data apply to --ablate or --ablate-mlp: name what to ablate");
  if (!o.mean_data.empty() && a.kind != AblationKind::mean)
    throw InputError("--mean-data gives the means of --ablation mean");
  if (!a.empty() && o.model.train) throw InputError("--ablate runs the model in evaluation mode: drop --train");
  if (!a.empty() && !o.backend.empty())
    throw InputError("--ablate runs on the exact path (every stage handed to its hooks): drop --backend");
  return a;
}

// Runs `forward` with the ablation's hooks; the means of mean ablation come from a clean run on the
// mean data (`clean_forward`) or, without --mean-data, on the inputs themselves (`forward`).
template <class Forward, class CleanForward>
Trace ablated_run(const Ablation& a, const ModelStages& stages, const std::vector<size_t>& lengths,
                  const Forward& forward, const CleanForward& clean_forward, bool has_mean_data) {
  if (a.empty()) return forward(nullptr);
  if (a.kind == AblationKind::zero) {
    const Hooks hooks = ablation_hooks(stages, a, nullptr, lengths);
    return forward(&hooks);
  }
  std::vector<size_t> clean_lengths = lengths;
  const Trace clean = has_mean_data ? clean_forward(clean_lengths) : forward(nullptr);
  const Hooks hooks = ablation_hooks(stages, a, &clean, clean_lengths);
  return forward(&hooks);
}

// --- the logit lens ---

// A flat [stage, item, position, width] vector as nested arrays.
template <class T>
Json nested(const std::vector<T>& flat, const LogitLens& l, size_t width) {
  Json stages = Json::array();
  for (size_t r = 0, i = 0; r < l.stages.size(); ++r) {
    Json items = Json::array();
    for (size_t b = 0; b < l.batch; ++b) {
      Json positions = Json::array();
      for (size_t s = 0; s < l.seq; ++s, i += width) positions.push_back(std::vector<T>(flat.begin() + i, flat.begin() + i + width));
      items.push_back(std::move(positions));
    }
    stages.push_back(std::move(items));
  }
  return stages;
}

Json lens_json(const LogitLens& l, const std::function<std::string(int64_t)>& token) {
  Json doc = {{"stages", l.stages}, {"axes", {"stage", "item", "position", l.classes ? "class" : "rank"}},
              {"probabilities", nested(l.probabilities, l, l.width)}};
  if (l.classes) {
    Json pooled = Json::array();
    for (size_t r = 0; r < l.stages.size(); ++r) {
      Json items = Json::array();
      for (size_t b = 0; b < l.batch; ++b)
        items.push_back(std::vector<float>(l.pooled.begin() + (r * l.batch + b) * l.width,
                                           l.pooled.begin() + (r * l.batch + b + 1) * l.width));
      pooled.push_back(std::move(items));
    }
    doc["pooled"] = std::move(pooled);
    return doc;
  }
  std::vector<std::string> tokens;
  for (int64_t id : l.ids) tokens.push_back(token(id));
  doc["ids"] = nested(l.ids, l, l.width);
  doc["tokens"] = nested(tokens, l, l.width);
  return doc;
}

// Per item, a row per stage: each position's most likely token or class and its probability (a
// classifier's row ends with its pooled prediction).
std::string lens_text(const LogitLens& l, const std::function<std::string(int64_t)>& token) {
  std::string out = "\nlogit lens (" + std::string(l.classes ? "each position's most likely class, then the pooled prediction"
                                                                : "each position's most likely next token") + "):\n";
  char cell[96];
  for (size_t b = 0; b < l.batch; ++b) {
    out += "item " + std::to_string(b + 1) + ":\n";
    for (size_t r = 0; r < l.stages.size(); ++r) {
      std::snprintf(cell, sizeof cell, "%-28s", l.stages[r].c_str());
      out += cell;
      for (size_t s = 0; s < l.seq; ++s) {
        const size_t at = ((r * l.batch + b) * l.seq + s) * l.width;
        size_t best = 0;
        if (l.classes)
          for (size_t c = 1; c < l.width; ++c) best = l.probabilities[at + c] > l.probabilities[at + best] ? c : best;
        std::snprintf(cell, sizeof cell, " %s %.3f", token(l.ids[at + best]).c_str(), l.probabilities[at + best]);
        out += cell;
      }
      if (l.classes) {
        const float* p = l.pooled.data() + (r * l.batch + b) * l.width;
        const size_t best = size_t(std::max_element(p, p + l.width) - p);
        std::snprintf(cell, sizeof cell, "  | pooled: class %zu %.3f", best, p[best]);
        out += cell;
      }
      out += "\n";
    }
  }
  return out;
}

std::string class_label(int64_t c) { return "class " + std::to_string(c); }

// The fast path (fused attention, FMA kernels, or a GPU): the same stages but scores and weights.
Trace classify_on_backend(const EncodeOptions& o, const TransformerModel& model, const Inputs& in) {
  if (o.model.train) throw InputError("--backend computes in evaluation mode only (no dropout): drop --train");
  std::string note;
  const std::unique_ptr<Backend> backend = make_backend(o.backend, 0, note);
  std::cerr << "attn: backend " << note << "\n";
  DeviceModel device(*backend, model);
  Trace trace;
  device.classify(in.ids, in.batch, in.seq, parse_mask_kind(o.model.mask), &trace);
  return trace;
}

// --- a Hugging Face checkpoint ---

std::string pretrained_report(const Pretrained& p, const PretrainedBatch& batch, const Trace& trace,
                              const std::vector<std::vector<NextToken>>& next) {
  const PretrainedConfig& c = p.model.config;
  std::ostringstream out;
  out << c.architecture << " (" << family_name(c.family) << "): " << c.num_layers << " layers, hidden "
      << c.hidden_size << ", " << c.num_heads << " heads, intermediate " << c.intermediate_size << "\nparameters: "
      << parameter_count(p.model) << "\n";
  if (const double peak = process_status_bytes("VmHWM:"); peak > 0)
    out << "peak memory: " << int64_t(peak / 1048576) << " MiB\n";
  if (!p.model.ignored.empty()) {
    out << "not part of the base model (ignored):";
    for (const std::string& name : p.model.ignored) out << " " << name;
    out << "\n";
  }
  for (const auto& tokens : batch.tokens) out << python_list_repr(tokens) << "\n";
  write_stages(out, trace);
  write_next_tokens(out, next, "sentence", true);
  return out.str();
}

Json next_tokens_json(const std::vector<std::vector<NextToken>>& next) {
  Json rows = Json::array();
  for (const auto& row : next) {
    Json list = Json::array();
    for (const NextToken& t : row) list.push_back({{"id", t.id}, {"token", t.token}, {"probability", t.probability}});
    rows.push_back(std::move(list));
  }
  return rows;
}

// The checkpoint, from the cache when the caller keeps one (EncodeOptions::checkpoint_cache).
std::shared_ptr<const Pretrained> checkpoint(const EncodeOptions& o, const PretrainedFiles& files) {
  if (o.checkpoint_cache && *o.checkpoint_cache) return *o.checkpoint_cache;
  auto p = std::make_shared<const Pretrained>(load_pretrained_files(files));
  if (o.checkpoint_cache) *o.checkpoint_cache = p;
  return p;
}

// What a run leaves for its report and document (CommandResult formats them when asked).
struct PretrainedRun {
  std::shared_ptr<const Pretrained> p;
  PretrainedBatch batch;
  Trace trace;
  Ablation ablation;
  std::vector<std::vector<NextToken>> next;
  std::optional<LogitLens> lens;

  std::string token(int64_t id) const { return token_label(*p, id); }
  std::string text() const {
    const auto label = [this](int64_t id) { return token(id); };
    return ablation_text(ablation) + pretrained_report(*p, batch, trace, next) + (lens ? lens_text(*lens, label) : "");
  }
  std::string json() const {
    const PretrainedConfig& c = p->model.config;
    Json doc = {{"family", family_name(c.family)},
                {"architecture", c.architecture},
                {"config",
                 {{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size}, {"num_heads", c.num_heads},
                  {"num_layers", c.num_layers}, {"intermediate_size", c.intermediate_size},
                  {"max_positions", c.max_positions}}},
                {"parameter_count", parameter_count(p->model)},
                {"ignored", p->model.ignored},
                {"tokens", batch.tokens},
                {"stages", stages_json(trace)}};
    if (!next.empty()) doc["next_tokens"] = next_tokens_json(next);
    if (!ablation.empty()) doc["ablation"] = ablation_json(ablation);
    if (lens) doc["logit_lens"] = lens_json(*lens, [this](int64_t id) { return token(id); });
    return doc.dump();
  }
};

// --save-gradients on a model other than a Llama-family decoder.
void refuse_gradients(const EncodeOptions& o) {
  if (!o.save_gradients.empty())
    throw InputError("--save-gradients is for a Llama-family checkpoint (" + decoder_architectures() + ")");
}

void run_pretrained(const EncodeOptions& o, const PretrainedFiles& files) {
  if (!o.ids.empty()) throw InputError("--ids is for the tutorial's classifier; give a checkpoint sentences");
  refuse_gradients(o);
  if (!o.backend.empty() || !o.save_weights.empty())
    throw InputError("--backend and --save-weights are for the tutorial's classifier, not a checkpoint");
  const size_t k = parse_size("--top-k", o.top_k, 1);
  const double temperature = parse_number("--temperature", o.temperature);
  auto run = std::make_shared<PretrainedRun>();
  run->p = checkpoint(o, files);
  const Pretrained& p = *run->p;
  const ModelStages stages = model_stages(p.model.config);
  run->ablation = ablation_of(o, stages);
  run->batch = tokenize_pretrained(p, o.sentences.resolve(tutorial_sentences()));
  const PretrainedBatch& batch = run->batch;
  run->trace = ablated_run(
      run->ablation, stages, batch.input.lengths, [&](const Hooks* h) { return pretrained_forward(p.model, batch.input, h); },
      [&](std::vector<size_t>& lengths) {
        const PretrainedBatch mean = tokenize_pretrained(p, read_sentences_file(o.mean_data));
        lengths = mean.input.lengths;
        return pretrained_forward(p.model, mean.input);
      },
      !o.mean_data.empty());
  if (p.model.config.family == ModelFamily::gpt2)
    for (size_t row = 0; row < batch.input.batch; ++row)
      run->next.push_back(next_tokens(p, run->trace, batch.input, row, k, temperature));
  if (!o.save_npy.empty()) save_npy_dir(o.save_npy, run->trace);
  save_plot(o.plot, run->trace, batch.tokens);
  if (o.logit_lens) run->lens = logit_lens(p.model, run->trace, k);
  emit({std::shared_ptr<const Trace>(run, &run->trace), batch.tokens, [run] { return run->json(); },
        [run] { return run->text(); }},
       o.json, o.result);
}

// --- a decoder of the Llama family (core/model/decoder.hpp), its folder's tokenizer.json when it has one ---

struct DecoderRun {
  DecoderModel model;
  std::optional<JsonTokenizer> tokenizer;
  std::vector<std::vector<int64_t>> rows;        // padded to one length
  std::vector<size_t> lengths;                   // each row's real tokens
  std::vector<std::vector<std::string>> tokens;  // each row's labels, when the tokenizer made the rows
  Trace trace;
  Ablation ablation;
  std::vector<std::vector<NextToken>> next;
  std::optional<LogitLens> lens;
  std::optional<std::pair<size_t, size_t>> rotary;  // --rotary QUERY,KEY of the first row

  std::string text() const {
    const DecoderConfig& c = model.config;
    std::ostringstream out;
    out << ablation_text(ablation) << c.architecture << " (" << c.model_type << "): " << c.num_layers << " layers, hidden " << c.hidden_size
        << ", " << c.num_heads << " query heads on " << c.num_kv_heads << " key/value heads of " << c.head_dim
        << ", intermediate " << c.intermediate_size << "; weights " << decoder_weight_dtype(model) << ", ";
    const double bytes = double(decoder_weight_bytes(model));
    out << std::fixed << std::setprecision(1) << (bytes < 1048576 ? bytes / 1024 : bytes / 1048576)
        << (bytes < 1048576 ? " KB" : " MB") << " in memory\n" << std::defaultfloat;
    if (!model.ignored.empty()) {
      out << "not part of the model (ignored):";
      for (const std::string& name : model.ignored) out << " " << name;
      out << "\n";
    }
    for (const auto& row : tokens) out << python_list_repr(row) << "\n";
    write_stages(out, trace);
    write_next_tokens(out, next, "sequence", tokenizer.has_value());
    if (lens) out << lens_text(*lens, [this](int64_t id) { return id_label(id); });
    return out.str();
  }
  std::string json() const {
    const DecoderConfig& c = model.config;
    std::vector<size_t> kv_head_of(c.num_heads);  // query head h reads key/value head h / group (repeat_kv)
    for (size_t h = 0; h < c.num_heads; ++h) kv_head_of[h] = h / c.group();
    Json doc = {{"family", c.model_type},
                {"architecture", c.architecture},
                {"config",
                 {{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size}, {"num_heads", c.num_heads},
                  {"num_key_value_heads", c.num_kv_heads}, {"head_dim", c.head_dim}, {"num_layers", c.num_layers},
                  {"intermediate_size", c.intermediate_size}, {"max_positions", c.max_positions},
                  {"key_value_head_of_query_head", kv_head_of}}},
                {"weights", {{"dtype", decoder_weight_dtype(model)}, {"bytes", decoder_weight_bytes(model)}}},
                {"ignored", model.ignored},
                {"input_ids", rows},
                {"lengths", lengths}};
    if (!tokens.empty()) doc["tokens"] = tokens;
    doc["stages"] = stages_json(trace);
    doc["next_tokens"] = next_tokens_json(next);
    doc["first_token_attention"] = first_token_attention(trace, c.num_layers);
    if (rotary) doc["rotary"] = rotary_json();
    if (!ablation.empty()) doc["ablation"] = ablation_json(ablation);
    if (lens) doc["logit_lens"] = lens_json(*lens, [this](int64_t id) { return id_label(id); });
    return doc.dump();
  }
  // Every layer's and head's split of the first row's score of query rotary->first on key rotary->second,
  // and that score over distances 0 … min(max_positions, 128) − 1.
  Json rotary_json() const {
    const size_t distances = std::min<size_t>(model.config.max_positions, 128);
    Json layers = Json::array();
    for (const auto& heads : rotary_splits(model, trace, 0, rotary->first, rotary->second, distances)) {
      layers.push_back(Json::array());
      for (const RotarySplit& s : heads)
        layers.back().push_back({{"pairs", s.pairs}, {"unrotated", s.unrotated}, {"score", s.score},
                                 {"by_distance", s.by_distance}});
    }
    return {{"query", rotary->first}, {"key", rotary->second}, {"layers", std::move(layers)}};
  }
  // A next token's label: none without a tokenizer, "<id N>" for a row of the embedding beyond its vocabulary.
  std::string label(int64_t id) const {
    if (!tokenizer) return std::string();
    return size_t(id) < tokenizer->size() ? tokenizer->label(id) : "<id " + std::to_string(id) + ">";
  }
  // The same, "<id N>" where there is no tokenizer (the logit lens's table needs a label).
  std::string id_label(int64_t id) const { return tokenizer ? label(id) : "<id " + std::to_string(id) + ">"; }
};

// The rows: --ids, or the sentences through the folder's tokenizer.json (its BOS included), with their
// tokens' labels; shorter rows padded after their tokens with id 0 (the causal mask keeps every real
// token from seeing them), their real lengths kept.
void decoder_rows(const EncodeOptions& o, DecoderRun& run) {
  const bool sentences = !o.sentences.sentences.empty() || !o.sentences.sentences_file.empty();
  if (sentences && !o.ids.empty()) throw InputError("give --sentence or --ids, not both");
  if (sentences && !run.tokenizer)
    throw InputError("--sentence needs the model's tokenizer.json, which its folder lacks: give token ids with --ids");
  if (!sentences && o.ids.empty())
    throw InputError(run.tokenizer ? "give a sentence (--sentence TEXT) or token ids (--ids \"1 2 3\")"
                                   : "this model's folder has no tokenizer.json: give token ids with --ids \"1 2 3\"");
  if (sentences) {
    for (const std::string& sentence : o.sentences.resolve({})) {
      run.rows.push_back(run.tokenizer->encode(sentence).ids);
      run.tokens.emplace_back();
      for (int64_t id : run.rows.back()) run.tokens.back().push_back(run.tokenizer->label(id));
    }
  }
  for (size_t r = 0; r < o.ids.size(); ++r) run.rows.push_back(parse_id_list(o.ids[r], r + 1));
  size_t seq = 0;
  for (const auto& row : run.rows) {
    if (row.empty()) throw InputError("a sentence gave no tokens");
    run.lengths.push_back(row.size());
    seq = std::max(seq, row.size());
  }
  for (size_t r = 0; r < run.rows.size(); ++r) {
    run.rows[r].resize(seq, 0);
    if (r < run.tokens.size()) run.tokens[r].resize(seq, run.label(0));
  }
}

// --rotary QUERY,KEY: two positions of the first sequence.
std::pair<size_t, size_t> rotary_positions(const std::string& text) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos)
    throw InputError("--rotary expects QUERY,KEY (two positions of the first sequence), got '" + text + "'");
  return {parse_size("--rotary's query", text.substr(0, comma), 0), parse_size("--rotary's key", text.substr(comma + 1), 0)};
}

// --save-gradients FILE: every weight's gradient of the mean next-token cross-entropy over each row's real
// positions (position p predicts token p + 1; a row's last position and its padding predict nothing), as
// a causal LM's training step computes it (transformers' labels = input_ids), as safetensors, the loss in
// its metadata.
void save_decoder_gradients(const std::string& path, const DecoderRun& run, const std::vector<int64_t>& ids) {
  if (!run.ablation.empty())
    throw InputError("--save-gradients takes the model as it is: drop --ablate and --ablate-mlp");
  const size_t seq = run.rows[0].size();
  std::vector<int64_t> labels(ids.size(), -100);
  for (size_t row = 0; row < run.rows.size(); ++row)
    for (size_t p = 0; p + 1 < run.lengths[row]; ++p) labels[row * seq + p] = ids[row * seq + p + 1];
  Tensor grad;
  const float loss = cross_entropy(run.trace.at("logits"), labels, 0.0, &grad);
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", double(loss));
  write_safetensors(path, decoder_weight_gradients(run.model, run.trace, ids, grad), {{"loss", text}});
}

void run_decoder(const EncodeOptions& o, const PretrainedFiles& files, const Json& config_json) {
  if (!o.backend.empty() || !o.save_weights.empty() || !o.plot.stage.empty())
    throw InputError("a Llama-family checkpoint runs stage by stage only so far: drop --backend, --save-weights and --plot");
  if (!o.mean_data.empty())
    throw InputError("--mean-data is not supported for a Llama-family checkpoint yet: mean ablation takes the inputs' means");
  const size_t k = parse_size("--top-k", o.top_k, 1);
  const double temperature = parse_number("--temperature", o.temperature);
  auto run = std::make_shared<DecoderRun>();
  if (!files.tokenizer_json.empty()) run->tokenizer = JsonTokenizer::from_file(files.tokenizer_json);
  decoder_rows(o, *run);
  const std::string config_name = std::filesystem::path(files.config).filename().string();
  const std::string weights_name = std::filesystem::path(files.weights).filename().string();
  run->model = read_decoder_weights(decoder_config_from_json(config_json, config_name), files.weights, weights_name);
  std::vector<int64_t> ids;
  for (const auto& row : run->rows) ids.insert(ids.end(), row.begin(), row.end());
  const size_t batch = run->rows.size(), seq = run->rows[0].size();
  const ModelStages stages = model_stages(run->model.config);
  run->ablation = ablation_of(o, stages);
  const auto forward = [&](const Hooks* h) { return decoder_forward(run->model, ids, batch, seq, h, nullptr, run->lengths); };
  run->trace = ablated_trace(run->ablation, stages, run->lengths, forward);
  const Tensor& logits = run->trace.at("logits");
  const size_t V = logits.shape(2);
  for (size_t row = 0; row < batch; ++row)
    run->next.push_back(top_next_tokens(logits.data() + (row * seq + run->lengths[row] - 1) * V, V, k, temperature,
                                        [run](int64_t id) { return run->label(id); }));
  if (!o.save_npy.empty()) save_npy_dir(o.save_npy, run->trace);
  if (!o.save_gradients.empty()) save_decoder_gradients(o.save_gradients, *run, ids);
  if (o.logit_lens) run->lens = logit_lens(run->model, run->trace, k);
  if (!o.rotary.empty()) {
    run->rotary = rotary_positions(o.rotary);
    if (run->rotary->first >= run->lengths[0])  // not the first row's padding
      throw InputError("--rotary QUERY,KEY: positions of one sequence with KEY <= QUERY < " + std::to_string(run->lengths[0]) +
                       ", got " + std::to_string(run->rotary->first) + "," + std::to_string(run->rotary->second));
    rotary_splits(run->model, run->trace, 0, run->rotary->first, run->rotary->second, 0);  // its errors before output
  }
  emit({std::shared_ptr<const Trace>(run, &run->trace), run->tokens, [run] { return run->json(); },
        [run] { return run->text(); }},
       o.json, o.result);
}

// The classifier's run, as PretrainedRun.
struct ClassifierRun {
  Inputs in;
  std::optional<TransformerModel> model;
  Trace trace;
  Ablation ablation;
  std::optional<LogitLens> lens;
  bool train = false;

  std::string text() const {
    return ablation_text(ablation) + text_report(*model, in, trace, train) + (lens ? lens_text(*lens, class_label) : "");
  }
  std::string json() const {
    Json doc = {{"config", config_to_json(model->config)},
                {"mode", train ? "train" : "eval"},
                {"parameter_count", parameter_count(*model)}};
    if (in.has_vocab) {
      Json vocab = Json::object();
      for (size_t id = 0; id < in.vocab.size(); ++id) vocab[in.vocab.tokens()[id]] = id;
      doc["vocab"] = std::move(vocab);
      doc["tokens"] = in.tokens;
    }
    if (!ablation.empty()) doc["ablation"] = ablation_json(ablation);
    doc["stages"] = stages_json(trace);
    if (lens) doc["logit_lens"] = lens_json(*lens, class_label);
    return doc.dump();
  }
};

void run(const EncodeOptions& o) {
  if (const auto files = pretrained_files(o.model)) {
    const Json config = read_json_file(files->config, "model config");
    if (is_decoder_config(config)) return run_decoder(o, *files, config);
  }
  if (!o.rotary.empty())
    throw InputError("--rotary splits a rotary score, a Llama-family model's (" + decoder_architectures() +
                     "); this model adds its positions to its embeddings");
  if (const auto files = pretrained_files(o.model)) return run_pretrained(o, *files);
  refuse_gradients(o);
  if (!o.backend.empty() && o.logit_lens)
    throw InputError("--logit-lens reads the exact path's residual stream: drop --backend");
  auto run = std::make_shared<ClassifierRun>();
  run->in = read_inputs(o);
  const Inputs& in = run->in;
  const size_t needed = in.has_vocab ? in.vocab.size() : size_t(*std::max_element(in.ids.begin(), in.ids.end())) + 1;
  TorchGenerator gen(parse_seed(o.model.seed.empty() ? "0" : o.model.seed));
  const TransformerModel& model = run->model.emplace(build_model(o.model, model_config(o.model), needed, gen));
  const bool train = run->train = o.model.train;
  const ModelStages stages = model_stages(model.config);
  run->ablation = ablation_of(o, stages);
  const MaskKind mask = parse_mask_kind(o.model.mask);
  const auto forward = [&](const Hooks* h) { return classify(model, in.ids, in.batch, in.seq, mask, train ? &gen : nullptr, h); };
  const auto clean_on_mean_data = [&](std::vector<size_t>& lengths) {
    Vocab vocab = in.vocab;
    TokenBatch mean;
    try {
      mean = tokenize_batch(read_sentences_file(o.mean_data), vocab, false);
    } catch (const InputError& e) {
      throw InputError("--mean-data '" + o.mean_data + "': " + e.what());
    }
    lengths = mean.lengths;
    return classify(model, mean.ids, mean.batch, mean.seq, mask, nullptr);
  };
  run->trace = o.backend.empty()
                   ? ablated_run(run->ablation, stages, in.lengths, forward, clean_on_mean_data, !o.mean_data.empty())
                   : classify_on_backend(o, model, in);
  if (o.logit_lens) run->lens = logit_lens(model, run->trace);
  if (!o.save_weights.empty()) write_safetensors(o.save_weights, state_dict(model));
  if (!o.save_npy.empty()) save_npy_dir(o.save_npy, run->trace);
  save_plot(o.plot, run->trace, in.tokens);
  emit({std::shared_ptr<const Trace>(run, &run->trace), in.tokens, [run] { return run->json(); },
        [run] { return run->text(); }},
       o.json, o.result);
}

}  // namespace

void add_encode_command(CLI::App& app, EncodeOptions& o) {
  auto* cmd = app.add_subcommand("encode", "Run the second tutorial's Transformer classifier (or just its "
                                           "encoder) on sentences or token ids, printing every stage");
  add_model_options(*cmd, o.model);
  add_pretrained_options(*cmd, o.model);
  add_sentence_options(*cmd, o.sentences, "default: the first tutorial's four");
  cmd->add_option("--ids", o.ids, "token ids of one sequence, e.g. \"1 2 3\" (repeatable; padded with 0)");
  cmd->add_flag("--json", o.json, "print the trace as one JSON document");
  add_download_quiet_flag(*cmd, o.quiet);
  cmd->add_option("--top-k", o.top_k, "GPT-2: how many likely next tokens to list (default 10)");
  cmd->add_option("--temperature", o.temperature, "GPT-2: the next-token list's softmax(logits / T) (default 1)");
  cmd->add_option("--save-weights", o.save_weights, "write the model's state_dict as safetensors");
  cmd->add_option("--save-npy", o.save_npy, "write every stage as FOLDER/<stage>.npy");
  cmd->add_option("--save-gradients", o.save_gradients,
                  "a Llama-family checkpoint: write every weight's gradient of the next-token loss as safetensors");
  add_plot_options(*cmd, o.plot);
  cmd->add_option("--ablate", o.ablate, "ablate attention heads LAYER.HEAD[,LAYER.HEAD...]: their output z "
                                        "(before the output projection) replaced (docs/interventions.md)");
  cmd->add_option("--ablate-mlp", o.ablate_mlp, "ablate feed-forward blocks LAYER[,LAYER...]: their output replaced");
  cmd->add_option("--ablation", o.ablation, "zero | mean: what replaces an ablated output (mean: its average over "
                                            "the real tokens of --mean-data, else of the inputs)")
      ->capture_default_str();
  cmd->add_option("--mean-data", o.mean_data, "sentences file (one per line) whose run gives --ablation mean its means");
  cmd->add_option("--rotary", o.rotary, "a Llama-family model's score of query position QUERY on key KEY (first "
                                        "sequence), split over each head's rotary frequency pairs, and over distance "
                                        "(--json: \"rotary\")");
  cmd->add_flag("--logit-lens", o.logit_lens, "read every layer's residual stream through the final LayerNorm and the "
                                              "unembedding (GPT-2: top --top-k tokens) or the classifier's head");
  cmd->add_option("--backend", o.backend,
                  "compute on cpu (fast kernels), gl, cuda or auto instead of the PyTorch-exact reference path; "
                  "scores and attention weights are then not stored");
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run(o);
  });
}

}  // namespace attn::cli
