// TorchGenerator against PyTorch 1.13 itself: tests/fixtures/rng.json comes from
// tests/torchgen/rng.py. Every float32 is compared by bit pattern.
#include "core/torch/rng.hpp"

#include <catch2/catch.hpp>

#include "tests/fixtures.hpp"
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace attn;
using nlohmann::json;
namespace {

const json& fixture() { return test::cached_fixture("rng.json"); }

std::string hex64(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// FNV-1a 64 of the little-endian bit patterns, as tests/torchgen/rng.py hashes long results.
uint64_t fnv1a64(const std::vector<float>& values) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (float v : values) {
    const uint32_t b = bits_of(v);
    for (int shift = 0; shift < 32; shift += 8) {
      h ^= (b >> shift) & 0xFFu;
      h *= 0x100000001B3ULL;
    }
  }
  return h;
}

void require_same_float(float got, uint32_t want, size_t index, size_t n) {
  if (bits_of(got) != want) {
    FAIL("first mismatch at index " << index << " of " << n << ": got " << test::describe_bits(bits_of(got))
                                    << ", torch " << test::describe_bits(want));
  }
}

// Compares a float32 result with its fixture entry bit for bit: either every value, or (for long
// results) both ends and the hash. Returns how many values the entry pins down.
size_t check_floats(const std::vector<float>& got, const json& want) {
  if (want.contains("bits")) {
    const auto expected = want.at("bits").get<std::vector<uint32_t>>();
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) require_same_float(got[i], expected[i], i, got.size());
    return got.size();
  }
  const auto n = want.at("n").get<size_t>();
  const auto head = want.at("head").get<std::vector<uint32_t>>();
  const auto tail = want.at("tail").get<std::vector<uint32_t>>();
  REQUIRE(got.size() == n);
  REQUIRE(n >= head.size() + tail.size());
  for (size_t i = 0; i < head.size(); ++i) require_same_float(got[i], head[i], i, n);
  for (size_t i = 0; i < tail.size(); ++i) {
    const size_t at = n - tail.size() + i;
    require_same_float(got[at], tail[i], at, n);
  }
  INFO("ends match, so the difference is in the middle");
  REQUIRE(hex64(fnv1a64(got)) == want.at("fnv1a64").get<std::string>());
  return n;
}

size_t check_ints(const std::vector<int64_t>& got, const json& want) {
  const auto expected = want.get<std::vector<int64_t>>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      FAIL("first mismatch at index " << i << " of " << got.size() << ": got " << got[i] << ", torch "
                                      << expected[i]);
    }
  }
  return got.size();
}

void seed_from(TorchGenerator& g, const json& step_or_case) {
  const auto text = step_or_case.at("seed").get<std::string>();
  const auto seed = attn::parse_torch_seed(text);
  INFO("seed " << text);
  REQUIRE(seed.has_value());
  g.manual_seed(*seed);
  REQUIRE(g.initial_seed() == step_or_case.at("initial_seed").get<uint64_t>());
}

std::vector<float> floats_from_bits(const json& list) {
  std::vector<float> out;
  for (const auto& b : list) out.push_back(float_from_bits(b.get<uint32_t>()));
  return out;
}

// Runs one fixture step on g and compares its result. Returns how many values it checked.
size_t run_step(TorchGenerator& g, const json& s) {
  const auto op = s.at("op").get<std::string>();
  const auto n = [&] { return s.at("n").get<size_t>(); };
  std::vector<float> out;
  if (op == "seed") {
    seed_from(g, s);
    return 1;
  }
  if (op == "randint" || op == "raw64") {
    std::vector<int64_t> values(n());
    if (op == "randint") {
      g.randint(values.data(), values.size(), s.at("low").get<int64_t>(), s.at("high").get<int64_t>());
    } else {
      for (auto& v : values) v = static_cast<int64_t>(g.random64());  // random_(-2**63, None)
    }
    return check_ints(values, s.at("values"));
  }
  if (op == "linear") {
    const auto in = s.at("in").get<size_t>(), out_features = s.at("out_features").get<size_t>();
    const bool has_bias = s.at("has_bias").get<bool>();
    std::vector<float> weight(out_features * in), bias(out_features);
    attn::linear_init(g, weight.data(), has_bias ? bias.data() : nullptr, out_features, in);
    size_t checked = 0;
    {
      INFO("weight");
      checked += check_floats(weight, s.at("weight"));
    }
    if (has_bias) {
      INFO("bias");
      checked += check_floats(bias, s.at("bias"));
    }
    return checked + 1;  // + the draw count, checked by the next step
  }
  if (op == "randn") {
    out.resize(n());
    g.randn(out.data(), out.size());
  } else if (op == "normal") {
    out.resize(n());
    g.normal_(out.data(), out.size(), s.at("mean").get<double>(), s.at("std").get<double>());
  } else if (op == "rand") {
    out.resize(n());
    g.uniform_(out.data(), out.size(), 0.0, 1.0);
  } else if (op == "uniform") {
    out.resize(n());
    g.uniform_(out.data(), out.size(), s.at("from").get<double>(), s.at("to").get<double>());
  } else if (op == "bernoulli") {
    out.resize(n());
    g.bernoulli_(out.data(), out.size(), s.at("p").get<double>());
  } else if (op == "dropout") {
    out = floats_from_bits(s.at("x"));
    g.dropout_(out.data(), out.size(), s.at("p").get<double>());
  } else if (op == "embedding") {
    const auto num = s.at("num").get<size_t>(), dim = s.at("dim").get<size_t>();
    std::optional<int64_t> padding_idx;
    if (!s.at("padding_idx").is_null()) padding_idx = s.at("padding_idx").get<int64_t>();
    out.resize(num * dim);
    attn::embedding_init(g, out.data(), num, dim, padding_idx);
  } else if (op == "xavier") {
    const auto fan_out = s.at("fan_out").get<size_t>(), fan_in = s.at("fan_in").get<size_t>();
    out.resize(fan_out * fan_in);
    attn::xavier_uniform_(g, out.data(), fan_out, fan_in, s.at("gain").get<double>());
  } else if (op == "kaiming") {
    const auto rows = s.at("rows").get<size_t>(), cols = s.at("cols").get<size_t>();
    out.resize(rows * cols);
    attn::kaiming_uniform_(g, out.data(), rows, cols, s.at("a").get<double>());
  } else {
    FAIL("unknown fixture op " << op);
  }
  return check_floats(out, s.at("out")) + 1;
}

// Replays every case of one fixture group; each case starts from its own seed.
void run_group(const std::string& group) {
  const json& cases = fixture().at("groups").at(group);
  REQUIRE(!cases.empty());
  size_t checked = 0;
  for (const json& c : cases) {
    INFO("case \"" << c.at("name").get<std::string>() << "\"");
    TorchGenerator g;
    if (c.at("seed").is_null()) {
      REQUIRE(g.initial_seed() == TorchGenerator::default_seed);
    } else {
      seed_from(g, c);
    }
    REQUIRE(g.initial_seed() == c.at("initial_seed").get<uint64_t>());
    size_t index = 0;
    for (const json& s : c.at("steps")) {
      INFO("step " << index++ << ": " << s.dump().substr(0, 160));
      checked += run_step(g, s);
    }
    REQUIRE(index > 0);
  }
  CHECK(checked >= cases.size());
}

std::vector<float> fresh(uint64_t seed, size_t n, void (*fill)(TorchGenerator&, float*, size_t)) {
  TorchGenerator g(seed);
  std::vector<float> out(n);
  fill(g, out.data(), n);
  return out;
}

void require_values(const std::vector<float>& got, size_t from, const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("index " << from + i);
    REQUIRE(test::describe_bits(bits_of(got[from + i])) == test::describe_bits(bits_of(want[i])));
  }
}

}  // namespace

TEST_CASE("rng fixture: randn sizes 1-40 54 100 1000 4096", "[rng]") { run_group("randn"); }
TEST_CASE("rng fixture: normal_ with mean and std", "[rng]") { run_group("normal"); }
TEST_CASE("rng fixture: uniform_ and rand", "[rng]") { run_group("uniform"); }
TEST_CASE("rng fixture: Box-Muller cache across calls", "[rng]") { run_group("cache"); }
TEST_CASE("rng fixture: randint", "[rng]") { run_group("randint"); }
TEST_CASE("rng fixture: raw 64-bit stream", "[rng]") { run_group("raw64"); }
TEST_CASE("rng fixture: nn.Linear", "[rng]") { run_group("linear"); }
TEST_CASE("rng fixture: nn.Embedding", "[rng]") { run_group("embedding"); }
TEST_CASE("rng fixture: xavier_uniform_ and kaiming_uniform_", "[rng]") { run_group("init"); }
TEST_CASE("rng fixture: bernoulli_ and dropout", "[rng]") { run_group("bernoulli_dropout"); }

TEST_CASE("rng: spec section 1 and 7 vectors for seed 0", "[rng]") {
  TorchGenerator g(0);
  const std::vector<uint32_t> first = {0x8c7f0aac, 0x97c4aa2f, 0xb716a675, 0xd821ccc0,
                                       0x9a4eb343, 0xdba252fb, 0x8b7d76c3, 0xd8e57d67};
  for (uint32_t want : first) REQUIRE(g.random() == want);

  auto randn = [](TorchGenerator& gen, float* out, size_t n) { gen.randn(out, n); };
  require_values(fresh(0, 8, randn), 0,
                 {1.54099607f, -0.293428898f, -2.17878938f, 0.568431258f, -1.08452237f, -1.39859545f,
                  0.403346837f, 0.838026345f});
  const auto r20 = fresh(0, 20, randn);
  require_values(r20, 0,
                 {-1.12583983f, -1.1523602f, -0.250578582f, -0.433878809f, 0.598839462f, -1.55509508f,
                  -0.34136039f, 1.85300612f});
  require_values(r20, 16, {0.931826591f, 1.25900924f, 2.00498056f, 0.0537369028f});

  TorchGenerator a(0);  // script (a)
  std::vector<float> emb(54), wq(36);
  attn::embedding_init(a, emb.data(), 9, 6, 0);
  attn::linear_init(a, wq.data(), nullptr, 6, 6);
  require_values(emb, 0, {0, 0, 0, 0, 0, 0});
  require_values(emb, 6, {-0.31601277f, -2.11521935f, 0.322274923f, -1.26333475f, 0.349983186f, 0.30813393f});
  require_values(emb, 12, {0.119841509f, 1.2376579f, 1.11677718f, -0.247278154f, -1.35265374f, -1.6959312f});
  require_values(wq, 0, {-0.314605772f, -0.149610654f, 0.160445631f, 0.338253886f, 0.35526067f, 0.360220641f});

  TorchGenerator b(0);  // script (b)
  std::vector<float> q(80), k(80), v(80), w(64), bias(8);
  b.randn(q.data(), 80);
  b.randn(k.data(), 80);
  b.randn(v.data(), 80);
  attn::linear_init(b, w.data(), bias.data(), 8, 8);
  require_values(q, 0, {-1.12583983f, -1.1523602f, -0.250578582f, -0.433878809f});
  require_values(v, 76, {-0.886963189f, 0.838774681f, 1.15289509f, -1.76109815f});
  require_values(w, 0, {0.116740532f, 0.265245676f, -0.113814443f, 0.000565989991f});
  require_values(bias, 0, {0.0694311187f, -0.262509674f, 0.0588661246f, 0.150588706f});
}

TEST_CASE("rng: seeding keeps 64 bits but uses the low 32", "[rng]") {
  TorchGenerator a(5), b((uint64_t{1} << 32) + 5);
  REQUIRE(b.initial_seed() == (uint64_t{1} << 32) + 5);
  for (int i = 0; i < 100; ++i) REQUIRE(a.random() == b.random());
  REQUIRE(TorchGenerator().initial_seed() == 67280421310721ULL);

  // random64 is (first << 32) | second.
  TorchGenerator c(9), d(9);
  const uint64_t hi = c.random(), lo = c.random();
  REQUIRE(d.random64() == ((hi << 32) | lo));
}

TEST_CASE("rng: manual_seed clears the cached Box-Muller value", "[rng]") {
  TorchGenerator g(3);
  float one[2];
  g.randn(one, 1);  // leaves the sine value cached
  g.manual_seed(3);
  g.randn(one + 1, 1);
  REQUIRE(bits_of(one[0]) == bits_of(one[1]));
}

TEST_CASE("rng: empty fills draw nothing and bad arguments throw before drawing", "[rng]") {
  TorchGenerator g(11), reference(11);
  float dummy[4] = {1, 2, 3, 4};
  int64_t ints[2];
  g.randn(dummy, 0);
  g.uniform_(dummy, 0, -1.0, 1.0);
  REQUIRE_THROWS_AS(g.randint(ints, 2, 5, 5), std::invalid_argument);
  REQUIRE_THROWS_AS(g.uniform_(dummy, 4, 1.0, -1.0), std::invalid_argument);
  REQUIRE_THROWS_AS(g.uniform_(dummy, 4, -1e39, 0.0), std::invalid_argument);
  REQUIRE_THROWS_AS(g.normal_(dummy, 4, 0.0, -1.0), std::invalid_argument);
  REQUIRE_THROWS_AS(g.bernoulli_(dummy, 4, 1.5), std::invalid_argument);
  REQUIRE_THROWS_AS(g.dropout_(dummy, 4, -0.1), std::invalid_argument);
  REQUIRE_THROWS_AS(attn::embedding_init(g, dummy, 2, 2, 2), std::invalid_argument);
  REQUIRE_THROWS_AS(attn::embedding_init(g, dummy, 2, 2, -3), std::invalid_argument);
  REQUIRE(dummy[0] == 1.0f);
  REQUIRE(g.random() == reference.random());
}

TEST_CASE("rng: parse_torch_seed accepts exactly -2^63 to 2^64-1", "[rng]") {
  using attn::parse_torch_seed;
  REQUIRE(parse_torch_seed("0") == uint64_t{0});
  REQUIRE(parse_torch_seed("42") == uint64_t{42});
  REQUIRE(parse_torch_seed("+42") == uint64_t{42});
  REQUIRE(parse_torch_seed("007") == uint64_t{7});
  REQUIRE(parse_torch_seed("-0") == uint64_t{0});
  REQUIRE(parse_torch_seed("4294967301") == (uint64_t{1} << 32) + 5);
  REQUIRE(parse_torch_seed("18446744073709551615") == ~uint64_t{0});
  REQUIRE(parse_torch_seed("9223372036854775807") == (uint64_t{1} << 63) - 1);
  REQUIRE(parse_torch_seed("-1") == ~uint64_t{0});
  REQUIRE(parse_torch_seed("-12345") == ~uint64_t{0} - 12344);
  REQUIRE(parse_torch_seed("-9223372036854775808") == uint64_t{1} << 63);

  REQUIRE_FALSE(parse_torch_seed("18446744073709551616").has_value());  // 2^64
  REQUIRE_FALSE(parse_torch_seed("99999999999999999999").has_value());
  REQUIRE_FALSE(parse_torch_seed("-9223372036854775809").has_value());  // -2^63 - 1
  for (const char* bad : {"", "-", "+", "12a", "a12", " 1", "1 ", "0x10", "1e3", "1.0", "--1", "+-1", "1_000"}) {
    INFO("\"" << bad << "\"");
    REQUIRE_FALSE(parse_torch_seed(bad).has_value());
  }
}
