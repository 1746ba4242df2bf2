// The optimizers against torch.optim 1.13 (tests/torchgen/optim.py: parameters [3,5], [8], [17], [1]
// on a loss whose gradient follows the parameters). Each step is fed torch's recorded gradient, so
// the optimizer is checked apart from the loss's rounding. All 10 trajectories (4 SGD, 2 Adam, 4
// AdamW, one with clip_grad_norm_ and the cosine schedule, one with constant warm-up) are
// bit-identical over their 20 steps: parameters, total norms, clipped gradients and lrs.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/train/optim.hpp"
#include "core/io/safetensors.hpp"
#include "tests/fixtures.hpp"

namespace {

using attn::OptimizerSettings;
using attn::ParamSlot;
using nlohmann::json;

const json& doc() { return attn::test::cached_fixture("optim.json"); }

struct Model {
  std::vector<std::string> names;
  std::vector<std::vector<float>> value, grad;

  Model() {
    for (const json& p : doc().at("params")) {
      names.push_back(p.at("name").get<std::string>());
      value.push_back(p.at("data").get<std::vector<float>>());
      grad.emplace_back(value.back().size());
    }
  }
  std::vector<ParamSlot> slots() {
    std::vector<ParamSlot> out;
    for (size_t i = 0; i < names.size(); ++i)
      out.push_back({names[i], value[i].data(), grad[i].data(), value[i].size()});
    return out;
  }
  void set_grad(const json& grads) {
    for (size_t i = 0; i < grad.size(); ++i) grad[i] = grads.at(i).get<std::vector<float>>();
  }
  // sum(sin(p) * c + p * p * d), in double.
  double loss() const {
    double sum = 0;
    for (size_t i = 0; i < value.size(); ++i)
      for (size_t j = 0; j < value[i].size(); ++j) {
        const double p = value[i][j];
        sum += std::sin(p) * doc()["c"][i][j].get<double>() + p * p * doc()["d"][i][j].get<double>();
      }
    return sum;
  }
};

// "step 3 w[4]: 0x... (...), torch 0x... (...)" for the first float that differs, else "".
std::string first_difference(const std::vector<std::vector<float>>& got, const json& expected, const Model& m) {
  for (size_t i = 0; i < got.size(); ++i)
    for (size_t j = 0; j < got[i].size(); ++j) {
      const float e = expected.at(i).at(j).get<float>();
      if (attn::bits_of(got[i][j]) != attn::bits_of(e))
        return m.names[i] + "[" + std::to_string(j) + "]: " + attn::test::describe_bits(attn::bits_of(got[i][j])) +
               ", torch " + attn::test::describe_bits(attn::bits_of(e));
    }
  return "";
}

OptimizerSettings settings_of(const json& s) {
  OptimizerSettings o;
  o.kind = attn::parse_optimizer(s.at("kind").get<std::string>());
  o.lr = s.value("lr", o.lr);
  if (s.contains("weight_decay")) o.weight_decay = s["weight_decay"].get<double>();
  o.momentum = s.value("momentum", o.momentum);
  o.dampening = s.value("dampening", o.dampening);
  o.nesterov = s.value("nesterov", o.nesterov);
  if (s.contains("betas")) o.beta1 = s["betas"][0].get<double>(), o.beta2 = s["betas"][1].get<double>();
  o.eps = s.value("eps", o.eps);
  return o;
}

attn::Schedule schedule_of(const json& s) {
  attn::Schedule out;
  if (s.contains("schedule")) out.kind = attn::parse_schedule(s["schedule"].get<std::string>());
  out.warmup = s.value("warmup", size_t{0});
  out.total = s.value("total", size_t{0});
  return out;
}

// Steps [from, to) of a run: the loss before each step (1e-5 relative), then torch's gradient, the
// total norm and clipped grads, the lr and the parameters after the step, all bit for bit.
void follow(const std::string& run, attn::Optimizer& opt, Model& m, size_t from, size_t to) {
  const json& r = doc()["runs"][run];
  const json& s = r["settings"];
  const double base_lr = settings_of(s).lr;
  for (size_t k = from; k < to; ++k) {
    const json& rec = r["steps"][k];
    INFO(run << " step " << k);
    const double torch_loss = rec["loss"].get<double>();
    CHECK(std::fabs(m.loss() - torch_loss) <= 1e-5 * std::fabs(torch_loss));
    m.set_grad(rec["grad"]);
    const bool clips = s.contains("clip");
    const double norm = clips ? attn::clip_grad_norm(m.slots(), s["clip"].get<double>()) : attn::grad_norm(m.slots());
    CHECK(attn::bits_of(static_cast<float>(norm)) == attn::bits_of(rec["norm"].get<float>()));
    if (clips) CHECK(first_difference(m.grad, rec["clipped_grad"], m) == "");
    const double lr = attn::learning_rate(schedule_of(s), base_lr, k);
    CHECK(lr == rec["lr"].get<double>());
    opt.step(m.slots(), lr);
    REQUIRE(first_difference(m.value, rec["params"], m) == "");
  }
}

std::vector<std::string> runs() {
  std::vector<std::string> names;
  for (const auto& [name, run] : doc()["runs"].items()) names.push_back(name);
  return names;
}

}  // namespace

TEST_CASE("optim all 10 torch.optim trajectories are bit-identical over 20 steps", "[optim]") {
  REQUIRE(runs().size() == 10);
  for (const std::string& run : runs()) {
    Model m;
    attn::Optimizer opt(settings_of(doc()["runs"][run]["settings"]));
    follow(run, opt, m, 0, 20);
    CHECK(opt.steps() == 20);
  }
}

TEST_CASE("optim state saved mid-run through safetensors continues the same trajectory", "[optim]") {
  const auto path = std::filesystem::temp_directory_path() / "attn_test_optim_state.safetensors";
  for (const std::string& run : runs()) {
    const OptimizerSettings s = settings_of(doc()["runs"][run]["settings"]);
    Model m;
    attn::Optimizer first(s);
    follow(run, first, m, 0, 10);
    attn::write_safetensors(path.string(), first.state());
    attn::Optimizer resumed(s);
    resumed.load_state(attn::read_safetensors(path.string()), m.slots());
    CHECK(resumed.steps() == 10);
    follow(run, resumed, m, 10, 20);
  }
  std::filesystem::remove(path);
}

TEST_CASE("optim state holds torch's buffers and load_state refuses what does not fit", "[optim]") {
  Model m;
  OptimizerSettings s;  // AdamW
  attn::Optimizer opt(s);
  CHECK(opt.state().size() == 1);  // only "step" before the first step, as torch's empty state
  m.set_grad(doc()["runs"]["adamw"]["steps"][0]["grad"]);
  opt.step(m.slots(), s.lr);
  const std::vector<attn::NamedTensor> state = opt.state();
  REQUIRE(state.size() == 1 + 2 * m.names.size());
  CHECK(state[0].name == "step");
  CHECK(state[0].value.dimension() == 0);
  CHECK(state[1].name == "w.exp_avg");
  CHECK(state[2].name == "w.exp_avg_sq");

  auto refused = [&](std::vector<attn::NamedTensor> bad, const std::string& why) {
    attn::Optimizer other(s);
    CHECK_THROWS_WITH(other.load_state(bad, m.slots()), Catch::Contains(why));
    CHECK_THROWS_AS(other.load_state(bad, m.slots()), attn::InputError);
    CHECK(other.steps() == 0);  // untouched
  };
  auto without_last = state;
  without_last.pop_back();
  refused(without_last, "s.exp_avg_sq is missing");
  auto extra = state;
  extra.push_back({"x.exp_avg", attn::Tensor::from_shape({1})});
  refused(extra, "x.exp_avg does not belong");
  auto resized = state;
  resized[1].value = attn::Tensor::from_shape({14});
  refused(resized, "w.exp_avg holds 14 floats, expected 15");
  auto fractional = state;
  fractional[0].value = attn::Tensor(2.5f);
  refused(fractional, "step 2.5 is not a step count");
  auto twice = state;
  twice.push_back(state[1]);
  refused(twice, "w.exp_avg given twice");

  Model other;
  other.names[0] = "u";
  CHECK_THROWS_WITH(opt.step(other.slots(), s.lr), Catch::Contains("parameter 0 is u"));
  auto fewer = m.slots();
  fewer.pop_back();
  CHECK_THROWS_WITH(opt.step(fewer, s.lr), Catch::Contains("3 parameters"));

  attn::Optimizer sgd(OptimizerSettings{attn::OptimizerKind::sgd, 0.1, {}, 0, 0, false});
  sgd.step(m.slots(), 0.1);
  CHECK(sgd.state().size() == 1);  // plain SGD keeps no buffer
}

TEST_CASE("optim clip_grad_norm is torch's bit for bit on every path of its norm kernel", "[optim]") {
  for (const json& c : doc()["clip_cases"]) {
    std::vector<std::vector<float>> grads;
    std::vector<ParamSlot> slots;
    for (const json& g : c["grad"]) grads.push_back(g.get<std::vector<float>>());
    for (auto& g : grads) slots.push_back({"g" + std::to_string(slots.size()), nullptr, g.data(), g.size()});
    INFO("max_norm " << c["max_norm"].get<double>());
    const float norm = c["norm"].get<float>();
    CHECK(attn::bits_of(static_cast<float>(attn::grad_norm(slots))) == attn::bits_of(norm));
    CHECK(attn::bits_of(static_cast<float>(attn::clip_grad_norm(slots, c["max_norm"].get<double>()))) ==
          attn::bits_of(norm));
    for (size_t i = 0; i < grads.size(); ++i)
      for (size_t j = 0; j < grads[i].size(); ++j)
        REQUIRE(attn::bits_of(grads[i][j]) == attn::bits_of(c["clipped_grad"][i][j].get<float>()));
  }
}

TEST_CASE("optim clip_grad_norm leaves grads under max_norm as they are", "[optim]") {
  Model m;
  m.set_grad(doc()["runs"]["sgd"]["steps"][0]["grad"]);
  const auto before = m.grad;
  const double norm = attn::grad_norm(m.slots());
  CHECK(attn::clip_grad_norm(m.slots(), 2 * norm) == norm);
  CHECK(m.grad == before);  // clip_coef clamped to 1.0, multiplied anyway
  CHECK(attn::clip_grad_norm({}, 1.0) == 0);
}

TEST_CASE("optim schedules are LambdaLR over transformers' lambdas", "[optim]") {
  using attn::learning_rate;
  const attn::Schedule constant, warm{attn::ScheduleKind::constant, 4, 0}, cosine{attn::ScheduleKind::cosine, 5, 20};
  CHECK(learning_rate(constant, 0.1, 0) == 0.1);
  CHECK(learning_rate(constant, 0.1, 1000) == 0.1);
  CHECK(learning_rate(warm, 0.1, 0) == 0);
  CHECK(learning_rate(warm, 0.1, 1) == 0.1 * 0.25);
  CHECK(learning_rate(warm, 0.1, 4) == 0.1);
  CHECK(learning_rate(cosine, 0.1, 5) == 0.1);
  CHECK(learning_rate(cosine, 0.1, 20) == 0);
  CHECK(learning_rate(cosine, 0.1, 30) == 0.1 * 0.5 * (1.0 + std::cos(3.141592653589793 * 1.0 * (25.0 / 15.0))));
  CHECK(learning_rate({attn::ScheduleKind::cosine, 5, 3}, 0.1, 6) == 0.1 * 0.5 * (1.0 + std::cos(3.141592653589793)));
  CHECK(attn::parse_schedule("cosine") == attn::ScheduleKind::cosine);
  CHECK_THROWS_WITH(attn::parse_schedule("linear"), Catch::Contains("'linear'"));
}

TEST_CASE("optim settings torch refuses are InputErrors naming the value", "[optim]") {
  using attn::OptimizerKind;
  auto refused = [](OptimizerSettings s, const std::string& why) {
    CHECK_THROWS_WITH(attn::validate(s), Catch::Contains(why));
    CHECK_THROWS_AS(attn::Optimizer(s), attn::InputError);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  OptimizerSettings s;
  s.lr = 0, refused(s, "learning rate 0");
  s.lr = -0.5, refused(s, "learning rate -0.5");
  s.lr = nan, refused(s, "learning rate nan");
  s.lr = inf, refused(s, "learning rate inf");
  s = {}, s.weight_decay = -0.1, refused(s, "weight_decay -0.1");
  s = {}, s.eps = -1e-8, refused(s, "eps -1e-08");
  s = {}, s.beta1 = 1, refused(s, "beta1 1");
  s = {}, s.beta2 = -0.5, refused(s, "beta2 -0.5");
  s = {}, s.kind = OptimizerKind::sgd, s.momentum = -0.9, refused(s, "momentum -0.9");
  s.momentum = 0, s.nesterov = true, refused(s, "nesterov momentum requires a momentum and zero dampening (momentum 0");
  s.momentum = 0.9, s.dampening = 0.1, refused(s, "dampening 0.1)");
  s.dampening = 0, attn::validate(s);
  s.beta1 = 5, attn::validate(s);  // SGD has no betas
  CHECK_THROWS_WITH(attn::parse_optimizer("rmsprop"), Catch::Contains("'rmsprop'"));

  s = {};
  CHECK(attn::weight_decay_of(s) == 0.01);
  s.kind = OptimizerKind::adam;
  CHECK(attn::weight_decay_of(s) == 0);
  s.weight_decay = 0.25;
  CHECK(attn::weight_decay_of(s) == 0.25);
}
