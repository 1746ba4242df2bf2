#include "ui/training.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/batch/batch.hpp"
#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#include "core/io/safetensors.hpp"
#include "core/model/circuits.hpp"
#include "core/model/generate.hpp"
#include "core/model/head_detectors.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/train/train_run.hpp"

namespace attn::ui {
namespace {

using Clock = std::chrono::steady_clock;

// The settings' keys and the option each one sets.
struct StringKey {
  const char* key;
  std::string train::TrainOptions::*train;
  std::string ModelOptions::*model;
};
const StringKey string_keys[] = {
    {"task", &train::TrainOptions::task, nullptr},
    {"data", &train::TrainOptions::data, nullptr},
    {"val_data", &train::TrainOptions::val_data, nullptr},
    {"val_fraction", &train::TrainOptions::val_fraction, nullptr},
    {"steps", &train::TrainOptions::steps, nullptr},
    {"epochs", &train::TrainOptions::epochs, nullptr},
    {"batch_size", &train::TrainOptions::batch_size, nullptr},
    {"optimizer", &train::TrainOptions::optimizer, nullptr},
    {"lr", &train::TrainOptions::lr, nullptr},
    {"weight_decay", &train::TrainOptions::weight_decay, nullptr},
    {"momentum", &train::TrainOptions::momentum, nullptr},
    {"dampening", &train::TrainOptions::dampening, nullptr},
    {"betas", &train::TrainOptions::betas, nullptr},
    {"eps", &train::TrainOptions::eps, nullptr},
    {"clip_grad_norm", &train::TrainOptions::clip_grad_norm, nullptr},
    {"schedule", &train::TrainOptions::schedule, nullptr},
    {"warmup", &train::TrainOptions::warmup, nullptr},
    {"label_smoothing", &train::TrainOptions::label_smoothing, nullptr},
    {"eval_every", &train::TrainOptions::eval_every, nullptr},
    {"threads", &train::TrainOptions::threads, nullptr},
    {"backend", &train::TrainOptions::backend, nullptr},
    {"seq_len", &train::TrainOptions::seq_len, nullptr},
    {"seed", nullptr, &ModelOptions::seed},
    {"mask", nullptr, &ModelOptions::mask},
    {"vocab_size", nullptr, &ModelOptions::vocab_size},
    {"d_model", nullptr, &ModelOptions::d_model},
    {"num_heads", nullptr, &ModelOptions::num_heads},
    {"num_layers", nullptr, &ModelOptions::num_layers},
    {"d_ff", nullptr, &ModelOptions::d_ff},
    {"max_len", nullptr, &ModelOptions::max_len},
    {"num_classes", nullptr, &ModelOptions::num_classes},
    {"dropout", nullptr, &ModelOptions::dropout},
    {"activation", nullptr, &ModelOptions::activation},
    {"layer_style", nullptr, &ModelOptions::layer_style},
};
struct FlagKey {
  const char* key;
  bool train::TrainOptions::*train;
  bool ModelOptions::*model;
};
const FlagKey flag_keys[] = {
    {"nesterov", &train::TrainOptions::nesterov, nullptr},
    {"no_shuffle", &train::TrainOptions::no_shuffle, nullptr},
    {"attention_only", &train::TrainOptions::attention_only, nullptr},
    {"norm_first", nullptr, &ModelOptions::norm_first},
    {"post_norm", nullptr, &ModelOptions::post_norm},
};

// A setting's value as the command line would spell it.
std::string option_text(const std::string& key, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned() || v.is_number_float()) return v.dump();
  if (key == "betas" && v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number())
    return v[0].dump() + "," + v[1].dump();
  throw InputError("training setting '" + key + "' must be a number or a string" +
                   (key == "betas" ? " (or [b1, b2])" : ""));
}

std::vector<std::string> item_tokens(const train::LabelledItem& item) {
  if (!item.tokens.empty()) return item.tokens;
  std::vector<std::string> out;
  for (int64_t id : item.ids) out.push_back("#" + std::to_string(id));
  return out;
}

const char* optimizer_name(OptimizerKind k) {
  return k == OptimizerKind::sgd ? "sgd" : k == OptimizerKind::adam ? "adam" : "adamw";
}

Json effective_json(const train::TrainOptions& o, const train::TrainRun& r) {
  const train::TrainSettings& s = r.settings;
  Json j = {{"steps", s.steps}, {"batch_size", s.batch_size}, {"optimizer", optimizer_name(s.optimizer.kind)},
            {"lr", s.optimizer.lr}, {"weight_decay", weight_decay_of(s.optimizer)},
            {"momentum", s.optimizer.momentum}, {"betas", {s.optimizer.beta1, s.optimizer.beta2}},
            {"eps", s.optimizer.eps}, {"clip_grad_norm", s.clip_grad_norm},
            {"schedule", s.schedule.kind == ScheduleKind::constant ? "constant" : "cosine"},
            {"warmup", s.schedule.warmup}, {"label_smoothing", s.label_smoothing}, {"no_shuffle", !s.shuffle},
            {"eval_every", r.eval_every}, {"seed", s.seed}, {"mask", mask_kind_name(s.mask)}};
  if (r.lm_trainer) {  // its sizes come from its config: shown, not settings
    const PretrainedConfig& c = r.lm_trainer->model().config;
    size_t seq_len = 0;
    for (const auto& item : r.data.sets.train) seq_len = std::max(seq_len, item.ids.size());
    j.update({{"seq_len", seq_len}, {"n_embd", c.hidden_size}, {"n_head", c.num_heads}, {"n_layer", c.num_layers},
              {"n_positions", c.max_positions}, {"vocab_size", c.vocab_size}});
    if (!o.task.empty()) j["attention_only"] = c.intermediate_size == 0;  // a task's model's shape, a setting
  } else {
    const TransformerConfig& c = r.data.config;
    j.update({{"d_model", c.d_model}, {"num_heads", c.num_heads}, {"num_layers", c.num_layers}, {"d_ff", c.ff_width()},
              {"max_len", c.max_len}, {"num_classes", c.num_classes}, {"dropout", c.dropout},
              {"activation", c.activation == Activation::relu ? "relu" : "gelu"}, {"norm_first", c.norm_first}});
  }
  if (!o.task.empty()) j["task"] = o.task;
  if (!o.data.empty() && o.data_text.empty()) j["data"] = o.data;
  return j;
}

// Where a language model's sample starts: after the first token of a repeated segment's second copy, after
// "|" (copy, reverse), else after a quarter of the item (at least one token).
size_t sample_prompt_length(const train::LabelledItem& item, const PretrainedTokenizer& tokenizer) {
  const std::vector<int64_t>& ids = item.ids;
  if (train::has_repeat(item)) return item.repeat.second + 1;
  for (size_t i = 0; i + 1 < ids.size(); ++i)
    if (tokenizer_token(tokenizer, ids[i]) == "|") return i + 1;
  return std::max<size_t>(1, ids.size() / 4);
}

std::string decoded(const PretrainedTokenizer& tokenizer, const int64_t* ids, size_t n) {
  std::vector<std::string> tokens;
  for (size_t i = 0; i < n; ++i) tokens.push_back(tokenizer_token(tokenizer, ids[i]));
  return byte_level_text(tokens);
}

std::atomic<uint64_t> next_snapshot_id{1};

}  // namespace

train::TrainOptions training_options(const Json& settings) {
  if (!settings.is_object()) throw InputError("training settings must be a JSON object");
  train::TrainOptions o;
  o.model.mask = "";  // the task's mask, else padding (as attn train)
  // Every core but the one the page or window draws on (the bytes are the same on any number): with all
  // of them, on 2 cores, the induction task trained 10 times slower in Chromium, its two training
  // threads waiting on each other while the page drew.
  if (threads_available) o.threads = std::to_string(std::max<size_t>(1, hardware_threads() - 1));
  for (const auto& [key, value] : settings.items()) {
    bool known = key == "text";
    if (known) {
      if (!value.is_string() || value.get<std::string>().empty())
        throw InputError("training setting 'text' must be a text to train on (not empty)");
      o.data_text = value.get<std::string>();
      o.data = "text.txt";  // its name in messages; .txt: plain text
    }
    for (const StringKey& k : string_keys)
      if (key == k.key) {
        (k.train ? o.*k.train : o.model.*k.model) = option_text(key, value);
        known = true;
      }
    for (const FlagKey& k : flag_keys)
      if (key == k.key) {
        if (!value.is_boolean()) throw InputError("training setting '" + key + "' must be true or false");
        (k.train ? o.*k.train : o.model.*k.model) = value.get<bool>();
        known = true;
      }
    if (!known)
      throw InputError("unknown training setting '" + key + "' (attn train's options without dashes: task, steps, "
                       "batch_size, optimizer, lr, seed, d_model, num_heads, num_layers, eval_every, seq_len, text, …)");
  }
  if (!threads_available && !o.threads.empty() && o.threads != "1")
    throw InputError("threads: this build has no threads; training runs on one");
  if (o.task.empty() && o.data.empty()) o.task = "duplicate";  // {} is the Train tab's first task
  if (!o.data_text.empty() && settings.contains("data"))
    throw InputError("give the training setting 'text' or 'data', not both");
  return o;
}

std::vector<std::pair<std::string, std::string>> training_hash_pairs(const Json& settings) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& [key, value] : settings.items())  // nlohmann's objects iterate in key order
    if (key != "data") pairs.emplace_back("train." + key, value.is_boolean() ? value.dump() : option_text(key, value));
  return pairs;
}

Json training_from_hash_value(const std::string& key, const std::string& value) {
  if (key == "data")  // training_hash_pairs leaves it out: a link cannot carry a file
    throw InputError("train.data cannot come from a link: choose the file with Training data…");
  if (key == "text") return value;  // a text, even one that reads as a number
  for (const FlagKey& k : flag_keys)
    if (key == k.key) {
      if (value != "true" && value != "false") throw InputError("train." + key + " must be true or false");
      return value == "true";
    }
  for (const StringKey& k : string_keys)
    if (key == k.key) {
      const Json number = Json::parse(value, nullptr, false);
      return number.is_number() ? number : Json(value);
    }
  throw InputError("unknown training setting 'train." + key + "'");
}

Json status_json(const TrainingStatus& s) {
  return {{"step", s.step}, {"steps", s.steps}, {"running", s.running}, {"loss", s.step ? Json(s.loss) : Json()},
          {"accuracy", s.step ? Json(s.accuracy) : Json()}, {"val_loss", s.val_loss ? Json(*s.val_loss) : Json()},
          {"val_accuracy", s.val_accuracy ? Json(*s.val_accuracy) : Json()}, {"steps_per_s", s.steps_per_s},
          {"threads", s.threads}, {"error", s.error}};
}

// --- the run ---

struct Training::Run {
  train::TrainOptions options;
  train::TrainRun r;
  std::vector<train::LabelledItem> replay;
  // A language model's: the model and tokenizer its samples are generated with (the model copied in at
  // each sample), and the sample's prompt.
  std::optional<Pretrained> sampler;
  std::string sample_prompt;
  size_t sample_tokens = 0;
  train::Training& trainer() const { return r.training(); }
  size_t snapshot_every = 1;
  // What a spread step has left: the step itself after its first part, its evaluation (a batch a part)
  // and its snapshot; and what it has done, published together once nothing is left.
  bool step_begun = false;
  std::unique_ptr<train::Evaluation> evaluation;
  std::optional<bool> snapshot;  // replay
  bool pending() const { return step_begun || evaluation || snapshot; }
  std::optional<train::StepRecord> record;
  std::optional<train::EvalRecord> eval;
  std::shared_ptr<const Snapshot> taken;
  bool taken_replay = false;
  Clock::time_point last_live = Clock::now();
  Clock::time_point rate_start = Clock::now();
  size_t rate_first_step = 0;
};

Training::Training() {
  if (threads_available) worker_ = std::thread([this] { worker_loop(); });
}

Training::~Training() { stop_worker(); }

bool Training::has_worker() { return threads_available; }

void Training::stop_worker() {
  pause();
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void Training::configure(const Json& settings) {
  auto run = std::make_unique<Run>();
  run->options = training_options(settings);
  run->r = train::prepare_train_run(run->options);
  train::TrainRun& r = run->r;
  if (run->options.eval_every.empty()) r.eval_every = std::max<size_t>(1, r.settings.steps / default_evaluations);
  const auto& pool = r.data.sets.val.empty() ? r.data.sets.train : r.data.sets.val;
  run->replay.assign(pool.begin(), pool.begin() + std::ptrdiff_t(std::min(replay_items, pool.size())));
  size_t layers = r.data.config.num_layers, heads = r.data.config.num_heads;
  std::string expected;
  if (r.lm_trainer) {
    const PretrainedModel& m = r.lm_trainer->model();
    layers = m.config.num_layers, heads = m.config.num_heads;
    run->sampler = Pretrained{m, *r.data.tokenizer};
    const train::LabelledItem& first_item = run->replay.front();
    const size_t n = sample_prompt_length(first_item, run->sampler->tokenizer);
    run->sample_prompt = decoded(run->sampler->tokenizer, first_item.ids.data(), n);
    run->sample_tokens = first_item.ids.size() - n;
    expected = decoded(run->sampler->tokenizer, first_item.ids.data() + n, run->sample_tokens);
  }
  size_t bytes = 0;
  for (const auto& item : run->replay) bytes += layers * heads * item.ids.size() * item.ids.size() * 4;
  const size_t cap = std::clamp<size_t>(max_snapshot_bytes / std::max<size_t>(bytes, 1), 3, max_snapshots);
  run->snapshot_every = std::max<size_t>(1, (r.settings.steps + cap - 3) / (cap - 2));
  auto first = take_snapshot(*run, 0, true);

  pause();
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  settings_ = settings;
  effective_ = effective_json(run->options, r);
  replay_.clear();
  for (const auto& item : run->replay) {
    std::vector<std::string> tokens = item_tokens(item);
    std::string text;
    if (run->sampler) {
      for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = token_label(*run->sampler, item.ids[i]);
      text = decoded(run->sampler->tokenizer, item.ids.data(), item.ids.size());
    }
    replay_.push_back({std::move(tokens), item.label, std::move(text)});
  }
  layers_ = layers;
  heads_ = heads;
  classes_ = r.data.config.num_classes;
  task_ = r.data.task ? r.data.task->name : r.data.lm_task ? r.data.lm_task->name : "";
  language_model_ = r.lm_trainer != nullptr;
  sample_prompt_ = run->sample_prompt;
  sample_expected_ = expected;
  {
    std::lock_guard<std::mutex> lock(view_mutex_);
    published_ = View();
    published_.run = ++run_id_;
    published_.snapshots = {first};
    published_.live = first;
    published_.status.steps = r.settings.steps;
    published_.status.threads = r.training().threads();
    published_.generation = ++generation_;
  }
  run_ = std::move(run);
}

namespace {

// The classifier's attention on each replay item, and its prediction.
void classifier_snapshot(const TransformerModel& model, const std::vector<train::LabelledItem>& replay, MaskKind mask,
                         Snapshot& s) {
  const TransformerConfig& c = model.config;
  for (const auto& item : replay) {
    const size_t n = item.ids.size();
    const Trace t = classify(model, item.ids, 1, n, mask, nullptr);
    Tensor w = xt::zeros<float>({c.num_layers, c.num_heads, n, n});
    for (size_t l = 0; l < c.num_layers; ++l) {
      const Tensor& layer = t.at("layers." + std::to_string(l) + ".self_attn.attention_weights");
      std::copy(layer.begin(), layer.end(), w.begin() + std::ptrdiff_t(l * c.num_heads * n * n));
    }
    s.weights.push_back(std::move(w));
    const Tensor& logits = t.at("logits");
    const size_t best = size_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v - logits(best)));
    s.predicted.push_back(int64_t(best));
    s.probability.push_back(float(1.0 / sum));
  }
}

// A language model's attention on the replay items (one batch, each item's [layers, heads, n, n] cut
// out of the padded [B, H, S, S]) and every head's detector scores.
void language_model_snapshot(const PretrainedModel& model, const std::vector<train::LabelledItem>& replay, Snapshot& s) {
  std::vector<size_t> all(replay.size());
  std::iota(all.begin(), all.end(), size_t(0));
  const PretrainedInput in = train::lm_batch(replay, all);
  const Trace trace = gpt2_forward(model, in);
  const size_t L = model.config.num_layers, H = model.config.num_heads, S = in.seq;
  for (size_t b = 0; b < in.batch; ++b) {
    const size_t n = in.lengths[b];
    Tensor w = Tensor::from_shape({L, H, n, n});
    for (size_t l = 0; l < L; ++l) {
      const float* src = trace.at(attention_weights_stage(ModelFamily::gpt2, l)).data();
      for (size_t h = 0; h < H; ++h)
        for (size_t i = 0; i < n; ++i)
          std::copy_n(src + ((b * H + h) * S + i) * S, n, w.data() + ((l * H + h) * n + i) * n);
    }
    s.weights.push_back(std::move(w));
  }
  const auto scores = detect_heads(model_stages(model.config), trace, in.ids, in.lengths,
                                   {HeadKind::previous_token, HeadKind::duplicate_token, HeadKind::induction}, {});
  const auto as_tensor = [](const std::vector<double>& v, const Shape& shape) {
    Tensor t = Tensor::from_shape(shape);
    std::transform(v.begin(), v.end(), t.begin(), [](double x) { return float(x); });
    return t;
  };
  for (size_t k = 0; k < scores.size(); ++k) s.head_scores[k] = as_tensor(scores[k].scores, {L, H});
  if (train::has_repeats(replay))
    s.head_scores[3] = as_tensor(train::prefix_matching_scores(model, trace, in, replay), {L, H});
  if (L < 2) return;
  const CompositionKind kinds[] = {CompositionKind::q, CompositionKind::k, CompositionKind::v};
  for (size_t k = 0; k < 3; ++k)
    s.head_scores[first_composition_kind + k] =
        as_tensor(composition_scores(model.layers, H, {true, true}, kinds[k]).scores, {L * H, L * H});
}

}  // namespace

std::shared_ptr<const Snapshot> Training::take_snapshot(Run& run, size_t step, bool replay) const {
  auto s = std::make_shared<Snapshot>();
  s->id = next_snapshot_id++;
  s->step = step;
  if (!run.sampler) {
    classifier_snapshot(run.r.trainer->model(), run.replay, run.r.settings.mask, *s);
    return s;
  }
  const PretrainedModel& model = run.r.lm_trainer->model();
  language_model_snapshot(model, run.replay, *s);
  if (replay && run.sample_tokens) {
    run.sampler->model = model;
    const Generation g = generate(*run.sampler, run.sample_prompt, run.sample_tokens, SamplingOptions{0.0, 0, 1.0, 0});
    s->sample = g.text.substr(std::min(g.text.size(), run.sample_prompt.size()));
  }
  return s;
}

bool Training::step_once(bool worker, bool spread) {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_ || (worker && !playing_ && !run_->pending())) return false;  // paused (or reconfigured) while it waited
  Run& run = *run_;
  if (run.pending() && (spread || run.step_begun)) {  // a part now; or (run_steps after a pause) the begun step
    do
      if (!finish_part(run)) return false;
    while (!spread && run.pending());
  } else {
    while (run.pending())  // a finished step's evaluation or snapshot left by a pause: published first
      if (!finish_part(run)) return false;
    if (run.record) publish(run, true);
    if (!advance(run, spread)) return false;
    while (!spread && run.pending()) finish_part(run);
  }
  const bool more = run.pending() || run.trainer().steps_done() < run.r.settings.steps;
  if (!run.pending()) publish(run, more);
  return more;
}

void Training::publish(Run& run, bool more) {
  const double seconds = std::chrono::duration<double>(Clock::now() - run.rate_start).count();
  std::lock_guard<std::mutex> lock(view_mutex_);
  View& v = published_;
  TrainingStatus& s = v.status;
  if (run.record) {
    v.steps.push_back(*run.record);
    s.step = run.record->step;
    s.loss = run.record->loss;
    s.accuracy = run.record->accuracy;
    if (seconds > 0) s.steps_per_s = double(s.step - run.rate_first_step) / seconds;
  }
  if (run.eval) {
    v.evals.push_back(*run.eval);
    s.val_loss = double(run.eval->loss);
    s.val_accuracy = run.eval->accuracy;
  }
  if (run.taken) v.live = run.taken;
  if (run.taken && run.taken_replay) v.snapshots.push_back(run.taken);
  run.record.reset(), run.eval.reset(), run.taken.reset();
  if (!more) playing_ = false;
  s.running = playing_;
  v.generation = ++generation_;
}

bool Training::advance(Run& run, bool begin) {
  train::Training& trainer = run.trainer();
  const size_t total = run.r.settings.steps;
  if (!run.step_begun && trainer.steps_done() >= total) return false;
  train::StepRecord record;
  try {
    if (begin) {
      trainer.begin_step();
      run.step_begun = true;
      return true;
    }
    run.step_begun = false;
    record = trainer.step();
  } catch (const InputError& e) {  // a loss that is not finite: the run stops here
    run.step_begun = false;
    std::lock_guard<std::mutex> lock(view_mutex_);
    published_.status.error = e.what();
    published_.status.running = false;
    playing_ = false;
    published_.generation = ++generation_;
    return false;
  }
  const size_t done = trainer.steps_done();
  if (!run.r.data.sets.val.empty() && (done == total || done % run.r.eval_every == 0))
    run.evaluation = trainer.begin_evaluation(run.r.data.sets.val);
  const auto now = Clock::now();
  const bool replay = done % run.snapshot_every == 0 || done == total;
  if (replay || std::chrono::duration<double, std::milli>(now - run.last_live).count() >= live_interval_ms) {
    run.snapshot = replay;
    run.last_live = now;
  }
  run.record = record;
  return true;
}

bool Training::finish_part(Run& run) {
  if (run.step_begun) return advance(run, false);
  const size_t done = run.trainer().steps_done();
  if (run.evaluation) {
    run.evaluation->next();
    if (!run.evaluation->done()) return true;
    run.eval = run.evaluation->result();
    run.eval->step = done;
    run.evaluation.reset();
    return true;
  }
  run.taken_replay = *run.snapshot;
  run.snapshot.reset();
  run.taken = take_snapshot(run, done, run.taken_replay);
  return true;
}

void Training::play() {
  {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    if (!run_ || run_->trainer().steps_done() >= run_->r.settings.steps) return;
    run_->rate_start = Clock::now();
    run_->rate_first_step = run_->trainer().steps_done();
    {
      std::lock_guard<std::mutex> lock(view_mutex_);
      if (!published_.status.error.empty()) return;
      published_.status.running = true;
      published_.generation = ++generation_;
    }
    std::lock_guard<std::mutex> wake_lock(wake_mutex_);
    playing_ = true;
  }
  wake_.notify_all();
}

void Training::pause() {
  if (!playing_.exchange(false)) return;
  std::lock_guard<std::mutex> run_lock(run_mutex_);  // the step in flight ends first
  std::lock_guard<std::mutex> lock(view_mutex_);
  published_.status.running = false;
  published_.generation = ++generation_;
}

std::vector<Json> Training::run_steps(size_t n) {
  pause();
  size_t first = 0;
  {
    std::lock_guard<std::mutex> run_lock(run_mutex_);  // waits for the worker's step in flight
    if (!run_) throw InputError("no training run: configure one first");
    first = run_->trainer().steps_done();
    run_->rate_start = Clock::now();
    run_->rate_first_step = first;
  }
  for (size_t i = 0; i < n && step_once(false, false);) ++i;
  return log(first);
}

void Training::pump(double budget_ms) {
  if (threads_available) return;
  const auto start = Clock::now();
  double last_ms = 0;
  for (;;) {
    const auto before = Clock::now();
    if (!step_once(true, true)) break;
    const auto after = Clock::now();
    last_ms = std::chrono::duration<double, std::milli>(after - before).count();
    if (std::chrono::duration<double, std::milli>(after - start).count() + last_ms > budget_ms) break;
  }
}

void Training::worker_loop() {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || playing_.load(); });
    if (quit_) return;
    lock.unlock();
    while (playing_ && step_once(true, false)) {
    }
    lock.lock();
  }
}

TrainingStatus Training::status() const {
  std::lock_guard<std::mutex> lock(view_mutex_);
  return published_.status;
}

std::vector<Json> Training::log(size_t after_step) const {
  std::lock_guard<std::mutex> lock(view_mutex_);
  const auto& steps = published_.steps;
  const auto& evals = published_.evals;
  auto s = std::partition_point(steps.begin(), steps.end(), [&](const auto& r) { return r.step <= after_step; });
  auto e = std::partition_point(evals.begin(), evals.end(), [&](const auto& r) { return r.step <= after_step; });
  std::vector<Json> out;
  for (; s != steps.end(); ++s) {
    out.push_back(train::record_json(*s));
    if (e != evals.end() && e->step == s->step) out.push_back(train::record_json(*e++));
  }
  return out;
}

void Training::update_view(View& view) const {
  std::lock_guard<std::mutex> lock(view_mutex_);
  if (view.generation == published_.generation) return;
  const View& p = published_;
  if (view.run != p.run) {
    view = p;
    return;
  }
  view.steps.insert(view.steps.end(), p.steps.begin() + std::ptrdiff_t(std::min(view.steps.size(), p.steps.size())),
                    p.steps.end());
  view.evals.insert(view.evals.end(), p.evals.begin() + std::ptrdiff_t(std::min(view.evals.size(), p.evals.size())),
                    p.evals.end());
  if (view.snapshots.size() != p.snapshots.size()) view.snapshots = p.snapshots;
  view.live = p.live;
  view.status = p.status;
  view.generation = p.generation;
}

Training::ModelFilesBytes Training::model_files() const {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_) throw InputError("no trained model yet");
  if (const train::LmTrainer* lm = run_->r.lm_trainer.get()) {
    const BytePairTokenizer& tokenizer = *run_->r.data.tokenizer;
    return {safetensors_bytes("model.safetensors", gpt2_state_dict(lm->model()), {{"format", "pt"}}),
            gpt2_config_json(lm->model().config).dump(2) + "\n", tokenizer.vocab_json(), tokenizer.merges_txt()};
  }
  const TransformerModel& m = run_->r.trainer->model();
  return {safetensors_bytes("model.safetensors", state_dict(m)), config_to_json(m.config).dump(2) + "\n",
          batch::vocab_json(run_->r.data.vocab), ""};
}

std::shared_ptr<const TransformerModel> Training::model_copy() const {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_ || !run_->r.trainer) return nullptr;
  return std::make_shared<const TransformerModel>(run_->r.trainer->model());
}

std::optional<Pretrained> Training::language_model_copy() const {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_ || !run_->r.lm_trainer) return std::nullopt;
  return Pretrained{run_->r.lm_trainer->model(), *run_->r.data.tokenizer};
}

std::optional<Training::AblatedAccuracy> Training::ablated_accuracy(const std::vector<HeadIndex>& heads) const {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_) return std::nullopt;
  const train::Training& trainer = run_->trainer();
  const auto& items = run_->r.data.sets.val.empty() ? run_->r.data.sets.train : run_->r.data.sets.val;
  const Ablation ablation{heads, {}, AblationKind::zero};
  const ModelStages stages = run_->r.lm_trainer ? model_stages(run_->r.lm_trainer->model().config)
                                                : model_stages(run_->r.trainer->model().config);
  check_ablation(ablation, stages);
  const Hooks hooks = ablation_hooks(stages, ablation, nullptr, {});
  const train::EvalRecord plain = trainer.evaluate(items), ablated = trainer.evaluate(items, &hooks);
  return AblatedAccuracy{trainer.steps_done(), plain.accuracy,         ablated.accuracy,       plain.repeated_accuracy,
                         ablated.repeated_accuracy, plain.induction_score, ablated.induction_score};
}

std::optional<Vocab> Training::vocab() const {
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (!run_ || run_->r.lm_trainer) return std::nullopt;
  return run_->r.data.vocab;
}

}  // namespace attn::ui
