// The first tutorial's pipeline against PyTorch running the same script (tests/torchgen/tutorial1.py)
// for several seeds, sizes, sentences and masks: every stage, the vocabulary, and the printed text.
#include <cmath>

#include "core/base/error.hpp"
#include "core/torch/rng.hpp"
#include "core/model/tutorial.hpp"
#include "core/model/walkthrough.hpp"
#include "tests/fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

const char* const cases[] = {"default", "seed1_nomask", "causal_mixed", "padding_causal", "negative_seed_d2", "wide"};

TutorialConfig config_of(const json& c) {
  TutorialConfig config;
  config.sentences = c.at("sentences").get<std::vector<std::string>>();
  config.seed = parse_torch_seed(c.at("seed").get<std::string>()).value();
  config.d_model = c.at("d_model").get<size_t>();
  config.max_len = c.at("max_len").get<size_t>();
  config.mask = parse_mask_kind(c.at("mask").get<std::string>());
  return config;
}

// Stated tolerance: none. Every stage is bit-identical to PyTorch's (same summation orders, PyTorch's
// exp/sin/cos, its RNG), natively and in WebAssembly.
constexpr double rel_tol = 0, abs_tol = 0;

}  // namespace

TEST_CASE("tutorial stages equal PyTorch", "[tutorial]") {
  for (const char* name : cases) {
    SECTION(name) {
      const json fixture = test::load_fixture(std::string("tutorial_") + name + ".json");
      const TutorialRun run = run_tutorial(config_of(fixture.at("config")));
      CHECK(json(run.vocab.tokens()).size() == fixture.at("vocab").size());
      for (const auto& [token, id] : fixture.at("vocab").items()) CHECK(run.vocab.id(token) == id.get<int64_t>());
      CHECK(run.batch.tokens == fixture.at("tokens").get<std::vector<std::vector<std::string>>>());
      const auto& expected = fixture.at("stages");
      REQUIRE(run.trace.stages().size() == expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        const Stage& stage = run.trace.stages()[i];
        INFO("stage " << stage.name);
        REQUIRE(stage.name == expected[i].at("name").get<std::string>());
        REQUIRE(Shape(stage.value.shape().begin(), stage.value.shape().end()) == expected[i].at("shape").get<Shape>());
        const test::Deviation d = test::compare(stage.value, expected[i], rel_tol, abs_tol);
        INFO("max abs error " << d.max_abs << " at " << d.worst << ", max rel " << d.max_rel);
        CHECK(d.failures == 0);
      }
    }
  }
}

TEST_CASE("tutorial walkthrough prints the text PyTorch prints", "[tutorial][walkthrough]") {
  for (const char* name : cases) {
    SECTION(name) {
      const json fixture = test::load_fixture(std::string("tutorial_") + name + ".json");
      const std::string ours = tutorial_walkthrough(run_tutorial(config_of(fixture.at("config"))));
      const std::string torch = fixture.at("walkthrough").get<std::string>();
      if (ours != torch) {  // show the first differing line
        std::istringstream a(ours), b(torch);
        std::string la, lb;
        for (int line = 1; std::getline(a, la) && std::getline(b, lb); ++line)
          if (la != lb) {
            INFO("line " << line << "\n ours:  " << la << "\n torch: " << lb);
            CHECK(la == lb);
            break;
          }
      }
      CHECK(ours == torch);
    }
  }
}

TEST_CASE("attention properties hold", "[tutorial]") {
  TutorialConfig config;
  config.sentences = {"a b c", "d", "e f g h i"};
  for (MaskKind kind : {MaskKind::none, MaskKind::padding, MaskKind::causal, MaskKind::padding_causal}) {
    config.mask = kind;
    const TutorialRun run = run_tutorial(config);
    const Tensor& w = run.trace.at("attention_weights");
    const Tensor& mask = run.trace.at("mask");
    const size_t n = w.shape(2);
    for (size_t r = 0; r < w.size() / n; ++r) {
      double sum = 0;
      for (size_t j = 0; j < n; ++j) {
        const float v = w.data()[r * n + j];
        CHECK(v >= 0.0f);
        if (mask.data()[r * n + j] == 0) CHECK(v == 0.0f);  // exactly 0, not just small
        sum += v;
      }
      CHECK(sum == Approx(1.0).epsilon(1e-6));
    }
    const Tensor& embedding = run.trace.at("embedding");
    for (size_t d = 0; d < run.config.d_model; ++d) CHECK(run.parameters.embedding(0, d) == 0.0f);
    CHECK(embedding(1, 1, 0) == 0.0f);  // "d" is padded at position 1
  }
}

TEST_CASE("a fully masked row gives uniform weights and never NaN", "[attention]") {
  Tensor q = {{{1.0f, 2.0f}, {3.0f, -1.0f}}}, k = {{{0.5f, 1.0f}, {2.0f, 0.0f}}}, v = {{{1.0f, 0.0f}, {0.0f, 1.0f}}};
  MaskTensor mask = {{{0, 0}, {1, 0}}};
  const AttentionSteps a = scaled_dot_product_attention(q, k, v, {&mask});
  CHECK(a.attention_weights(0, 0, 0) == 0.5f);
  CHECK(a.attention_weights(0, 0, 1) == 0.5f);
  CHECK(a.attention_weights(0, 1, 0) == 1.0f);
  CHECK(a.attention_weights(0, 1, 1) == 0.0f);
}

TEST_CASE("bad tutorial inputs are refused with a clear error", "[tutorial][errors]") {
  TutorialConfig c;
  auto refused = [&](const std::string& needle) {
    try {
      run_tutorial(c);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
      return;
    }
    FAIL("no error for a bad config (expected one mentioning '" << needle << "')");
  };
  c.sentences = {};
  refused("no sentences");
  c = TutorialConfig();
  c.sentences = {"ok", "  "};
  refused("sentence 2 is empty");
  c = TutorialConfig();
  c.sentences = {"bad \xFF byte"};
  refused("invalid UTF-8");
  c = TutorialConfig();
  c.max_len = 3;
  refused("more than max_len 3");
  c = TutorialConfig();
  c.d_model = 7;
  refused("even");
  c = TutorialConfig();
  c.d_model = 1u << 20;
  c.max_len = 1u << 20;
  refused("memory");
}

TEST_CASE("the preallocated forward pass gives the bits of the trace", "[tutorial]") {
  for (MaskKind mask : {MaskKind::none, MaskKind::padding, MaskKind::padding_causal}) {
    TutorialConfig config;
    config.mask = mask;
    config.d_model = 10;
    const TutorialRun run = run_tutorial(config);
    TutorialForward forward(run);
    forward(run.batch.ids);  // twice: buffers reused
    const std::vector<float>& out = forward(run.batch.ids);
    const Tensor& want = run.trace.at("attention_output");
    REQUIRE(out.size() == want.size());
    CHECK(std::equal(out.begin(), out.end(), want.begin()));
  }
}
