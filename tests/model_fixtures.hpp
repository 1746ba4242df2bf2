// A Transformer fixture's parts as the engine takes them: config, token ids, parameters.
#pragma once
#include <string>
#include <vector>

#include "core/transformer.hpp"
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

}  // namespace attn::test
