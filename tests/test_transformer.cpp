// The second tutorial's Transformer against PyTorch (tests/torchgen/transformer.py): seeded
// parameters bit for bit, every stage of the trace, PyTorch's own nn.TransformerEncoder loaded from
// its state_dict, cross-attention, and strict loading.
#include <cstdio>

#include "core/base/error.hpp"
#include "core/model/transformer.hpp"
#include "tests/fixtures.hpp"
#include "tests/model_fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

using test::config_of;
using test::flat_ids;
using test::parameters_of;
using test::compare_stages;
using test::rel_tol;
using test::abs_tol;

const char* const classifier_cases[] = {"small", "one_head_gelu_prenorm_causal", "eight_heads_three_layers",
                                        "four_layers_train_dropout"};

}  // namespace

TEST_CASE("seeded classifier equals PyTorch parameter for parameter and stage for stage", "[transformer]") {
  for (const char* name : classifier_cases) {
    SECTION(name) {
      const json f = test::load_fixture(std::string("transformer_") + name + ".json");
      const TransformerConfig config = config_of(f.at("config"));
      TorchGenerator gen(parse_torch_seed(f.at("seed").get<std::string>()).value());
      const TransformerModel model = init_transformer(config, gen);
      const std::vector<NamedTensor> params = state_dict(model);
      const json& expected = f.at("parameters");
      REQUIRE(params.size() == expected.size());
      for (size_t i = 0; i < params.size(); ++i) {
        INFO("parameter " << expected[i].at("name"));
        REQUIRE(params[i].name == expected[i].at("name").get<std::string>());
        const Tensor want = test::tensor_of(expected[i]);
        REQUIRE(params[i].value.shape() == want.shape());
        CHECK(std::equal(want.begin(), want.end(), params[i].value.begin()));  // bit for bit
      }
      CHECK(parameter_count(model) == f.at("parameter_count").get<size_t>());
      size_t batch = 0, seq = 0;
      const auto ids = flat_ids(f.at("ids"), batch, seq);
      const bool train = f.at("train").get<bool>();
      const Trace trace = classify(model, ids, batch, seq, parse_mask_kind(f.at("mask").get<std::string>()),
                                   train ? &gen : nullptr);
      compare_stages(trace, f.at("stages"));
      CHECK(trace.stages().size() == f.at("stages").size());
    }
  }
}

TEST_CASE("a classifier loaded from PyTorch's state_dict gives PyTorch's logits", "[transformer]") {
  const json f = test::load_fixture("transformer_eight_heads_three_layers.json");
  const TransformerModel model = load_transformer(config_of(f.at("config")), parameters_of(f.at("parameters")));
  size_t batch = 0, seq = 0;
  const auto ids = flat_ids(f.at("ids"), batch, seq);
  compare_stages(classify(model, ids, batch, seq, MaskKind::padding_causal, nullptr), f.at("stages"));
}

TEST_CASE("PyTorch nn.TransformerEncoder weights give PyTorch outputs", "[transformer]") {
  const json all = test::load_fixture("transformer_torch_encoder.json");
  for (const auto& [name, f] : all.items()) {
    SECTION(name) {
      const TransformerModel model = load_transformer(config_of(f.at("config")), parameters_of(f.at("parameters")));
      const Tensor x = test::tensor_of(f.at("input"));
      const Tensor plain = encoder_forward(model, x, nullptr, nullptr, nullptr);
      const test::Deviation d = test::compare(plain, f.at("output_none"), rel_tol, abs_tol);
      INFO("no mask: max abs error " << d.max_abs);
      CHECK(d.failures == 0);
      // With a key padding mask PyTorch's fast path leaves padded positions as zeros (nested tensors):
      // compare the real positions only.
      size_t batch = 0, seq = 0;
      const auto ids = flat_ids(f.at("ids"), batch, seq);
      const MaskTensor mask = attention_mask(MaskKind::padding, ids, batch, seq);
      Tensor masked = encoder_forward(model, x, &mask, nullptr, nullptr);
      const Tensor expected = test::tensor_of(f.at("output_padding"));
      const size_t d_model = masked.shape(2);
      for (size_t t = 0; t < ids.size(); ++t)
        if (ids[t] == 0) std::copy_n(expected.data() + t * d_model, d_model, masked.data() + t * d_model);
      const test::Deviation dm = test::compare(masked, f.at("output_padding"), rel_tol, abs_tol);
      INFO("padding mask: max abs error " << dm.max_abs);
      CHECK(dm.failures == 0);
    }
  }
}

TEST_CASE("cross-attention takes keys and values from another sequence", "[transformer]") {
  const json f = test::load_fixture("transformer_cross_attention.json");
  std::map<std::string, Tensor> p;
  for (auto& t : parameters_of(f.at("parameters"))) p[t.name] = t.value;
  EncoderLayer layer;
  layer.query = {p["W_Q.weight"], p["W_Q.bias"]};
  layer.key = {p["W_K.weight"], p["W_K.bias"]};
  layer.value = {p["W_V.weight"], p["W_V.bias"]};
  layer.output = {p["W_O.weight"], p["W_O.bias"]};
  LayerConfig config;
  config.num_heads = 4;
  const Tensor mask_values = test::tensor_of(f.at("mask"));
  MaskTensor mask = MaskTensor::from_shape(mask_values.shape());
  std::copy(mask_values.begin(), mask_values.end(), mask.begin());
  Trace trace;
  const Tensor out = multi_head_attention(layer, config, test::tensor_of(f.at("q_in")), test::tensor_of(f.at("kv_in")),
                                          &mask, &trace, "");
  CHECK(test::compare(out, f.at("output"), rel_tol, abs_tol).failures == 0);
  CHECK(test::compare(trace.at("attention_weights"), f.at("attention_weights"), rel_tol, abs_tol).failures == 0);
  CHECK(trace.at("attention_weights").shape() == Tensor::shape_type{2, 4, 3, 5});
}

TEST_CASE("weights round-trip through safetensors and load strictly", "[transformer][safetensors]") {
  const json f = test::load_fixture("transformer_small.json");
  const TransformerConfig config = config_of(f.at("config"));
  TorchGenerator gen(0);
  const TransformerModel model = init_transformer(config, gen);
  const std::string path = "transformer_roundtrip_test.safetensors";
  write_safetensors(path, state_dict(model));
  const TransformerModel loaded = load_transformer(config, read_safetensors(path));
  std::remove(path.c_str());
  const auto a = state_dict(model), b = state_dict(loaded);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].value == b[i].value);

  auto refused = [&](std::vector<NamedTensor> tensors, const std::string& needle) {
    try {
      load_transformer(config, tensors);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
      return;
    }
    FAIL("no error; expected one mentioning " << needle);
  };
  auto tensors = state_dict(model);
  tensors.erase(tensors.begin() + 3);
  refused(tensors, "missing: encoder.layers.0.self_attn.W_Q.bias");
  tensors = state_dict(model);
  tensors.push_back({"extra.weight", Tensor::from_shape({2})});
  refused(tensors, "unexpected: extra.weight");
  tensors = state_dict(model);
  tensors[0].value = Tensor::from_shape({3, 16});
  refused(tensors, "wrong shape: embedding.weight [3, 16], expected [12, 16]");
}

TEST_CASE("the positional encoding is the model's pe buffer as PositionalEncoding.forward takes it",
          "[transformer]") {
  const json f = test::load_fixture("transformer_small.json");
  TorchGenerator gen(0);
  TransformerModel model = init_transformer(config_of(f.at("config")), gen);
  const size_t d = model.config.d_model;
  for (size_t i = 0; i < 3 * d; ++i) model.positional_encoding.data()[i] = float(i) + 0.5f;  // a loaded buffer
  const Trace trace = classify(model, {1, 2, 3}, 1, 3, MaskKind::none, nullptr);
  const Tensor& pe = trace.at("positional_encoding");
  REQUIRE(pe.shape() == Tensor::shape_type{1, 3, d});
  for (size_t i = 0; i < pe.size(); ++i) CHECK(pe.data()[i] == float(i) + 0.5f);
  for (size_t i = 0; i < pe.size(); ++i)
    CHECK(trace.at("embedded").data()[i] == trace.at("embedding").data()[i] + pe.data()[i]);
}

TEST_CASE("bad model configs are refused clearly", "[transformer][errors]") {
  auto refused = [](const std::string& text, const std::string& needle) {
    try {
      validate(config_from_json(Json::parse(text)));
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
      return;
    }
    FAIL("no error for " << text);
  };
  refused(R"({"d_model": 10, "num_heads": 3})", "must divide d_model");
  refused(R"({"d_model": 7, "num_heads": 7})", "even");
  refused(R"({"d_model": -4})", "config 'd_model' must be an integer from 0 to ");  // size_t's max: 2^64 - 1 or 2^32 - 1
  refused(R"({"dropout": 1.5})", "dropout");
  refused(R"({"activation": "tanh"})", "unknown activation");
  refused(R"({"heads": 4})", "unknown config key 'heads'");
  // 10^11 rows: too many for memory on 64 bits, past size_t itself in WebAssembly's 32 (once read
  // as a wrapped count).
  refused(R"({"vocab_size": 100000000000, "d_model": 65536, "num_heads": 8})",
          sizeof(size_t) == 8 ? "memory" : "config 'vocab_size' must be an integer from 0 to 4294967295");
}
