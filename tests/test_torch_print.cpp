// torch_repr, torch_size_repr and python_list_repr against the text PyTorch 1.13 printed for the same
// values (tests/torchgen/torch_print.py).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/torch/torch_print.hpp"
#include "tests/fixtures.hpp"

namespace {

nlohmann::json load_cases() {
  std::ifstream in(attn::test::fixtures_dir() + "/torch_print.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// float32 cases store uint32 bit patterns so NaN, -0.0 and inf survive JSON.
double case_value(const nlohmann::json& v, const std::string& dtype) {
  if (dtype == "float32") {
    const auto bits = v.get<uint32_t>();
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (dtype == "bool") return v.get<bool>() ? 1.0 : 0.0;
  return static_cast<double>(v.get<int64_t>());
}

attn::PrintDtype case_dtype(const std::string& dtype) {
  if (dtype == "float32") return attn::PrintDtype::float32;
  if (dtype == "int64") return attn::PrintDtype::int64;
  return attn::PrintDtype::boolean;
}

std::string actual_repr(const nlohmann::json& c) {
  const auto kind = c.at("kind").get<std::string>();
  const auto shape = c.value("shape", nlohmann::json::array()).get<std::vector<size_t>>();
  if (kind == "list") return attn::python_list_repr(c.at("items").get<std::vector<std::string>>());
  if (kind == "size") return attn::torch_size_repr(shape);
  const auto dtype = c.at("dtype").get<std::string>();
  std::vector<double> values;
  for (const auto& v : c.at("values")) values.push_back(case_value(v, dtype));
  return attn::torch_repr(shape, values, case_dtype(dtype));
}

}  // namespace

TEST_CASE("torch print matches PyTorch 1.13 byte for byte", "[print]") {
  const nlohmann::json cases = load_cases();
  REQUIRE(cases.size() > 100);
  for (const auto& c : cases) {
    const std::string name = c.value("name", c.at("kind").get<std::string>());
    const auto expected = c.at("repr").get<std::string>();
    const std::string actual = actual_repr(c);
    CAPTURE(name);  // the failed CHECK prints both texts
    CHECK(actual == expected);
  }
}

TEST_CASE("torch_repr summarizes only past 1000 elements", "[print]") {
  std::vector<double> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  CHECK(attn::torch_repr({1000}, values, attn::PrintDtype::int64).find("...") == std::string::npos);
  values.push_back(1000);
  CHECK(attn::torch_repr({1001}, values, attn::PrintDtype::int64) ==
        "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
}
