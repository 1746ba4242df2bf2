// Training against a plain PyTorch loop (tests/torchgen/train_loop.py): twenty steps of seeded
// initialisation, dropout, batches in the documented order, loss, backward, clipping or the norm,
// torch.optim and the LambdaLR schedule. Stated tolerance: per step, the loss and the gradient norm
// within 1e-5 relative, the learning rate and the batch accuracy exactly; the final parameters within
// 1e-4 of PyTorch's (max|Δ| / max(1, max|reference|) per tensor). The fast path within ten times that;
// threads change no bit on either path. Then a checkpoint taken mid-run and restored into a fresh
// trainer continues to the same bits.
#include <cmath>

#include "core/base/error.hpp"
#include "core/train/train.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

std::vector<train::LabelledItem> items_of(const json& items) {
  std::vector<train::LabelledItem> out;
  for (const auto& it : items) {
    train::LabelledItem item;
    item.line = out.size() + 1;
    item.ids = it.at("ids").get<std::vector<int64_t>>();
    item.label = it.at("label").get<int64_t>();
    out.push_back(std::move(item));
  }
  return out;
}

train::TrainSettings settings_of(const json& c) {
  train::TrainSettings s;
  s.optimizer.kind = parse_optimizer(c.at("optimizer").get<std::string>());
  const json& o = c.at("options");
  s.optimizer.lr = o.at("lr").get<double>();
  if (o.contains("weight_decay")) s.optimizer.weight_decay = o.at("weight_decay").get<double>();
  s.optimizer.momentum = o.value("momentum", 0.0);
  s.optimizer.nesterov = o.value("nesterov", false);
  s.schedule = {parse_schedule(c.at("schedule").get<std::string>()), c.at("warmup").get<size_t>(), 0};
  s.steps = c.at("steps").get<size_t>();
  s.batch_size = c.at("batch_size").get<size_t>();
  s.shuffle = c.at("shuffle").get<bool>();
  s.seed = c.at("seed").get<uint64_t>();
  s.clip_grad_norm = c.at("clip_grad_norm").get<double>();
  s.label_smoothing = c.at("label_smoothing").get<double>();
  s.mask = parse_mask_kind(c.at("mask").get<std::string>());
  return s;
}

train::Trainer trainer_of(const json& c, Rounding rounding = Rounding::exact, size_t threads = 1) {
  TorchGenerator gen(c.at("seed").get<uint64_t>());
  TransformerModel model = init_transformer(test::config_of(c.at("config")), gen);
  train::TrainSettings settings = settings_of(c);
  settings.rounding = rounding, settings.threads = threads;
  return train::Trainer(std::move(model), items_of(c.at("items")), settings, gen);
}

bool close(double got, double want, double tolerance) { return std::fabs(got - want) <= tolerance * std::fabs(want); }

// Every case's twenty steps against PyTorch's record: losses and gradient norms within `tolerance`
// relative, the final parameters within 10 · tolerance.
void follow_pytorch(Rounding rounding, size_t threads, double tolerance) {
  for (const auto& [name, c] : test::cached_fixture("train_loop.json").items()) {
    INFO("case " << name);
    train::Trainer trainer = trainer_of(c, rounding, threads);
    for (const auto& want : c.at("records")) {
      const train::StepRecord got = trainer.step();
      INFO("step " << got.step << ": loss " << got.loss << " (PyTorch " << want.at("loss") << "), grad_norm "
                   << got.grad_norm << " (" << want.at("grad_norm") << ")");
      CHECK(got.step == want.at("step").get<size_t>());
      CHECK(close(got.loss, want.at("loss").get<double>(), tolerance));
      CHECK(close(got.grad_norm, want.at("grad_norm").get<double>(), tolerance));
      CHECK(got.lr == want.at("lr").get<double>());
      CHECK(got.accuracy == Approx(want.at("accuracy").get<double>()).epsilon(1e-7));
    }
    std::map<std::string, Tensor> ours;
    for (auto& t : state_dict(trainer.model())) ours[t.name] = std::move(t.value);
    for (const auto& want : c.at("final")) {
      const std::string param = want.at("name").get<std::string>();
      // The key bias's gradient is rounding noise (softmax ignores a constant added to a row), and Adam
      // scales noise to full-size steps: its value follows the noise, while the losses cannot see it.
      if (param.find("W_K.bias") != std::string::npos) continue;
      INFO("parameter " << param);
      const Tensor ref = test::tensor_of(want);
      const Tensor& got = ours.at(param);
      double diff = 0, scale = 1;
      for (size_t i = 0; i < ref.size(); ++i) {
        diff = std::max(diff, double(std::fabs(got.data()[i] - ref.data()[i])));
        scale = std::max(scale, double(std::fabs(ref.data()[i])));
      }
      CHECK(diff <= 10 * tolerance * scale);
    }
  }
}

}  // namespace

TEST_CASE("twenty training steps follow PyTorch's loop", "[train]") { follow_pytorch(Rounding::exact, 1, 1e-5); }

// The fast path (fused products) rounds differently at every product, so it stays near PyTorch's
// trajectory rather than on it: the stated tolerance is 1e-4.
TEST_CASE("the fast path follows PyTorch's loop within 1e-4", "[train]") { follow_pytorch(Rounding::fused, 1, 1e-4); }

// Products large enough to be split over the threads (rows 384, d_model 64, d_ff 256).
TEST_CASE("threads change no bit of a run, on either path", "[train]") {
  TransformerConfig config;
  config.vocab_size = 50, config.d_model = 64, config.num_heads = 4, config.num_layers = 2, config.max_len = 24;
  config.num_classes = 3;
  std::vector<train::LabelledItem> items(16);
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].line = i + 1, items[i].label = int64_t(i % 3);
    for (size_t t = 0; t < 24 - i % 5; ++t) items[i].ids.push_back(int64_t(1 + (i * 7 + t * 13) % 49));
  }
  for (Rounding rounding : {Rounding::exact, Rounding::fused}) {
    auto make = [&](size_t threads) {
      TorchGenerator gen(3);
      train::TrainSettings s;
      s.batch_size = 16, s.rounding = rounding, s.threads = threads;
      return train::Trainer(init_transformer(config, gen), items, s, gen);
    };
    train::Trainer one = make(1), three = make(3);
    for (int i = 0; i < 3; ++i) CHECK(one.step().loss == three.step().loss);
    const auto a = state_dict(one.model()), b = state_dict(three.model());
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::equal(a[i].value.begin(), a[i].value.end(), b[i].value.begin()));
  }
}

TEST_CASE("a restored checkpoint continues to the same bits", "[train]") {
  const json& c = test::cached_fixture("train_loop.json").at("adamw_cosine_clip_dropout");
  train::Trainer straight = trainer_of(c), first = trainer_of(c), resumed = trainer_of(c);
  for (int i = 0; i < 7; ++i) first.step();
  resumed.restore(first.checkpoint_tensors(), first.checkpoint_meta());
  CHECK(resumed.steps_done() == 7);
  for (int i = 0; i < 7; ++i) straight.step();
  for (int i = 7; i < 20; ++i) CHECK(straight.step().loss == resumed.step().loss);
  const auto a = state_dict(straight.model()), b = state_dict(resumed.model());
  for (size_t i = 0; i < a.size(); ++i) CHECK(std::equal(a[i].value.begin(), a[i].value.end(), b[i].value.begin()));
}

TEST_CASE("training refuses bad settings and stops on a non-finite loss", "[train]") {
  const json& c = test::cached_fixture("train_loop.json").at("adam_constant_warmup_no_dropout");
  TorchGenerator gen(0);
  const TransformerModel model = init_transformer(test::config_of(c.at("config")), gen);
  train::TrainSettings s = settings_of(c);
  auto make = [&](const train::TrainSettings& settings) { return train::Trainer(model, items_of(c.at("items")), settings, gen); };
  s.optimizer.lr = -1;
  CHECK_THROWS_AS(make(s), InputError);
  s = settings_of(c);
  s.schedule.warmup = s.steps + 1;
  CHECK_THROWS_WITH(make(s), Catch::Contains("warmup"));
  s = settings_of(c);
  auto items = items_of(c.at("items"));
  items[2].label = 4;  // num_classes 4
  CHECK_THROWS_WITH(train::Trainer(model, items, s, gen), Catch::Contains("line 3"));
  s.optimizer.lr = 1e38;  // updates overflow float32; a later loss is not finite
  train::Trainer trainer = make(s);
  std::string message;
  try {
    for (int i = 0; i < 5; ++i) trainer.step();
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("at step " + std::to_string(trainer.steps_done() + 1)));
}
