// The one decoder (core/model/decoder.*) against PyTorch: tests/torchgen/decoder.py builds Llama,
// Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3's text model and GPT-NeoX by hand from transformers' modeling
// files and writes them as Hugging Face folders (one sharded); every stage and the logits within the
// pretrained checkpoints' tolerance, the config's spellings, and the messages for configs, tensors,
// shards and inputs that do not fit.
#include <filesystem>
#include <cstring>
#include <fstream>

#include "core/base/bits.hpp"
#include "core/base/error.hpp"
#include "core/io/safetensors_index.hpp"
#include "core/model/decoder.hpp"
#include "core/model/decoder_views.hpp"
#include "core/model/pretrained_files.hpp"
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
  return read_decoder_weights(config, pretrained_files_in(dir + model).weights, model);
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

TEST_CASE("decoder checkpoints (Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, GPT-NeoX) equal PyTorch stage for stage",
          "[decoder]") {
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
  Json unwindowed = config_json("mistral_window");
  unwindowed["sliding_window"] = nullptr;  // Mistral v0.2 on
  CHECK(decoder_config_from_json(unwindowed, "config.json").sliding_window == 0);
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

TEST_CASE("decoder configs of Gemma 2, Gemma 3 and GPT-NeoX: layer kinds, caps, rotations, defaults", "[decoder]") {
  const DecoderConfig gemma2 = decoder_config_from_json(config_json("gemma2_cap"), "config.json");
  CHECK(gemma2.sliding_layers == std::vector<bool>{true, false, true});  // even layers, without layer_types
  CHECK((gemma2.norm == NormKind::rms_one_plus && gemma2.embed_scale && gemma2.sandwich_norms));
  CHECK((gemma2.attn_softcap == 2.0 && gemma2.final_softcap == 3.0 && gemma2.query_pre_attn_scalar == 12.0));
  CHECK(gemma2.tie_word_embeddings);  // Gemma's default: the key is absent
  CHECK(gemma2.act == DecoderAct::gelu_tanh);
  const DecoderConfig gemma3 = decoder_config_from_json(config_json("gemma3_local"), "config.json");
  CHECK(gemma3.sliding_layers == std::vector<bool>{true, false, true});  // layer_types
  CHECK((gemma3.attn_softcap == 0 && gemma3.final_softcap == 0 && gemma3.qk_norm));  // null caps
  CHECK(gemma3.local_rope_theta == 100.0);
  CHECK(rotary_frequencies(local_rotary_config(gemma3)).inv_freq[2] == Approx(0.1f));  // 1 / 100^(4/8)
  Json pattern = config_json("gemma3_local");
  pattern.erase("layer_types");
  pattern["num_hidden_layers"] = 12u;
  CHECK(decoder_config_from_json(pattern, "config.json").sliding_layers ==
        std::vector<bool>{true, false, true, false, true, false, true, false, true, false, true, false});
  pattern.erase("sliding_window_pattern");  // every 6th layer global
  const std::vector<bool> six = decoder_config_from_json(pattern, "config.json").sliding_layers;
  CHECK((six[4] && !six[5] && six[6] && !six[11]));
  // transformers >= 4.57: one rope dict per layer type.
  Json nested = config_json("gemma3_local");
  nested.erase("rope_scaling");
  nested["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 5000.0}}},
                               {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 50.0}}}};
  const DecoderConfig per_type = decoder_config_from_json(nested, "config.json");
  CHECK((per_type.rope.type == RopeType::linear && per_type.rope_theta == 5000.0 && per_type.local_rope_theta == 50.0));
  const DecoderConfig neox = decoder_config_from_json(config_json("pythia_parallel"), "config.json");
  CHECK((neox.rotary_dim() == 4 && neox.head_dim == 16 && neox.parallel_residual && neox.fused_qkv));
  CHECK((neox.norm == NormKind::layer_norm && neox.mlp == MlpKind::plain && neox.qkv_bias && neox.o_bias));
  CHECK_FALSE(decoder_config_from_json(config_json("neox_sequential"), "config.json").parallel_residual);
}

TEST_CASE("decoder configs that cannot run are InputErrors naming the file and key", "[decoder]") {
  const Json llama = config_json("llama_tiny");
  auto with = [&](const char* key, const Json& value) {
    Json j = llama;
    j[key] = value;
    return error_of([&] { decoder_config_from_json(j, "config.json"); });
  };
  CHECK_THAT(error_of([] { decoder_config_from_json(Json{{"model_type", "mamba"}}, "config.json"); }),
             Catch::Contains("not a supported decoder (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                             "Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, GPTNeoXForCausalLM)"));
  CHECK_THAT(with("num_key_value_heads", 3u), Catch::Contains("multiple of num_key_value_heads"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "longrope"}}), Catch::Contains("\"longrope\" is not supported"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "linear"}}), Catch::Contains("needs a 'factor'"));
  CHECK_THAT(with("rope_scaling", Json{{"rope_type", "llama3"}, {"factor", 8.0}}),
             Catch::Contains("original_max_position_embeddings"));
  CHECK_THAT(with("hidden_act", "gelu"), Catch::Contains("silu"));
  CHECK_THAT(with("num_attention_heads", 2.5), Catch::Contains("'num_attention_heads'"));
  Json gemma = config_json("gemma3_local");
  gemma["layer_types"] = {"sliding_attention"};
  CHECK_THAT(error_of([&] { decoder_config_from_json(gemma, "config.json"); }),
             Catch::Contains("'layer_types' must list one type per layer (3)"));
  gemma["layer_types"] = {"sliding_attention", "chunked_attention", "full_attention"};
  CHECK_THAT(error_of([&] { decoder_config_from_json(gemma, "config.json"); }), Catch::Contains("\"chunked_attention\""));
  gemma.erase("layer_types");
  gemma["hidden_activation"] = "relu";
  CHECK_THAT(error_of([&] { decoder_config_from_json(gemma, "config.json"); }), Catch::Contains("\"relu\" is not supported"));
  Json neox = config_json("pythia_parallel");
  neox["rotary_pct"] = 0.1;  // 1.6 of 16 values: int() gives 1, which cannot rotate in halves
  CHECK_THAT(error_of([&] { decoder_config_from_json(neox, "config.json"); }),
             Catch::Contains("the rotated part of a head (1 of 16 values) must be even"));
}

TEST_CASE("decoder tensors that do not fit their config name every tensor", "[decoder]") {
  const DecoderConfig config = decoder_config_from_json(config_json("qwen2_bias"), "config.json");
  std::vector<NamedWeight> tensors = read_safetensors_weights(dir + "qwen2_bias/model.safetensors");
  tensors.erase(std::find_if(tensors.begin(), tensors.end(),
                             [](const NamedWeight& t) { return t.name == "model.layers.1.self_attn.k_proj.bias"; }));
  for (NamedWeight& t : tensors)
    if (t.name == "model.layers.0.mlp.up_proj.weight") t.value = Tensor::from_shape({3, config.hidden_size});
  const std::string what = error_of([&] { load_decoder(config, tensors, "model.safetensors"); });
  CHECK_THAT(what, Catch::Contains("model.safetensors does not fit its qwen2 config"));
  CHECK_THAT(what, Catch::Contains("model.layers.1.self_attn.k_proj.bias is missing"));
  CHECK_THAT(what, Catch::Contains("model.layers.0.mlp.up_proj.weight has shape [3, 32], the config needs [48, 32]"));
  // Untied: lm_head.weight is needed.
  const DecoderConfig untied = decoder_config_from_json(config_json("llama_tiny"), "config.json");
  std::vector<NamedWeight> llama = read_safetensors_weights(dir + "llama_tiny/model.safetensors");
  llama.erase(std::find_if(llama.begin(), llama.end(), [](const NamedWeight& t) { return t.name == "lm_head.weight"; }));
  CHECK_THAT(error_of([&] { load_decoder(untied, llama, "model.safetensors"); }),
             Catch::Contains("lm_head.weight is missing"));
  // A config claiming more layers than the file could hold is refused before anything is sized by it.
  Json huge = config_json("llama_tiny");
  huge["num_hidden_layers"] = 1 << 30;
  CHECK_THAT(error_of([&] { load_decoder(decoder_config_from_json(huge, "config.json"), llama, "model.safetensors"); }),
             Catch::Contains("model.safetensors holds 20 tensors, too few for the config's 1073741824 layers"));
}

TEST_CASE("decoder tensors of GPT-NeoX: the fused query_key_value and biased norms checked by shape", "[decoder]") {
  const DecoderConfig config = decoder_config_from_json(config_json("neox_sequential"), "config.json");
  std::vector<NamedWeight> tensors = read_safetensors_weights(dir + "neox_sequential/model.safetensors");
  for (NamedWeight& t : tensors)
    if (t.name == "gpt_neox.layers.1.attention.query_key_value.weight") t.value = Tensor::from_shape({32, 32});
  tensors.erase(std::find_if(tensors.begin(), tensors.end(),
                             [](const NamedWeight& t) { return t.name == "gpt_neox.final_layer_norm.bias"; }));
  const std::string what = error_of([&] { load_decoder(config, tensors, "model.safetensors"); });
  CHECK_THAT(what, Catch::Contains("gpt_neox.layers.1.attention.query_key_value.weight has shape [32, 32], the config "
                                   "needs [96, 32]"));
  CHECK_THAT(what, Catch::Contains("gpt_neox.final_layer_norm.bias is missing"));
  // A Llama-layout checkpoint under a NeoX config names every tensor NeoX needs.
  CHECK_THAT(error_of([&] { load_decoder(config, read_safetensors_weights(dir + "llama_tiny/model.safetensors"), "m"); }),
             Catch::Contains("embed_out.weight is missing"));
}

TEST_CASE("decoder weights stored as integers are named, not called missing", "[decoder]") {
  const DecoderConfig config = decoder_config_from_json(config_json("llama_tiny"), "config.json");
  const std::string header = R"({"model.norm.weight":{"dtype":"I32","shape":[32],"data_offsets":[0,128]}})";
  const std::string path = (std::filesystem::temp_directory_path() / "attn_test_int_norm.safetensors").string();
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t size = header.size();
    out.write(reinterpret_cast<const char*>(&size), 8);
    out << header << std::string(128, '\0');
  }
  CHECK_THAT(error_of([&] { read_decoder_weights(config, path, "model.safetensors"); }),
             Catch::Contains("model.safetensors: model.norm.weight is not floating point"));
  std::filesystem::remove(path);
}

TEST_CASE("sharded checkpoints: the index read, each shard found and holding what the index says", "[decoder]") {
  const PretrainedFiles files = pretrained_files_in(dir + "pythia_parallel");
  CHECK(std::filesystem::path(files.weights).filename() == "model.safetensors.index.json");
  CHECK(read_sharded_safetensors(files.weights).size() == 28);  // 4 + 12 per layer
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "attn_test_shards";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  const std::string index = (tmp / "model.safetensors.index.json").string();
  auto write = [&](const std::string& text) { std::ofstream(index) << text; };
  std::filesystem::copy_file(dir + "pythia_parallel/model-00001-of-00002.safetensors", tmp / "a.safetensors");
  write(R"({"weight_map": {"embed_out.weight": "a.safetensors", "x": "b.safetensors"}})");
  CHECK_THAT(error_of([&] { read_sharded_safetensors(index); }),
             Catch::Contains("model.safetensors.index.json names the shard b.safetensors, which is missing"));
  write(R"({"weight_map": {"embed_out.weight": "a.safetensors", "gpt_neox.embed_in.weight": "a.safetensors",
           "model.norm.weight": "a.safetensors"}})");
  CHECK_THAT(error_of([&] { read_sharded_safetensors(index); }),
             Catch::Contains("puts model.norm.weight in a.safetensors, which lacks it"));
  std::filesystem::remove_all(tmp);
  CHECK_THAT(error_of([] { parse_shard_index("{\"weight_map\": {\"a\": \"../m.safetensors\"}}", "i.json"); }),
             Catch::Contains("is not a .safetensors file beside the index"));
  CHECK_THAT(error_of([] { parse_shard_index("{}", "i.json"); }), Catch::Contains("needs a 'weight_map'"));
  CHECK_THAT(error_of([] { parse_shard_index("{", "i.json"); }), Catch::Contains("i.json is not valid JSON"));
  CHECK_THAT(error_of([] { parse_shard_index(R"({"weight_map": {"a": 1}})", "i.json"); }),
             Catch::Contains("the shard of 'a' must be a file name"));
}

TEST_CASE("decoder inputs outside the vocabulary or the positions are InputErrors", "[decoder]") {
  const DecoderModel model = fixture_model("llama_tiny");
  CHECK_THAT(error_of([&] { decoder_forward(model, {1, 64}, 1, 2); }), Catch::Contains("64 is outside"));
  const std::vector<int64_t> long_row(65, 1);
  CHECK_THAT(error_of([&] { decoder_forward(model, long_row, 1, 65); }), Catch::Contains("more than the model's 64"));
  CHECK_THAT(error_of([&] { decoder_forward(model, {}, 0, 0); }), Catch::Contains("no tokens"));
}

TEST_CASE("decoder views: rotary pairs add up to the scores stage, by_distance meets it at the pair's distance",
          "[decoder]") {
  for (const char* name : {"llama3_gqa", "qwen3_norm", "pythia_parallel", "gemma3_local"}) {  // yarn, partial, local
    SECTION(name) {
      const DecoderModel model = fixture_model(name);
      const Trace trace = decoder_forward(model, {5, 17, 42, 3, 60}, 1, 5);
      const Tensor& scores0 = trace.at("model.layers.0.self_attn.scores");
      const auto splits = rotary_splits(model, trace, 0, 4, 1, 8);
      REQUIRE(splits.size() == model.config.num_layers);
      for (size_t l = 0; l < splits.size(); ++l)
        for (size_t h = 0; h < splits[l].size(); ++h) {
          const RotarySplit& s = splits[l][h];
          CHECK(s.by_distance[3] == Approx(s.score).margin(1e-5));
          const float stage = scores0.data()[(h * 5 + 4) * 5 + 1];
          if (l == 0 && model.config.attn_softcap <= 0 && stage > -1e30f)  // after Gemma's cap, and a window's mask
            CHECK(s.score == Approx(stage).margin(1e-5));
        }
      for (const auto& row : first_token_attention(trace, model.config.num_layers))
        for (double share : row) CHECK((share > 0 && share <= 1));
      CHECK_THAT(error_of([&] { rotary_splits(model, trace, 0, 1, 2, 8); }), Catch::Contains("KEY <= QUERY < 5"));
      CHECK_THAT(error_of([&] { rotary_splits(model, trace, 1, 1, 0, 8); }), Catch::Contains("row 1"));
    }
  }
}

namespace {

// x as float16 bits, the mantissa truncated and magnitudes under 2^-14 flushed to zero: any float16 values
// serve, as both models compared below widen the same bits (and not every compiler has _Float16).
uint16_t float16_bits(float x) {
  const uint32_t bits = bits_of(x), sign = (bits >> 16) & 0x8000u;
  const int exponent = int((bits >> 23) & 0xFFu) - 127 + 15;
  if (exponent <= 0) return uint16_t(sign);
  if (exponent >= 31) return uint16_t(sign | 0x7BFFu);  // the largest finite value
  return uint16_t(sign | uint32_t(exponent) << 10 | ((bits >> 13) & 0x3FFu));
}

// A float16 copy of a float32 fixture's weights, written as one model.safetensors.
std::string float16_copy(const std::string& model) {
  std::vector<NamedWeight> weights;
  for (const NamedTensor& t : read_checkpoint(pretrained_files_in(dir + model).weights, nullptr)) {
    auto bits = std::make_shared<std::vector<uint16_t>>();
    for (float x : t.value) bits->push_back(float16_bits(x));
    weights.push_back({t.name, Weight(HalfType::f16, Shape(t.value.shape().begin(), t.value.shape().end()),
                                      std::shared_ptr<const uint16_t>(bits, bits->data()))});
  }
  const std::string path = (std::filesystem::temp_directory_path() / ("attn_f16_" + model + ".safetensors")).string();
  write_safetensors_weights(path, weights);
  return path;
}

// Every stage of two runs, bit for bit.
void same_stages(const Trace& a, const Trace& b) {
  REQUIRE(a.stages().size() == b.stages().size());
  for (size_t i = 0; i < a.stages().size(); ++i) {
    INFO(a.stages()[i].name);
    const Tensor &x = a.stages()[i].value, &y = b.stages()[i].value;
    REQUIRE(x.size() == y.size());
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("half-precision decoder checkpoints stay half precision and compute the widened model's bits", "[decoder]") {
  // Gemma 3 and Qwen3 are stored in bfloat16; Llama and Pythia (NeoX's fused query_key_value, sharded) in a
  // float16 copy made here.
  for (const char* name : {"qwen3_norm", "gemma3_local", "llama_tiny", "pythia_parallel"}) {
    SECTION(name) {
      const DecoderConfig config = decoder_config_from_json(config_json(name), "config.json");
      const bool copied = std::string(name) == "llama_tiny" || std::string(name) == "pythia_parallel";
      const std::string path = copied ? float16_copy(name) : pretrained_files_in(dir + name).weights;
      const DecoderModel half = read_decoder_weights(config, path, name);
      const DecoderModel widened = read_decoder_weights(config, path, name, nullptr, true);
      CHECK(half.layers[1].v_proj.weight.half());
      CHECK(half.layers[1].v_proj.weight.half_type() == (copied ? HalfType::f16 : HalfType::bf16));
      CHECK_FALSE(widened.layers[1].v_proj.weight.half());
      // Only the norms and biases are widened: the matrices take 2 bytes a value.
      size_t values = 0;
      for_each_tensor(half, [&](const void*, size_t, size_t n) { values += n; });
      CHECK(decoder_weight_bytes(widened) == 4 * values);
      CHECK(double(decoder_weight_bytes(half)) < 0.52 * double(decoder_weight_bytes(widened)));
      const std::vector<int64_t> ids = {5, 17, 42, 3, 60, 8, 29, 11, 1, 33, 2, 63, 14, 14, 50, 7};
      same_stages(decoder_forward(half, ids, 2, 8), decoder_forward(widened, ids, 2, 8));
      // Generation: a cached prefix, then one token (a row times each weight, read where it lies).
      KeyValueCache cache_half, cache_widened;
      decoder_forward(half, {5, 17, 42}, 1, 3, nullptr, &cache_half);
      decoder_forward(widened, {5, 17, 42}, 1, 3, nullptr, &cache_widened);
      same_stages(decoder_forward(half, {3}, 1, 1, nullptr, &cache_half),
                  decoder_forward(widened, {3}, 1, 1, nullptr, &cache_widened));
      // The backward's products take the weights untransposed.
      const Trace run = decoder_forward(half, ids, 2, 8);
      const Tensor& normed = run.at("model.norm");
      const Tensor g_half = decoder_input_gradient(half, run, normed);
      const Tensor g_widened = decoder_input_gradient(widened, run, normed);
      CHECK(std::memcmp(g_half.data(), g_widened.data(), g_half.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("a decoder's state_dict is the checkpoint's tensors, NeoX's query_key_value fused again", "[decoder]") {
  for (const char* name : {"llama_tiny", "qwen2_bias", "gemma3_local", "pythia_parallel", "neox_sequential"}) {
    SECTION(name) {
      const std::vector<NamedTensor> file = read_checkpoint(pretrained_files_in(dir + name).weights, nullptr);
      std::map<std::string, const Tensor*> by_name;
      for (const NamedTensor& t : file) by_name[t.name] = &t.value;
      const DecoderModel model = fixture_model(name);
      const std::vector<NamedTensor> state = decoder_state_dict(model);
      CHECK(state.size() + model.ignored.size() == file.size());  // every tensor the model uses
      for (const NamedTensor& t : state) {
        INFO(t.name);
        REQUIRE(by_name.count(t.name));
        const Tensor& stored = *by_name[t.name];
        REQUIRE(stored.shape() == t.value.shape());
        CHECK(std::memcmp(stored.data(), t.value.data(), stored.size() * sizeof(float)) == 0);
      }
    }
  }
}
