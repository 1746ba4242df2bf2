// JSON with float32 numbers, so every float is written in its shortest form that reads back as the
// same float32; keys keep insertion order.
#pragma once
#include <nlohmann/json.hpp>

namespace attn {

using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t,
                                  std::uint64_t, float>;

}  // namespace attn
