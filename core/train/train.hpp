// Training the classifier, one optimizer step at a time, as a plain PyTorch loop does it
// (tests/train_loop.py): per step, the batch (train_data's BatchOrder), model.train() forward drawing
// dropout from the generator initialisation drew from, F.cross_entropy, backward, the gradient norm
// (clipped when asked), optimizer.step() at the schedule's learning rate. No files and no threads here:
// the CLI and the playground own those. A checkpoint is everything a later step depends on, so a
// restored trainer continues to the same bits.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/kernels/fast_kernels.hpp"
#include "core/base/json.hpp"
#include "core/train/optim.hpp"
#include "core/torch/rng.hpp"
#include "core/io/safetensors.hpp"
#include "core/base/threads.hpp"
#include "core/train/train_data.hpp"
#include "core/model/transformer.hpp"

namespace attn::train {

struct TrainSettings {
  OptimizerSettings optimizer;
  Schedule schedule;  // its total is the run's steps
  size_t steps = 1000, batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;  // the batch order's generator (train_data.hpp); initialisation's seed is the model's
  double clip_grad_norm = 0;  // 0: not clipped
  double label_smoothing = 0;
  MaskKind mask = MaskKind::padding;
  // The products' rounding: exact (PyTorch's bits, the parity the tests check) or fused (the fast path,
  // within the tolerance docs/training.md states); and the threads they are spread over (the exact
  // path's bits do not depend on it).
  Rounding rounding = Rounding::exact;
  size_t threads = 1;
};
// Throws InputError naming a setting out of range (steps, batch size, clipping, label smoothing, the
// optimizer's own).
void validate(const TrainSettings& settings);

// One training step: its 1-based number, the batch's mean loss and accuracy (before the update), the
// learning rate it used, and the gradient norm (before clipping).
struct StepRecord {
  size_t step = 0;
  float loss = 0;
  double accuracy = 0, lr = 0, grad_norm = 0;
};
struct EvalRecord {
  size_t step = 0;
  float loss = 0;
  double accuracy = 0;
  // A language model on repeated segments (the induction tasks): the loss and accuracy on the segments'
  // predictable tokens, the best induction (prefix-matching) score of its heads and the best previous-token
  // score of its first layer's (core/train/train_lm.hpp).
  std::optional<float> repeated_loss;
  std::optional<double> repeated_accuracy, induction_score, previous_token_score;
};
// The --log lines: {"step", "loss", "accuracy", "lr", "grad_norm"} and {"step", "val_loss", "val_accuracy"}
// (with "val_repeated_loss", "val_repeated_accuracy", "induction_score" and "previous_token_score" when measured).
Json record_json(const StepRecord& r);
Json record_json(const EvalRecord& r);

// Loss and accuracy of a model over items in evaluation mode (no dropout), `batch_size` at a time,
// the products computed as the ProductMode in scope says; `hooks` intervene (an ablation's).
EvalRecord evaluate(const TransformerModel& model, const std::vector<LabelledItem>& items, MaskKind mask,
                    size_t batch_size, const Hooks* hooks = nullptr);

// An evaluation a part at a time (a batch), so that a page without threads can draw between the parts;
// evaluate() is one run to the end, so both give the same bits. The model must not change meanwhile.
class Evaluation {
 public:
  virtual ~Evaluation() = default;
  virtual bool done() const = 0;
  virtual void next() = 0;  // the next part
  virtual EvalRecord result() const = 0;
};

// What a run's loop, log and checkpoints need of a trainer, and the state every trainer keeps besides
// its model: the classifier's (Trainer, below) or a language model's (core/train/train_lm.hpp).
class Training {
 public:
  virtual ~Training() = default;
  Training(Training&&) = default;
  Training& operator=(Training&&) = default;
  // One step; throws InputError naming the step when the loss is not finite (nothing is updated).
  virtual StepRecord step() = 0;
  // The first part of the next step where a trainer has one (a language model's: the forward pass and the
  // loss, which it checks), so that a page without threads can draw before step() does the rest.
  virtual void begin_step() {}
  size_t steps_done() const { return steps_done_; }
  const TrainSettings& settings() const { return settings_; }
  // The threads the products run on: settings().threads, or fewer where no more could start.
  size_t threads() const { return pool_ ? pool_->size() : 1; }
  // Loss and accuracy on `items` in evaluation mode, with the run's batch size, rounding and threads.
  virtual EvalRecord evaluate(const std::vector<LabelledItem>& items, const Hooks* hooks = nullptr) const = 0;
  // evaluate(items) in parts (the classifier's: one part); `items` must outlive it.
  virtual std::unique_ptr<Evaluation> begin_evaluation(const std::vector<LabelledItem>& items) const;
  // The checkpoint: the model's state_dict as "model.<name>", the optimizer's state as "optimizer.<name>",
  // and in `meta` the step count and the dropout generator. restore() takes them back.
  virtual std::vector<NamedTensor> checkpoint_tensors() const = 0;
  Json checkpoint_meta() const;
  virtual void restore(const std::vector<NamedTensor>& tensors, const Json& meta) = 0;

 protected:
  // `dropout` continues the generator the model was initialised from (as torch.manual_seed's global
  // generator does in the PyTorch loop). Validates the settings.
  Training(std::vector<LabelledItem> items, TrainSettings settings, TorchGenerator dropout);
  // The model's tensors under their checkpoint names, with the optimizer's state.
  std::vector<NamedTensor> checkpoint_with(std::vector<NamedTensor> model) const;
  // The optimizer's state, the generator and the step count of a checkpoint whose model is restored.
  void restore_state(const struct CheckpointParts& parts, const std::vector<ParamSlot>& params);

  std::vector<LabelledItem> items_;
  TrainSettings settings_;
  TorchGenerator dropout_;
  std::unique_ptr<ThreadPool> pool_;
  Optimizer optimizer_;
  BatchOrder order_;
  size_t steps_done_ = 0;
};

// The parts of a step both trainers share, after the gradients: the loss checked (an InputError naming
// the step when it is not finite), the gradient norm (clipped when asked), the schedule's lr, and
// optimizer.step(). Fills r.grad_norm and r.lr.
void check_loss(const StepRecord& r);
void optimizer_step(Optimizer& optimizer, const TrainSettings& s, size_t steps_done,
                    const std::vector<ParamSlot>& params, StepRecord& r);
// A checkpoint's tensors split by their "model." and "optimizer." prefixes (which are dropped), and its
// meta checked: the step count and the generator's state.
struct CheckpointParts {
  std::vector<NamedTensor> model, optimizer;
  size_t step = 0;
  std::string generator;
};
CheckpointParts split_checkpoint(const std::vector<NamedTensor>& tensors, const Json& meta);

class Trainer : public Training {
 public:
  // Throws InputError for bad settings or labels outside the classes.
  Trainer(TransformerModel model, std::vector<LabelledItem> train_items, TrainSettings settings,
          TorchGenerator dropout);

  StepRecord step() override;
  const TransformerModel& model() const { return model_; }
  // The last step's gradients as the optimizer took them (clipped when clipping), as p.grad holds them.
  const TransformerModel& gradients() const { return grads_; }
  // evaluate() of the current model on `items`, with the run's mask, batch size, rounding and threads.
  EvalRecord evaluate(const std::vector<LabelledItem>& items, const Hooks* hooks = nullptr) const override;
  std::vector<NamedTensor> checkpoint_tensors() const override;
  void restore(const std::vector<NamedTensor>& tensors, const Json& meta) override;

 private:
  TransformerModel model_, grads_;
};

}  // namespace attn::train
