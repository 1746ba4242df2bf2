// Attribution's pieces (core/model/attribution.hpp): the quadrature, the maximum flow, and the
// properties every method must have. Each method against PyTorch is checked end to end by
// tests/attribution_check.py (ctest cli.attribute).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "core/base/error.hpp"
#include "core/model/attribution.hpp"
#include "core/model/gpt2.hpp"
#include "tests/fixtures.hpp"

using namespace attn;

namespace {

LoadedModel checkpoint(const std::string& name) {
  ModelOptions o;
  o.model_dir = attn::test::fixtures_dir() + "/pretrained/" + name;
  return load_model(o, {});
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

TEST_CASE("Gauss-Legendre on [0, 1] as Captum maps numpy's leggauss", "[attribution]") {
  std::vector<double> alphas, weights;
  gauss_legendre(1, alphas, weights);
  CHECK(alphas == std::vector<double>{0.5});
  CHECK(weights == std::vector<double>{1.0});
  gauss_legendre(2, alphas, weights);
  CHECK(alphas[0] == Approx(0.5 - 0.5 / std::sqrt(3.0)).epsilon(1e-15));
  CHECK(alphas[1] == Approx(0.5 + 0.5 / std::sqrt(3.0)).epsilon(1e-15));
  CHECK(weights[0] == Approx(0.5).epsilon(1e-15));
  // n nodes integrate polynomials of degree 2n − 1 exactly: ∫₀¹ x^99 dx = 1/100.
  gauss_legendre(50, alphas, weights);
  CHECK(std::is_sorted(alphas.begin(), alphas.end()));
  double integral = 0;
  for (size_t k = 0; k < 50; ++k) integral += weights[k] * std::pow(alphas[k], 99);
  CHECK(integral == Approx(0.01).epsilon(1e-12));
  CHECK(sum(weights) == Approx(1.0).epsilon(1e-14));
}

TEST_CASE("the maximum flow of small graphs", "[attribution]") {
  // source 0, sink 3: 0→1 (3), 0→2 (2), 1→2 (1), 1→3 (2), 2→3 (3): the source's edges and the sink's both hold 5.
  std::vector<std::vector<double>> c(4, std::vector<double>(4, 0.0));
  c[0][1] = 3, c[0][2] = 2, c[1][2] = 1, c[1][3] = 2, c[2][3] = 3;
  CHECK(max_flow(c, 0, 3) == Approx(5.0));
  c[2][3] = 0.5;  // now the edges into the sink limit it
  CHECK(max_flow(c, 0, 3) == Approx(2.5));
  CHECK(max_flow(c, 3, 0) == 0.0);  // no edge leaves the sink
}

TEST_CASE("integrated gradients is complete, logit attribution adds up to the logit", "[attribution]") {
  const LoadedModel gpt2 = checkpoint("gpt2_tiny");
  const ModelInput in = gpt2.tokenize({"the cat sat on"});
  AttributionOptions o;
  o.steps = 50;
  const Attribution ig = attribute(gpt2, in, o);
  CHECK(std::abs(ig.delta) < 1e-3);
  CHECK(sum(ig.scores) == Approx(ig.input_value - ig.baseline_value).margin(1e-3));
  CHECK(ig.input_value == Approx(ig.target.logit).margin(1e-5));
  o.method = AttributionMethod::logit_attribution;
  const Attribution direct = attribute(gpt2, in, o);
  CHECK(direct.target.id == ig.target.id);
  CHECK(sum(direct.contributions) == Approx(direct.target.logit).margin(1e-4));
  o.method = AttributionMethod::rollout;
  const Attribution rollout = attribute(gpt2, in, o);
  CHECK(sum(rollout.scores) == Approx(1.0).margin(1e-9));  // each row of the product is a distribution
  CHECK(rollout.scores.size() == in.seq);
}

TEST_CASE("flow for every output: each row a distribution over the inputs it can reach", "[attribution]") {
  const LoadedModel gpt2 = checkpoint("gpt2_tiny");
  const ModelInput in = gpt2.tokenize({"the cat sat on"});
  AttributionOptions o;
  o.method = AttributionMethod::flow;
  const Attribution last = attribute(gpt2, in, o);
  o.every_output = true;
  const Attribution every = attribute(gpt2, in, o);
  const size_t S = in.seq;
  REQUIRE(every.shares.size() == S * S);
  CHECK(every.scores == last.scores);  // the scores still follow the last position alone
  for (size_t i = 0; i < S; ++i) {
    const std::vector<double> row(every.shares.begin() + long(i * S), every.shares.begin() + long((i + 1) * S));
    CHECK(sum(row) == Approx(1.0).margin(1e-12));
    for (size_t j = i + 1; j < S; ++j) CHECK(row[j] == 0.0);  // causal: no path from a later input
    if (i + 1 == S) CHECK(row == last.scores);
  }
}

TEST_CASE("the input's gradient alone: frozen weights and the last position's logits change no bit", "[attribution]") {
  const LoadedModel m = checkpoint("gpt2_tiny");
  const PretrainedModel& model = m.pretrained->model;
  const ModelInput in = m.tokenize({"the cat sat on the mat"});
  const size_t S = in.seq, V = model.config.vocab_size;
  const PretrainedInput input{in.ids, {}, in.lengths, 1, S};
  Gpt2Saved full_saved, last_saved;
  const Tensor full = gpt2_train_forward(model, input, nullptr, full_saved);
  const Tensor last = gpt2_train_forward(model, input, nullptr, last_saved, nullptr, true);
  REQUIRE(last.shape() == Shape{1, 1, V});
  for (size_t v = 0; v < V; ++v) CHECK(last(0, 0, v) == full(0, S - 1, v));
  Tensor grad_full = Tensor::from_shape(full.shape()), grad_last = Tensor::from_shape(last.shape());
  grad_full.fill(0.0f), grad_last.fill(0.0f);
  grad_full(0, S - 1, 7) = 1.0f, grad_last(0, 0, 7) = 1.0f;
  PretrainedModel zeros = zeros_like(model), frozen = frozen_like(model);
  const Tensor with_weights = gpt2_backward(model, full_saved, grad_full, zeros);
  const Tensor alone = gpt2_backward(model, last_saved, grad_last, frozen);
  CHECK(alone == with_weights);
  CHECK(frozen.layers[0].query.weight.dimension() == 0);  // left alone
  CHECK(zeros.layers[0].query.weight(0, 0) != 0.0f);      // (the weights' gradients were summed there)
}

TEST_CASE("what a model cannot give is an error that says why", "[attribution]") {
  const LoadedModel bert = checkpoint("bert_tiny");
  const ModelInput in = bert.tokenize({"the cat"});
  AttributionOptions o;
  o.method = AttributionMethod::gradient_x_input;
  CHECK_THROWS_WITH(attribute(bert, in, o), Catch::Contains("BERT's base model has no output head"));
  o.method = AttributionMethod::flow;
  CHECK(attribute(bert, in, o).outputs == std::vector<size_t>{0});
  CHECK_THROWS_WITH(parse_attribution_method("saliency"), Catch::Contains("unknown method 'saliency'"));
  CHECK(parse_attribution_method("logit-attribution") == AttributionMethod::logit_attribution);
}
