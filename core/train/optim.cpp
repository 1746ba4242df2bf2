// torch.optim 1.13's single-tensor (foreach=False) SGD, Adam and AdamW, element by element. Every
// tensor op there is elementwise, so one loop doing them in order per element gives the same floats
// as torch's op-by-op passes. Scalars are Python doubles, computed in double and rounded to float32
// where a kernel takes them. How Debian's torch 1.13 rounds its AVX2 CPU kernels (measured against
// it on random tensors of sizes 1 to 1000; GCC contracts the scalar tail loops into FMAs too, so
// vector body and tail agree):
//   a.mul_(s), a / s, sqrt:        plain float32 ops
//   a.add_(b, alpha=s):            fma(b, s, a)
//   a.addcmul_(b, c, value=s):     fma(s * b, c, a)
//   a.addcdiv_(b, c, value=s):     a + s * b / c (no FMA: a division comes between)
// This file is built with -ffp-contract=off, so only the std::fma calls fuse.
#include "core/train/optim.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"

namespace attn {
namespace {

float f32(double x) { return static_cast<float>(x); }

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

[[noreturn]] void refuse(const std::string& what, double v, const std::string& rule) {
  throw InputError("invalid " + what + " " + number(v) + " (" + rule + ")");
}

// torch.norm(x, 2) of a contiguous float32 tensor on AVX2 (the binary_kernel_reduce_lastdim path):
// eight lanes accumulate fma(x, x, lane) over whole vectors, the lanes are summed left to right,
// then the size % 8 tail is added in order as GCC compiled that loop: four unfused squares first
// when at least four remain (an SSE in-order reduction), FMAs for the rest. Bit for bit.
float torch_norm2(const float* x, size_t n) {
  float lanes[8] = {};
  size_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (size_t j = 0; j < 8; ++j) lanes[j] = std::fma(x[d + j], x[d + j], lanes[j]);
  float sum = lanes[0];
  for (size_t j = 1; j < 8; ++j) sum += lanes[j];
  if (n - d >= 4)
    for (const size_t end = d + 4; d < end; ++d) sum += x[d] * x[d];
  for (; d < n; ++d) sum = std::fma(x[d], x[d], sum);
  return std::sqrt(sum);
}

// transformers' lambdas (get_cosine_schedule_with_warmup, num_cycles 0.5, and
// get_constant_schedule_with_warmup), in Python doubles:
//   step < warmup:  step / max(1, warmup)
//   cosine:         progress = (step - warmup) / max(1, total - warmup)
//                   max(0, 0.5 * (1 + cos(pi * num_cycles * 2 * progress)))   (rises again past total)
//   constant:       1
double lr_lambda(const Schedule& s, size_t step) {
  if (step < s.warmup) return static_cast<double>(step) / static_cast<double>(std::max<size_t>(1, s.warmup));
  if (s.kind == ScheduleKind::constant) return 1.0;
  constexpr double pi = 3.141592653589793, num_cycles = 0.5;
  const double progress = static_cast<double>(step - s.warmup) /
                          static_cast<double>(s.total > s.warmup ? s.total - s.warmup : 1);
  return std::max(0.0, 0.5 * (1.0 + std::cos(pi * num_cycles * 2.0 * progress)));
}

}  // namespace

OptimizerKind parse_optimizer(const std::string& text) {
  if (text == "sgd") return OptimizerKind::sgd;
  if (text == "adam") return OptimizerKind::adam;
  if (text == "adamw") return OptimizerKind::adamw;
  throw InputError("unknown optimizer '" + text + "' (expected sgd, adam or adamw)");
}

ScheduleKind parse_schedule(const std::string& text) {
  if (text == "constant") return ScheduleKind::constant;
  if (text == "cosine") return ScheduleKind::cosine;
  throw InputError("unknown schedule '" + text + "' (expected constant or cosine)");
}

double weight_decay_of(const OptimizerSettings& s) {
  return s.weight_decay.value_or(s.kind == OptimizerKind::adamw ? 0.01 : 0.0);
}

// The comparisons are written so that NaN fails them.
void validate(const OptimizerSettings& s) {
  if (!(s.lr > 0 && std::isfinite(s.lr))) refuse("learning rate", s.lr, "must be positive and finite");
  if (!(weight_decay_of(s) >= 0)) refuse("weight_decay", weight_decay_of(s), "must be >= 0");
  if (s.kind == OptimizerKind::sgd) {
    if (!(s.momentum >= 0)) refuse("momentum", s.momentum, "must be >= 0");
    if (s.nesterov && !(s.momentum > 0 && s.dampening == 0))
      throw InputError("nesterov momentum requires a momentum and zero dampening (momentum " + number(s.momentum) +
                       ", dampening " + number(s.dampening) + ")");
    return;
  }
  if (!(s.eps >= 0)) refuse("eps", s.eps, "must be >= 0");
  if (!(s.beta1 >= 0 && s.beta1 < 1)) refuse("beta1", s.beta1, "must be in [0, 1)");
  if (!(s.beta2 >= 0 && s.beta2 < 1)) refuse("beta2", s.beta2, "must be in [0, 1)");
}

Optimizer::Optimizer(OptimizerSettings s) : s_(s), weight_decay_(weight_decay_of(s)) { validate(s_); }

std::vector<std::string> Optimizer::buffer_names() const {
  if (s_.kind != OptimizerKind::sgd) return {"exp_avg", "exp_avg_sq"};
  if (s_.momentum != 0) return {"momentum_buffer"};
  return {};
}

// Fresh state for params, as torch creates it lazily: Adam's moments zeros, SGD's momentum buffer
// absent until the first step clones the gradient into it.
void Optimizer::init(const std::vector<ParamSlot>& params) {
  names_.clear();
  state_.clear();
  for (const ParamSlot& p : params) {
    Slot slot{p.size, {}};
    if (s_.kind != OptimizerKind::sgd)
      slot.buffers["exp_avg"] = slot.buffers["exp_avg_sq"] = std::vector<float>(p.size);
    if (!state_.emplace(p.name, std::move(slot)).second)
      throw InputError("optimizer: parameter " + p.name + " given twice");
    names_.push_back(p.name);
  }
}

void Optimizer::check_params(const std::vector<ParamSlot>& params) const {
  if (params.size() != names_.size())
    throw InputError("optimizer: " + std::to_string(params.size()) + " parameters, its state holds " +
                     std::to_string(names_.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const size_t size = state_.at(names_[i]).size;
    if (params[i].name != names_[i] || params[i].size != size)
      throw InputError("optimizer: parameter " + std::to_string(i) + " is " + params[i].name + " (" +
                       std::to_string(params[i].size) + " floats), its state is for " + names_[i] + " (" +
                       std::to_string(size) + ")");
  }
}

void Optimizer::step(const std::vector<ParamSlot>& params, double lr) {
  if (steps_ == 0 && names_.empty()) init(params);
  check_params(params);
  ++steps_;
  for (const ParamSlot& p : params)
    s_.kind == OptimizerKind::sgd ? sgd(p, state_.at(p.name), lr) : adam(p, state_.at(p.name), lr);
}

// _single_tensor_sgd.
void Optimizer::sgd(const ParamSlot& p, Slot& slot, double lr) const {
  const float weight_decay = f32(weight_decay_), momentum = f32(s_.momentum), neg_lr = f32(-lr),
              one_minus_dampening = f32(1 - s_.dampening);
  std::vector<float>* momentum_buffer = s_.momentum != 0 ? &slot.buffers["momentum_buffer"] : nullptr;
  const bool first = momentum_buffer && momentum_buffer->empty();
  if (first) momentum_buffer->resize(p.size);
  for (size_t i = 0; i < p.size; ++i) {
    float d_p = p.grad[i];
    if (weight_decay_ != 0) d_p = std::fma(p.value[i], weight_decay, d_p);  // d_p.add(param, alpha=weight_decay)
    if (momentum_buffer) {
      float& buf = (*momentum_buffer)[i];
      buf = first ? d_p : std::fma(d_p, one_minus_dampening, buf * momentum);  // buf.mul_(momentum).add_(d_p, ...)
      d_p = s_.nesterov ? std::fma(buf, momentum, d_p) : buf;                  // d_p.add(buf, alpha=momentum)
    }
    p.value[i] = std::fma(d_p, neg_lr, p.value[i]);  // param.add_(d_p, alpha=-lr)
  }
}

// _single_tensor_adam and _single_tensor_adamw (capturable off: the step count is a Python float).
void Optimizer::adam(const ParamSlot& p, Slot& slot, double lr) const {
  const bool adamw = s_.kind == OptimizerKind::adamw;
  const double step = static_cast<double>(steps_);
  const double bias_correction1 = 1 - std::pow(s_.beta1, step), bias_correction2 = 1 - std::pow(s_.beta2, step);
  const float beta1 = f32(s_.beta1), beta2 = f32(s_.beta2), one_minus_beta1 = f32(1 - s_.beta1),
              one_minus_beta2 = f32(1 - s_.beta2), eps = f32(s_.eps), neg_step_size = f32(-(lr / bias_correction1)),
              bias_correction2_sqrt = f32(std::sqrt(bias_correction2)),
              decay = adamw ? f32(1 - lr * weight_decay_) : f32(weight_decay_);
  std::vector<float> &exp_avgs = slot.buffers.at("exp_avg"), &exp_avg_sqs = slot.buffers.at("exp_avg_sq");
  // One loop per kind of weight decay, so that each has no branch and vectorises.
  const auto update = [&](auto decayed_grad) {
    float* exp_avg = exp_avgs.data();
    float* exp_avg_sq = exp_avg_sqs.data();
    for (size_t i = 0; i < p.size; ++i) {
      float& param = p.value[i];
      const float grad = decayed_grad(param, p.grad[i]);
      exp_avg[i] = std::fma(grad, one_minus_beta1, exp_avg[i] * beta1);                // .mul_(beta1).add_(grad, ...)
      exp_avg_sq[i] = std::fma(one_minus_beta2 * grad, grad, exp_avg_sq[i] * beta2);  // .mul_(beta2).addcmul_(grad, grad)
      const float denom = std::sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps;  // (sqrt() / bc2_sqrt).add_(eps)
      param = param + neg_step_size * exp_avg[i] / denom;                          // addcdiv_(exp_avg, denom, ...)
    }
  };
  if (adamw)
    update([decay](float& param, float grad) {
      param *= decay;  // param.mul_(1 - lr * weight_decay)
      return grad;
    });
  else if (weight_decay_ != 0)
    update([decay](float& param, float grad) { return std::fma(param, decay, grad); });  // grad.add(param, alpha=wd)
  else
    update([](float&, float grad) { return grad; });
}

std::vector<NamedTensor> Optimizer::state() const {
  std::vector<NamedTensor> out;
  out.push_back({"step", Tensor(static_cast<float>(steps_))});
  if (steps_ == 0) return out;
  for (const std::string& name : names_) {
    for (const std::string& which : buffer_names()) {
      const std::vector<float>& data = state_.at(name).buffers.at(which);
      Tensor t = Tensor::from_shape({data.size()});
      std::copy(data.begin(), data.end(), t.data());
      out.push_back({name + "." + which, std::move(t)});
    }
  }
  return out;
}

void Optimizer::load_state(const std::vector<NamedTensor>& state, const std::vector<ParamSlot>& params) {
  std::map<std::string, const Tensor*> given;
  for (const NamedTensor& t : state)
    if (!given.emplace(t.name, &t.value).second) throw InputError("optimizer state: " + t.name + " given twice");
  auto take = [&](const std::string& name, size_t size) -> const Tensor& {
    auto it = given.find(name);
    if (it == given.end()) throw InputError("optimizer state: " + name + " is missing");
    const Tensor& t = *it->second;
    if (t.size() != size)
      throw InputError("optimizer state: " + name + " holds " + std::to_string(t.size()) + " floats, expected " +
                       std::to_string(size));
    given.erase(it);
    return t;
  };
  const float step = *take("step", 1).data();
  if (!(step >= 0 && step == std::floor(step) && step < 16777216.0f))
    throw InputError("optimizer state: step " + number(step) + " is not a step count");
  Optimizer loaded(s_);
  loaded.init(params);
  loaded.steps_ = static_cast<size_t>(step);
  if (loaded.steps_ > 0)
    for (const ParamSlot& p : params)
      for (const std::string& which : buffer_names()) {
        const Tensor& t = take(p.name + "." + which, p.size);
        loaded.state_.at(p.name).buffers[which].assign(t.data(), t.data() + p.size);
      }
  if (!given.empty())
    throw InputError("optimizer state: " + given.begin()->first + " does not belong to these parameters");
  *this = std::move(loaded);
}

double grad_norm(const std::vector<ParamSlot>& params) {
  if (params.empty()) return 0;
  std::vector<float> norms;  // torch.norm(torch.stack([torch.norm(g, 2) for g in grads]), 2)
  for (const ParamSlot& p : params) norms.push_back(torch_norm2(p.grad, p.size));
  return torch_norm2(norms.data(), norms.size());
}

double clip_grad_norm(const std::vector<ParamSlot>& params, double max_norm) {
  const float total_norm = static_cast<float>(grad_norm(params));
  // max_norm / (total_norm + 1e-6) is Tensor.__rtruediv__, i.e. reciprocal() * max_norm; then
  // clamp(max=1.0), which keeps a NaN as std::min does here.
  const float clip_coef = 1.0f / (total_norm + f32(1e-6)) * f32(max_norm);
  const float clip_coef_clamped = std::min(clip_coef, 1.0f);
  for (const ParamSlot& p : params)
    for (size_t i = 0; i < p.size; ++i) p.grad[i] *= clip_coef_clamped;
  return total_norm;
}

double learning_rate(const Schedule& s, double base_lr, size_t step) { return base_lr * lr_lambda(s, step); }

}  // namespace attn
