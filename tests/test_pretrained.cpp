// Hugging Face BERT and GPT-2 checkpoints against PyTorch (tests/torchgen/pretrained.py builds both
// architectures by hand under transformers' state-dict names and writes them in the real file layout):
// every stage within the tutorials' fp32 tolerance, F16/BF16 weights, prefixed task models, old
// buffers, and the loader's messages for checkpoints that do not fit.
#include <fstream>

#include "core/base/error.hpp"
#include "core/model/generate.hpp"
#include "core/model/pretrained.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

const std::string dir = attn::test::fixtures_dir() + "/pretrained/";

PretrainedConfig fixture_config(const std::string& model) {
  std::ifstream in(dir + model + "/config.json");
  REQUIRE(in);
  return pretrained_config_from_json(Json::parse(in), model + "/config.json");
}

PretrainedModel fixture_model(const std::string& model) {
  return read_pretrained_weights(fixture_config(model), dir + model + "/model.safetensors", model);
}

PretrainedInput input_of(const json& c) {
  PretrainedInput in;
  in.ids = test::flat_ids(c.at("input_ids"), in.batch, in.seq);
  if (c.contains("token_type_ids")) in.type_ids = test::flat_ids(c.at("token_type_ids"), in.batch, in.seq);
  for (size_t b = 0; b < in.batch; ++b) {
    size_t length = in.seq;
    if (c.contains("attention_mask")) {
      length = 0;
      for (const auto& m : c.at("attention_mask")[b]) length += m.get<int>();
    }
    in.lengths.push_back(length);
  }
  return in;
}

}  // namespace

TEST_CASE("BERT and GPT-2 checkpoints equal PyTorch stage for stage", "[pretrained]") {
  for (const json& c : test::cached_fixture("pretrained/pretrained_stages.json")) {
    const std::string name = c.at("case").get<std::string>();
    SECTION(name) {
      const PretrainedModel model = fixture_model(c.at("dir").get<std::string>());
      const Trace trace = pretrained_forward(model, input_of(c));
      test::compare_stages(trace, c.at("stages"));
      CHECK(trace.stages().size() == c.at("stages").size());  // nothing recorded that PyTorch did not
    }
  }
}

TEST_CASE("a task model's prefix is dropped, its head and integer buffers listed as ignored", "[pretrained]") {
  const PretrainedModel model = fixture_model("bert_prefixed");
  CHECK(model.ignored ==
        std::vector<std::string>{"bert.embeddings.position_ids", "classifier.bias", "classifier.weight"});
  CHECK(model.has_pooler());
  const PretrainedModel old = fixture_model("gpt2_buffers");
  CHECK(old.ignored.size() == 2 * old.config.num_layers);  // h.{i}.attn.bias and .masked_bias
}

TEST_CASE("checkpoints that do not fit their config name every tensor", "[pretrained]") {
  const PretrainedConfig config = fixture_config("bert_tiny");
  std::vector<NamedTensor> tensors = read_safetensors(dir + "bert_tiny/model.safetensors");
  tensors.erase(std::find_if(tensors.begin(), tensors.end(),
                             [](const NamedTensor& t) { return t.name == "encoder.layer.1.output.dense.bias"; }));
  for (NamedTensor& t : tensors)
    if (t.name == "embeddings.word_embeddings.weight") t.value = Tensor::from_shape({3, config.hidden_size});
  try {
    load_pretrained(config, tensors, "model.safetensors");
    FAIL("accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("model.safetensors does not fit its bert config") != std::string::npos);
    CHECK(what.find("encoder.layer.1.output.dense.bias is missing") != std::string::npos);
    CHECK(what.find("embeddings.word_embeddings.weight has shape [3, 32], the config needs [") != std::string::npos);
  }
}

TEST_CASE("configs of another family or with options not implemented are refused", "[pretrained]") {
  auto message = [](const std::string& text) {
    try {
      pretrained_config_from_json(Json::parse(text), "config.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message(R"({"model_type": "t5"})") ==
        "config.json: model family 't5' is not supported (supported architectures: BertModel and its task models, "
        "GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
        "Gemma2ForCausalLM, Gemma3ForCausalLM, GPTNeoXForCausalLM)");
  CHECK(message(R"({"model_type": "qwen3"})").find("runs only in attn encode, generate, heads and patch") != std::string::npos);
  CHECK(message(R"({})").find("model family not given") != std::string::npos);
  CHECK(message(R"({"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4})") ==
        "config.json: hidden size 30 is not divisible by 4 heads");
  CHECK(message(R"({"model_type": "bert", "hidden_act": "swish"})").find("hidden_act") != std::string::npos);
  CHECK(message(R"({"model_type": "bert", "position_embedding_type": "relative_key"})").find("absolute") !=
        std::string::npos);
  CHECK(message(R"({"model_type": "gpt2", "n_embd": -1})") == "config.json: 'n_embd' must be an integer from 1 to 1073741824, got -1");
  CHECK(message(R"({"architectures": ["GPT2LMHeadModel"]})") == "accepted");
}

TEST_CASE("token ids outside the vocabulary and sequences past the positions are input errors", "[pretrained]") {
  const PretrainedModel model = fixture_model("gpt2_tiny");
  PretrainedInput in{{1, 2, int64_t(model.config.vocab_size)}, {}, {3}, 1, 3};
  CHECK_THROWS_WITH(gpt2_forward(model, in), Catch::Contains("outside the model's"));
  in.seq = model.config.max_positions + 1;
  in.ids.assign(in.seq, 1);
  in.lengths = {in.seq};
  CHECK_THROWS_WITH(gpt2_forward(model, in), Catch::Contains("more than the model's"));
}

TEST_CASE("a run with a key/value cache continues the full run's numbers", "[pretrained][generate]") {
  const PretrainedModel model = fixture_model("gpt2_tiny");
  const std::vector<int64_t> ids = {5, 17, 40, 3, 99, 12};
  const Trace full = gpt2_forward(model, {ids, {}, {ids.size()}, 1, ids.size()});
  const size_t V = model.config.vocab_size;
  KeyValueCache cache;
  // The first three tokens at once (the last one's logits alone), then one at a time: each row of logits
  // as the full run's.
  const Trace first = gpt2_forward(model, {{5, 17, 40}, {}, {3}, 1, 3}, nullptr, nullptr, &cache);
  CHECK(first.at("logits").shape() == Tensor::shape_type{1, 1, V});
  CHECK(std::equal(first.at("logits").begin(), first.at("logits").end(), full.at("logits").begin() + 2 * V));
  for (size_t s = 3; s < ids.size(); ++s) {
    const Trace step = gpt2_forward(model, {{ids[s]}, {}, {1}, 1, 1}, nullptr, nullptr, &cache);
    CHECK(cache.length() == s + 1);
    CHECK(step.at("h.1.attn.attn_weights").shape() == Tensor::shape_type{1, model.config.num_heads, 1, s + 1});
    const float* row = full.at("logits").data() + s * V;
    for (size_t v = 0; v < V; ++v) CHECK(step.at("logits").data()[v] == Approx(row[v]).margin(1e-5));
  }
  CHECK_THROWS_WITH(gpt2_forward(model, {std::vector<int64_t>(model.config.max_positions, 1), {},
                                         {model.config.max_positions}, 1, model.config.max_positions},
                                 nullptr, nullptr, &cache),
                    Catch::Contains("more than the model's"));
}

TEST_CASE("sampling keeps the tokens top-k and top-p keep, as transformers' warpers", "[generate]") {
  const float logits[] = {1.0f, 3.0f, 2.0f, 0.0f};
  SamplingOptions o;
  const std::vector<double> plain = next_token_distribution(logits, 4, o);
  CHECK(plain[1] > plain[2]);
  CHECK(plain[3] > 0);
  o.top_k = 2;
  std::vector<double> k = next_token_distribution(logits, 4, o);
  CHECK((k[0] == 0 && k[3] == 0 && k[1] > 0 && k[2] > 0));
  CHECK(k[1] + k[2] == Approx(1.0));
  // Probabilities 0.644, 0.237, 0.087, 0.032: top-p 0.7 keeps the two likeliest (0.644 < 0.7 alone).
  o.top_k = 0;
  o.top_p = 0.7;
  std::vector<double> p = next_token_distribution(logits, 4, o);
  CHECK((p[0] == 0 && p[3] == 0 && p[1] > 0 && p[2] > 0));
  o.top_p = 0.5;  // the likeliest alone
  p = next_token_distribution(logits, 4, o);
  CHECK(p[1] == 1.0);
  o.temperature = -1;
  CHECK_THROWS_WITH(check_sampling(o), Catch::Contains("--temperature"));
  o.temperature = 1;
  o.top_p = 0;
  CHECK_THROWS_WITH(check_sampling(o), Catch::Contains("--top-p must be in (0, 1]"));
}

TEST_CASE("generate settings from JSON: attn generate's defaults, strict types", "[generate]") {
  const GenerateSettings g = generate_settings(Json::parse(R"({"prompt": "the", "top_k": 5, "seed": 3})"));
  CHECK((g.prompt == "the" && g.max_new_tokens == 20 && g.sampling.top_k == 5 && g.sampling.seed == 3 &&
         g.sampling.temperature == 1.0));
  CHECK_THROWS_WITH(generate_settings(Json::parse(R"({"promt": "x"})")), Catch::Contains("unknown setting 'promt'"));
  CHECK_THROWS_WITH(generate_settings(Json::parse(R"({"max_new_tokens": 0})")),
                    Catch::Equals("generate: max_new_tokens must be an integer from 1 to 2^64 - 1, got 0"));
  CHECK_THROWS_WITH(generate_settings(Json::parse(R"({"top_k": 2.5})")), Catch::Contains("top_k must be an integer from 0"));
  CHECK_THROWS_WITH(generate_settings(Json::parse(R"({"temperature": "hot"})")), Catch::Equals("generate: temperature must be a finite number, got \"hot\""));
  CHECK_THROWS_WITH(generate_settings(Json::parse("[1]")), Catch::Contains("generate expects an object"));
  // An empty prompt (which a command line cannot pass through CTest) is refused by name.
  const std::string d = dir + "gpt2_tiny/";
  const Pretrained p = load_pretrained_files({d + "config.json", d + "model.safetensors", d + "vocab.json", d + "merges.txt", "", ""});
  CHECK_THROWS_WITH(generate(p, "", 3, {}), Catch::Contains("the prompt is empty"));
  CHECK(generate(p, "the", 3, {}).tokens.size() == 3);
}

TEST_CASE("generate a token at a time: the same tokens, and each one's candidates", "[generate]") {
  const std::string d = dir + "gpt2_tiny/";
  const Pretrained p = load_pretrained_files({d + "config.json", d + "model.safetensors", d + "vocab.json", d + "merges.txt", "", ""});
  const SamplingOptions o{0.8, 20, 0.9, 5};
  const Generation whole = generate(p, "hello world", 6, o);
  TokenGenerator g(p, "hello world", 6, o);
  CHECK(g.generation().text == "hello world");
  CHECK(g.generation().tokens.empty());
  for (size_t i = 0; i < 6; ++i) {
    REQUIRE_FALSE(g.done());
    g.step();
    CHECK(g.generation().tokens.size() == i + 1);
  }
  CHECK(g.done());
  g.step();  // nothing more
  REQUIRE(g.generation().tokens.size() == 6);
  CHECK(g.generation().text == whole.text);
  for (size_t i = 0; i < 6; ++i) {
    const GeneratedToken& t = g.generation().tokens[i];
    CHECK(t.id == whole.tokens[i].id);
    CHECK(t.probability == whole.tokens[i].probability);
    // The candidates: at most 10 of the top-k 20 kept, most likely first, summing to at most 1; the
    // drawn token among them when it is that likely.
    REQUIRE(!t.candidates.empty());
    CHECK(t.candidates.size() <= candidates_kept);
    double sum = 0;
    for (size_t c = 0; c < t.candidates.size(); ++c) {
      sum += t.candidates[c].probability;
      if (c) CHECK(t.candidates[c].probability <= t.candidates[c - 1].probability);
    }
    CHECK(sum <= 1 + 1e-9);
    if (t.probability >= t.candidates.back().probability)
      CHECK(std::any_of(t.candidates.begin(), t.candidates.end(), [&](const NextToken& c) { return c.id == t.id; }));
  }
  CHECK_THROWS_WITH(TokenGenerator(p, "hello", 100, o), Catch::Contains("more than the model's 64 positions"));
}
