// Hugging Face BERT and GPT-2 checkpoints against PyTorch (tests/torchgen/pretrained.py builds both
// architectures by hand under transformers' state-dict names and writes them in the real file layout):
// every stage within the tutorials' fp32 tolerance, F16/BF16 weights, prefixed task models, old
// buffers, and the loader's messages for checkpoints that do not fit.
#include <fstream>

#include "core/base/error.hpp"
#include "core/model/pretrained.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

const std::string dir = std::string(ATTN_FIXTURES_DIR) + "/pretrained/";

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
        "config.json: model family 't5' is not supported (model_type must be \"bert\" or \"gpt2\")");
  CHECK(message(R"({})").find("model family not given") != std::string::npos);
  CHECK(message(R"({"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4})") ==
        "config.json: hidden size 30 is not divisible by 4 heads");
  CHECK(message(R"({"model_type": "bert", "hidden_act": "swish"})").find("hidden_act") != std::string::npos);
  CHECK(message(R"({"model_type": "bert", "position_embedding_type": "relative_key"})").find("absolute") !=
        std::string::npos);
  CHECK(message(R"({"model_type": "gpt2", "n_embd": -1})") == "config.json: 'n_embd' must be a positive integer");
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
