// Hooks on named stages and the names they take (core/model/interventions.hpp), activation patching
// and the logit lens (core/model/patching.hpp, logit_lens.hpp). Ablations against PyTorch are checked
// end to end by tests/intervention_check.py (ctest cli.interventions), the head detectors by
// tests/head_detector_check.py (cli.head_detectors), patching and the lens by tests/patching_check.py
// (cli.patching).
#include <catch2/catch.hpp>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/head_detectors.hpp"
#include "core/model/interventions.hpp"
#include "core/model/logit_lens.hpp"
#include "core/model/patching.hpp"
#include "tests/fixtures.hpp"

using namespace attn;

namespace {

TransformerModel small_classifier(bool norm_first = false) {
  TransformerConfig c;
  c.vocab_size = 10;
  c.d_model = 8;
  c.num_heads = 2;
  c.num_layers = 2;
  c.num_classes = 3;
  c.max_len = 16;
  c.norm_first = norm_first;
  TorchGenerator gen(1);
  return init_transformer(c, gen);
}

const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};  // [2, 4]

Trace run(const TransformerModel& m, const Hooks* hooks) { return classify(m, ids, 2, 4, MaskKind::none, nullptr, hooks); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}


LoadedModel classifier(bool norm_first) {
  ModelOptions o;
  o.num_layers = "2";
  o.d_model = "8";
  o.num_heads = "2";
  o.num_classes = "3";
  o.seed = "5";
  o.norm_first = norm_first;
  o.mask = "causal";
  return load_model(o, {"a b c d e f"});
}

LoadedModel checkpoint(const std::string& name) {
  ModelOptions o;
  o.model_dir = attn::test::fixtures_dir() + "/pretrained/" + name;
  return load_model(o, {});
}

// The bits of a stage of two runs are the same.
bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST_CASE("TransformerLens's names resolve to each family's stages", "[interventions]") {
  const ModelStages post = model_stages(small_classifier().config);
  CHECK(resolve_stage_name(post, "blocks.1.attn.hook_z") == "layers.1.self_attn.attention_output");
  CHECK(resolve_stage_name(post, "blocks.0.hook_resid_pre") == "embedded");
  CHECK(resolve_stage_name(post, "blocks.1.hook_resid_pre") == "layers.0.output");
  CHECK(resolve_stage_name(post, "blocks.1.hook_normalized_resid_post") == "layers.1.output");
  CHECK(resolve_stage_name(post, "layers.0.norm1") == "layers.0.norm1");  // the engine's own names pass
  PretrainedConfig gpt2;
  gpt2.family = ModelFamily::gpt2;
  gpt2.num_layers = 12;
  gpt2.num_heads = 12;
  gpt2.hidden_size = 768;
  const ModelStages g = model_stages(gpt2);
  CHECK(resolve_stage_name(g, "blocks.11.hook_resid_post") == "h.11");
  CHECK(resolve_stage_name(g, "blocks.3.hook_resid_pre") == "h.2");
  CHECK(resolve_stage_name(g, "blocks.0.attn.hook_pattern") == "h.0.attn.attn_weights");
  CHECK(resolve_stage_name(g, "blocks.0.mlp.hook_post") == "h.0.mlp.act");
  CHECK(resolve_stage_name(g, "hook_embed") == "wte");
  PretrainedConfig bert = gpt2;
  bert.family = ModelFamily::bert;
  CHECK(resolve_stage_name(model_stages(bert), "blocks.2.attn.hook_z") == "encoder.layer.2.attention.self.context");
  // Every alias names a stage the model records.
  const Trace t = run(small_classifier(), nullptr);
  for (const auto& [tl, ours] : stage_aliases(post)) {
    INFO(tl);
    CHECK_NOTHROW(t.at(ours));
  }
}

TEST_CASE("names a model lacks are errors that say what is near", "[interventions]") {
  const ModelStages post = model_stages(small_classifier().config);
  CHECK(error_of([&] { resolve_stage_name(post, "blocks.5.attn.hook_z"); }) ==
        "'blocks.5.attn.hook_z': layer 5 is out of range (the model has 2 layers)");
  // A post-norm classifier records no sum before its LayerNorm: resid_mid is not one of its stages.
  CHECK_THAT(error_of([&] { resolve_stage_name(post, "blocks.0.hook_resid_mid"); }),
             Catch::Contains("records no stage under this TransformerLens name"));
  CHECK_THAT(error_of([&] { resolve_stage_name(post, "blocks.0.attn.hook_patern"); }),
             Catch::Contains("near names: blocks.0.attn.hook_pattern"));
  const TransformerModel m = small_classifier();
  Hooks unknown;
  unknown.add("layers.0.self_attn.attention_wieghts", [](Tensor&) {});
  CHECK_THAT(error_of([&] { run(m, &unknown); }),
             Catch::Contains("no stage named 'layers.0.self_attn.attention_wieghts'") &&
                 Catch::Contains("near names: layers.0.self_attn.attention_weights"));
  Hooks recorded_only;
  recorded_only.add("layers.0.self_attn.scores", [](Tensor&) {});
  CHECK_THAT(error_of([&] { run(m, &recorded_only); }), Catch::Contains("cannot be replaced"));
  Hooks reshaping;
  reshaping.add("pooled", [](Tensor& t) { t = Tensor::from_shape({1}); });
  CHECK(error_of([&] { run(m, &reshaping); }) == "a hook on 'pooled' changed its shape");
}

TEST_CASE("a hook changes its stage and everything after it, nothing before", "[interventions]") {
  for (bool norm_first : {false, true}) {
    const TransformerModel m = small_classifier(norm_first);
    const Trace clean = run(m, nullptr);
    Hooks zero;
    zero.add("layers.1.ffn.output", [](Tensor& t) { std::fill(t.begin(), t.end(), 0.0f); });
    const Trace hooked = run(m, &zero);
    bool after = false;
    for (size_t i = 0; i < clean.stages().size(); ++i) {
      const Stage& a = clean.stages()[i];
      const Stage& b = hooked.stages()[i];
      REQUIRE(a.name == b.name);
      INFO(a.name);
      if (a.name == "layers.1.ffn.output") {
        after = true;
        CHECK(std::all_of(b.value.begin(), b.value.end(), [](float v) { return v == 0.0f; }));
      } else if (!after) {
        CHECK(a.value == b.value);
      } else {
        CHECK(a.value != b.value);
      }
    }
  }
}

TEST_CASE("a replaced pattern gives the heads' outputs from it", "[interventions]") {
  const TransformerModel m = small_classifier();
  Hooks uniform;
  uniform.add("layers.0.self_attn.attention_weights", [](Tensor& w) { std::fill(w.begin(), w.end(), 0.25f); });
  const Trace t = run(m, &uniform);
  // Uniform weights over 4 keys: each head's output is the mean of its values, at every position.
  const Tensor& v = t.at("layers.0.self_attn.value");    // [B, H, S, dk]
  const Tensor& z = t.at("layers.0.self_attn.attention_output");  // [B, S, H·dk]
  for (size_t b = 0; b < 2; ++b)
    for (size_t h = 0; h < 2; ++h)
      for (size_t i = 0; i < 4; ++i) {
        const float mean = (v(b, h, 0, i) + v(b, h, 1, i) + v(b, h, 2, i) + v(b, h, 3, i)) * 0.25f;
        for (size_t s = 0; s < 4; ++s) CHECK(z(b, s, h * 4 + i) == Approx(mean).margin(1e-6));
      }
}

TEST_CASE("mean ablation takes the mean over the real tokens of the clean run", "[interventions]") {
  const TransformerModel m = small_classifier();
  const ModelStages stages = model_stages(m.config);
  const Trace clean = run(m, nullptr);
  Ablation a;
  a.heads = parse_heads("1.1", stages);
  a.kind = AblationKind::mean;
  const std::vector<size_t> lengths = {2, 4};  // item 0's last two positions are padding
  const Hooks hooks = ablation_hooks(stages, a, &clean, lengths);
  const Trace t = run(m, &hooks);
  const Tensor& zc = clean.at("layers.1.self_attn.attention_output");
  const Tensor& z = t.at("layers.1.self_attn.attention_output");
  for (size_t i = 0; i < 4; ++i) {
    const double mean = (double(zc(0, 0, 4 + i)) + zc(0, 1, 4 + i) + zc(1, 0, 4 + i) + zc(1, 1, 4 + i) +
                         zc(1, 2, 4 + i) + zc(1, 3, 4 + i)) / 6.0;
    for (size_t b = 0; b < 2; ++b)
      for (size_t s = 0; s < 4; ++s) {
        CHECK(z(b, s, 4 + i) == float(mean));
        CHECK(z(b, s, i) == zc(b, s, i));  // head 0 untouched
      }
  }
}

TEST_CASE("the first tutorial's single head takes hooks like the other families", "[interventions]") {
  TutorialConfig c;
  const ModelStages stages = model_stages(c);
  CHECK(resolve_stage_name(stages, "blocks.0.attn.hook_z") == "attention_output");
  CHECK(resolve_stage_name(stages, "blocks.0.hook_resid_pre") == "embedded");
  const TutorialRun clean = run_tutorial(c);
  for (const auto& [tl, ours] : stage_aliases(stages)) {
    INFO(tl);
    CHECK_NOTHROW(clean.trace.at(ours));
  }
  CHECK_THAT(error_of([&] { parse_layers("0", stages, "--ablate-mlp"); }), Catch::Contains("no feed-forward block"));
  // A replaced pattern: the output is the pattern times V, every earlier stage as the clean run's.
  Hooks uniform;
  uniform.add("attention_weights", [](Tensor& w) { std::fill(w.begin(), w.end(), 0.25f); });
  const TutorialRun u = run_tutorial(c, &uniform);
  const Tensor& v = u.trace.at("value");  // [4, 4, 6]: four sentences of four tokens
  for (size_t i = 0; i < 6; ++i)
    CHECK(u.trace.at("attention_output")(1, 2, i) == Approx((v(1, 0, i) + v(1, 1, i) + v(1, 2, i) + v(1, 3, i)) * 0.25f));
  CHECK(same(u.trace.at("masked_scores"), clean.trace.at("masked_scores")));
  // A hook on the query changes the scores after it; one on the kernel's inner steps is refused.
  Hooks query;
  query.add("blocks.0.attn.hook_q", [](Tensor& q) { q.data()[0] += 1.0f; });
  Hooks resolved;
  resolved.add(resolve_stage_name(stages, "blocks.0.attn.hook_q"), [](Tensor& q) { q.data()[0] += 1.0f; });
  CHECK_THAT(error_of([&] { run_tutorial(c, &query); }), Catch::Contains("no stage named 'blocks.0.attn.hook_q'"));
  CHECK(!same(run_tutorial(c, &resolved).trace.at("scores"), clean.trace.at("scores")));
  Hooks scores;
  scores.add("scaled_scores", [](Tensor&) {});
  CHECK_THAT(error_of([&] { run_tutorial(c, &scores); }), Catch::Contains("cannot be replaced"));
  // Zero ablation of its head: the output is zeros, everything before it the clean run's.
  Ablation a;
  a.heads = parse_heads("0.0", stages);
  const Hooks zero = ablation_hooks(stages, a, nullptr, {});
  const TutorialRun z = run_tutorial(c, &zero);
  const Tensor& out = z.trace.at("attention_output");
  CHECK(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.0f; }));
  CHECK(same(z.trace.at("attention_weights"), clean.trace.at("attention_weights")));
}

// ------------------------------------------------------------------ head detectors

TEST_CASE("detection patterns are TransformerLens's on a repeated sequence", "[interventions][heads]") {
  const std::vector<int64_t> tokens = {7, 3, 5, 7, 3, 5};  // positions 3-5 repeat 0-2
  const auto on = [&](HeadKind kind) {
    const std::vector<float> p = detection_pattern(kind, tokens.data(), tokens.size());
    std::vector<std::pair<size_t, size_t>> cells;
    for (size_t q = 0; q < 6; ++q)
      for (size_t k = 0; k < 6; ++k)
        if (p[q * 6 + k] != 0.0f) cells.emplace_back(q, k);
    return cells;
  };
  using Cells = std::vector<std::pair<size_t, size_t>>;
  CHECK(on(HeadKind::previous_token) == Cells{{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}});
  CHECK(on(HeadKind::duplicate_token) == Cells{{3, 0}, {4, 1}, {5, 2}});
  // The token after each earlier copy; (q, q) when the token repeats its predecessor, as TL's roll gives.
  CHECK(on(HeadKind::induction) == Cells{{3, 1}, {4, 2}, {5, 3}});
  const std::vector<int64_t> twice = {4, 4};
  CHECK(detection_pattern(HeadKind::induction, twice.data(), 2) == std::vector<float>{0, 0, 0, 1});
}

TEST_CASE("a head that attends as the pattern says scores 1, a uniform one its share", "[interventions][heads]") {
  const std::vector<int64_t> tokens = {1, 2, 3, 1, 2, 3};
  const size_t n = tokens.size();
  const std::vector<float> previous = detection_pattern(HeadKind::previous_token, tokens.data(), n);
  std::vector<float> attention = previous;
  attention[0] = 1.0f;  // the first query has no previous token: it attends to itself
  CHECK(head_score(attention.data(), previous, n, {}) == Approx(5.0 / 6.0));
  CHECK(head_score(attention.data(), previous, n, {ErrorMeasure::mul, false, true}) == Approx(1.0));
  CHECK(head_score(attention.data(), previous, n, {ErrorMeasure::abs, false, false}) == Approx(1.0 - 1.0 / 6.0));
  std::vector<float> uniform(n * n, 0.0f);  // causal, uniform over the keys so far
  for (size_t q = 0; q < n; ++q)
    for (size_t k = 0; k <= q; ++k) uniform[q * n + k] = 1.0f / float(q + 1);
  double share = 0;
  for (size_t q = 1; q < n; ++q) share += 1.0 / double(q + 1);
  CHECK(head_score(uniform.data(), previous, n, {}) == Approx(share / double(n)));
}

TEST_CASE("head kinds, error measures and token ranges parse strictly", "[interventions][heads]") {
  CHECK(parse_head_kinds("induction,previous_token") == std::vector<HeadKind>{HeadKind::induction, HeadKind::previous_token});
  CHECK_THROWS_AS(parse_head_kinds(""), InputError);
  CHECK_THROWS_AS(parse_head_kinds("induction,"), InputError);
  CHECK_THROWS_AS(parse_error_measure("MUL"), InputError);
  CHECK(parse_token_range("3:9", 9).high == 9);
  CHECK_THROWS_AS(parse_token_range("3:10", 9), InputError);
  CHECK_THROWS_AS(parse_token_range("18446744073709551615:4", 9), InputError);
  TorchGenerator gen(0);
  const std::vector<int64_t> ids = repeated_random_tokens(gen, 2, 3, 5, 9);
  REQUIRE(ids.size() == 12);
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < 3; ++i) {
      CHECK(ids[b * 6 + i] == ids[b * 6 + i + 3]);
      CHECK((ids[b * 6 + i] >= 5 && ids[b * 6 + i] < 9));
    }
}

TEST_CASE("a run resumed at any layer from its own residual stream ends as the full run", "[patching]") {
  for (const LoadedModel& m : {classifier(false), classifier(true), checkpoint("gpt2_tiny"), checkpoint("bert_tiny")}) {
    const ModelInput in = m.tokenize({m.pretrained ? "the cat sat on the mat" : "a b c d"});
    const Trace full = m.forward(in);
    const std::string last = m.classifier ? "logits" : m.pretrained->model.config.family == ModelFamily::gpt2
                                                           ? "logits" : "last_hidden_state";
    const std::vector<std::string> resid = residual_stream_stages(m.stages());
    for (size_t layer = 0; layer < m.stages().layers; ++layer) {
      const LayerStart start{layer, full.at(resid[layer])};
      const Trace resumed = m.forward(in, nullptr, &start);
      INFO(m.description() << ", resumed at layer " << layer);
      CHECK(same(resumed.at(last), full.at(last)));
      CHECK(resumed.stages().front().name == resid[layer]);
    }
  }
}

TEST_CASE("patching the whole residual stream restores the clean run exactly", "[patching]") {
  // One token: its position is the whole stream, so each layer's resid_pre patch is the clean run.
  const LoadedModel m = classifier(false);
  const ModelInput clean = m.tokenize({"a"}), corrupted = m.tokenize({"e"});
  const Patching p = activation_patching(m, clean, corrupted, label_margin(1), {PatchKind::resid_pre, PatchKind::heads});
  REQUIRE(p.sweeps.size() == 2);
  CHECK(p.sweeps[0].shape == std::vector<size_t>{2, 1});
  for (double r : p.sweeps[0].recovery) CHECK(r == 1.0);
  CHECK(p.sweeps[1].axes == std::vector<std::string>{"layer", "head"});
  CHECK(p.runs == 2 + 4);
  CHECK(p.layers_full == 6 * 2);
  CHECK(p.layers_run == (2 + 1) + 2 * (2 + 1));  // layer 0's patches run 2 layers, layer 1's one
}

TEST_CASE("resuming at the patched layer gives the bits of full reruns", "[patching]") {
  for (const LoadedModel& m : {classifier(true), checkpoint("gpt2_tiny")}) {
    const bool lm = bool(m.pretrained);
    const ModelInput clean = m.tokenize({lm ? "the cat sat on the mat" : "a b c d"});
    const ModelInput corrupted = m.tokenize({lm ? "the dog sat on the mat" : "a e c d"});
    const PatchMetric metric = lm ? logit_difference(clean.seq - 1, 5, 9) : label_margin(0);
    const std::vector<PatchKind> all = parse_patch_kinds("heads,resid_pre,attn_out,mlp_out");
    const Patching resumed = activation_patching(m, clean, corrupted, metric, all);
    const Patching full = activation_patching(m, clean, corrupted, metric, all, false);
    INFO(m.description());
    CHECK(resumed.layers_run < full.layers_run);
    for (size_t k = 0; k < all.size(); ++k) CHECK(resumed.sweeps[k].metric == full.sweeps[k].metric);
  }
}

TEST_CASE("patching refuses what it cannot measure", "[patching]") {
  const LoadedModel m = classifier(false);
  const auto patch = [&](const std::string& a, const std::string& b) {
    return error_of([&] { activation_patching(m, m.tokenize({a}), m.tokenize({b}), label_margin(0), {PatchKind::heads}); });
  };
  CHECK(patch("a b", "a b c") == "the clean input has 2 tokens and the corrupted one 3: patching needs the same token count");
  CHECK(patch("a b", "a b").find("the clean and corrupted runs give the same metric") == 0);
  CHECK(error_of([] { parse_patch_kinds("heads,heads"); }) == "--sweep names heads twice");
  CHECK(error_of([] { parse_patch_kinds("head"); }) ==
        "--sweep: unknown patch 'head' (expected heads, resid_pre, attn_out or mlp_out, separated by commas)");
}

TEST_CASE("a sweep run one patch at a time fills in as the whole sweep does", "[patching]") {
  const LoadedModel m = classifier(true);
  const ModelInput clean = m.tokenize({"a b c d"}), corrupted = m.tokenize({"a e c d"});
  const std::vector<PatchKind> kinds = {PatchKind::mlp_out, PatchKind::heads};
  PatchingRun run(m, clean, corrupted, label_margin(2), kinds);
  CHECK(run.total() == 2 + 4);
  CHECK(run.result().sweeps[1].recovery.empty());
  run.step();
  run.step();
  run.step();
  CHECK(run.done() == 3);
  CHECK_FALSE(run.finished());
  CHECK(run.result().sweeps[0].recovery.size() == 2);  // mlp_out first, as asked
  CHECK(run.result().sweeps[1].recovery.size() == 1);
  while (!run.finished()) run.step();
  run.step();  // nothing more
  const Patching whole = activation_patching(m, clean, corrupted, label_margin(2), kinds);
  CHECK(run.result().sweeps[1].metric == whole.sweeps[1].metric);
  CHECK(run.result().layers_run == whole.layers_run);
}

TEST_CASE("the logit lens's last row is the model's own output", "[patching][lens]") {
  const LoadedModel gpt2 = checkpoint("gpt2_tiny");
  const ModelInput in = gpt2.tokenize({"the cat sat", "hello"});
  const Trace t = gpt2.forward(in);
  const LogitLens lens = logit_lens(gpt2.pretrained->model, t, 3);
  REQUIRE(lens.stages == std::vector<std::string>{"embeddings", "h.0", "h.1"});
  const Tensor& logits = t.at("logits");
  const size_t V = logits.shape(2), rows = in.batch * in.seq, last = 2 * rows * 3;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * V;
    CHECK(lens.ids[last + r * 3] == std::max_element(row, row + V) - row);
    CHECK(lens.probabilities[last + r * 3] >= lens.probabilities[last + r * 3 + 1]);
  }
  const LoadedModel c = classifier(false);
  const ModelInput ci = c.tokenize({"a b c", "d e f"});
  const Trace ct = c.forward(ci);
  const LogitLens cl = logit_lens(*c.classifier, ct);
  Tensor expected = ct.at("logits");
  softmax_rows(expected.data(), 2, 3);
  CHECK(std::vector<float>(cl.pooled.end() - 6, cl.pooled.end()) == std::vector<float>(expected.begin(), expected.end()));
  CHECK(cl.ids.size() == 3 * 2 * 3 * 3);
  CHECK(error_of([] { logit_lens(checkpoint("bert_tiny").pretrained->model, Trace(), 3); }).find("BERT") != std::string::npos);
}
