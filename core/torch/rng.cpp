// PyTorch 1.13's CPU random generator, bit for bit (docs/torch-rng.md).
//
// This file must be compiled with -ffp-contract=off: torch's results depend on exactly which
// multiply-adds are fused, so every FMA below is an explicit std::fma/std::fmaf and no other
// operation may be contracted. Plain scalar C++17, so native x86-64 and WebAssembly agree.
#include "core/torch/rng.hpp"

#include "core/base/bits.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/base/error.hpp"

namespace attn {
namespace {

// Torch raises RuntimeError for these argument errors; drawing first would leave the stream moved.
void require(bool ok, const char* message) {
  if (!ok) throw std::invalid_argument(message);
}

// Constants of avx_mathfun.h are given by their float32 bit patterns (spec §3.1), so no
// decimal-to-float conversion can move them.
float f32(uint32_t bits) { return float_from_bits(bits); }

constexpr uint32_t kLogP[9] = {0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF,
                               0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA};
constexpr uint32_t kLogQ1 = 0xB95E8083;
constexpr uint32_t kLogQ2 = 0x3F318000;
constexpr uint32_t kSqrtHalf = 0x3F3504F3;
constexpr uint32_t kMinNormPos = 0x00800000;  // 2^-126
constexpr uint32_t kFourOverPi = 0x3FA2F983;
constexpr uint32_t kMinusDP1 = 0xBF490000;
constexpr uint32_t kMinusDP2 = 0xB97DA000;
constexpr uint32_t kMinusDP3 = 0xB3222169;
constexpr uint32_t kCosC0 = 0x37CCF5CE, kCosC1 = 0xBAB6061A, kCosC2 = 0x3D2AAAA5;
constexpr uint32_t kSinS0 = 0xB94CA1F9, kSinS1 = 0x3C08839E, kSinS2 = 0xBE2AAAA3;
constexpr uint32_t kTwoPiF = 0x40C90FDB;  // (float)(2*pi)

// U24: the low 24 bits of one output, scaled exactly into [0, 1 - 2^-24].
float uniform24(TorchGenerator& g) {
  return static_cast<float>(g.random() & 0xFFFFFFu) * 0x1p-24f;
}

// U53: the low 53 bits of random64() (two outputs), scaled exactly into [0, 1 - 2^-53].
double uniform53(TorchGenerator& g) {
  return static_cast<double>(g.random64() & ((uint64_t{1} << 53) - 1)) * 0x1p-53;
}

// avx_mathfun's log256_ps (Cephes logf) for one lane, with the FMAs GCC formed in libtorch.
float cephes_log(float u) {
  const float x0 = std::max(u, f32(kMinNormPos));  // u is in (0, 1] here, so never NaN/-inf
  const uint32_t xb = bits_of(x0);
  const int32_t exponent = static_cast<int32_t>(xb >> 23) - 127;
  const float m = f32((xb & 0x807FFFFFu) | 0x3F000000u);  // mantissa in [0.5, 1)
  float e = static_cast<float>(exponent) + 1.0f;
  const bool below = m < f32(kSqrtHalf);  // then use 2m - 1 and one less in the exponent
  const float x = (below ? m : 0.0f) + (m + -1.0f);
  e = e - (below ? 1.0f : 0.0f);

  float y = f32(kLogP[0]);
  for (int k = 1; k <= 8; ++k) y = std::fmaf(y, x, f32(kLogP[k]));
  const float z = x * x;
  y = x * y;
  y = std::fmaf(y, z, e * f32(kLogQ1));
  y = std::fmaf(-z, 0.5f, y);
  return std::fmaf(e, f32(kLogQ2), x + y);
}

// avx_mathfun's sincos256_ps for one lane and theta >= 0 (theta = 2*pi*u2 here).
void cephes_sincos(float theta, float& sin_out, float& cos_out) {
  int32_t j = static_cast<int32_t>(theta * f32(kFourOverPi));  // truncates, like cvttps2dq
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  // Extended-precision reduction x = theta - j*pi/4, in three parts.
  float x = std::fmaf(y, f32(kMinusDP1), theta);
  x = std::fmaf(y, f32(kMinusDP2), x);
  x = std::fmaf(y, f32(kMinusDP3), x);
  const float z = x * x;

  float yc = std::fmaf(z, f32(kCosC0), f32(kCosC1));
  yc = std::fmaf(z, yc, f32(kCosC2));
  yc = z * yc;
  yc = std::fmaf(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;

  float ys = std::fmaf(f32(kSinS0), z, f32(kSinS1));
  ys = std::fmaf(z, ys, f32(kSinS2));
  ys = z * ys;
  ys = std::fmaf(ys, x, x);

  // The vector code selects with masks and adds; doing the same keeps the signs of zeros.
  const bool poly = (j & 2) == 0;
  const float ysin2 = poly ? ys : 0.0f;
  const float ysin1 = poly ? 0.0f : yc;
  float s = ysin2 + ysin1;
  float c = (ys - ysin2) + (yc - ysin1);
  if ((j & 4) != 0) s = -s;
  if (((j - 2) & 4) == 0) c = -c;
  sin_out = s;
  cos_out = c;
}

// normal_fill_16_AVX2: Box-Muller on d[0..7] (u1 = 1 - d[k]) paired with d[8..15] (u2).
void normal_fill_16(float* d, float mean, float stddev) {
  for (int k = 0; k < 8; ++k) {
    const float u1 = 1.0f - d[k];
    const float u2 = d[k + 8];
    const float radius = std::sqrt(-2.0f * cephes_log(u1));
    float s, c;
    cephes_sincos(f32(kTwoPiF) * u2, s, c);
    d[k] = std::fmaf(radius * c, stddev, mean);
    d[k + 8] = std::fmaf(radius * s, stddev, mean);
  }
}

}  // namespace

void Mt19937::seed(uint32_t seed) {
  state_[0] = seed;
  for (size_t i = 1; i < state_size; ++i) state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + uint32_t(i);
  index_ = state_size;
}

// The recurrence in three ranges. In each, a word reads words at fixed distances that are either not
// yet rewritten (i + 1, i + 397) or rewritten 227 steps earlier (i − 227), so each loop vectorises.
void Mt19937::twist() {
  constexpr size_t shift = 397, split = state_size - shift;
  const auto next = [](uint32_t upper, uint32_t lower, uint32_t far) {
    const uint32_t y = (upper & 0x80000000u) | (lower & 0x7fffffffu);
    return far ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
  };
  for (size_t i = 0; i < split; ++i) state_[i] = next(state_[i], state_[i + 1], state_[i + shift]);
  for (size_t i = split; i < state_size - 1; ++i) state_[i] = next(state_[i], state_[i + 1], state_[i - split]);
  state_[state_size - 1] = next(state_[state_size - 1], state_[0], state_[shift - 1]);
  index_ = 0;
}

void Mt19937::fill(uint32_t* out, size_t count) {
  while (count > 0) {
    if (index_ == state_size) twist();
    const size_t m = std::min(count, state_size - index_);
    for (size_t i = 0; i < m; ++i) out[i] = temper(state_[index_ + i]);
    index_ += m, out += m, count -= m;
  }
}

std::string Mt19937::text() const {
  std::ostringstream out;
  for (uint32_t word : state_) out << word << ' ';
  out << index_;
  return out.str();
}

bool Mt19937::parse(std::istream& in) {
  Mt19937 read;
  for (uint32_t& word : read.state_) in >> word;
  in >> read.index_;
  if (!in || read.index_ > state_size) return false;
  *this = read;
  return true;
}

void TorchGenerator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed(static_cast<uint32_t>(seed));  // torch keeps 64 bits but seeds with the low 32
  cached_normal_.reset();
}

std::string TorchGenerator::state() const {
  std::ostringstream out;
  out << engine_.text() << ' ' << seed_ << ' ' << (cached_normal_ ? 1 : 0) << ' '
      << bits_of(cached_normal_.value_or(0.0));
  return out.str();
}

void TorchGenerator::set_state(const std::string& text) {
  std::istringstream in(text);
  Mt19937 engine;
  uint64_t seed = 0, normal_bits = 0;
  int has_normal = -1;
  const bool parsed = engine.parse(in);
  in >> seed >> has_normal >> normal_bits;
  if (!parsed || !in || (has_normal != 0 && has_normal != 1) || !(in >> std::ws).eof())
    throw InputError("not a random generator state");
  engine_ = engine;
  seed_ = seed;
  cached_normal_.reset();
  if (has_normal) cached_normal_ = double_from_bits(normal_bits);
}

uint32_t TorchGenerator::random() { return engine_(); }

uint64_t TorchGenerator::random64() {
  const uint64_t hi = random();  // two statements: the first output must be the high half
  const uint64_t lo = random();
  return (hi << 32) | lo;
}

void TorchGenerator::uniform_(float* out, size_t n, double from, double to) {
  require(from >= -FLT_MAX && to <= FLT_MAX, "uniform_: from and to must be finite float32 values");
  require(from <= to, "uniform_: expects from <= to");
  require(to - from <= FLT_MAX, "uniform_: to - from exceeds the float32 range");
  const float lo = static_cast<float>(from);  // torch rounds the bounds to float32 first
  const float range = static_cast<float>(to) - lo;
  for (size_t i = 0; i < n; ++i) out[i] = std::fmaf(uniform24(*this), range, lo);  // AVX2 kernel
}

void TorchGenerator::normal_(float* out, size_t n, double mean, double stddev) {
  require(stddev >= 0.0, "normal_: expects std >= 0.0");
  if (n >= 16) {
    normal_fill(out, n, static_cast<float>(mean), static_cast<float>(stddev));
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(normal_scalar(mean, stddev));
}

// normal_fill (AVX2): draw all n uniforms first, transform whole blocks of 16, then redraw the
// last 16 when n is not a multiple of 16 (overwriting part of the last block) and transform them.
void TorchGenerator::normal_fill(float* out, size_t n, float mean, float stddev) {
  for (size_t i = 0; i < n; ++i) out[i] = uniform24(*this);
  for (size_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out + i, mean, stddev);
  if (n % 16 != 0) {
    float* tail = out + n - 16;
    for (size_t i = 0; i < 16; ++i) tail[i] = uniform24(*this);
    normal_fill_16(tail, mean, stddev);
  }
}

// at::normal_distribution<double>: Box-Muller in double, one value returned, one cached.
double TorchGenerator::normal_scalar(double mean, double stddev) {
  double z;
  if (cached_normal_) {
    z = *cached_normal_;
    cached_normal_.reset();
  } else {
    const double u1 = uniform53(*this);
    const double u2 = uniform53(*this);
    const double radius = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = 6.283185307179586 * u1;  // 2.0 * pi, folded exactly
    cached_normal_ = radius * std::sin(theta);
    z = radius * std::cos(theta);
  }
  return std::fma(z, stddev, mean);
}

void TorchGenerator::randint(int64_t* out, size_t n, int64_t low, int64_t high) {
  require(low < high, "randint: expects low < high");
  // Modular arithmetic in uint64, as torch does, so ranges up to 2^64 - 1 work.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const bool wide = range >= (uint64_t{1} << 32);  // then each element takes two outputs
  for (size_t i = 0; i < n; ++i) {
    const uint64_t v = wide ? random64() : random();
    out[i] = static_cast<int64_t>(v % range + static_cast<uint64_t>(low));
  }
}

// Without MKL (this build), bernoulli_ with a scalar p compares one U53 per element.
void TorchGenerator::bernoulli_(float* out, size_t n, double p) {
  require(p >= 0.0 && p <= 1.0, "bernoulli_: expects 0 <= p <= 1");
  for (size_t i = 0; i < n; ++i) out[i] = uniform53(*this) < p ? 1.0f : 0.0f;
}

void TorchGenerator::dropout_(float* x, size_t n, double p, float* noise) {
  require(p >= 0.0 && p <= 1.0, "dropout: expects 0 <= p <= 1");
  if (p == 0.0) {  // the input passes through and nothing is drawn
    if (noise) std::fill(noise, noise + n, 1.0f);
    return;
  }
  if (p == 1.0) {  // x * 0, not 0: keeps -0.0 and turns inf/NaN into NaN, without draws
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * 0.0f;
    if (noise) std::fill(noise, noise + n, 0.0f);
    return;
  }
  // bernoulli_(1 - p) compares U53 = bits · 2^-53 with keep, that is bits with ⌈keep · 2^53⌉ (exact: a
  // power-of-two scale), on outputs drawn a block at a time; then div_(1 - p) and x * noise.
  const double keep = 1.0 - p;
  const uint64_t threshold = static_cast<uint64_t>(std::ceil(keep * 0x1p53));
  const float kept = 1.0f / static_cast<float>(keep);
  constexpr size_t block = 256;
  uint32_t words[2 * block];
  for (size_t begin = 0; begin < n; begin += block) {
    const size_t count = std::min(block, n - begin);
    engine_.fill(words, 2 * count);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t bits = (uint64_t{words[2 * i] & 0x1fffffu} << 32) | words[2 * i + 1];  // random64()'s low 53
      const float factor = bits < threshold ? kept : 0.0f;
      x[begin + i] = x[begin + i] * factor;
      if (noise) noise[begin + i] = factor;
    }
  }
}

void kaiming_uniform_(TorchGenerator& g, float* w, size_t rows, size_t cols, double a) {
  if (rows == 0 || cols == 0) return;  // torch: "Initializing zero-element tensors is a no-op"
  const double gain = std::sqrt(2.0 / (1.0 + a * a));  // a*a rounds like Python's a**2
  const double stddev = gain / std::sqrt(static_cast<double>(cols));
  const double bound = std::sqrt(3.0) * stddev;
  g.uniform_(w, rows * cols, -bound, bound);
}

void linear_init(TorchGenerator& g, float* weight, float* bias, size_t out_features, size_t in_features) {
  kaiming_uniform_(g, weight, out_features, in_features, std::sqrt(5.0));
  if (bias == nullptr) return;
  const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
  g.uniform_(bias, out_features, -bound, bound);
}

void xavier_uniform_(TorchGenerator& g, float* w, size_t fan_out, size_t fan_in, double gain) {
  const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double a = std::sqrt(3.0) * stddev;
  g.uniform_(w, fan_out * fan_in, -a, a);
}

void embedding_init(TorchGenerator& g, float* w, size_t num, size_t dim, std::optional<int64_t> padding_idx) {
  std::optional<size_t> zero_row;
  if (padding_idx) {  // checked before drawing, as nn.Embedding's constructor does
    const auto rows = static_cast<int64_t>(num);
    require(*padding_idx < rows && *padding_idx >= -rows, "embedding: padding_idx out of range");
    zero_row = static_cast<size_t>(*padding_idx < 0 ? *padding_idx + rows : *padding_idx);
  }
  g.normal_(w, num * dim, 0.0, 1.0);  // the padding row's draws still count
  if (zero_row) std::fill(w + *zero_row * dim, w + (*zero_row + 1) * dim, 0.0f);
}

std::optional<uint64_t> parse_torch_seed(const std::string& text) {
  size_t i = 0;
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) return std::nullopt;  // empty, or a sign alone
  // Largest magnitude: 2^64 - 1, or 2^63 for negative values.
  const uint64_t limit = negative ? uint64_t{1} << 63 : ~uint64_t{0};
  uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch < '0' || ch > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(ch - '0');
    if (magnitude > (limit - digit) / 10) return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  return negative ? ~magnitude + 1 : magnitude;  // two's complement, as torch reinterprets it
}

uint64_t parse_seed(const std::string& text) {
  auto seed = parse_torch_seed(text);
  if (!seed) throw InputError("--seed expects an integer in [-2^63, 2^64) as torch.manual_seed accepts, got '" + text + "'");
  return *seed;
}

}  // namespace attn
