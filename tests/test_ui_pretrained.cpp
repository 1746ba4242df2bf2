// The playground on Hugging Face checkpoints (tests/fixtures/pretrained): a folder or its files picked
// one by one become a loaded model, computed with its own tokenizer and mask as PyTorch computes it;
// its layers' stages are named the model's way, and GPT-2 lists its next tokens.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/base/error.hpp"
#include "core/model/decoder.hpp"
#include "tests/fixtures.hpp"
#include "ui/attribution.hpp"
#include "ui/model_files.hpp"
#include "ui/patching.hpp"
#include "ui/strings.hpp"
#include "ui/playground.hpp"

using namespace attn;
using namespace attn::ui;

namespace {

const std::string dir = attn::test::fixtures_dir() + "/pretrained/";

const nlohmann::json& fixture_case(const std::string& name) {
  for (const auto& c : test::cached_fixture("pretrained/pretrained_stages.json"))
    if (c.at("case") == name) return c;
  throw std::runtime_error("no case " + name);
}

PlaygroundConfig loaded_config(const ModelFiles& files, std::vector<std::string> sentences) {
  PlaygroundConfig c;
  c.model = ModelKind::loaded;
  c.sentences = std::move(sentences);
  attach_model(c, load_model(files));
  return c;
}

}  // namespace

TEST_CASE("ui runs a BERT folder with its tokenizer as PyTorch computes it", "[ui]") {
  const auto& f = fixture_case("bert_tiny");
  std::vector<std::string> sentences;  // the case's sentence pairs, the second segment after a tab
  for (const auto& pair : f.at("text")) sentences.push_back(pair[0].get<std::string>() + "\t" + pair[1].get<std::string>());
  const PlaygroundConfig c = loaded_config(sort_model_files({dir + "bert_tiny"}), sentences);
  CHECK(c.num_layers == 2);
  CHECK(c.num_heads == 4);
  CHECK(c.d_model == 32);
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  CHECK(r.tokens[0].front() == "[CLS]");
  CHECK(r.tokens[1].back() == "[PAD]");
  for (const auto& stage : f.at("stages")) {
    INFO(stage.at("name"));
    CHECK(test::compare(r.trace.at(stage.at("name").get<std::string>()), stage, 1e-5, 1e-5).failures == 0);
  }
  CHECK(weights_stage_name(r, 1) == "encoder.layer.1.attention.self.attention_probs");
  CHECK(r.positions == Computed::Positions::learned);
  // The padding mask: every query may attend to the real tokens only.
  const size_t real = f.at("attention_mask")[1].size() - 4;
  CHECK(r.mask(1, 0, real - 1) == 1.0f);
  CHECK(r.mask(1, 0, real) == 0.0f);
  // Without the mask the padded keys get weight again.
  const Tensor unmasked = unmasked_weights(r, 0);
  CHECK(unmasked(1, 0, 0, real) > 0.0f);
  CHECK(r.trace.at("encoder.layer.0.attention.self.attention_probs")(1, 0, 0, real) == 0.0f);
}

TEST_CASE("ui picks a GPT-2 checkpoint's files by name and lists next tokens", "[ui]") {
  const std::string g = dir + "gpt2_tiny/";
  const ModelFiles files = sort_model_files({g + "merges.txt", g + "model.safetensors", g + "vocab.json",
                                             g + "config.json", g + "tokenizer_config.json"});
  REQUIRE(files.pretrained);
  const PlaygroundConfig c = loaded_config(files, {"the dog sat", "the dog"});
  CHECK(c.norm_first);
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  CHECK(r.mask(0, 1, 2) == 0.0f);  // causal
  CHECK(r.mask(0, 2, 1) == 1.0f);
  CHECK(r.tokens[1].back() == "<|endoftext|>");  // padding of the shorter sentence
  const auto next = next_tokens(*c.loaded->pretrained, r.trace, r.pretrained_input, 1, 5, 1.0);
  REQUIRE(next.size() == 5);
  CHECK(next[0].probability >= next[4].probability);
  // At T = 1 the list is next_token_probs (float32) to double precision's rounding of it.
  const Tensor& probs = r.trace.at("next_token_probs");
  CHECK(std::abs(next[0].probability - probs(1, size_t(next[0].id))) < 1e-6);
  // A cooler temperature sharpens the distribution.
  CHECK(next_tokens(*c.loaded->pretrained, r.trace, r.pretrained_input, 1, 1, 0.25)[0].probability > next[0].probability);
}

TEST_CASE("ui names and moves between the layers of every model", "[ui]") {
  CHECK(stage_layer("encoder.layer.3.attention.self.query") == 3);
  CHECK(stage_layer("h.11.attn.attn_weights") == 11);
  CHECK(stage_layer("h.2") == 2);
  CHECK(stage_layer("layers.1.norm1") == 1);
  CHECK(stage_layer("embeddings") == -1);
  CHECK(stage_layer("hidden") == -1);
  CHECK(stage_in_layer("h.2", 5) == "h.5");
  CHECK(stage_in_layer("encoder.layer.0.output.dense", 1) == "encoder.layer.1.output.dense");
  CHECK(stage_in_layer("layers.10.self_attn.scores", 2) == "layers.2.self_attn.scores");
  CHECK(stage_in_layer("logits", 2) == "logits");
  CHECK(is_attention_matrix("encoder.layer.0.attention.self.attention_probs"));
  CHECK(is_attention_matrix("h.0.attn.scores"));
  CHECK(std::string(stage_formula("h.0.mlp.act")).find("gelu_new") != std::string::npos);
}

TEST_CASE("ui refuses a checkpoint's bad files with a message naming them", "[ui]") {
  const std::string data = attn::test::fixtures_dir() + "/../data/";
  CHECK_THROWS_WITH(sort_model_files({data + "pickle_only"}), Catch::Contains("convert it to model.safetensors"));
  CHECK_THROWS_WITH(load_model(sort_model_files({data + "unknown_family"})), Catch::Contains("'t5' is not supported"));
  const std::string b = dir + "bert_tiny/";
  CHECK_THROWS_WITH(load_model(sort_model_files({b + "config.json", b + "model.safetensors"})),
                    Catch::Contains("a bert model needs its vocab.txt"));
  CHECK_THROWS_WITH(sort_model_files({b + "config.json", b + "vocab.txt"}), Catch::Contains("no weights"));
}

namespace {

// Waits for the loader's result (its thread reads a fixture in milliseconds).
LoadResult wait_for(ModelLoader& loader) {
  for (int i = 0; i < 2000; ++i) {
    if (auto done = loader.take()) return std::move(*done);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL("the model was not read within 10 s");
  return {};
}

}  // namespace

TEST_CASE("ui reads a checkpoint on a worker thread, telling its progress", "[ui]") {
  ModelLoader loader;
  CHECK_FALSE(loader.running());
  loader.start(sort_model_files({dir + "gpt2_tiny"}));
  CHECK(loader.running());
  const LoadResult loaded = wait_for(loader);
  CHECK_FALSE(loader.running());
  REQUIRE(loaded.error.empty());
  REQUIRE(loaded.model);
  CHECK(loaded.model->pretrained->model.config.architecture == "GPT2LMHeadModel");
  CHECK(loader.bytes_total() > 0);
  CHECK(loader.bytes_read() == loader.bytes_total());
  CHECK_FALSE(loader.take());  // a result is taken once

  // A refused file is a message naming it; a cancelled read gives nothing.
  const std::string b = dir + "bert_tiny/";
  loader.start(sort_model_files({b + "config.json", b + "model.safetensors", b + "tokenizer_config.json"}));
  const LoadResult refused = wait_for(loader);
  CHECK_FALSE(refused.model);
  CHECK_THAT(refused.error, Catch::Contains("a bert model needs its vocab.txt"));
  loader.start(sort_model_files({dir + "bert_tiny"}));
  loader.cancel();
  CHECK_FALSE(loader.running());
  CHECK_FALSE(loader.take());
}

TEST_CASE("ui ablates a GPT-2 checkpoint's heads as the engine does, beside the clean next tokens", "[ui][interventions]") {
  PlaygroundConfig c = loaded_config(sort_model_files({dir + "gpt2_tiny"}), {"the cat sat on the mat", "hello"});
  Playground clean(c);
  clean.update();
  REQUIRE(clean.result());
  c.ablation = {{{1, 2}}, {0}, AblationKind::mean};
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  const Hooks hooks = ablation_hooks(r.stages, c.ablation, &clean.result()->trace, r.lengths);
  const Trace expected = pretrained_forward(c.loaded->pretrained->model, r.pretrained_input, &hooks);
  CHECK(r.trace.at("next_token_probs") == expected.at("next_token_probs"));
  CHECK(r.clean_output == clean.result()->trace.at("next_token_probs"));
  CHECK(r.trace.at("logits") != clean.result()->trace.at("logits"));
}

TEST_CASE("ui activation patching on a GPT-2 checkpoint measures the answer's logit difference", "[ui][interventions]") {
  PlaygroundConfig c = loaded_config(sort_model_files({dir + "gpt2_tiny"}), {"the cat sat on the mat", "the dog sat on the mat"});
  c.patching.answer = " the";
  c.patching.wrong = " cat";
  Playground p(c);
  p.update();
  PatchingSweep sweep;
  REQUIRE(sweep.start(p.config(), *p.result()).empty());
  while (sweep.running()) sweep.pump(1);
  const Json doc = sweep.json();
  CHECK(doc["metric"]["answer"]["token"] == "·the");
  CHECK(doc["patches"]["heads"]["recovery"].size() == 2);
  CHECK(doc["patches"]["resid_pre"]["recovery"][0].size() == 10);
  CHECK(doc["runs"] == 2 * 4 + 2 * 10 + 2 + 2);
  c.patching.answer = "hello world";  // two tokens
  CHECK_THAT(sweep.start(c, *p.result()), Catch::Contains("--answer 'hello world' is 5 tokens"));
}

namespace {

// A Llama-family fixture's folder with llama_tiny's tokenizer.json beside it (the others have none; every
// fixture's vocabulary has 64 tokens), in a temporary folder.
std::string with_tokenizer(const std::string& name) {
  const std::filesystem::path to = std::filesystem::temp_directory_path() / ("attnlab-ui-" + name);
  std::filesystem::remove_all(to);
  std::filesystem::copy(dir + name, to);
  std::filesystem::copy_file(dir + "llama_tiny/tokenizer.json", to / "tokenizer.json");
  return to.string();
}

}  // namespace

TEST_CASE("ui runs a Llama-family folder with its tokenizer.json, rotary angles and next tokens", "[ui]") {
  const ModelFiles files = sort_model_files({dir + "llama_tiny"});
  REQUIRE(files.pretrained);
  const PlaygroundConfig c = loaded_config(files, {"the cat sat on the mat", "a dog ran"});
  REQUIRE(c.loaded->decoder);
  CHECK(c.loaded->name == "LlamaForCausalLM: config.json + model.safetensors + tokenizer.json");
  CHECK(c.num_layers == 2);
  CHECK(c.num_heads == 4);
  CHECK(c.d_model == 32);
  CHECK(c.norm_first);
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  // The tokenizer.json's ids, the shorter sentence padded after its tokens.
  const auto ids = c.loaded->decoder_tokenizer->encode("a dog ran").ids;
  REQUIRE(r.lengths[1] == ids.size());
  CHECK(std::vector<int64_t>(r.ids.begin() + long(r.pretrained_input.seq), r.ids.begin() + long(r.pretrained_input.seq + ids.size())) == ids);
  // The engine's forward on the same ids, stage for stage.
  const Trace expected = decoder_forward(*c.loaded->decoder, r.ids, 2, r.pretrained_input.seq, nullptr, nullptr, r.lengths);
  CHECK(r.trace.stages().size() == expected.stages().size());
  CHECK(r.trace.at("logits") == expected.at("logits"));
  CHECK(weights_stage_name(r, 1) == "model.layers.1.self_attn.attn_weights");
  CHECK(r.positions == Computed::Positions::rotary);
  CHECK(r.pe_table.shape() == Shape{r.pretrained_input.seq, 8});
  CHECK(r.pe_table(3, 0) == expected.at("model.rotary_emb.angles")(0, 3, 0));
  CHECK(r.mask(1, 1, 2) == 0.0f);
  CHECK(r.mask(1, 2, 1) == 1.0f);
  REQUIRE(r.lengths[1] < r.pretrained_input.seq);
  CHECK(r.mask(1, r.lengths[1], r.lengths[1]) == 0.0f);  // padding
  CHECK(r.header["family"] == "llama");
  CHECK(r.header["tokens"][0][1] == "\u2581the");  // the document keeps transformers' tokens
  CHECK(r.header["lengths"] == Json(r.lengths));
  CHECK(r.tokens[0][1] == "\u00b7the");  // ▁the: the font has no ▁
  CHECK(c.loaded->token(r.ids[1]) == "\u00b7the");
  CHECK(std::string(stage_formula("model.layers.0.self_attn.queries_rotated")).find("rotate_half") != std::string::npos);
  CHECK(std::string(stage_formula("model.layers.0")) == "the layer's output");
  // Next tokens after the second sentence's last real token.
  REQUIRE(c.loaded->causal_lm());
  const attn::LoadedModel m = c.loaded->engine();
  const auto next = next_tokens(r.trace, r.pretrained_input, 1, 3, 1.0, [&m](int64_t id) { return m.token(id); });
  REQUIRE(next.size() == 3);
  CHECK(std::abs(next[0].probability - r.trace.at("next_token_probs")(1, size_t(next[0].id))) < 1e-6);
}

TEST_CASE("ui names a Hub snapshot's model by its repository, not its files", "[ui][hub]") {
  const auto read = load_model(sort_model_files({dir + "llama_tiny"}));
  const auto model = hub_model(*read, "attnlab-test/llama-tiny");
  CHECK(model->decoder == read->decoder);  // its parts shared, not copied
  CHECK(model->name == "LlamaForCausalLM: attnlab-test/llama-tiny");
  CHECK(model->hub == "attnlab-test/llama-tiny");
  PlaygroundConfig c = from_hash("model=attnlab-test%2Fllama-tiny&s=the%20cat");
  attach_model(c, model);
  Playground p(c);
  p.update();
  CHECK(p.error().empty());
  CHECK(to_hash(p.config()).rfind("model=attnlab-test%2Fllama-tiny&", 0) == 0);
}

TEST_CASE("ui shows a decoder's weights without its mask: the same scores, capped, over every key", "[ui]") {
  // Gemma 2's capped scores, grouped heads and a sliding window of 3 on its even layers.
  PlaygroundConfig c = loaded_config(sort_model_files({with_tokenizer("gemma2_cap")}), {"the cat sat on the mat and the dog"});
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  for (size_t layer = 0; layer < 2; ++layer) {
    const Tensor unmasked = unmasked_weights(r, layer);
    const Tensor& masked = r.trace.at(weights_stage_name(r, layer));
    REQUIRE(unmasked.shape() == masked.shape());
    const size_t H = masked.shape(1), S = masked.shape(2);
    float worst = 0, future = 0;
    for (size_t h = 0; h < H; ++h)
      for (size_t q = 0; q < S; ++q) {
        double visible = 0;  // masked = unmasked renormalised over the keys the query sees
        for (size_t k = 0; k < S; ++k) visible += masked(0, h, q, k) > 0 ? unmasked(0, h, q, k) : 0.0;
        for (size_t k = 0; k < S; ++k) {
          if (masked(0, h, q, k) > 0) worst = std::max(worst, std::abs(masked(0, h, q, k) - float(unmasked(0, h, q, k) / visible)));
          if (k > q) future = std::max(future, unmasked(0, h, q, k));
        }
      }
    INFO("layer " << layer);
    CHECK(worst < 1e-5f);
    CHECK(future > 0.0f);
  }
  // The window: layer 0 hides keys 3 or more back, which its unmasked weights see; the Masks view's mask
  // is the layer's (zero exactly where its weights are), layer 1's only causal.
  CHECK(r.trace.at(weights_stage_name(r, 0))(0, 0, 5, 1) == 0.0f);
  CHECK(unmasked_weights(r, 0)(0, 0, 5, 1) > 0.0f);
  for (size_t layer = 0; layer < 2; ++layer) {
    const Tensor mask = layer_mask(r, layer);
    const Tensor& weights = r.trace.at(weights_stage_name(r, layer));
    size_t disagree = 0, zeros = 0;
    for (size_t q = 0; q < mask.shape(1); ++q)
      for (size_t k = 0; k < mask.shape(2); ++k) {
        disagree += (mask(0, q, k) == 0.0f) != (weights(0, 0, q, k) == 0.0f);
        zeros += mask(0, q, k) == 0.0f;
      }
    INFO("layer " << layer);
    CHECK(disagree == 0);
    const size_t S = r.pretrained_input.seq, causal = S * (S - 1) / 2;  // the future's cells
    CHECK((layer == 0 ? zeros > causal : zeros == causal));  // Gemma 2: even layers slide
  }
}

TEST_CASE("ui ablates and patches a Llama-family decoder as the engine does", "[ui][interventions]") {
  PlaygroundConfig c = loaded_config(sort_model_files({with_tokenizer("llama3_gqa")}), {"the cat sat on the mat", "the dog sat on the mat"});
  Playground clean(c);
  clean.update();
  REQUIRE(clean.error().empty());
  c.ablation = {{{1, 2}}, {0}, AblationKind::zero};
  Playground p(c);
  p.update();
  REQUIRE(p.error().empty());
  const Computed& r = *p.result();
  const Hooks hooks = ablation_hooks(r.stages, c.ablation, &clean.result()->trace, r.lengths);
  const Trace expected = decoder_forward(*c.loaded->decoder, r.ids, 2, r.pretrained_input.seq, &hooks, nullptr, r.lengths);
  CHECK(r.trace.at("next_token_probs") == expected.at("next_token_probs"));
  CHECK(r.clean_output == clean.result()->trace.at("next_token_probs"));
  CHECK(r.trace.at("logits") != clean.result()->trace.at("logits"));

  c.ablation = {};
  c.patching.answer = "mat";  // one token, ▁mat (the tokenizer prepends ▁)
  c.patching.wrong = "cat";
  Playground q(c);
  q.update();
  PatchingSweep sweep;
  const std::string refused = sweep.start(q.config(), *q.result());
  INFO(refused);
  REQUIRE(refused.empty());
  while (sweep.running()) sweep.pump(1);
  const Json doc = sweep.json();
  CHECK(doc["patches"]["heads"]["recovery"].size() == 2);
  CHECK(doc["patches"]["heads"]["recovery"][0].size() == 4);  // query heads
}

TEST_CASE("ui says a decoder folder without tokenizer.json cannot take sentences", "[ui]") {
  const PlaygroundConfig c = loaded_config(sort_model_files({dir + "llama3_gqa"}), {"the cat"});
  Playground p(c);
  p.update();
  CHECK_THAT(p.error(), Catch::Contains("no tokenizer.json"));
  CHECK_FALSE(p.result());
}

TEST_CASE("ui refuses a decoder's bad tokenizer.json and sentences past its context with messages", "[ui]") {
  const std::filesystem::path d = std::filesystem::temp_directory_path() / "attnlab-ui-bad-tokenizer";
  std::filesystem::remove_all(d);
  std::filesystem::copy(dir + "llama_tiny", d);
  {
    std::ofstream out(d / "tokenizer.json", std::ios::trunc);
    out << R"({"version": "1.0", "model": {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "a"}})";
  }
  const LoadResult refused = read_model_files(sort_model_files({d.string()}));
  CHECK_FALSE(refused.model);
  CHECK_THAT(refused.error, Catch::Contains("tokenizer.json") && Catch::Contains("WordPiece"));
  std::filesystem::remove_all(d);

  std::string long_sentence;  // 70 words, more tokens than llama_tiny's 64 positions
  for (int i = 0; i < 70; ++i) long_sentence += "cat ";
  Playground p(loaded_config(sort_model_files({dir + "llama_tiny"}), {long_sentence}));
  p.update();
  CHECK_THAT(p.error(), Catch::Contains("72 tokens; the model takes at most 64"));
}

namespace {

// Waits for the run to end (integrated gradients runs on a worker) and takes its result.
void wait_for(AttributionRun& run) {
  while (run.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  run.poll();
}

}  // namespace

TEST_CASE("ui attributes the item shown as attn attribute does, integrated gradients on a worker", "[ui][attribution]") {
  const PlaygroundConfig c = loaded_config(sort_model_files({dir + "gpt2_tiny"}), {"the cat sat on the mat", "hello world"});
  Playground p(c);
  p.update();
  const attn::LoadedModel engine = engine_model(c, *p.result());
  const ModelInput in = engine.tokenize({"hello world"});
  AttributionRun run;
  for (const AttributionMethod method : {AttributionMethod::integrated_gradients, AttributionMethod::logit_attribution,
                                         AttributionMethod::flow}) {
    AttributionOptions o;
    o.method = method;
    o.steps = 20;
    REQUIRE(run.start(p.config(), *p.result(), 1, o).empty());
    wait_for(run);
    REQUIRE(run.has_result());
    o.every_output = true;
    const Attribution expected = attribute(engine, in, o);
    CHECK(run.result().target.id == expected.target.id);
    CHECK(run.result().scores == expected.scores);
    CHECK(run.result().contributions == expected.contributions);
    CHECK(run.result().shares == expected.shares);
    CHECK(run.tokens() == std::vector<std::string>{"hello", "·w", "o", "r", "ld"});  // as the playground shows them
    CHECK(run.json()["method"] == attribution_method_name(method));
  }
  CHECK(run.result().shares.size() == in.seq * in.seq);  // flow's every output
  AttributionOptions from_token;  // integrated gradients from token 3's embedding
  from_token.steps = 20, from_token.baseline_id = 3;
  REQUIRE(run.start(p.config(), *p.result(), 1, from_token).empty());
  wait_for(run);
  REQUIRE(run.has_result());
  CHECK(run.result().scores == attribute(engine, in, from_token).scores);
  CHECK(run.result().baseline_id == 3);
  from_token.baseline_id = 5000;
  CHECK(run.start(p.config(), *p.result(), 1, from_token) == format(Str::attribution_baseline_range, 5000LL, size_t(317)));
  CHECK(run.stages().layers == 2);
  AttributionOptions o;
  o.steps = 0;
  REQUIRE(run.start(p.config(), *p.result(), 0, o).empty());  // the engine's refusal, once run
  wait_for(run);
  CHECK_FALSE(run.has_result());
  CHECK_THAT(run.error(), Catch::Contains("--steps 0 is outside 1 to 10000"));
  CHECK_THAT(run.start(p.config(), *p.result(), 2, o), Catch::Contains("item 2 does not exist (2 sentences)"));
}

TEST_CASE("ui says which methods a model cannot give, in the UI's language", "[ui][attribution]") {
  AttributionRun run;
  AttributionOptions o;
  o.method = AttributionMethod::gradient_x_input;
  o.target = 3;
  const PlaygroundConfig bert = loaded_config(sort_model_files({dir + "bert_tiny"}), {"the cat sat"});
  Playground p(bert);
  p.update();
  CHECK(run.start(p.config(), *p.result(), 0, o) == tr(Str::attribution_bert));
  o.method = AttributionMethod::flow;  // the target dropped: BERT has none to name
  REQUIRE(run.start(p.config(), *p.result(), 0, o).empty());
  CHECK(run.result().target.id == -1);
  CHECK(run.result().outputs == std::vector<size_t>{0});
  Playground tutorial{PlaygroundConfig()};
  tutorial.update();
  CHECK(run.start(tutorial.config(), *tutorial.result(), 0, o) == tr(Str::attribution_tutorial));
  const PlaygroundConfig llama = loaded_config(sort_model_files({dir + "llama_tiny"}), {"the cat sat"});
  Playground decoder(llama);
  decoder.update();
  REQUIRE(run.start(decoder.config(), *decoder.result(), 0, o).empty());  // flow: the decoders' attention
  CHECK(run.result().outputs == std::vector<size_t>{run.tokens().size() - 1});
  o.method = AttributionMethod::logit_attribution;  // additive on Llama
  REQUIRE(run.start(decoder.config(), *decoder.result(), 0, o).empty());
  CHECK(run.result().components.front() == "embed");
  const PlaygroundConfig gemma = loaded_config(sort_model_files({with_tokenizer("gemma2_cap")}), {"the cat sat"});
  Playground sandwich(gemma);
  sandwich.update();
  CHECK(run.start(sandwich.config(), *sandwich.result(), 0, o) == tr(Str::attribution_gemma));
  o.method = AttributionMethod::gradient_x_input;  // through the decoders' backward
  REQUIRE(run.start(decoder.config(), *decoder.result(), 0, o).empty());
  CHECK(run.result().scores.size() == run.tokens().size());
  CHECK(run.result().target.id >= 0);
}
