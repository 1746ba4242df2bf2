#include "core/train/train_run.hpp"

#include "core/base/error.hpp"
#include "core/base/parse.hpp"
#include "core/base/threads.hpp"
#include "core/batch/batch.hpp"

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

TrainSettings settings_of(const TrainOptions& o, const RunData& d, uint64_t seed) {
  const TaskSpec* t = d.task;
  TrainSettings s;
  OptimizerSettings& opt = s.optimizer;
  opt.kind = parse_optimizer(o.optimizer.empty() ? (t ? t->optimizer : "adamw") : o.optimizer);
  opt.lr = o.lr.empty() ? (t ? t->lr : 1e-3) : parse_number("--lr", o.lr);
  if (!o.weight_decay.empty()) opt.weight_decay = parse_number("--weight-decay", o.weight_decay);
  if (!o.momentum.empty()) opt.momentum = parse_number("--momentum", o.momentum);
  if (!o.dampening.empty()) opt.dampening = parse_number("--dampening", o.dampening);
  opt.nesterov = o.nesterov;
  if (!o.betas.empty()) std::tie(opt.beta1, opt.beta2) = parse_betas(o.betas);
  if (!o.eps.empty()) opt.eps = parse_number("--eps", o.eps);
  s.batch_size = o.batch_size.empty() ? (t ? t->batch_size : 32) : parse_size("--batch-size", o.batch_size, 1);
  if (!o.epochs.empty())
    s.steps = steps_for_epochs(parse_size("--epochs", o.epochs, 1), d.sets.train.size(), s.batch_size);
  else
    s.steps = o.steps.empty() ? (t ? t->steps : 1000) : parse_size("--steps", o.steps, 1);
  s.schedule = {parse_schedule(o.schedule), parse_size("--warmup", o.warmup, 0), s.steps};
  s.shuffle = !o.no_shuffle;
  s.seed = seed;
  if (!o.clip_grad_norm.empty()) s.clip_grad_norm = parse_number("--clip-grad-norm", o.clip_grad_norm);
  s.label_smoothing = parse_number("--label-smoothing", o.label_smoothing);
  s.mask = o.model.mask.empty() ? (t ? t->mask : MaskKind::padding) : parse_mask_kind(o.model.mask);
  s.rounding = training_rounding(o.backend);
  s.threads = o.threads == "auto" ? hardware_threads() : parse_size("--threads", o.threads, 1);
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
  if (o.task.empty() == o.data.empty()) throw InputError("give --task NAME or --data FILE (one of them)");
  if (!o.task.empty() && (!o.val_data.empty() || !o.val_fraction.empty()))
    throw InputError("--task brings its own validation items; --val-data and --val-fraction apply to --data");
  if (!o.task.empty() && !o.model.vocab.empty())
    throw InputError("--task brings its own vocabulary; --vocab applies to --data");
  if (!o.val_data.empty() && !o.val_fraction.empty()) throw InputError("give --val-data or --val-fraction, not both");
  if (o.resume && o.checkpoint.empty()) throw InputError("--resume needs --checkpoint DIR");
  if (o.model.encoder_only) throw InputError("--encoder-only: attn train trains the classifier head");
  if (o.model.train) throw InputError("--train is not meaningful here: attn train always trains");
}

}  // namespace

TrainRun prepare_train_run(const TrainOptions& o) {
  check_options(o);
  TrainRun r;
  const uint64_t seed = o.model.seed.empty() ? 0 : parse_seed(o.model.seed);
  r.data = load_data(o, seed);
  r.settings = settings_of(o, r.data, seed);
  r.eval_every = o.eval_every.empty() ? 0 : parse_size("--eval-every", o.eval_every, 1);
  TorchGenerator gen(seed);
  TransformerModel model = build_model(o.model, r.data.config, r.data.vocab.size(), gen);
  r.identity = run_identity(r.data, r.settings, model);
  r.trainer = std::make_unique<Trainer>(std::move(model), r.data.sets.train, r.settings, gen);
  return r;
}

}  // namespace attn::train
