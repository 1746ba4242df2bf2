// json_integer / json_field / json_number (core/base/json.hpp): every integer a JSON input gives is
// checked before it is converted (nlohmann's get<size_t>() of 3.2e32 is undefined behaviour).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "core/base/error.hpp"
#include "core/base/json.hpp"

using attn::InputError;
using attn::Json;
using attn::json_integer;

namespace {

template <class T>
std::string refused(const char* text, T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
  try {
    json_integer<T>(Json::parse(text), "'f.json': \"n\"", min, max);
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("json_integer takes whole numbers within the type's range", "[json]") {
  CHECK(json_integer<size_t>(Json::parse("7"), "n") == 7);
  CHECK(json_integer<size_t>(Json::parse("7.0"), "n") == 7);
  CHECK(json_integer<size_t>(Json::parse("1e3"), "n") == 1000);
  CHECK(json_integer<int>(Json::parse("-5"), "n") == -5);
  CHECK(json_integer<int64_t>(Json::parse("-9223372036854775808"), "n") == INT64_MIN);
  CHECK(json_integer<uint64_t>(Json::parse("18446744073709551615"), "n") == UINT64_MAX);
  CHECK(json_integer<int>(Json::parse("16777216.0"), "n") == 16777216);
  // The vocabulary readers' nlohmann::json (double floats) too.
  CHECK(json_integer<size_t>(nlohmann::json::parse("12"), "n") == 12);
}

TEST_CASE("json_integer refuses fractions, negatives for counts, values past the range and non-numbers", "[json]") {
  // The fuzz finding of issue 49: a float far past size_t (tests/fuzz/corpus/batch_progress).
  CHECK(refused<uint64_t>("322222222222222222222222222222222") ==
        "'f.json': \"n\" must be an integer from 0 to 2^64 - 1, got 3.2222221e+32");
  CHECK(refused<uint64_t>("1.5") == "'f.json': \"n\" must be an integer from 0 to 2^64 - 1, got 1.5");
  CHECK(refused<uint64_t>("-1") == "'f.json': \"n\" must be an integer from 0 to 2^64 - 1, got -1");
  CHECK(refused<int64_t>("18446744073709551615") ==
        "'f.json': \"n\" must be an integer from -2^63 to 2^63 - 1, got 18446744073709551615");
  CHECK(refused<int>("2147483648") == "'f.json': \"n\" must be an integer from -2147483648 to 2147483647, got 2147483648");
  CHECK(refused<int>("-2147483649") == "'f.json': \"n\" must be an integer from -2147483648 to 2147483647, got -2147483649");
  CHECK(refused<uint32_t>("5", 1, 4) == "'f.json': \"n\" must be an integer from 1 to 4, got 5");
  CHECK(refused<uint32_t>("0", 1, 4) == "'f.json': \"n\" must be an integer from 1 to 4, got 0");
  CHECK(refused<int>("1e8") == "'f.json': \"n\" must be an integer from -2147483648 to 2147483647, got 1e+08");  // whole, but
  // past 2^24 a float32 holds only some integers: what was written may not be what was read
  for (const char* text : {"true", "null", "\"3\"", "[3]", "{}"}) CHECK(refused<size_t>(text) != "accepted");
  CHECK(refused<size_t>("1e38") != "accepted");  // whole, but past what float32 holds exactly
  CHECK_THROWS_WITH(json_integer<uint64_t>(nlohmann::json::parse("-2.5"), "n"), "n must be an integer from 0 to 2^64 - 1, got -2.5");
}

TEST_CASE("json_field names a missing key and json_number a value that is not a finite number", "[json]") {
  const Json j = Json::parse(R"({"a": 3, "b": "x"})");
  CHECK(attn::json_field<size_t>(j, "a", "'c.json'") == 3);
  CHECK_THROWS_WITH(attn::json_field<size_t>(j, "z", "'c.json'"), "'c.json': \"z\" is missing");
  CHECK_THROWS_WITH(attn::json_field<uint64_t>(j, "b", "'c.json'"), "'c.json': \"b\" must be an integer from 0 to 2^64 - 1, got \"x\"");
  CHECK(attn::json_number(Json::parse("0.25"), "lr") == 0.25);
  CHECK(attn::json_number(Json::parse("3"), "lr") == 3.0);
  CHECK_THROWS_WITH(attn::json_number(Json::parse("true"), "lr"), "lr must be a finite number, got true");
  CHECK_THROWS_WITH(attn::json_number(Json::parse("\"1\""), "lr"), "lr must be a finite number, got \"1\"");
}
