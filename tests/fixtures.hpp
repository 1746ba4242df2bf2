// Loading the PyTorch fixtures (tests/fixtures, written by tests/gen_fixtures.py) and comparing
// tensors with them.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/base/bits.hpp"
#include "core/base/tensor.hpp"

namespace attn::test {

// tests/fixtures, absolute (tests/fixtures_dir.cpp).
std::string fixtures_dir();

inline nlohmann::json load_fixture(const std::string& name) {
  std::ifstream in(attn::test::fixtures_dir() + "/" + name, std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name + ": run /usr/bin/python3 tests/gen_fixtures.py");
  return nlohmann::json::parse(in);
}

// load_fixture, parsed once per run.
inline const nlohmann::json& cached_fixture(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_fixture(name)).first;
  return it->second;
}

// "0x3fc53f3c (1.54099607)"
inline std::string describe_bits(uint32_t b) {
  char text[48];
  std::snprintf(text, sizeof text, "0x%08x (%.9g)", b, static_cast<double>(float_from_bits(b)));
  return text;
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
