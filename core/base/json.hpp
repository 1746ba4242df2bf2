// JSON with float32 numbers, so every float is written in its shortest form that reads back as the
// same float32; keys keep insertion order.
#pragma once
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

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

// --- numbers from input, checked ---
// nlohmann's get<integer type>() converts a float outside the type's range with undefined behaviour
// and wraps a negative into a count, so every integer a file or a setting gives is read here (a lint
// test, tests/lint_json.py, finds a get<integer>() anywhere else; implicit conversions are off). `what`
// names the key and the file ("'out.jsonl.progress.json': \"next_line\""). A float is taken only when it
// is a whole number that float32, this Json's float type, holds exactly (|x| <= 2^24).

// A bound as a message writes it: 64-bit limits as powers of two.
template <class T>
std::string integer_bound(T bound) {
  if constexpr (sizeof(T) == 8) {
    if (bound == std::numeric_limits<T>::max()) return std::is_signed_v<T> ? "2^63 - 1" : "2^64 - 1";
    if (bound == std::numeric_limits<T>::min() && std::is_signed_v<T>) return "-2^63";
  }
  return std::to_string(bound);
}

// J: attn::Json or nlohmann::json (the vocabulary readers').
template <class T, class J>
T json_integer(const J& value, const std::string& what, T min = std::numeric_limits<T>::min(),
               T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  // Non-negative: unsigned when parsed, but it may be signed in a Json built in C++ (Json(3)).
  if (value.is_number_unsigned() || (value.is_number_integer() && value.template get<std::int64_t>() >= 0)) {
    const std::uint64_t u = value.template get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(max) && (min <= 0 || u >= static_cast<std::uint64_t>(min))) return static_cast<T>(u);
  } else if (value.is_number_integer()) {  // negative
    const std::int64_t i = value.template get<std::int64_t>();
    if constexpr (std::is_signed_v<T>)
      if (i >= static_cast<std::int64_t>(min) && i <= static_cast<std::int64_t>(max)) return static_cast<T>(i);
  } else if (value.is_number_float()) {
    const double d = value.template get<double>();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) <= 16777216.0 && d >= static_cast<double>(min) &&
        d <= static_cast<double>(max))
      return static_cast<T>(d);
  }
  throw InputError(what + " must be an integer from " + integer_bound(min) + " to " + integer_bound(max) + ", got " +
                   value.dump());
}

// object[key] as json_integer reads it; a missing key is an InputError too. `where` names the file.
template <class T>
T json_field(const Json& object, const char* key, const std::string& where, T min = std::numeric_limits<T>::min(),
             T max = std::numeric_limits<T>::max()) {
  const std::string what = where + ": \"" + key + "\"";
  if (!object.is_object() || !object.contains(key)) throw InputError(what + " is missing");
  return json_integer<T>(object[key], what, min, max);
}

// A finite number (not a boolean), as a double.
inline double json_number(const Json& value, const std::string& what) {
  if (!value.is_number() || !std::isfinite(value.get<double>()))
    throw InputError(what + " must be a finite number, got " + value.dump());
  return value.get<double>();
}

}  // namespace attn
