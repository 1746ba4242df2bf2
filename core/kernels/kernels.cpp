#include "core/kernels/kernels.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "core/base/threads.hpp"
#include "core/kernels/fast_kernels.hpp"
#include "core/torch/torch_math.hpp"

namespace attn {
namespace {

using batch = xsimd::batch<float>;
#if defined(__EMSCRIPTEN__)
// The web build must run on real WebAssembly SIMD128, not a scalar fallback.
static_assert(std::is_same<batch::arch_type, xsimd::wasm>::value, "build with -msimd128 and xsimd >= 13");
#endif
constexpr size_t lanes = batch::size;

// Applies `op(batch) -> batch` to x[0..n) in place; the tail goes through a padded buffer so
// every element sees the same vector arithmetic.
template <class Op>
void map_inplace(float* x, size_t n, float pad, Op op) {
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) op(batch::load_unaligned(x + i)).store_unaligned(x + i);
  if (i < n) {
    alignas(64) float tail[lanes];
    std::fill(tail, tail + lanes, pad);
    std::copy(x + i, x + n, tail);
    op(batch::load_aligned(tail)).store_aligned(tail);
    std::copy(tail, tail + (n - i), x + i);
  }
}

float max_of(const float* x, size_t n) {
  batch acc(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) acc = xsimd::max(acc, batch::load_unaligned(x + i));
  float out = xsimd::reduce_max(acc);
  for (; i < n; ++i) out = std::max(out, x[i]);
  return out;
}

// The sum in softmax's vec::reduce_all order (AVX2, 8 lanes): under 8 elements left to right;
// otherwise 8 lane-wise partial sums, then the tree (l, l+4), (0, 2), (0, 1). Fixed at 8 lanes so
// the bits do not depend on this machine's vector width.
float reduce_all_sum(const float* x, size_t n) {
  if (n < 8) {
    float acc = n ? x[0] : 0.0f;
    for (size_t i = 1; i < n; ++i) acc = acc + x[i];
    return acc;
  }
  float acc[8];
  std::copy_n(x, 8, acc);
  for (size_t i = 8; i < n; ++i) acc[i % 8] = acc[i % 8] + x[i];
  const float u[4] = {acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]};
  return (u[0] + u[2]) + (u[1] + u[3]);
}

// G values added lane by lane: PyTorch's 8-float vectors (of floats, so that every build sums the same
// lanes), or several vectors of columns whose independent sums interleave.
template <class T, size_t G>
struct Group {
  T v[G];
  explicit Group(float x = 0.0f) {
    for (T& t : v) t = T(x);
  }
};

template <class T, size_t G>
Group<T, G> operator+(Group<T, G> a, const Group<T, G>& b) {
  for (size_t g = 0; g < G; ++g) a.v[g] = a.v[g] + b.v[g];
  return a;
}

template <class T>
constexpr size_t width = 1;
template <>
constexpr size_t width<batch> = lanes;

template <class T, size_t G>
Group<T, G> group_at(const float* x) {
  Group<T, G> out;
  for (size_t g = 0; g < G; ++g)
    if constexpr (std::is_same<T, float>::value)
      out.v[g] = x[g];
    else
      out.v[g] = T::load_unaligned(x + g * width<T>);
  return out;
}

template <class T, size_t G>
void store(const Group<T, G>& sums, float* out) {
  for (size_t g = 0; g < G; ++g)
    if constexpr (std::is_same<T, float>::value)
      out[g] = sums.v[g];
    else
      sums.v[g].store_unaligned(out + g * width<T>);
}

size_t ceil_log2(size_t x) {
  size_t r = 0;
  while ((size_t(1) << r) < x) ++r;
  return r;
}

// at::native::multi_row_sum: 4 interleaved rows (load(i, k), k < 4), summed through up to 4 cascade
// levels (each level takes over the one below every 2^power steps) to limit rounding growth.
template <class V, class Load>
std::array<V, 4> multi_row_sum(Load load, size_t size) {
  constexpr size_t levels = 4, rows = 4;
  const size_t power = std::max<size_t>(4, ceil_log2(size) / levels), step = size_t(1) << power;
  const size_t mask = step - 1;
  V acc[levels][rows];
  size_t i = 0;
  for (; i + step <= size; i += step) {
    for (size_t j = 0; j < step; ++j)
      for (size_t k = 0; k < rows; ++k) acc[0][k] = acc[0][k] + load(i + j, k);
    for (size_t j = 1; j < levels; ++j) {
      for (size_t k = 0; k < rows; ++k) {
        acc[j][k] = acc[j][k] + acc[j - 1][k];
        acc[j - 1][k] = V(0.0f);
      }
      if ((i & (mask << (j * power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (size_t k = 0; k < rows; ++k) acc[0][k] = acc[0][k] + load(i, k);
  for (size_t j = 1; j < levels; ++j)
    for (size_t k = 0; k < rows; ++k) acc[0][k] = acc[0][k] + acc[j][k];
  return {acc[0][0], acc[0][1], acc[0][2], acc[0][3]};
}

// at::native::row_sum: 4-way interleaved partial sums, the remainder into the first, then combined.
template <class V, class Load>
V row_sum(Load load, size_t size) {
  const size_t groups = size / 4;
  auto partial = multi_row_sum<V>([&](size_t i, size_t k) { return load(i * 4 + k); }, groups);
  for (size_t i = groups * 4; i < size; ++i) partial[0] = partial[0] + load(i);
  for (size_t k = 1; k < 4; ++k) partial[0] = partial[0] + partial[k];
  return partial[0];
}

}  // namespace

float tensor_sum(const float* x, size_t n) {
  using Scalar = Group<float, 1>;
  if (n < 8) return row_sum<Scalar>([x](size_t i) { return group_at<float, 1>(x + i); }, n).v[0];
  // vectorized_inner_sum: whole 8-float vectors lane by lane, then the scalar tail, then the lanes.
  const size_t vectors = n / 8;
  const auto lanes8 = row_sum<Group<float, 8>>([x](size_t i) { return group_at<float, 8>(x + 8 * i); }, vectors);
  float total = 0.0f;
  for (size_t k = vectors * 8; k < n; ++k) total = total + x[k];
  for (float v : lanes8.v) total = total + v;
  return total;
}

namespace {

thread_local Rounding product_rounding = Rounding::exact;
thread_local ThreadPool* product_pool = nullptr;

Gemm product(const float* a, bool a_transposed, bool b_transposed, float* c, size_t m, size_t k, size_t n,
             const float* bias = nullptr, bool relu = false) {
  Gemm g;
  g.m = m, g.n = n, g.k = k;
  g.a = a, g.lda = a_transposed ? m : k, g.a_transposed = a_transposed;
  g.ldb = b_transposed ? k : n, g.b_transposed = b_transposed;
  g.c = c, g.ldc = n;
  g.bias = bias, g.relu = relu;
  g.rounding = product_rounding;
  return g;
}

void product(const float* a, bool a_transposed, const float* b, bool b_transposed, float* c, size_t m, size_t k,
             size_t n, const float* bias = nullptr, bool relu = false) {
  Gemm g = product(a, a_transposed, b_transposed, c, m, k, n, bias, relu);
  g.b = b;
  gemm(g, product_pool);
}

void product(const float* a, HalfMatrix b, bool b_transposed, float* c, size_t m, size_t k, size_t n,
             const float* bias = nullptr, bool relu = false) {
  Gemm g = product(a, false, b_transposed, c, m, k, n, bias, relu);
  g.b_half = b.bits, g.b_half_type = b.type;
  gemm(g, product_pool);
}

}  // namespace

ProductMode::ProductMode(Rounding rounding, ThreadPool* pool)
    : previous_rounding_(product_rounding), previous_pool_(product_pool) {
  product_rounding = rounding;
  product_pool = pool;
}

ProductMode::~ProductMode() {
  product_rounding = previous_rounding_;
  product_pool = previous_pool_;
}

void parallel_pieces(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  const size_t pieces = (n + grain - 1) / grain;
  if (pieces <= 1 || !product_pool || product_pool->size() == 1) return fn(0, n);
  product_pool->parallel_for(pieces, [&](size_t i) { fn(i * grain, std::min(n, (i + 1) * grain)); });
}

void matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n) {
  product(a, false, b, false, c, m, k, n);
}

void matmul_nt(const float* a, const float* b, float* c, size_t m, size_t k, size_t n, const float* bias, bool relu) {
  product(a, false, b, true, c, m, k, n, bias, relu);
}

void matmul(const float* a, HalfMatrix b, float* c, size_t m, size_t k, size_t n) {
  product(a, b, false, c, m, k, n);
}

void matmul_nt(const float* a, HalfMatrix b, float* c, size_t m, size_t k, size_t n, const float* bias, bool relu) {
  product(a, b, true, c, m, k, n, bias, relu);
}

void matmul_tn(const float* a, const float* b, float* c, size_t m, size_t k, size_t n) {
  product(a, true, b, false, c, m, k, n);
}

void multiply_scalar(float* x, size_t n, float s) {
  map_inplace(x, n, 0.0f, [s](batch v) { return v * batch(s); });
}

void divide_scalar(float* x, size_t n, float s) {
  map_inplace(x, n, 1.0f, [s](batch v) { return v / batch(s); });
}

void add(const float* a, const float* b, float* c, size_t n) {
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    (batch::load_unaligned(a + i) + batch::load_unaligned(b + i)).store_unaligned(c + i);
  for (; i < n; ++i) c[i] = a[i] + b[i];
}

void multiply(const float* a, const float* b, float* c, size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i] * b[i];
}

void masked_fill(float* x, const uint8_t* keep, size_t n, float value) {
  for (size_t i = 0; i < n; ++i) x[i] = keep[i] ? x[i] : value;
}

namespace {

batch gelu_new_tanh(batch v) {
  const batch k(float(std::sqrt(2.0 / M_PI))), cube = v * v * v;
  return torch_tanh(k * (v + batch(0.044715f) * cube));
}

}  // namespace

// Through a buffer of one vector: the tail then sees the same arithmetic, and the copies cost little
// beside the tanh.
void gelu_new(float* x, float* tanh, size_t n) {
  parallel_pieces(n, 1 << 14, [&](size_t begin, size_t end) {  // whole vectors: the grain is a multiple of lanes
    for (size_t i = begin; i < end; i += lanes) {
      const size_t m = std::min(lanes, end - i);
      alignas(64) float v[lanes] = {}, t[lanes];
      std::copy_n(x + i, m, v);
      const batch in = batch::load_aligned(v), th = gelu_new_tanh(in);
      (batch(0.5f) * in * (batch(1.0f) + th)).store_aligned(v);
      std::copy_n(v, m, x + i);
      if (!tanh) continue;
      th.store_aligned(t);
      std::copy_n(t, m, tanh + i);
    }
  });
}

// exp runs over the whole block at once: it is elementwise, so how rows share vectors changes no bit,
// and short rows (the tutorial's 4 keys) pay the vector overhead once instead of per row.
void softmax_rows(float* x, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    const float max = max_of(row, n);
    for (size_t j = 0; j < n; ++j) row[j] = row[j] - max;
  }
  map_inplace(x, rows * n, 0.0f, [](batch v) { return torch_exp(v); });
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    const float inverse = 1.0f / reduce_all_sum(row, n);
    for (size_t j = 0; j < n; ++j) row[j] = row[j] * inverse;
  }
}

void softmax_backward_rows(const float* out, float* grad, size_t rows, size_t n) {
  std::vector<float> products(n);
  for (size_t r = 0; r < rows; ++r) {
    const float* y = out + r * n;
    float* g = grad + r * n;
    for (size_t j = 0; j < n; ++j) products[j] = g[j] * y[j];
    const float sum = reduce_all_sum(products.data(), n);
    for (size_t j = 0; j < n; ++j) g[j] = (g[j] - sum) * y[j];
  }
}

// vectorized_outer_sum: 32 columns at a time through multi_row_sum (4 vectors of 8), then whole
// vectors through row_sum, then single columns through row_sum. A column's sum depends only on which of
// these it falls in, so this machine's vectors carry the columns (each group of 8 in 8 / lanes of them).
void column_sums(const float* x, size_t rows, size_t n, float* out) {
  static_assert(lanes <= 8 && 8 % lanes == 0, "PyTorch's vectors of 8 in whole vectors of this machine");
  using Eight = Group<batch, 8 / lanes>;
  size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const auto sums = multi_row_sum<Eight>(
        [&](size_t i, size_t k) { return group_at<batch, 8 / lanes>(x + i * n + j + 8 * k); }, rows);
    for (size_t k = 0; k < 4; ++k) store(sums[k], out + j + 8 * k);
  }
  for (; j + 8 <= n; j += 8)
    store(row_sum<Eight>([&](size_t i) { return group_at<batch, 8 / lanes>(x + i * n + j); }, rows), out + j);
  for (; j < n; ++j) out[j] = row_sum<Group<float, 1>>([&](size_t i) { return group_at<float, 1>(x + i * n + j); }, rows).v[0];
}

namespace reference {

void matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (size_t p = 0; p < k; ++p) acc += double(a[i * k + p]) * double(b[p * n + j]);
      c[i * n + j] = float(acc);
    }
}

void softmax_rows(float* x, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    double max = *std::max_element(row, row + n), sum = 0.0;
    for (size_t j = 0; j < n; ++j) sum += std::exp(double(row[j]) - max);
    for (size_t j = 0; j < n; ++j) row[j] = float(std::exp(double(row[j]) - max) / sum);
  }
}

}  // namespace reference
}  // namespace attn
