// The Train tab's run without any window: attn train's options from a JSON object of settings, the
// run they build (core/train/train_run.hpp, the code attn train runs, so the same settings give the losses of
// `attn train --log` bit for bit), its log, and snapshots of the attention of a few validation items
// as the model learns. Natively the steps run on a worker thread; where there are no threads (the
// WebAssembly build) the UI calls pump() once per frame, which steps for at most a few milliseconds.
// tests/test_ui.cpp tests it headless.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/json.hpp"
#include "core/base/tensor.hpp"
#include "core/model/interventions.hpp"
#include "core/model/pretrained_files.hpp"
#include "core/train/train.hpp"
#include "core/train/train_run.hpp"

namespace attn::ui {

// The settings' keys: attn train's option names without dashes, inner dashes as underscores ("task",
// "steps", "batch_size", "lr", "seq_len", …, and the classifier's: "d_model", "num_heads", "mask", …).
// Numbers, strings and booleans (the flags: "no_shuffle", "nesterov", "norm_first", "post_norm"); "betas"
// also as [b1, b2]; "text": a language model's training text itself (with the task text or korean), as
// --data would read it from a .txt file. Neither task nor data: the duplicate task. Throws InputError for an unknown key or a value of the
// wrong type; the run checks the values.
train::TrainOptions training_options(const Json& settings);
// The settings without "data" (a file cannot travel in a link) as URL-hash pairs "train.KEY=VALUE"
// (percent-encoded, in key order), and back: values that parse as JSON numbers or booleans are those.
std::vector<std::pair<std::string, std::string>> training_hash_pairs(const Json& settings);
Json training_from_hash_value(const std::string& key, const std::string& value);

// What the Train tab keeps of the attention of the first `replay_items` validation items (the
// training items when there are none): at step 0, every snapshot_every steps and at the last step, at
// most max_snapshots snapshots and max_snapshot_bytes in all (snapshot_every is chosen at the start so
// that the whole run fits); plus the latest ("live") one, taken at most every live_interval_ms.
inline constexpr size_t replay_items = 8;
inline constexpr size_t max_snapshots = 200;
inline constexpr size_t max_snapshot_bytes = size_t(32) << 20;
inline constexpr double live_interval_ms = 100;
// When the settings give no eval_every, the tab evaluates every steps / default_evaluations steps.
inline constexpr size_t default_evaluations = 40;

// The head detectors a language model's snapshots score every head with: TransformerLens's three
// (core/model/head_detectors.hpp) on the replay items, and the prefix-matching score the log's
// induction_score is the best of (core/train/train_lm.hpp; only on items with a repeated segment), each
// [layers, heads]; then how every pair of heads composes (core/model/circuits.hpp: Q, K, V), each
// [layers·heads, layers·heads], the earlier head (the writer) a row, the later (the reader) a column.
inline constexpr size_t head_score_kinds = 7, first_composition_kind = 4;
inline constexpr const char* head_score_names[head_score_kinds] = {
    "previous_token", "duplicate_token", "induction", "prefix_matching", "q_composition", "k_composition", "v_composition"};

struct Snapshot {
  uint64_t id = 0;  // unique in the process: a texture's cache key
  size_t step = 0;
  std::vector<Tensor> weights;      // per replay item: [layers, heads, S, S]
  std::vector<int64_t> predicted;   // the classifier's, per replay item
  std::vector<float> probability;   // of the predicted class
  // A language model's: per head_score_names, its scores (empty: not measured; composition needs two
  // layers); and, in the replay's snapshots, the greedy continuation of sample_prompt().
  Tensor head_scores[head_score_kinds];
  std::string sample;
};
struct ReplayItem {
  std::vector<std::string> tokens;
  int64_t label = 0;    // the classifier's
  std::string text;     // a language model's: the item decoded
};

struct TrainingStatus {
  size_t step = 0, steps = 0, threads = 1;
  bool running = false;
  float loss = 0;
  double accuracy = 0, steps_per_s = 0;
  std::optional<double> val_loss, val_accuracy;
  std::string error;  // why the run stopped early (a loss that is not finite), else ""
};
// {step, steps, running, loss, accuracy, val_loss, val_accuracy, steps_per_s, threads, error}; nulls before any.
Json status_json(const TrainingStatus& s);

class Training {
 public:
  Training();
  ~Training();
  Training(const Training&) = delete;
  Training& operator=(const Training&) = delete;

  // Builds a new run from the settings, paused at step 0; throws InputError (keeping the old run).
  void configure(const Json& settings);
  bool configured() const { return run_ != nullptr; }
  const Json& settings() const { return settings_; }
  // Every setting the run uses, the task's and attn train's defaults filled in.
  const Json& effective_settings() const { return effective_; }
  const std::vector<ReplayItem>& replay() const { return replay_; }
  size_t num_layers() const { return layers_; }
  size_t num_heads() const { return heads_; }
  const std::string& task() const { return task_; }  // the built-in task's name, or "" (a file)
  size_t num_classes() const { return classes_; }
  // A GPT-2 language model's run: its samples continue the first replay item's beginning (the first half
  // and one token of a repeated item, up to "|" of copy and reverse, else a quarter), greedily, for as
  // many tokens as the item has after it (sample_expected()).
  bool language_model() const { return language_model_; }
  const std::string& sample_prompt() const { return sample_prompt_; }
  const std::string& sample_expected() const { return sample_expected_; }

  // Play runs steps until the last one (on the worker, or in pump()); pause returns after the step in flight.
  void play();
  void pause();
  // n steps on the caller's thread (pausing first); returns their log records in `attn train --log` form.
  std::vector<Json> run_steps(size_t n);
  // Without a worker thread: while playing, steps and their parts until `budget_ms` has passed (at least one).
  void pump(double budget_ms);
  static bool has_worker();

  // What the run has published (thread-safe); generation() grows with every change.
  uint64_t generation() const { return generation_.load(); }
  TrainingStatus status() const;
  // The records after step `after_step`, as `attn train --log` writes them (each evaluation after its step).
  std::vector<Json> log(size_t after_step = 0) const;
  // Copies what changed since the last call into the caller's buffers (all of it when the run changed).
  struct View {
    uint64_t generation = 0, run = 0;
    std::vector<train::StepRecord> steps;
    std::vector<train::EvalRecord> evals;
    std::vector<std::shared_ptr<const Snapshot>> snapshots;  // replay, in step order
    std::shared_ptr<const Snapshot> live;
    TrainingStatus status;
  };
  void update_view(View& view) const;
  // The trained model's files: state_dict (safetensors), config and vocabulary (JSON), as attn train
  // --save-weights/--save-config/--save-vocab writes them; and the model itself.
  // A language model's: a Hugging Face GPT-2 folder's (model.safetensors, config.json, vocab.json and
  // merges.txt, as attn train --save-model-dir writes them).
  struct ModelFilesBytes {
    std::string weights, config, vocab, merges;
  };
  ModelFilesBytes model_files() const;
  std::shared_ptr<const TransformerModel> model_copy() const;  // null for a language model, and
  std::optional<Pretrained> language_model_copy() const;  // none for the classifier
  // The current model's validation accuracy (the training items' when there are none) as it is and with
  // `heads` zero-ablated (core/model/interventions.hpp): what those heads do for the task. None without a run.
  struct AblatedAccuracy {
    size_t step = 0;
    double accuracy = 0, ablated = 0;
    // On repeated segments (the induction tasks): the segments' accuracy and the best induction score, as
    // they are and ablated (ablating the previous-token head breaks the induction head's pattern).
    std::optional<double> repeated, repeated_ablated, induction, induction_ablated;
  };
  std::optional<AblatedAccuracy> ablated_accuracy(const std::vector<HeadIndex>& heads) const;
  std::optional<Vocab> vocab() const;

 private:
  struct Run;
  void stop_worker();
  void worker_loop();
  // One step with its evaluation and snapshot when due; with `spread` (pump), one part of that a call: the
  // step's first part (a language model's forward pass), its rest, an evaluation's batch, or the
  // snapshot. False when the run is over or failed, or, for the worker (and pump), paused with nothing
  // left of the last step.
  bool step_once(bool worker, bool spread);
  bool advance(Run& run, bool begin);  // the step (or its first part); false: the run is over or failed
  bool finish_part(Run& run);          // what the step left, a part; false: the step failed
  void publish(Run& run, bool more);   // the step with its evaluation and snapshot; `more`: steps remain
  std::shared_ptr<const Snapshot> take_snapshot(Run& run, size_t step, bool replay) const;

  Json settings_, effective_;
  std::vector<ReplayItem> replay_;
  size_t layers_ = 0, heads_ = 0, classes_ = 0;
  std::string task_;
  bool language_model_ = false;
  std::string sample_prompt_, sample_expected_;
  std::unique_ptr<Run> run_;  // touched under run_mutex_ only
  mutable std::mutex run_mutex_;
  // Published for the UI, under view_mutex_.
  mutable std::mutex view_mutex_;
  View published_;
  std::atomic<uint64_t> generation_{1};
  uint64_t run_id_ = 0;
  std::atomic<bool> playing_{false};
  // The worker (native only).
  std::thread worker_;
  std::condition_variable wake_;
  std::mutex wake_mutex_;
  bool quit_ = false;
};

}  // namespace attn::ui
