// The Llama family's one decoder (core/model/decoder.*) against PyTorch: tests/torchgen/decoder.py builds
// Llama, Mistral, Qwen2 and Qwen3 by hand from transformers' modeling files and writes them as Hugging
// Face folders; every stage and the logits within the pretrained checkpoints' tolerance, the config's
// spellings, and the messages for configs, tensors and inputs that do not fit.
#include <fstream>

#include "core/base/error.hpp"
#include "core/model/decoder.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

const std::string dir = attn::test::fixtures_dir() + "/pretrained/";

Json config_json(const std::string& model) {
  std::ifstream in(dir + model + "/config.json");
  REQUIRE(in);
  return Json::parse(in);
}

DecoderModel fixture_model(const std::string& model) {
  const DecoderConfig config = decoder_config_from_json(config_json(model), model + "/config.json");
  return read_decoder_weights(config, dir + model + "/model.safetensors", model);
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("accepted");
  return "";
}

}  // namespace

TEST_CASE("decoder checkpoints (Llama, Mistral, Qwen2, Qwen3) equal PyTorch stage for stage", "[decoder]") {
  for (const json& c : test::cached_fixture("pretrained/decoder_stages.json")) {
    const std::string name = c.at("case").get<std::string>();
    SECTION(name) {
      const DecoderModel model = fixture_model(c.at("dir").get<std::string>());
      size_t batch = 0, seq = 0;
      const std::vector<int64_t> ids = test::flat_ids(c.at("input_ids"), batch, seq);
      const Trace trace = decoder_forward(model, ids, batch, seq);
      test::compare_stages(trace, c.at("stages"));
      CHECK(trace.stages().size() == c.at("stages").size());  // nothing recorded that PyTorch did not
    }
  }
}

TEST_CASE("decoder configs: families, old and new spellings, derived fields", "[decoder]") {
  const DecoderConfig llama3 = decoder_config_from_json(config_json("llama3_gqa"), "config.json");
  CHECK(llama3.rope.type == RopeType::llama3);  // rope_parameters, rope_type
  CHECK(llama3.group() == 2);
  CHECK(llama3.tie_word_embeddings);
  const DecoderConfig mistral = decoder_config_from_json(config_json("mistral_window"), "config.json");
  CHECK(mistral.rope.type == RopeType::dynamic);  // rope_scaling, "type"
  CHECK(mistral.sliding_window == 3);
  const DecoderConfig qwen3 = decoder_config_from_json(config_json("qwen3_norm"), "config.json");
  CHECK(qwen3.head_dim == 16);
  CHECK(qwen3.hidden_size / qwen3.num_heads == 8);
  CHECK((qwen3.qk_norm && !qwen3.qkv_bias));
  const DecoderConfig qwen2 = decoder_config_from_json(config_json("qwen2_bias"), "config.json");
  CHECK((qwen2.qkv_bias && !qwen2.o_bias));
  // Within max_position_embeddings the dynamic rotation is the default one.
  DecoderConfig plain = mistral;
  plain.rope = RopeScaling{};
  CHECK(rotary_frequencies(mistral).inv_freq == rotary_frequencies(plain).inv_freq);
  CHECK(is_decoder_config(Json{{"architectures", {"Qwen2ForCausalLM"}}}));
  CHECK_FALSE(is_decoder_config(Json{{"model_type", "gpt2"}}));
}

TEST_CASE("decoder configs that cannot run are InputErrors naming the file and key", "[decoder]") {
  const Json llama = config_json("llama_tiny");
  auto with = [&](const char* key, const Json& value) {
    Json j = llama;
    j[key] = value;
    return error_of([&] { decoder_config_from_json(j, "config.json"); });
  };
  CHECK_THAT(error_of([] { decoder_config_from_json(Json{{"model_type", "gemma2"}}, "config.json"); }),
             Catch::Contains("LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM"));
  CHECK_THAT(with("num_key_value_heads", 3u), Catch::Contains("multiple of num_key_value_heads"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "longrope"}}), Catch::Contains("\"longrope\" is not supported"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "linear"}}), Catch::Contains("needs a 'factor'"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "llama3"}, {"factor", 8.0}}),
             Catch::Contains("original_max_position_embeddings"));
  CHECK_THAT(with("hidden_act", "gelu"), Catch::Contains("silu"));
  CHECK_THAT(with("num_attention_heads", 2.5), Catch::Contains("'num_attention_heads'"));
}

TEST_CASE("decoder tensors that do not fit their config name every tensor", "[decoder]") {
  const DecoderConfig config = decoder_config_from_json(config_json("qwen2_bias"), "config.json");
  std::vector<NamedTensor> tensors = read_safetensors(dir + "qwen2_bias/model.safetensors");
  tensors.erase(std::find_if(tensors.begin(), tensors.end(),
                             [](const NamedTensor& t) { return t.name == "model.layers.1.self_attn.k_proj.bias"; }));
  for (NamedTensor& t : tensors)
    if (t.name == "model.layers.0.mlp.up_proj.weight") t.value = Tensor::from_shape({3, config.hidden_size});
  const std::string what = error_of([&] { load_decoder(config, tensors, "model.safetensors"); });
  CHECK_THAT(what, Catch::Contains("model.safetensors does not fit its qwen2 config"));
  CHECK_THAT(what, Catch::Contains("model.layers.1.self_attn.k_proj.bias is missing"));
  CHECK_THAT(what, Catch::Contains("model.layers.0.mlp.up_proj.weight has shape [3, 32], the config needs [48, 32]"));
  // Untied: lm_head.weight is needed.
  const DecoderConfig untied = decoder_config_from_json(config_json("llama_tiny"), "config.json");
  std::vector<NamedTensor> llama = read_safetensors(dir + "llama_tiny/model.safetensors");
  llama.erase(std::find_if(llama.begin(), llama.end(), [](const NamedTensor& t) { return t.name == "lm_head.weight"; }));
  CHECK_THAT(error_of([&] { load_decoder(untied, llama, "model.safetensors"); }),
             Catch::Contains("lm_head.weight is missing"));
}

TEST_CASE("decoder inputs outside the vocabulary or the positions are InputErrors", "[decoder]") {
  const DecoderModel model = fixture_model("llama_tiny");
  CHECK_THAT(error_of([&] { decoder_forward(model, {1, 64}, 1, 2); }), Catch::Contains("64 is outside"));
  const std::vector<int64_t> long_row(65, 1);
  CHECK_THAT(error_of([&] { decoder_forward(model, long_row, 1, 65); }), Catch::Contains("more than the model's 64"));
  CHECK_THAT(error_of([&] { decoder_forward(model, {}, 0, 0); }), Catch::Contains("no tokens"));
}
