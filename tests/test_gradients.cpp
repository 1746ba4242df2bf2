// The classifier's gradients against PyTorch autograd (tests/torchgen/gradients.py): both layer styles,
// pre- and post-norm, ReLU and GELU, every mask kind, padding, dropout in training mode, label
// smoothing. Stated tolerance, per parameter tensor: normalised error max|Δ| / max|reference| ≤ 1e-5;
// a tensor whose true gradient is zero (the key bias: softmax ignores a constant added to a row) has
// only rounding noise in both, and is held to max|Δ| ≤ 1e-6 · the largest gradient of the model.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/model/transformer.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t) m = std::max(m, double(std::fabs(v)));
  return m;
}

double max_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a.data()[i]) - double(b.data()[i])));
  return m;
}

struct Outcome {
  size_t tensors = 0, identical = 0;
};

Outcome check_case(const std::string& name, const json& c) {
  INFO("case " << name);
  const TransformerConfig config = test::config_of(c.at("config"));
  const uint64_t seed = parse_torch_seed(c.at("seed").get<std::string>()).value();
  TorchGenerator gen(seed);
  TransformerModel model;
  if (config.layer_style == LayerStyle::torch) {
    model = load_transformer(config, test::parameters_of(c.at("parameters")));
    gen.manual_seed(seed + 1);  // the fixture's dropout generator
  } else {
    model = init_transformer(config, gen);
  }
  size_t batch = 0, seq = 0;
  const auto ids = test::flat_ids(c.at("ids"), batch, seq);
  ClassifierSaved saved;
  const Tensor logits = classifier_forward(model, ids, batch, seq, parse_mask_kind(c.at("mask").get<std::string>()),
                                           c.at("train").get<bool>() ? &gen : nullptr, saved);
  CHECK(test::compare(logits, c.at("logits"), 1e-5, 1e-5).failures == 0);
  Tensor grad_logits;
  const float loss = cross_entropy(logits, c.at("labels").get<std::vector<int64_t>>(),
                                   c.at("label_smoothing").get<double>(), &grad_logits);
  CHECK(std::fabs(loss - c.at("loss").get<double>()) <= 1e-5 * std::fabs(c.at("loss").get<double>()));
  TransformerModel grads = zeros_like(model);
  classifier_backward(model, saved, grad_logits, grads);

  std::map<std::string, Tensor> ours;
  for (auto& t : state_dict(grads)) ours[t.name] = std::move(t.value);
  double largest = 0;
  for (const auto& g : c.at("grads")) largest = std::max(largest, max_abs(test::tensor_of(g)));
  Outcome out;
  for (const auto& g : c.at("grads")) {
    const std::string param = g.at("name").get<std::string>();
    INFO("gradient of " << param);
    REQUIRE(ours.count(param));
    const Tensor want = test::tensor_of(g);
    const Tensor& got = ours.at(param);
    REQUIRE(got.shape() == want.shape());
    const double reference = max_abs(want), diff = max_diff(got, want);
    INFO("max|Δ| " << diff << ", max|reference| " << reference << ", largest gradient " << largest);
    if (reference < 1e-6 * largest)
      CHECK(diff <= 1e-6 * largest);
    else
      CHECK(diff <= 1e-5 * reference);
    ++out.tensors;
    out.identical += std::equal(got.begin(), got.end(), want.begin());
  }
  CHECK(out.tensors == ours.size() - 1);  // every parameter; pos_encoding.pe is a buffer
  return out;
}

}  // namespace

TEST_CASE("every parameter's gradient matches PyTorch autograd", "[gradients]") {
  Outcome total;
  for (const auto& [name, c] : test::cached_fixture("gradients.json").items()) {
    const Outcome o = check_case(name, c);
    total.tensors += o.tensors, total.identical += o.identical;
  }
  std::printf("gradients: %zu of %zu tensors bit-identical to autograd\n", total.identical, total.tensors);
}

TEST_CASE("cross-entropy refuses a label outside the classes", "[gradients]") {
  const Tensor logits = xt::zeros<float>({2, 3});
  CHECK_THROWS_WITH(cross_entropy(logits, {0, 3}, 0.0, nullptr), Catch::Contains("label 3 is outside [0, 3)"));
}
