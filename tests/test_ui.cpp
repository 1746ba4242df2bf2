// The playground's UI logic without a window: configuration ↔ URL hash, JS settings, recompute only
// on change, errors as messages, the default view equal to PyTorch's numbers, the Masks view of every
// layer, models loaded from files (good and malformed), colour maps, slices, PNG.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"
#include "core/plot/png.hpp"
#include "tests/fixtures.hpp"
#include "ui/layout_check.hpp"
#include "ui/model_files.hpp"
#include "ui/patching.hpp"
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
  CHECK_THROWS_AS(from_hash("model=lstm@"), InputError);  // no kind, and no Hub name either
}

TEST_CASE("ui hash names a Hub model (model=ORG/NAME@REVISION) and the Hub's address (hub=)", "[ui][hub]") {
  const PlaygroundConfig c = from_hash("model=attnlab-test%2Fllama-tiny%40v1.0&hub=http%3A%2F%2F127.0.0.1%3A8080%2F&s=hi");
  CHECK(c.model == ModelKind::loaded);
  CHECK(c.hub == "attnlab-test/llama-tiny@v1.0");
  CHECK(c.hub_endpoint == "http://127.0.0.1:8080");  // its trailing '/' dropped, as HF_ENDPOINT's
  CHECK(to_hash(c) == "model=attnlab-test%2Fllama-tiny%40v1.0&hub=http%3A%2F%2F127.0.0.1%3A8080&s=hi");
  CHECK(from_hash(to_hash(c)) == c);
  CHECK(from_hash("model=gpt2").hub == "gpt2");                // a name without an organisation, as the Hub's oldest
  CHECK(from_hash("model=org/name@main").hub == "org/name");  // main, the default revision, is not written
  CHECK(model_setting(from_hash("model=org/name")) == "org/name");
  CHECK(settings_json(c).at("model") == "attnlab-test/llama-tiny@v1.0");
  CHECK(settings_json(c).at("hub") == "http://127.0.0.1:8080");
  CHECK_THROWS_WITH(from_hash("model=org//name"), Catch::Contains("ORG/NAME[@REVISION]"));
  CHECK_THROWS_WITH(from_hash("model=org/name@a..b"), Catch::Contains("'..'"));
  for (const char* bad : {"hub=ftp%3A%2F%2Fx", "hub=http%3A%2F%2F", "hub=127.0.0.1", "hub=http%3A%2F%2Fa%20b"})
    CHECK_THROWS_WITH(from_hash(bad), Catch::Contains("hub must be the Hub's address"));
  // Another kind forgets the Hub model, not the address; a Hub name from the JS API as from the hash.
  const PlaygroundConfig t = apply_settings(c, Json{{"model", "transformer"}});
  CHECK((t.model == ModelKind::transformer && t.hub.empty() && t.hub_endpoint == c.hub_endpoint));
  CHECK(apply_settings(PlaygroundConfig(), Json{{"model", "org/name@v2"}}).hub == "org/name@v2");
  // Until the download has given the model, computing says what is missing.
  Playground p(c);
  p.update();
  CHECK(p.error() == "attnlab-test/llama-tiny@v1.0 is not loaded yet (it downloads under \"Hugging Face model\")");
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
  const Slice unmasked = slice_2d(unmasked_weights(*computed, 0), {3});
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
  CHECK(unmasked_weights(*computed, 1).shape() == std::vector<size_t>{4, 2, 4, 4});
  CHECK(computed->num_layers == 2);
  CHECK(weights_stage_name(*computed, 1) == "layers.1.self_attn.attention_weights");
  CHECK(computed->json().at("mode") == "eval");
  CHECK(stage_layer("layers.1.norm2") == 1);
  CHECK(stage_layer("pooled") == -1);
  CHECK(is_attention_matrix("layers.0.self_attn.scores"));
  CHECK_FALSE(is_attention_matrix("layers.0.self_attn.query"));
  CHECK(std::strlen(stage_formula("attention_weights")) > 0);
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

TEST_CASE("ui reuses the seeded model and the positional table only when they are the same", "[ui]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 16;
  c.num_heads = 2;
  c.num_layers = 2;
  const auto first = compute(c);
  // Another mask, train mode (dropout continues the generator after initialisation, as in PyTorch)
  // and other words as many as before: the same model, the same numbers as computing afresh.
  PlaygroundConfig d = c;
  d.mask = MaskKind::causal;
  d.train = true;
  d.sentences = {"가 나 다 라", "마 바 사", "아 가", "나"};  // 8 distinct words, as the tutorial's
  const auto reused = compute(d, first.get());
  CHECK(reused->model == first->model);
  CHECK(reused->json() == compute(d)->json());
  // Another seed, size or vocabulary size: a new model.
  d.seed = 5;
  CHECK(compute(d, first.get())->model != first->model);
  d = c;
  d.sentences = {"하나 둘"};
  CHECK(compute(d, first.get())->model != first->model);
  d = c;
  d.d_ff = 8;
  const auto other = compute(d, first.get());
  CHECK(other->model != first->model);
  CHECK(other->json() == compute(d)->json());
  // A Playground lends its last result to the next computation.
  Playground p(c);
  p.update();
  const auto* model = p.result()->model.get();
  d = c;
  d.mask = MaskKind::none;
  p.set_config(d);
  p.update();
  CHECK(p.result()->model.get() == model);
}

TEST_CASE("ui masks view of every layer", "[ui]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 16;
  c.num_heads = 2;
  c.num_layers = 3;
  c.mask = MaskKind::none;
  // Without a mask, the unmasked weights are the layer's own weights, bit for bit, in every layer.
  auto computed = compute(c);
  for (size_t layer = 0; layer < 3; ++layer) {
    INFO("layer " << layer);
    const bool same = unmasked_weights(*computed, layer) == computed->trace.at(weights_stage_name(*computed, layer));
    CHECK(same);
  }
  CHECK_THROWS_AS(unmasked_weights(*computed, 3), InputError);
  // With the padding mask, the last sentence (one [PAD]) differs in every layer; the others do not.
  c.mask = MaskKind::padding;
  computed = compute(c);
  for (size_t layer = 0; layer < 3; ++layer) {
    const Tensor unmasked = unmasked_weights(*computed, layer);
    const Tensor& masked = computed->trace.at(weights_stage_name(*computed, layer));
    const Slice full_u = slice_2d(unmasked, {0, 1}), full_m = slice_2d(masked, {0, 1});
    CHECK(full_u.values == full_m.values);  // "나는 오늘 학교에 간다": no [PAD]
    const Slice pad_u = slice_2d(unmasked, {3, 1}), pad_m = slice_2d(masked, {3, 1});
    CHECK(pad_u.values[3] > 0.0f);  // query 0 → key 3 ([PAD])
    CHECK(pad_m.values[3] == 0.0f);
  }
}

namespace {

// A folder of its own under the system's temporary folder, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    // The process id too: CTest runs each test case as its own process, several at once.
    path = std::filesystem::temp_directory_path() /
           ("attnlab-ui-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

// The files of transformer_small.json's model (PyTorch's parameters): weights, config and a vocabulary
// t1…t11 (so "t1 t5 t7 t2" is the fixture's first row of ids).
struct SmallModelFiles {
  TempDir dir;
  std::string weights, config, vocab;
  std::vector<std::string> sentences;
  SmallModelFiles() {
    const auto& f = test::cached_fixture("transformer_small.json");
    std::vector<NamedTensor> tensors;
    for (const auto& p : f.at("parameters")) tensors.push_back({p.at("name").get<std::string>(), test::tensor_of(p)});
    weights = (dir.path / "small.safetensors").string();
    write_safetensors(weights, tensors);
    config = dir.write("model_config.json", f.at("config").dump());
    Json v = {{"[PAD]", 0}};
    for (int id = 1; id < 12; ++id) v["t" + std::to_string(id)] = id;
    vocab = dir.write("tokens.json", v.dump());  // no "vocab" in the name: sorted by its content
    for (const auto& row : f.at("ids")) {
      std::string s;
      for (const auto& id : row)
        if (id.get<int>() != 0) s += (s.empty() ? "t" : " t") + std::to_string(id.get<int>());
      sentences.push_back(s);
    }
  }
};

std::string load_error(const ModelFiles& files) {
  try {
    load_model(files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("ui loads a model from files as PyTorch computes it", "[ui]") {
  const SmallModelFiles files;
  const ModelFiles sorted = sort_model_files({files.vocab, files.weights, files.config});
  CHECK(sorted.weights == files.weights);
  CHECK(sorted.config == files.config);
  CHECK(sorted.vocab == files.vocab);
  PlaygroundConfig c;
  c.sentences = files.sentences;
  c.model = ModelKind::loaded;
  attach_model(c, load_model(sorted));
  CHECK(c.d_model == 16);
  CHECK(c.num_heads == 2);
  CHECK(c.loaded->name == "small.safetensors + model_config.json + tokens.json");
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  CHECK(r.tokens[1] == std::vector<std::string>{"t3", "t3", "t11", "[PAD]", "[PAD]"});
  const auto& fixture = test::cached_fixture("transformer_small.json");
  const Json doc = r.json();
  CHECK(doc.at("config").at("d_model") == 16);
  REQUIRE(doc.at("stages").size() == fixture.at("stages").size());
  for (const auto& stage : fixture.at("stages")) {
    const std::string name = stage.at("name").get<std::string>();
    INFO(name);
    CHECK(test::compare(r.trace.at(name), stage, 1e-5, 1e-5).failures == 0);
  }
  // Not in a link: the hash says model=loaded, and a page opened from it asks for the files.
  const std::string hash = to_hash(c);
  CHECK(hash.rfind("model=loaded&s=t1%20t5", 0) == 0);
  CHECK(hash.find("d_model") == std::string::npos);
  PlaygroundConfig linked = from_hash(hash);
  CHECK(linked.model == ModelKind::loaded);
  CHECK(linked.loaded == nullptr);
  Playground q(linked);
  q.update();
  CHECK(q.error().find("no model loaded") != std::string::npos);
  attach_model(linked, c.loaded);
  CHECK(linked == c);
  // Its sizes are the file's: settings refuse them; the other settings round-trip.
  CHECK_THROWS_AS(apply_settings(c, Json::parse(R"({"d_model": 8})")), InputError);
  CHECK_THROWS_AS(from_hash("model=loaded&num_heads=4"), InputError);
  CHECK(apply_settings(c, settings_json(c)) == c);
  CHECK(apply_settings(c, Json::parse(R"({"mask": "none", "seed": 3})")).loaded == c.loaded);
  // Switching models keeps the loaded one to come back to.
  const PlaygroundConfig tutorial = defaults_for(ModelKind::tutorial, c);
  CHECK(tutorial.loaded == c.loaded);
  CHECK(defaults_for(ModelKind::loaded, tutorial).d_model == 16);
}

TEST_CASE("ui loaded model without config or vocabulary", "[ui]") {
  const SmallModelFiles files;
  // No vocabulary: words get ids in order of appearance, as `attn encode` without --vocab.
  auto model = load_model({files.weights, files.config, "", {}});
  CHECK_FALSE(model->vocab.has_value());
  PlaygroundConfig c;
  c.model = ModelKind::loaded;
  attach_model(c, model);
  Playground p(c);
  p.update();
  CHECK(p.error().empty());
  // A sentence with more distinct words than the embedding's 12 rows is a message.
  c.sentences = {"a b c d e f g h i j k l m"};
  p.set_config(c);
  p.update();
  CHECK(p.error().find("embedding") != std::string::npos);
  // No config: the classifier's defaults (d_model 128) do not match these weights.
  CHECK(load_error({files.weights, "", "", {}}).find("small.safetensors") != std::string::npos);
}

TEST_CASE("ui refuses malformed model files with a message", "[ui]") {
  const SmallModelFiles files;
  const TempDir dir;
  const std::string fixtures = attn::test::fixtures_dir() + "/safetensors/";
  CHECK(load_error({}).find("weights") != std::string::npos);
  CHECK_FALSE(load_error({fixtures + "bad_header_not_json.safetensors", files.config, files.vocab, {}}).empty());
  CHECK_FALSE(load_error({fixtures + "bad_out_of_bounds_1tb.safetensors", files.config, files.vocab, {}}).empty());
  CHECK_FALSE(load_error({dir.write("w.safetensors", "not a safetensors file"), files.config, "", {}}).empty());
  // Messages name the files, not the folders they were in (the browser's are temporary).
  const std::string missing = load_error({dir.path.string() + "/missing.safetensors", files.config, "", {}});
  CHECK(missing.find("'missing.safetensors'") != std::string::npos);
  CHECK(missing.find(dir.path.string()) == std::string::npos);
  // Weights of another model (one nn.TransformerEncoderLayer): the missing tensors are named.
  CHECK(load_error({fixtures + "encoder_f32.safetensors", files.config, "", {}}).find("missing") != std::string::npos);
  const std::string bad_config = attn::test::fixtures_dir() + "/../data/bad_config.json";
  CHECK(load_error({files.weights, bad_config, "", {}}).find("bad_config.json") != std::string::npos);
  CHECK(load_error({files.weights, dir.write("c.json", "{\"d_model\": "), "", {}}).find("not valid JSON") !=
        std::string::npos);
  CHECK(load_error({files.weights, files.config, dir.write("v.json", "[1, 2]"), {}}).find("v.json") != std::string::npos);
  CHECK(load_error({files.weights, files.config, dir.write("v2.json", R"({"[PAD]": 0, "a": 5})"), {}}).find("the id of 'a' must be an integer from 0 to 1, got 5") !=
        std::string::npos);
  Json big = {{"[PAD]", 0}};
  for (int id = 1; id < 20; ++id) big["w" + std::to_string(id)] = id;
  CHECK(load_error({files.weights, files.config, dir.write("v3.json", big.dump()), {}}).find("embedding only 12") !=
        std::string::npos);
  // Sorting: two weight files, or none.
  CHECK_THROWS_WITH(sort_model_files({files.weights, files.weights}), Catch::Contains("two weights files"));
  CHECK_THROWS_WITH(sort_model_files({files.config, files.vocab}), Catch::Contains("no weights"));
  // A word the vocabulary lacks (no [UNK]) is a message in the UI, not a crash.
  PlaygroundConfig c;
  c.model = ModelKind::loaded;
  attach_model(c, load_model({files.weights, files.config, files.vocab, {}}));
  c.sentences = {"t1 nope"};
  Playground p(c);
  p.update();
  CHECK(p.result() == nullptr);
  CHECK(p.error().find("nope") != std::string::npos);
}

TEST_CASE("ui compute backend selection", "[ui]") {
  // The shell's factory (native/backends' make_backend in attn-gui); here cpu only, as if nothing else ran.
  const BackendFactory factory = [](const std::string& name, std::string& note) -> std::unique_ptr<Backend> {
    if (name == "cpu") {
      note = "cpu (test)";
      return make_cpu_backend(1);
    }
    throw InputError("backend '" + name + "' is not available here");
  };
  const auto has = [](const Trace& t, const std::string& name) {
    for (const Stage& s : t.stages())
      if (s.name == name) return true;
    return false;
  };
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.train = false;
  Playground exact(c);
  REQUIRE(exact.update());
  REQUIRE(exact.result());
  CHECK(exact.result()->computed_by == "exact");
  const Tensor& want = exact.result()->trace.at("logits");

  Playground p(c);
  REQUIRE(p.update());
  CHECK(p.select_backend("cpu", factory).error.empty());
  CHECK(p.backend_choice().note == "cpu (test)");
  CHECK(p.uses_backend());
  REQUIRE(p.update());  // a new path recomputes
  REQUIRE(p.result());
  const Computed& r = *p.result();
  CHECK(r.computed_by == "cpu");
  const Tensor& got = r.trace.at("logits");
  REQUIRE(got.shape() == want.shape());
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got.data()[i] - want.data()[i]) < 1e-4f);
  // Only layer 0's stages are pulled back, its weights included; scores never.
  CHECK(has(r.trace, "layers.0.self_attn.attention_weights"));
  CHECK(has(r.trace, "layers.0.output"));
  CHECK_FALSE(has(r.trace, "layers.1.output"));
  CHECK_FALSE(has(r.trace, "layers.0.self_attn.scores"));
  CHECK(r.not_computed == std::vector<std::string>{"layers.0.self_attn.scores"});
  CHECK_FALSE(p.update());  // idle
  p.set_shown_layer(2);     // another layer: recomputed, that layer pulled back
  REQUIRE(p.update());
  CHECK(has(p.result()->trace, "layers.2.self_attn.attention_weights"));
  CHECK_FALSE(has(p.result()->trace, "layers.0.output"));
  // The Masks view works from the pulled-back query/key/value.
  CHECK(unmasked_weights(*p.result(), 2).shape() == p.result()->trace.at("layers.2.self_attn.attention_weights").shape());

  // Train mode (dropout) and the first tutorial keep the exact path, and say so.
  PlaygroundConfig train = c;
  train.train = true;
  p.set_config(train);
  REQUIRE(p.update());
  CHECK(p.result()->computed_by == "exact");
  CHECK(p.result()->path_note.note == Str::path_train_mode);
  p.set_config(PlaygroundConfig());
  REQUIRE(p.update());
  CHECK(p.result()->computed_by == "exact");
  CHECK(p.result()->path_note.note == Str::path_first_tutorial);

  // An unavailable or unknown backend: its message, and the exact path.
  p.set_config(c);
  const BackendChoice& failed = p.select_backend("cuda", factory);
  CHECK(failed.name == "exact");
  CHECK(failed.error.find("not available") != std::string::npos);
  CHECK_FALSE(p.uses_backend());
  REQUIRE(p.update());
  CHECK(p.result()->computed_by == "exact");
  CHECK(p.result()->trace.at("logits").data()[0] == want.data()[0]);
  CHECK_FALSE(p.select_backend("cpu", nullptr).error.empty());  // no factory (the web)
  CHECK(p.select_backend("exact", factory).error.empty());
}

TEST_CASE("ui layout check finds overlaps and cut-off boxes", "[ui]") {
  const LayoutRect window{0, 0, 1280, 800};
  LayoutLog log;
  log.add(LayoutKind::heatmap, "mask", "", {100, 100, 200, 200}, window);
  log.add(LayoutKind::label, "mask", "학교에", {100, 80, 160, 97}, window);
  log.add(LayoutKind::label, "mask", "간다", {160, 80, 200, 97}, window);  // touching is fine
  log.add(LayoutKind::legend, "mask", "", {205, 100, 290, 200}, window);
  CHECK(log.problems().empty());

  log.add(LayoutKind::heatmap, "weights", "", {280, 100, 380, 200}, window);  // under the legend
  log.add(LayoutKind::label, "weights", "a very long token name that is cut", {300, 790, 400, 810}, window);
  const auto problems = log.problems();
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("legend of mask") == 0);
  CHECK(problems[0].find("overlaps heatmap of weights") != std::string::npos);
  CHECK(problems[1].find("label 'a very long token name ' of weights") == 0);  // its first 23 bytes
  CHECK(problems[1].find("cut off") != std::string::npos);

  log.clear();
  for (int i = 0; i < 10; ++i) log.add(LayoutKind::label, "grid", "", {0, 0, 10, 10}, window);
  const auto many = log.problems(5);
  REQUIRE(many.size() == 6);
  CHECK(many.back() == "… and 40 more");
}

// --- interventions: the configuration's ablation ---

TEST_CASE("ui ablation travels in the hash and the settings", "[ui][interventions]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.ablation = {{{0, 1}, {1, 3}}, {0}, AblationKind::mean};
  const std::string hash = to_hash(c);
  CHECK(hash.find("ablate=0.1%2C1.3&ablate_mlp=0&ablation=mean") != std::string::npos);
  CHECK(from_hash(hash) == c);
  CHECK(apply_settings(defaults_for(ModelKind::transformer), settings_json(c)) == c);
  CHECK(apply_settings(c, Json::parse(R"({"ablate": "", "ablate_mlp": ""})")).ablation.empty());
  CHECK(defaults_for(ModelKind::loaded, c).ablation == c.ablation);  // a model switch keeps it
  CHECK_THROWS_WITH(from_hash("model=transformer&ablate=1"), Catch::Contains("ablate expects LAYER.HEAD items"));
  CHECK_THROWS_WITH(from_hash("model=transformer&ablation=half"), Catch::Contains("--ablation expects zero or mean"));
  CHECK_THROWS_WITH(from_hash("model=transformer&ablate_mlp=x"), Catch::Contains("ablate_mlp (layer) expects an integer"));
}

TEST_CASE("ui computes the ablated run as the engine ablates, beside the clean output", "[ui][interventions]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 8, c.num_heads = 2, c.num_layers = 2, c.seed = 3;
  Playground clean(c);
  clean.update();
  REQUIRE(clean.result());
  for (const AblationKind kind : {AblationKind::zero, AblationKind::mean}) {
    c.ablation = {{{0, 1}}, {1}, kind};
    Playground p(c);
    p.update();
    REQUIRE(p.error().empty());
    const Computed& r = *p.result();
    // The engine's ablation (checked against PyTorch by tests/intervention_check.py) on the same model.
    const Hooks hooks = ablation_hooks(r.stages, c.ablation, &clean.result()->trace, r.lengths);
    const Trace expected = classify(*r.model, r.ids, r.tokens.size(), r.tokens[0].size(), c.mask, nullptr, &hooks);
    CHECK(r.trace.at("logits") == expected.at("logits"));
    CHECK(r.trace.at("layers.1.self_attn.attention_weights") == expected.at("layers.1.self_attn.attention_weights"));
    CHECK(r.clean_output == clean.result()->trace.at("logits"));
    CHECK(r.trace.at("logits") != r.clean_output);
  }
  c.ablation = {{{2, 0}}, {}, AblationKind::zero};
  Playground out_of_range(c);
  out_of_range.update();
  CHECK(out_of_range.error() == "ablate: layer 2 is out of range (the model has 2 layers, 0 to 1)");
}

TEST_CASE("ui ablates the first tutorial's single head as attn tutorial --ablate does", "[ui][interventions]") {
  PlaygroundConfig c;  // the first tutorial
  Playground clean(c);
  clean.update();
  for (const AblationKind kind : {AblationKind::zero, AblationKind::mean}) {
    c.ablation = {{{0, 0}}, {}, kind};
    Playground p(c);
    p.update();
    REQUIRE(p.error().empty());
    const Computed& r = *p.result();
    TutorialConfig t;
    t.sentences = c.sentences;
    const TutorialRun clean_run = run_tutorial(t);
    const Hooks hooks = ablation_hooks(model_stages(t), c.ablation, &clean_run.trace, clean_run.batch.lengths);
    CHECK(r.trace.at("attention_output") == run_tutorial(t, &hooks).trace.at("attention_output"));
    CHECK(r.trace.at("attention_weights") == clean.result()->trace.at("attention_weights"));
    CHECK(r.clean_output == clean.result()->trace.at("attention_output"));
    CHECK(r.trace.at("attention_output") != r.clean_output);
  }
  c.ablation = {{{0, 1}}, {}, AblationKind::zero};
  Playground out_of_range(c);
  out_of_range.update();
  CHECK(out_of_range.error() == "ablate 0.1: head 1 is out of range (layer 0 has 1 head)");
  c.ablation = {{}, {0}, AblationKind::zero};
  Playground mlp(c);
  mlp.update();
  CHECK_THAT(mlp.error(), Catch::Contains("the first tutorial has no feed-forward block"));
}

TEST_CASE("ui head detectors on the run's sentences", "[ui][interventions]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 8, c.num_heads = 2, c.num_layers = 3, c.mask = MaskKind::causal;
  c.sentences = {"a b a b a", "c a"};
  Playground p(c);
  p.update();
  const Computed& r = *p.result();
  const std::vector<HeadScores> scores = sentence_head_scores(r);
  REQUIRE(scores.size() == 3);
  CHECK(scores[2].kind == HeadKind::induction);
  CHECK(scores[2].layers == 3);
  CHECK(scores[2].heads == 2);
  // The engine's detectors on the same trace, real tokens only (the second sentence is padded).
  CHECK(r.lengths == std::vector<size_t>{5, 2});
  const auto direct = detect_heads(r.stages, r.trace, r.ids, {5, 2}, {HeadKind::induction}, {});
  CHECK(direct[0].scores == scores[2].scores);
  Playground tutorial;  // one attention, no layers of heads
  tutorial.update();
  CHECK_THROWS_AS(sentence_head_scores(*tutorial.result()), InputError);
}

TEST_CASE("ui activation patching runs attn patch's sweeps on the playground's model", "[ui][interventions]") {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 8, c.num_heads = 2, c.num_layers = 2, c.num_classes = 3;
  c.patching.label = "1";
  CHECK(from_hash(to_hash(c)) == c);
  CHECK(to_hash(c).find("patch.label=1") != std::string::npos);
  Playground p(c);
  p.update();
  const size_t computed = p.compute_count();
  PlaygroundConfig inputs = c;
  inputs.patching.corrupted = "나는 오늘 집에 간다";
  p.set_config(inputs);  // patching inputs recompute nothing
  p.update();
  CHECK(p.compute_count() == computed);
  const Computed& r = *p.result();
  PatchingSweep sweep;
  REQUIRE(sweep.start(p.config(), r).empty());
  CHECK(sweep.total() == 2 * 2 + 2 * 4 + 2 + 2);
  while (sweep.running()) sweep.pump(1);  // natively the worker runs them: pump waits for nothing
  CHECK(sweep.done() == sweep.total());
  // The same sweep straight from the engine: the first sentence against the corrupted one, label 1.
  attn::LoadedModel m;
  m.classifier = r.model;
  m.mask = c.mask;
  m.vocab = r.vocab;
  const Patching expected = activation_patching(m, m.tokenize({c.sentences[0]}), m.tokenize({"나는 오늘 집에 간다"}),
                                                label_margin(1), parse_patch_kinds("heads,resid_pre,attn_out,mlp_out"));
  CHECK(sweep.json()["patches"] == patches_json(expected));
  CHECK(sweep.json()["clean"]["tokens"] == Json({"나는", "오늘", "학교에", "간다"}));
  PlaygroundConfig no_label = c;
  no_label.patching.label.clear();
  CHECK_THAT(sweep.start(no_label, r), Catch::Contains("the classifier's metric needs --label K"));
  CHECK_FALSE(sweep.started());
  Playground tutorial;
  tutorial.update();
  CHECK(sweep.start(tutorial.config(), *tutorial.result()) == tr(Str::patching_tutorial));
}
