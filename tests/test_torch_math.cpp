// torch_expf / torch_exp / torch_sinf / torch_cosf / torch_sin / torch_cos against PyTorch 1.13
// itself: tests/fixtures/torch_math.json comes from tests/torchgen/torch_math.py. Every float is
// compared by bit pattern.
#include "core/torch/torch_math.hpp"

#include <catch2/catch.hpp>

#include "tests/fixtures.hpp"
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace attn;
using nlohmann::json;
using Batch = xsimd::batch<float>;
namespace {

const json& fixture() { return test::cached_fixture("torch_math.json"); }

std::vector<float> floats(const json& bit_patterns) {
  std::vector<float> out;
  for (const auto& b : bit_patterns) out.push_back(float_from_bits(b.get<uint32_t>()));
  return out;
}

// FNV-1a 64 of the little-endian bit patterns, as tests/torchgen/torch_math.py hashes tables.
std::string fnv1a64(const std::vector<float>& values) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (float v : values) {
    for (int shift = 0; shift < 32; shift += 8) {
      h ^= (bits_of(v) >> shift) & 0xFFu;
      h *= 0x100000001B3ULL;
    }
  }
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

// got[i] against torch's bit patterns for inputs x[i]: counts the mismatches and shows the first
// few, so that one wrong branch does not flood the log.
void check_bits(const std::vector<float>& x, const std::vector<float>& got, const json& want) {
  REQUIRE(got.size() == want.size());
  size_t mismatches = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto expected = want[i].get<uint32_t>();
    if (bits_of(got[i]) == expected) continue;
    if (++mismatches <= 5) {
      first << "\n  [" << i << "] x = " << test::describe_bits(bits_of(x[i])) << ": got " << test::describe_bits(bits_of(got[i]))
            << ", torch " << test::describe_bits(expected);
    }
  }
  INFO(mismatches << " of " << got.size() << " differ" << first.str());
  CHECK(mismatches == 0);
}

template <class F>
std::vector<float> map_scalar(const std::vector<float>& x, F f) {
  std::vector<float> out;
  for (float v : x) out.push_back(f(v));
  return out;
}

// torch.exp's result for each fixture input, by bit pattern of the input.
std::map<uint32_t, uint32_t> exp_table() {
  const auto& e = fixture().at("exp");
  std::map<uint32_t, uint32_t> table;
  for (size_t i = 0; i < e.at("x").size(); ++i) {
    table[e.at("x")[i].get<uint32_t>()] = e.at("y")[i].get<uint32_t>();
  }
  return table;
}

// f (torch_exp or torch_tanh) on a batch whose lanes are the fixture inputs x[index[0]], x[index[1]], ...
template <class F>
void check_batch(F f, const std::vector<float>& x, const json& y, const std::vector<size_t>& index) {
  alignas(Batch::arch_type::alignment()) float lanes[Batch::size];
  for (size_t l = 0; l < Batch::size; ++l) lanes[l] = x[index[l]];
  alignas(Batch::arch_type::alignment()) float out[Batch::size];
  f(Batch::load_aligned(lanes)).store_aligned(out);
  for (size_t l = 0; l < Batch::size; ++l) {
    INFO("lane " << l << " x = " << test::describe_bits(bits_of(lanes[l])));
    REQUIRE(test::describe_bits(bits_of(out[l])) == test::describe_bits(y[index[l]].get<uint32_t>()));
  }
}

}  // namespace

TEST_CASE("torch_expf matches torch.exp bit for bit", "[torch_math]") {
  const auto& e = fixture().at("exp");
  const auto x = floats(e.at("x"));
  check_bits(x, map_scalar(x, attn::torch_expf), e.at("y"));
  CHECK(std::isnan(attn::torch_expf(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("torch_tanhf matches torch.tanh bit for bit", "[torch_math]") {
  const auto& t = fixture().at("tanh");
  const auto x = floats(t.at("x"));
  check_bits(x, map_scalar(x, attn::torch_tanhf), t.at("y"));
}

TEST_CASE("torch_tanh on batches matches torch.tanh in every lane", "[torch_math]") {
  const auto& t = fixture().at("tanh");
  const auto x = floats(t.at("x"));
  const auto& y = t.at("y");
  const size_t n = x.size(), spread = n / Batch::size;
  for (size_t i = 0; i < n; i += Batch::size) {  // neighbours (the NaNs and edges lie together)
    std::vector<size_t> index;
    for (size_t l = 0; l < Batch::size; ++l) index.push_back((i + l) % n);
    check_batch(attn::torch_tanh, x, y, index);
  }
  for (size_t i = 0; i < spread; ++i) {  // values from across the whole range in one batch
    std::vector<size_t> index;
    for (size_t l = 0; l < Batch::size; ++l) index.push_back(i + l * spread);
    check_batch(attn::torch_tanh, x, y, index);
  }
}

TEST_CASE("torch_exp on batches matches torch.exp in every lane", "[torch_math]") {
  const auto& e = fixture().at("exp");
  const auto x = floats(e.at("x"));
  const auto& y = e.at("y");
  const size_t n = x.size(), spread = n / Batch::size;
  SECTION("neighbouring inputs") {
    for (size_t i = 0; i < n; i += Batch::size) {
      std::vector<size_t> index;
      for (size_t l = 0; l < Batch::size; ++l) index.push_back((i + l) % n);
      check_batch(attn::torch_exp, x, y, index);
    }
  }
  SECTION("inputs from across the whole range in one batch") {
    for (size_t i = 0; i < spread; ++i) {
      std::vector<size_t> index;
      for (size_t l = 0; l < Batch::size; ++l) index.push_back(i + l * spread);
      check_batch(attn::torch_exp, x, y, index);
    }
  }
  SECTION("underflow, signed zeros, a denormal result and overflow side by side") {
    const float mix[] = {-110.0f, 88.7f, -0.0f, -103.5f, 100.0f, 0.0f, 1e10f, -104.0f};
    const auto table = exp_table();
    alignas(Batch::arch_type::alignment()) float lanes[Batch::size];
    alignas(Batch::arch_type::alignment()) float out[Batch::size];
    for (size_t start = 0; start < 8; start += Batch::size) {  // every value, whatever the width
      for (size_t l = 0; l < Batch::size; ++l) lanes[l] = mix[(start + l) % 8];
      attn::torch_exp(Batch::load_aligned(lanes)).store_aligned(out);
      for (size_t l = 0; l < Batch::size; ++l) {
        INFO("x = " << test::describe_bits(bits_of(lanes[l])));
        REQUIRE(table.count(bits_of(lanes[l])) == 1);
        CHECK(test::describe_bits(bits_of(out[l])) == test::describe_bits(table.at(bits_of(lanes[l]))));
      }
    }
  }
  SECTION("a NaN lane stays NaN and leaves the others alone") {
    alignas(Batch::arch_type::alignment()) float lanes[Batch::size];
    alignas(Batch::arch_type::alignment()) float out[Batch::size];
    for (size_t l = 0; l < Batch::size; ++l) lanes[l] = x[l * spread];
    lanes[1] = std::numeric_limits<float>::quiet_NaN();
    attn::torch_exp(Batch::load_aligned(lanes)).store_aligned(out);
    CHECK(std::isnan(out[1]));
    for (size_t l = 0; l < Batch::size; ++l) {
      if (l != 1) CHECK(test::describe_bits(bits_of(out[l])) == test::describe_bits(y[l * spread].get<uint32_t>()));
    }
  }
}

TEST_CASE("torch_sinf and torch_cosf match a one-element torch.sin / torch.cos", "[torch_math]") {
  const auto& s = fixture().at("sincos");
  const auto x = floats(s.at("x"));
  SECTION("sin") { check_bits(x, map_scalar(x, attn::torch_sinf), s.at("sin")); }
  SECTION("cos") { check_bits(x, map_scalar(x, attn::torch_cosf), s.at("cos")); }
  SECTION("torch_sin / torch_cos of one element agree") {
    for (float v : x) {
      float sin = 0, cos = 0;
      attn::torch_sin(&v, &sin, 1);
      attn::torch_cos(&v, &cos, 1);
      INFO("x = " << test::describe_bits(bits_of(v)));
      REQUIRE(test::describe_bits(bits_of(sin)) == test::describe_bits(bits_of(attn::torch_sinf(v))));
      REQUIRE(test::describe_bits(bits_of(cos)) == test::describe_bits(bits_of(attn::torch_cosf(v))));
    }
  }
}

TEST_CASE("torch_sin and torch_cos follow torch's vectors of 8", "[torch_math]") {
  const auto& m = fixture().at("mixed");
  const auto x = floats(m.at("x"));
  std::vector<float> out(x.size());
  SECTION("sin") {
    attn::torch_sin(x.data(), out.data(), x.size());
    check_bits(x, out, m.at("sin"));
    size_t neighbours_matter = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      neighbours_matter += bits_of(out[i]) != bits_of(attn::torch_sinf(x[i]));
    }
    CHECK(neighbours_matter > 0);  // else this fixture would not tell torch_sin from torch_sinf
  }
  SECTION("cos") {
    attn::torch_cos(x.data(), out.data(), x.size());
    check_bits(x, out, m.at("cos"));
  }
  SECTION("in place") {
    out = x;
    attn::torch_sin(out.data(), out.data(), out.size());
    check_bits(x, out, m.at("sin"));
  }
}

TEST_CASE("PositionalEncoding's exp, sin and cos match torch", "[torch_math]") {
  for (const auto& c : fixture().at("positional")) {
    const auto d_model = c.at("d_model").get<size_t>(), max_len = c.at("max_len").get<size_t>();
    const size_t half = d_model / 2;
    INFO("d_model " << d_model << ", max_len " << max_len);
    const float factor = float_from_bits(c.at("factor").get<uint32_t>());
    std::vector<float> arange, div_term;
    for (size_t i = 0; i < half; ++i) arange.push_back(static_cast<float>(2 * i) * factor);
    div_term = map_scalar(arange, attn::torch_expf);
    check_bits(arange, div_term, c.at("div_term"));

    std::vector<float> angle;
    for (size_t p = 0; p < max_len; ++p) {
      for (float d : div_term) angle.push_back(static_cast<float>(p) * d);
    }
    std::vector<float> sin(angle.size()), cos(angle.size());
    attn::torch_sin(angle.data(), sin.data(), angle.size());
    attn::torch_cos(angle.data(), cos.data(), angle.size());
    const auto& index = c.at("sample_index");
    for (size_t k = 0; k < index.size(); ++k) {
      const auto i = index[k].get<size_t>();
      INFO("element " << i << ", angle " << test::describe_bits(bits_of(angle[i])));
      REQUIRE(test::describe_bits(bits_of(sin[i])) == test::describe_bits(c.at("sample_sin")[k].get<uint32_t>()));
      REQUIRE(test::describe_bits(bits_of(cos[i])) == test::describe_bits(c.at("sample_cos")[k].get<uint32_t>()));
    }
    CHECK(fnv1a64(sin) == c.at("sin_fnv1a64").get<std::string>());
    CHECK(fnv1a64(cos) == c.at("cos_fnv1a64").get<std::string>());
  }
}
