#include "core/train/train_run.hpp"

#include <cmath>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"
#include "core/batch/batch.hpp"
#include "core/model/pretrained_files.hpp"

namespace attn::train {

namespace {
std::vector<LabelledLine> read_lines(const std::string& path) {
  return parse_data(path, read_text_file(path, "data file"));
}

// Token ids need rows up to the largest id; text needs the vocabulary's rows.
size_t rows_needed(const Vocab& vocab, const std::vector<LabelledLine>& lines) {
  size_t rows = vocab.size();
  for (const auto& l : lines)
    for (int64_t id : l.raw.ids) rows = std::max(rows, size_t(id) + 1);
  return rows;
}

RunData load_data(const TrainOptions& o, uint64_t seed) {
  RunData d;
  if (!o.task.empty()) {
    d.task = &find_task(o.task);
    d.sets = task_data(*d.task, d.task->train_size, d.task->val_size, seed);
    d.vocab = Vocab(d.task->tokens);
    d.config = model_config(o.model, config_to_json(d.task->model));
    return d;
  }
  const auto train_lines = read_lines(o.data);
  const auto val_lines = o.val_data.empty() ? std::vector<LabelledLine>{} : read_lines(o.val_data);
  if (auto vocab = model_vocab(o.model)) {
    d.vocab = std::move(*vocab);
  } else {
    add_words(d.vocab, train_lines);
    add_words(d.vocab, val_lines);
  }
  d.config = model_config(o.model);
  const Json given = o.model.config_file.empty() ? Json::object() : read_json_file(o.model.config_file, "config file");
  if (o.model.vocab_size.empty() && !given.contains("vocab_size"))
    d.config.vocab_size = std::max(rows_needed(d.vocab, train_lines), rows_needed(d.vocab, val_lines));
  const batch::ItemRules rules{&d.vocab, d.config.vocab_size, d.config.max_len};
  d.sets.train = make_items(o.data, train_lines, rules);
  if (!o.val_data.empty()) d.sets.val = make_items(o.val_data, val_lines, rules);
  if (o.model.num_classes.empty() && !given.contains("num_classes"))
    d.config.num_classes = std::max(class_count(d.sets.train), class_count(d.sets.val));
  if (!o.val_fraction.empty())
    d.sets = split_validation(std::move(d.sets.train), parse_number("--val-fraction", o.val_fraction), seed);
  return d;
}

std::pair<double, double> parse_betas(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) throw InputError("--betas expects two numbers as B1,B2, got '" + text + "'");
  return {parse_number("--betas", text.substr(0, comma)), parse_number("--betas", text.substr(comma + 1))};
}

// The exact path by default; --backend cpu, the fast one (fused products). Training has no GPU path.
Rounding training_rounding(const std::string& backend) {
  if (backend.empty() || backend == "exact") return Rounding::exact;
  if (backend == "cpu") return Rounding::fused;
  throw InputError("attn train computes on the CPU: --backend exact (PyTorch's rounding, the default) or cpu "
                   "(fused products, faster), not '" + backend + "'");
}

// What a task brings when the flags do not say (else torch's and attn's defaults).
struct Defaults {
  std::string optimizer = "adamw";
  double lr = 1e-3;
  size_t batch_size = 32, steps = 1000;
  MaskKind mask = MaskKind::padding;
  std::string schedule = "constant";
  double warmup_share = 0;  // of the run's steps, rounded
};

Defaults defaults_of(const RunData& d) {
  if (const TaskSpec* t = d.task) return {t->optimizer, t->lr, t->batch_size, t->steps, t->mask};
  if (const LmTaskSpec* t = d.lm_task)
    return {"adamw", t->lr, t->batch_size, t->steps, MaskKind::causal, t->schedule, t->warmup_share};
  return {};
}

TrainSettings settings_of(const TrainOptions& o, const RunData& d, uint64_t seed) {
  const Defaults t = defaults_of(d);
  TrainSettings s;
  OptimizerSettings& opt = s.optimizer;
  opt.kind = parse_optimizer(o.optimizer.empty() ? t.optimizer : o.optimizer);
  opt.lr = o.lr.empty() ? t.lr : parse_number("--lr", o.lr);
  if (!o.weight_decay.empty()) opt.weight_decay = parse_number("--weight-decay", o.weight_decay);
  if (!o.momentum.empty()) opt.momentum = parse_number("--momentum", o.momentum);
  if (!o.dampening.empty()) opt.dampening = parse_number("--dampening", o.dampening);
  opt.nesterov = o.nesterov;
  if (!o.betas.empty()) std::tie(opt.beta1, opt.beta2) = parse_betas(o.betas);
  if (!o.eps.empty()) opt.eps = parse_number("--eps", o.eps);
  s.batch_size = o.batch_size.empty() ? t.batch_size : parse_size("--batch-size", o.batch_size, 1);
  if (!o.epochs.empty())
    s.steps = steps_for_epochs(parse_size("--epochs", o.epochs, 1), d.sets.train.size(), s.batch_size);
  else
    s.steps = o.steps.empty() ? t.steps : parse_size("--steps", o.steps, 1);
  s.schedule = {parse_schedule(o.schedule.empty() ? t.schedule : o.schedule),
                o.warmup.empty() ? size_t(std::lround(t.warmup_share * double(s.steps))) : parse_size("--warmup", o.warmup, 0),
                s.steps};
  s.shuffle = !o.no_shuffle;
  s.seed = seed;
  if (!o.clip_grad_norm.empty()) s.clip_grad_norm = parse_number("--clip-grad-norm", o.clip_grad_norm);
  s.label_smoothing = parse_number("--label-smoothing", o.label_smoothing);
  s.mask = o.model.mask.empty() ? t.mask : parse_mask_kind(o.model.mask);
  s.rounding = training_rounding(o.backend);
  s.threads = parse_threads(o.threads);
  return s;
}

Json settings_json(const TrainSettings& s) {
  const OptimizerSettings& o = s.optimizer;
  return {{"optimizer", int(o.kind)}, {"lr", o.lr}, {"weight_decay", o.weight_decay ? Json(*o.weight_decay) : Json()},
          {"momentum", o.momentum}, {"dampening", o.dampening}, {"nesterov", o.nesterov}, {"betas", {o.beta1, o.beta2}},
          {"eps", o.eps}, {"schedule", int(s.schedule.kind)}, {"warmup", s.schedule.warmup}, {"steps", s.steps},
          {"batch_size", s.batch_size}, {"shuffle", s.shuffle}, {"seed", s.seed}, {"clip_grad_norm", s.clip_grad_norm},
          {"label_smoothing", s.label_smoothing}, {"mask", mask_kind_name(s.mask)},
          {"rounding", s.rounding == Rounding::exact ? "exact" : "fused"}};
}

std::string items_hash(const std::vector<LabelledItem>& items) {
  batch::Fnv1a h;
  for (const auto& item : items) {
    h.update(item.ids.data(), item.ids.size() * sizeof(int64_t));
    h.update(&item.label, sizeof item.label);
  }
  return h.hex();
}

// Everything a checkpoint must agree with to be continued; --resume names the first key that differs.
Json run_identity(const RunData& d, const TrainSettings& s, const TransformerModel& initial) {
  return {{"model", batch::model_identity(initial)}, {"vocabulary", batch::vocab_identity(&d.vocab)},
          {"training data", items_hash(d.sets.train)}, {"validation data", items_hash(d.sets.val)},
          {"training settings", settings_json(s)}};
}

void check_options(const TrainOptions& o) {
  const LmTaskSpec* lm_task = o.task.empty() ? nullptr : find_lm_task(o.task);
  const bool data_only = lm_task && !lm_task->sample;  // text: its items are --data's
  const bool task_with_text = data_only || (lm_task && lm_task->name == "korean");  // the task's text and the file's
  if (o.task.empty() && o.data.empty()) throw InputError("give --task NAME or --data FILE (one of them)");
  if (!o.task.empty() && !o.data.empty() && !task_with_text)
    throw InputError("give --task NAME or --data FILE (one of them; --task korean and --task text also take --data)");
  if (data_only && o.data.empty())
    throw InputError("--task " + o.task + " trains a character language model of a text: give it with --data FILE");
  if (!o.task.empty() && !data_only && (!o.val_data.empty() || !o.val_fraction.empty()))
    throw InputError("--task brings its own validation items; --val-data and --val-fraction apply to --data");
  if (!o.task.empty() && !o.model.vocab.empty())
    throw InputError("--task brings its own vocabulary; --vocab applies to --data");
  if (!o.val_data.empty() && !o.val_fraction.empty()) throw InputError("give --val-data or --val-fraction, not both");
  if (o.resume && o.checkpoint.empty()) throw InputError("--resume needs --checkpoint DIR");
  if (o.model.encoder_only) throw InputError("--encoder-only: attn train trains the classifier head");
  if (o.model.train) throw InputError("--train is not meaningful here: attn train always trains");
}

// --- language models ---

void check_lm_options(const TrainOptions& o) {
  const ModelOptions& m = o.model;
  const std::pair<const char*, bool> classifier_only[] = {
      {"--vocab-size", !m.vocab_size.empty()}, {"--d-model", !m.d_model.empty()}, {"--num-heads", !m.num_heads.empty()},
      {"--num-layers", !m.num_layers.empty()}, {"--d-ff", !m.d_ff.empty()}, {"--max-len", !m.max_len.empty()},
      {"--num-classes", !m.num_classes.empty()}, {"--dropout", !m.dropout.empty()}, {"--activation", !m.activation.empty()},
      {"--pooling", !m.pooling.empty()}, {"--layer-style", !m.layer_style.empty()}, {"--norm-first", m.norm_first},
      {"--post-norm", m.post_norm}, {"--mask", !m.mask.empty() && m.mask != "padding"}, {"--weights", !m.weights.empty()}};
  for (const auto& [flag, given] : classifier_only)
    if (given) throw InputError(std::string(flag) + " is an option of the tutorial's classifier; a GPT-2 language model "
                                "takes its sizes from its config (n_embd, n_head, n_layer, n_positions, *_pdrop)");
  if (!m.model_dir.empty() && (!m.config_file.empty() || !m.vocab.empty() || !m.merges.empty()))
    throw InputError("--model-dir takes the folder's config.json, weights and tokenizer files: drop --config, --vocab "
                     "and --merges");
  if (o.attention_only && (o.task.empty() || !m.model_dir.empty() || !m.config_file.empty()))
    throw InputError("--attention-only shapes a language task's model from scratch (--task); a --config says it with "
                     "\"n_inner\": 0, and --model-dir's config decides");
  if (!m.model_dir.empty() && !o.task.empty())
    throw InputError("--task " + o.task + " brings its own vocabulary and model; --model-dir fine-tunes on --data");
  if (m.vocab.empty() != m.merges.empty()) throw InputError("a GPT-2 tokenizer needs both --vocab vocab.json and --merges merges.txt");
  if (!o.save_merges.empty() && o.save_vocab.empty()) throw InputError("--save-merges goes with --save-vocab (vocab.json)");
}

std::vector<LmLine> read_lm_lines(const std::string& path, const std::string& inline_text = "") {
  if (path.empty()) return {};
  return parse_lm_data(path, inline_text.empty() ? read_text_file(path, "data file") : inline_text);
}

// The tokenizer of a run without a checkpoint: the task's, --vocab + --merges, or the data's characters.
BytePairTokenizer lm_tokenizer(const TrainOptions& o, const LmTaskSpec* task, const std::string& text) {
  if (task && !task->characters.empty()) return lm_task_tokenizer(*task);
  if (!o.model.vocab.empty()) return BytePairTokenizer::from_files(o.model.vocab, o.model.merges);
  if (text.empty())
    throw InputError(o.data + ": a character vocabulary is built from text, and the data holds ids only: give the "
                     "tokenizer that numbered them (--vocab vocab.json --merges merges.txt)");
  return character_tokenizer(text);
}

// A transformers config.json for a model trained from scratch: GPT-2's, vocab_size the tokenizer's when
// the file leaves it out.
PretrainedConfig lm_config(const TrainOptions& o, const LmTaskSpec* task, const BytePairTokenizer& tokenizer) {
  if (o.model.config_file.empty()) {
    LmTaskSpec shape = *task;
    shape.attention_only = shape.attention_only || o.attention_only;
    return lm_task_config(shape, tokenizer.size());
  }
  Json j = read_json_file(o.model.config_file, "config file");
  if (j.is_object() && !j.contains("vocab_size")) j["vocab_size"] = tokenizer.size();
  const PretrainedConfig c = pretrained_config_from_json(j, o.model.config_file);
  if (c.family != ModelFamily::gpt2)
    throw InputError(o.model.config_file + ": attn train trains GPT-2 language models (model_type \"gpt2\"), not " +
                     family_name(c.family) + " (the tutorial's classifier takes the tutorial's config)");
  if (tokenizer.size() > c.vocab_size)
    throw InputError(o.model.config_file + ": vocab_size " + std::to_string(c.vocab_size) + " is smaller than the tokenizer's " +
                     std::to_string(tokenizer.size()) + " tokens");
  return c;
}

size_t lm_seq_len(const TrainOptions& o, const LmTaskSpec* task, const PretrainedConfig& c) {
  const size_t n = o.seq_len.empty() ? (task ? task->seq_len : std::min<size_t>(c.max_positions, 128))
                                     : parse_size("--seq-len", o.seq_len, 2);
  if (n > c.max_positions)
    throw InputError("--seq-len " + std::to_string(n) + " is more than the model's " + std::to_string(c.max_positions) +
                     " positions (n_positions)");
  return n;
}

void prepare_lm_run(const TrainOptions& o, uint64_t seed, TrainRun& r) {
  check_lm_options(o);
  RunData& d = r.data;
  d.lm_task = o.task.empty() ? nullptr : find_lm_task(o.task);
  const auto train_lines = read_lm_lines(o.data, o.data_text), val_lines = read_lm_lines(o.val_data);
  TorchGenerator gen(seed);
  std::optional<PretrainedModel> model;
  if (!o.model.model_dir.empty()) {
    Pretrained p = load_pretrained_files(pretrained_files_in(o.model.model_dir));
    if (p.model.config.family != ModelFamily::gpt2)
      throw InputError(o.model.model_dir + ": attn train fine-tunes GPT-2 language models, not " + family_name(p.model.config.family));
    d.tokenizer = std::make_shared<const BytePairTokenizer>(std::get<BytePairTokenizer>(std::move(p.tokenizer)));
    model = std::move(p.model);
  } else {
    d.tokenizer = std::make_shared<const BytePairTokenizer>(lm_tokenizer(o, d.lm_task, lm_text(train_lines) + lm_text(val_lines)));
    model = gpt2_init(lm_config(o, d.lm_task, *d.tokenizer), gen);
  }
  const PretrainedConfig& c = model->config;
  const size_t seq_len = lm_seq_len(o, d.lm_task, c);
  if (d.lm_task) d.sets = lm_task_data(*d.lm_task, *d.tokenizer, seed);
  if (!o.data.empty()) {
    const auto items = lm_items(o.data, train_lines, *d.tokenizer, seq_len, c.vocab_size);
    d.sets.train.insert(d.sets.train.end(), items.begin(), items.end());
  }
  if (!o.val_data.empty()) d.sets.val = lm_items(o.val_data, val_lines, *d.tokenizer, seq_len, c.vocab_size);
  if (!o.val_fraction.empty())
    d.sets = split_validation(std::move(d.sets.train), parse_number("--val-fraction", o.val_fraction), seed);
  r.settings = settings_of(o, d, seed);
  r.identity = {{"model", batch::model_identity(Pretrained{*model, *d.tokenizer})},
                {"training data", items_hash(d.sets.train)}, {"validation data", items_hash(d.sets.val)},
                {"training settings", settings_json(r.settings)}};
  r.lm_trainer = std::make_unique<LmTrainer>(std::move(*model), d.sets.train, r.settings, gen);
}

}  // namespace

bool trains_language_model(const TrainOptions& o) {
  if (!o.task.empty()) return find_lm_task(o.task) != nullptr;
  if (!o.model.model_dir.empty()) return true;
  return !o.model.config_file.empty() && is_pretrained_config(read_json_file(o.model.config_file, "config file"));
}

TrainRun prepare_train_run(const TrainOptions& o) {
  check_options(o);
  TrainRun r;
  const uint64_t seed = o.model.seed.empty() ? 0 : parse_seed(o.model.seed);
  r.eval_every = o.eval_every.empty() ? 0 : parse_size("--eval-every", o.eval_every, 1);
  if (trains_language_model(o)) {
    prepare_lm_run(o, seed, r);
    return r;
  }
  if (!o.data_text.empty()) throw InputError("a text trains a language model: choose the task text or korean");
  if (!o.seq_len.empty() || !o.save_merges.empty() || !o.save_model_dir.empty() || o.attention_only)
    throw InputError("--seq-len, --save-merges, --save-model-dir and --attention-only belong to language models (a GPT-2 config, "
                     "--model-dir or a language task)");
  r.data = load_data(o, seed);
  r.settings = settings_of(o, r.data, seed);
  TorchGenerator gen(seed);
  TransformerModel model = build_model(o.model, r.data.config, r.data.vocab.size(), gen);
  r.identity = run_identity(r.data, r.settings, model);
  r.trainer = std::make_unique<Trainer>(std::move(model), r.data.sets.train, r.settings, gen);
  return r;
}

}  // namespace attn::train
