// JSON with float32 numbers, so every float is written in its shortest form that reads back as the
// same float32; keys keep insertion order.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/base/error.hpp"

namespace attn {

using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t,
                                  std::uint64_t, float>;

// A small JSON file (a config); `what` names it in the InputError for an unreadable file or bad JSON.
inline Json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "'");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    throw InputError(what + " '" + path + "' is not valid JSON: " + e.what());
  }
}

}  // namespace attn
