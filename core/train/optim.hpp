// Optimizers as torch.optim 1.13 computes them on the CPU (foreach=False, the default; maximize,
// amsgrad, differentiable off): SGD, Adam, AdamW, clip_grad_norm_, and LambdaLR schedules. The
// float32 arithmetic follows Debian's torch 1.13 (AVX2 kernels) rounding for rounding, so a
// trajectory is bit-identical to PyTorch's (tests/test_optim.cpp).
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/io/safetensors.hpp"

namespace attn {

// One parameter tensor and its gradient, `size` floats each, in the model's state_dict order.
struct ParamSlot {
  std::string name;
  float* value;
  float* grad;
  size_t size;
};

enum class OptimizerKind { sgd, adam, adamw };
OptimizerKind parse_optimizer(const std::string& text);  // "sgd" | "adam" | "adamw", else InputError

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::adamw;
  double lr = 1e-3;
  std::optional<double> weight_decay;  // unset: torch's default for the kind (SGD 0, Adam 0, AdamW 0.01)
  double momentum = 0, dampening = 0;  // SGD
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
};

// weight_decay, or torch's default for the kind.
double weight_decay_of(const OptimizerSettings& s);

// InputError naming the value for what torch.optim refuses for the kind (negative lr, momentum,
// weight_decay or eps; betas outside [0, 1); nesterov without momentum or with dampening), and
// also for an lr that is not positive and finite.
void validate(const OptimizerSettings& s);

class Optimizer {
 public:
  explicit Optimizer(OptimizerSettings s);  // validates s

  // One optimizer.step() at learning rate lr (the schedule's lr for this step; 0 is allowed), over
  // params whose grads are set. The params must be the same names and sizes at every step.
  void step(const std::vector<ParamSlot>& params, double lr);
  size_t steps() const { return steps_; }

  // Checkpoint state: "step" (a 0-d float, as torch's state['step']) and, once a step has run, per
  // param "<name>.momentum_buffer" (SGD with momentum) or "<name>.exp_avg" and "<name>.exp_avg_sq".
  std::vector<NamedTensor> state() const;
  // The inverse of state() for these params: InputError unless `state` holds exactly the tensors
  // state() would give for them (names and sizes) at its step count.
  void load_state(const std::vector<NamedTensor>& state, const std::vector<ParamSlot>& params);

 private:
  struct Slot {
    size_t size = 0;
    std::map<std::string, std::vector<float>> buffers;  // by torch's state key
  };
  std::vector<std::string> buffer_names() const;
  void init(const std::vector<ParamSlot>& params);
  void check_params(const std::vector<ParamSlot>& params) const;
  void sgd(const ParamSlot& p, Slot& slot, double lr) const;
  void adam(const ParamSlot& p, Slot& slot, double lr) const;

  OptimizerSettings s_;
  double weight_decay_;
  size_t steps_ = 0;
  std::vector<std::string> names_;  // param order, fixed by the first step (or load_state)
  std::map<std::string, Slot> state_;
};

// torch.nn.utils.clip_grad_norm_(params, max_norm) (norm_type 2): the total norm (the norm of the
// per-tensor norms, float32 bit for bit as torch's kernel), then every grad multiplied by
// min(max_norm / (total_norm + 1e-6), 1) as 1.13 does. Returns the total norm before clipping.
double clip_grad_norm(const std::vector<ParamSlot>& params, double max_norm);
// The same total norm, grads untouched.
double grad_norm(const std::vector<ParamSlot>& params);

// Learning-rate schedules: lr = base_lr * lambda(step), as a PyTorch LambdaLR (Python doubles).
enum class ScheduleKind { constant, cosine };
ScheduleKind parse_schedule(const std::string& text);  // "constant" | "cosine", else InputError

struct Schedule {
  ScheduleKind kind = ScheduleKind::constant;
  size_t warmup = 0, total = 0;
};

// The lr of optimizer step `step` (0-based). See optim.cpp for the lambdas.
double learning_rate(const Schedule& s, double base_lr, size_t step);

}  // namespace attn
