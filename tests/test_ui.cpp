// The playground's UI logic without a window: configuration ↔ URL hash, JS settings, recompute only
// on change, errors as messages, the default view equal to PyTorch's numbers, colour maps, slices, PNG.
#include <cstring>

#include "core/error.hpp"
#include "tests/fixtures.hpp"
#include "ui/playground.hpp"

using namespace attn;
using namespace attn::ui;

TEST_CASE("ui hash of the defaults is empty", "[ui]") {
  CHECK(to_hash(PlaygroundConfig()).empty());
  CHECK(from_hash("") == PlaygroundConfig());
  CHECK(from_hash("#") == PlaygroundConfig());
}

TEST_CASE("ui hash round trip", "[ui]") {
  PlaygroundConfig c;
  c.sentences = {"나는 집에 간다", "a+b & c=d %"};
  c.seed = 18446744073709551615ULL;
  c.d_model = 8;
  c.max_len = 12;
  c.mask = MaskKind::padding_causal;
  const std::string hash = to_hash(c);
  CHECK(hash.find("s=%EB%82%98%EB%8A%94%20") == 0);
  CHECK(from_hash("#" + hash) == c);

  PlaygroundConfig t = defaults_for(ModelKind::transformer, c);
  t.num_heads = 2;
  t.num_layers = 3;
  t.d_ff = 40;
  t.num_classes = 3;
  t.dropout = 0.25;
  t.train = true;
  t.norm_first = true;
  CHECK(from_hash(to_hash(t)) == t);
  CHECK(to_hash(t).rfind("model=transformer", 0) == 0);
  CHECK(from_hash("seed=-1").seed == 18446744073709551615ULL);
}

TEST_CASE("ui hash refuses bad settings", "[ui]") {
  CHECK_THROWS_AS(from_hash("bogus=1"), InputError);
  CHECK_THROWS_AS(from_hash("seed=abc"), InputError);
  CHECK_THROWS_AS(from_hash("d_model=0"), InputError);
  CHECK_THROWS_AS(from_hash("mask=sideways"), InputError);
  CHECK_THROWS_AS(from_hash("s=%E"), InputError);
  CHECK_THROWS_AS(from_hash("dropout=1.5"), InputError);
  CHECK_THROWS_AS(from_hash("model=lstm"), InputError);
}

TEST_CASE("ui JS settings", "[ui]") {
  const PlaygroundConfig base;
  PlaygroundConfig c = apply_settings(base, Json::parse(R"({"seed": 1, "mask": "none", "d_model": 8})"));
  CHECK(c.seed == 1);
  CHECK(c.mask == MaskKind::none);
  CHECK(c.d_model == 8);
  c = apply_settings(base, Json::parse(R"({"model": "transformer", "num_heads": 4, "dropout": 0.5, "train": true})"));
  CHECK(c.model == ModelKind::transformer);
  CHECK(c.d_model == 128);
  CHECK(c.num_heads == 4);
  CHECK(c.dropout == Approx(0.5));
  CHECK(c.train);
  CHECK(c.sentences == tutorial_sentences());
  CHECK_THROWS_AS(apply_settings(base, Json::parse(R"({"colour": 1})")), InputError);
  CHECK_THROWS_AS(apply_settings(base, Json::parse(R"({"sentences": []})")), InputError);
  CHECK_THROWS_AS(apply_settings(base, Json::parse(R"({"d_model": 6.5})")), InputError);
  CHECK(apply_settings(base, settings_json(c)) == c);
}

TEST_CASE("ui sentences text", "[ui]") {
  CHECK(parse_sentences_text("a b\r\n\n  \nc\n") == std::vector<std::string>{"a b", "c"});
  CHECK(parse_sentences_text(sentences_text(tutorial_sentences())) == tutorial_sentences());
}

TEST_CASE("ui recomputes only when the configuration changes", "[ui]") {
  Playground p;
  CHECK(p.update());
  CHECK_FALSE(p.update());
  CHECK_FALSE(p.update());
  CHECK(p.compute_count() == 1);
  const auto generation = p.config_generation();
  p.set_config(PlaygroundConfig());  // unchanged
  CHECK_FALSE(p.update());
  CHECK(p.config_generation() == generation);
  PlaygroundConfig c = p.config();
  c.seed = 1;
  p.set_config(c);
  CHECK(p.update());
  CHECK(p.compute_count() == 2);
  REQUIRE(p.result());
  CHECK(p.error().empty());
}

TEST_CASE("ui errors are messages", "[ui]") {
  Playground p;
  PlaygroundConfig c;
  c.d_model = 7;
  p.set_config(c);
  p.update();
  CHECK(p.result() == nullptr);
  CHECK(p.error().find("even") != std::string::npos);
  c = PlaygroundConfig();
  c.max_len = 2;
  p.set_config(c);
  p.update();
  CHECK(p.error().find("max_len") != std::string::npos);
  c = defaults_for(ModelKind::transformer);
  c.d_model = 10;
  c.num_heads = 4;
  p.set_config(c);
  p.update();
  CHECK_FALSE(p.error().empty());
  c = PlaygroundConfig();
  c.d_model = 4000000;
  p.set_config(c);
  p.update();
  CHECK(p.result() == nullptr);
  CHECK_FALSE(p.error().empty());
  c = PlaygroundConfig();
  c.sentences = {"\xff"};
  p.set_config(c);
  p.update();
  CHECK_FALSE(p.error().empty());
  p.set_config(PlaygroundConfig());
  p.update();
  CHECK(p.error().empty());
}

TEST_CASE("ui default view is the first tutorial as PyTorch computes it", "[ui]") {
  const auto computed = compute(PlaygroundConfig());
  const Json doc = computed->json();
  const auto& fixture = test::cached_fixture("tutorial_default.json");
  CHECK(doc.at("tokens").dump() == fixture.at("tokens").dump());
  const auto& ours = doc.at("stages");
  const auto& torch = fixture.at("stages");
  REQUIRE(ours.size() == torch.size());
  for (size_t i = 0; i < torch.size(); ++i) {
    INFO(torch[i].at("name").get<std::string>());
    CHECK(ours[i].at("name").get<std::string>() == torch[i].at("name").get<std::string>());
    const auto& a = ours[i].at("data");
    const auto& b = torch[i].at("data");
    REQUIRE(a.size() == b.size());
    size_t differ = 0;
    for (size_t k = 0; k < b.size(); ++k) differ += a[k].get<float>() != b[k].get<float>();
    CHECK(differ == 0);
  }
  // The side-by-side view: without the mask, the last sentence attends to [PAD]; with it, not at all.
  const Slice unmasked = slice_2d(computed->unmasked_weights, {3});
  const Slice masked = slice_2d(computed->trace.at("attention_weights"), {3});
  CHECK(unmasked.values[3] > 0.0f);
  CHECK(masked.values[3] == 0.0f);
  CHECK(computed->pe_table.shape() == std::vector<size_t>{100, 6});
}

TEST_CASE("ui transformer view", "[ui]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 16;
  c.num_heads = 2;
  c.num_layers = 2;
  const auto computed = compute(c);
  CHECK(computed->trace.at("layers.1.self_attn.attention_weights").shape() == std::vector<size_t>{4, 2, 4, 4});
  CHECK(computed->unmasked_weights.shape() == std::vector<size_t>{4, 2, 4, 4});
  CHECK(computed->json().at("mode") == "eval");
  CHECK(stage_layer("layers.1.norm2") == 1);
  CHECK(stage_layer("pooled") == -1);
  CHECK(is_attention_matrix("layers.0.self_attn.scores"));
  CHECK_FALSE(is_attention_matrix("layers.0.self_attn.query"));
  CHECK_FALSE(stage_formula("attention_weights").empty());
}

TEST_CASE("ui slices", "[ui]") {
  Tensor t = Tensor::from_shape({2, 3, 4});
  for (size_t i = 0; i < t.size(); ++i) t.data()[i] = float(i);
  const Slice s = slice_2d(t, {1});
  CHECK(s.rows == 3);
  CHECK(s.cols == 4);
  CHECK(s.values.front() == 12.0f);
  CHECK(s.values.back() == 23.0f);
  CHECK(slice_2d(t, {9}).leading == std::vector<size_t>{1});  // clamped
  Tensor v = Tensor::from_shape({5});
  CHECK(slice_2d(v, {}).rows == 1);
}

TEST_CASE("ui colour maps", "[ui]") {
  CHECK(color_at(ColorMap::sequential, 0.0) == Rgba{68, 1, 84, 255});
  CHECK(color_at(ColorMap::sequential, 1.0) == Rgba{253, 231, 37, 255});
  CHECK(color_at(ColorMap::diverging, 0.5) == Rgba{247, 247, 247, 255});
  CHECK(color_at(ColorMap::diverging, 0.0)[2] > color_at(ColorMap::diverging, 0.0)[0]);  // blue end
  CHECK(color_at(ColorMap::diverging, 2.0) == color_at(ColorMap::diverging, 1.0));      // clamped
  const std::vector<float> values{-2.0f, 1.0f, -1e9f};
  const ValueRange r = map_range(ColorMap::diverging, values);
  CHECK(r.lo == -2.0f);
  CHECK(r.hi == 2.0f);
  CHECK(value_color(ColorMap::diverging, r, -1e9f) == masked_color);
  CHECK(value_range(values).hi == 1.0f);
  const Slice s{1, 3, values, {}};
  CHECK(slice_pixels(s, ColorMap::diverging, r).size() == 12);
}

TEST_CASE("ui exports", "[ui]") {
  const std::vector<uint8_t> rgba{255, 0, 0, 255, 0, 0, 255, 255};
  const auto png = png_bytes(rgba, 2, 1, 4);
  REQUIRE(png.size() > 8);
  CHECK(std::memcmp(png.data(), "\x89PNG\r\n\x1a\n", 8) == 0);
  Tensor t = Tensor::from_shape({2, 2});
  t.fill(0.5f);
  const auto npy = stage_npy_bytes(t);
  REQUIRE(npy.size() > 10);
  CHECK(std::memcmp(npy.data(), "\x93NUMPY", 6) == 0);
  CHECK(stage_json_text(Stage{"x", t, PrintDtype::float32}) == R"({"name":"x","shape":[2,2],"data":[0.5,0.5,0.5,0.5]})");
}
