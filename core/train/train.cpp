#include "core/train/train.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/kernels/kernels.hpp"

namespace attn::train {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

std::vector<ParamSlot> slots(TransformerModel& model, TransformerModel& grads) {
  const auto values = parameters(model), gradients = parameters(grads);
  std::vector<ParamSlot> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back({values[i].first, values[i].second->data(), gradients[i].second->data(), values[i].second->size()});
  return out;
}

size_t correct(const Tensor& logits, const std::vector<int64_t>& labels) {
  const size_t classes = logits.shape(1);
  size_t n = 0;
  for (size_t b = 0; b < labels.size(); ++b) {
    const float* row = logits.data() + b * classes;
    n += size_t(std::max_element(row, row + classes) - row) == size_t(labels[b]);  // torch.argmax: first max
  }
  return n;
}

}  // namespace

void validate(const TrainSettings& s) {
  require(s.steps >= 1, "steps must be at least 1");
  require(s.batch_size >= 1, "batch size must be at least 1");
  require(s.threads >= 1, "threads must be at least 1");
  require(std::isfinite(s.clip_grad_norm) && s.clip_grad_norm >= 0,
          "clip-grad-norm must be a finite number >= 0 (0: no clipping)");
  require(s.label_smoothing >= 0 && s.label_smoothing <= 1, "label smoothing must be in [0, 1]");
  require(s.schedule.warmup <= s.steps, "warmup (" + std::to_string(s.schedule.warmup) +
                                            " steps) is longer than the run (" + std::to_string(s.steps) + " steps)");
  validate(s.optimizer);
}

Json record_json(const StepRecord& r) {
  return {{"step", r.step}, {"loss", r.loss}, {"accuracy", r.accuracy}, {"lr", r.lr}, {"grad_norm", r.grad_norm}};
}

Json record_json(const EvalRecord& r) {
  Json j = {{"step", r.step}, {"val_loss", r.loss}, {"val_accuracy", r.accuracy}};
  if (r.repeated_loss) j["val_repeated_loss"] = *r.repeated_loss;
  if (r.repeated_accuracy) j["val_repeated_accuracy"] = *r.repeated_accuracy;
  if (r.induction_score) j["induction_score"] = *r.induction_score;
  if (r.previous_token_score) j["previous_token_score"] = *r.previous_token_score;
  return j;
}

// The mean loss over items (each batch's mean weighted by its size) and the share predicted right.
EvalRecord evaluate(const TransformerModel& model, const std::vector<LabelledItem>& items, MaskKind mask,
                    size_t batch_size, const Hooks* hooks) {
  EvalRecord r;
  double loss = 0;
  size_t right = 0;
  for (size_t begin = 0; begin < items.size(); begin += batch_size) {
    std::vector<size_t> indices;
    for (size_t i = begin; i < std::min(items.size(), begin + batch_size); ++i) indices.push_back(i);
    const TrainBatch b = make_batch(items, indices);
    const Tensor logits = classify(model, b.ids, b.batch, b.seq, mask, nullptr, hooks).at("logits");
    loss += double(cross_entropy(logits, b.labels, 0.0, nullptr)) * double(b.batch);
    right += correct(logits, b.labels);
  }
  r.loss = float(loss / double(items.size()));
  r.accuracy = double(right) / double(items.size());
  return r;
}

void check_loss(const StepRecord& r) {
  if (!std::isfinite(r.loss))
    throw InputError("the loss became " + std::string(std::isnan(r.loss) ? "NaN" : "infinite") + " at step " +
                     std::to_string(r.step) + "; stopped before updating (try a lower learning rate or clipping)");
}

void optimizer_step(Optimizer& optimizer, const TrainSettings& s, size_t steps_done, const std::vector<ParamSlot>& params,
                    StepRecord& r) {
  r.grad_norm = s.clip_grad_norm > 0 ? clip_grad_norm(params, s.clip_grad_norm) : grad_norm(params);
  r.lr = learning_rate(s.schedule, s.optimizer.lr, steps_done);
  optimizer.step(params, r.lr);
}

CheckpointParts split_checkpoint(const std::vector<NamedTensor>& tensors, const Json& meta) {
  CheckpointParts parts;
  for (const auto& t : tensors) {
    const bool is_model = t.name.rfind("model.", 0) == 0, is_optimizer = t.name.rfind("optimizer.", 0) == 0;
    require(is_model || is_optimizer, "checkpoint: unexpected tensor '" + t.name + "'");
    (is_model ? parts.model : parts.optimizer).push_back({t.name.substr(is_model ? 6 : 10), t.value});
  }
  require(meta.is_object() && meta.contains("step") && meta.contains("dropout_generator") &&
              meta["dropout_generator"].is_string(),
          "checkpoint: its step or generator state is missing");
  parts.step = json_integer<size_t>(meta["step"], "checkpoint: \"step\"", 0);
  parts.generator = meta["dropout_generator"].get<std::string>();
  return parts;
}

Training::Training(std::vector<LabelledItem> items, TrainSettings settings, TorchGenerator dropout)
    : items_(std::move(items)),
      settings_((validate(settings), settings)),
      dropout_(std::move(dropout)),
      pool_(settings_.threads > 1 ? std::make_unique<ThreadPool>(settings_.threads) : nullptr),
      optimizer_(settings_.optimizer),
      order_(items_.size(), settings_.batch_size, settings_.shuffle, settings_.seed) {
  settings_.schedule.total = settings_.steps;
}

std::vector<NamedTensor> Training::checkpoint_with(std::vector<NamedTensor> model) const {
  std::vector<NamedTensor> out;
  for (auto& t : model) out.push_back({"model." + t.name, std::move(t.value)});
  for (auto& t : optimizer_.state()) out.push_back({"optimizer." + t.name, std::move(t.value)});
  return out;
}

namespace {

class WholeEvaluation : public Evaluation {
 public:
  WholeEvaluation(const Training& t, const std::vector<LabelledItem>& items) : t_(t), items_(items) {}
  bool done() const override { return r_.has_value(); }
  void next() override { r_ = t_.evaluate(items_); }
  EvalRecord result() const override { return r_.value(); }

 private:
  const Training& t_;
  const std::vector<LabelledItem>& items_;
  std::optional<EvalRecord> r_;
};

}  // namespace

std::unique_ptr<Evaluation> Training::begin_evaluation(const std::vector<LabelledItem>& items) const {
  return std::make_unique<WholeEvaluation>(*this, items);
}

Json Training::checkpoint_meta() const {
  return {{"step", steps_done_}, {"dropout_generator", dropout_.state()}};
}

void Training::restore_state(const CheckpointParts& parts, const std::vector<ParamSlot>& params) {
  optimizer_.load_state(parts.optimizer, params);
  dropout_.set_state(parts.generator);
  steps_done_ = parts.step;
}

Trainer::Trainer(TransformerModel model, std::vector<LabelledItem> train_items, TrainSettings settings,
                 TorchGenerator dropout)
    : Training(std::move(train_items), std::move(settings), std::move(dropout)),
      model_(std::move(model)),
      grads_(zeros_like(model_)) {
  check_labels(items_, model_.config.num_classes);
}

EvalRecord Trainer::evaluate(const std::vector<LabelledItem>& items, const Hooks* hooks) const {
  const ProductMode mode(settings_.rounding, pool_.get());
  return train::evaluate(model_, items, settings_.mask, settings_.batch_size, hooks);
}

StepRecord Trainer::step() {
  const ProductMode mode(settings_.rounding, pool_.get());
  const TrainBatch b = make_batch(items_, order_.batch(steps_done_));
  ClassifierSaved saved;
  const Tensor logits = classifier_forward(model_, b.ids, b.batch, b.seq, settings_.mask,
                                           &dropout_, saved);
  Tensor grad_logits;
  StepRecord r;
  r.step = steps_done_ + 1;
  r.loss = cross_entropy(logits, b.labels, settings_.label_smoothing, &grad_logits);
  check_loss(r);
  r.accuracy = double(correct(logits, b.labels)) / double(b.batch);
  for (auto& [name, grad] : parameters(grads_)) grad->fill(0.0f);  // optimizer.zero_grad(), in place
  classifier_backward(model_, saved, grad_logits, grads_);
  optimizer_step(optimizer_, settings_, steps_done_, slots(model_, grads_), r);
  ++steps_done_;
  return r;
}

std::vector<NamedTensor> Trainer::checkpoint_tensors() const { return checkpoint_with(state_dict(model_)); }

void Trainer::restore(const std::vector<NamedTensor>& tensors, const Json& meta) {
  const CheckpointParts parts = split_checkpoint(tensors, meta);
  model_ = load_transformer(model_.config, parts.model);
  grads_ = zeros_like(model_);
  restore_state(parts, slots(model_, grads_));
}

}  // namespace attn::train
