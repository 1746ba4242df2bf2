// Loading the PyTorch fixtures (tests/fixtures, written by tests/gen_fixtures.py) and comparing
// tensors with them.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/tensor.hpp"

namespace attn::test {

inline nlohmann::json load_fixture(const std::string& name) {
  std::ifstream in(std::string(ATTN_FIXTURES_DIR) + "/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name + ": run /usr/bin/python3 tests/gen_fixtures.py");
  return nlohmann::json::parse(in);
}

struct Deviation {
  double max_abs = 0, max_rel = 0;  // rel against max(|expected|, 1e-3)
  size_t worst = 0, failures = 0;
};

// |got - expected| <= rtol * |expected| + atol, element by element.
inline Deviation compare(const Tensor& got, const nlohmann::json& expected, double rtol, double atol) {
  Deviation d;
  const auto& data = expected.at("data");
  REQUIRE(got.size() == data.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = data[i].get<double>(), g = got.data()[i], err = std::fabs(g - e);
    if (err > d.max_abs) d.max_abs = err, d.worst = i;
    d.max_rel = std::max(d.max_rel, err / std::max(std::fabs(e), 1e-3));
    if (!(err <= rtol * std::fabs(e) + atol)) ++d.failures;
  }
  return d;
}

}  // namespace attn::test

namespace attn::test {

// A fixture stage {"shape", "data"} as a tensor.
inline Tensor tensor_of(const nlohmann::json& stage) {
  Tensor t = Tensor::from_shape(stage.at("shape").get<std::vector<size_t>>());
  const auto& data = stage.at("data");
  REQUIRE(data.size() == t.size());
  for (size_t i = 0; i < t.size(); ++i) t.data()[i] = data[i].get<float>();
  return t;
}

}  // namespace attn::test
