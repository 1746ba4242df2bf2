// A Transformer fixture's parts as the engine takes them: config, token ids, parameters.
#pragma once
#include <string>
#include <vector>

#include "core/model/transformer.hpp"
#include "tests/fixtures.hpp"

namespace attn::test {

inline TransformerConfig config_of(const nlohmann::json& fixture_config) {
  return config_from_json(Json::parse(fixture_config.dump()));
}

// Rows of ids as one row-major vector.
inline std::vector<int64_t> flat_ids(const nlohmann::json& ids, size_t& batch, size_t& seq) {
  batch = ids.size();
  seq = ids.at(0).size();
  std::vector<int64_t> out;
  for (const auto& row : ids)
    for (const auto& id : row) out.push_back(id.get<int64_t>());
  return out;
}

inline std::vector<NamedTensor> parameters_of(const nlohmann::json& params) {
  std::vector<NamedTensor> out;
  for (const auto& p : params) out.push_back({p.at("name").get<std::string>(), tensor_of(p)});
  return out;
}

// Stated tolerance: seeded parameters are bit-identical; stages agree with PyTorch to 1e-5 relative
// + 1e-5 absolute per element (LayerNorm, GELU and exp round differently in the last bits and deep
// stacks carry that forward).
constexpr double rel_tol = 1e-5, abs_tol = 1e-5;

inline void compare_stages(const Trace& trace, const nlohmann::json& expected) {
  for (const auto& e : expected) {
    const std::string name = e.at("name").get<std::string>();
    INFO("stage " << name);
    const Tensor& got = trace.at(name);
    REQUIRE(Shape(got.shape().begin(), got.shape().end()) == e.at("shape").get<Shape>());
    const Deviation d = compare(got, e, rel_tol, abs_tol);
    INFO("max abs error " << d.max_abs << " at " << d.worst << ", max rel " << d.max_rel);
    CHECK(d.failures == 0);
  }
}

}  // namespace attn::test
