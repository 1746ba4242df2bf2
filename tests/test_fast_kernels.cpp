// The fast kernels against their plain reference twins on random shapes, awkward ones included
// (1, 3, 17, sizes that are no multiple of the vector width or of the blocking), on every instruction
// set this CPU has; the exact-rounding multiply against the PyTorch-order loop bit for bit; thread-count
// independence; and the whole model on the CPU backend against PyTorch's fixtures.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "core/batch/batch.hpp"
#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/kernels/fast_kernels.hpp"
#include "core/base/threads.hpp"
#include "tests/fixtures.hpp"

using namespace attn;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// max |x − ref| / max(1, max |ref|): the normalised error the bounds below are stated in.
double normalised_error(const std::vector<float>& x, const std::vector<float>& ref) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, double(std::fabs(x[i] - ref[i])));
    scale = std::max(scale, double(std::fabs(ref[i])));
  }
  return err / scale;
}

std::vector<std::string> isas() {
  std::vector<std::string> out;
  for (const char* isa : {"avx512", "avx2", "sse4.2", "wasm-simd128"}) try {
      set_kernel_isa(isa);
      out.push_back(isa);
    } catch (const InputError&) {
    }
  return out;
}

struct Product {
  size_t m, n, k;
  bool transposed, accumulate, a_transposed;
};

Gemm gemm_of(const Product& p, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c) {
  Gemm g;
  g.m = p.m, g.n = p.n, g.k = p.k;
  // Leading dimensions wider than the rows, as sub-matrices have.
  g.a = a.data(), g.lda = (p.a_transposed ? p.m : p.k) + 3, g.a_transposed = p.a_transposed;
  g.b = b.data(), g.ldb = (p.transposed ? p.k : p.n) + 1, g.b_transposed = p.transposed;
  g.c = c.data(), g.ldc = p.n + 2;
  g.accumulate = p.accumulate;
  return g;
}

const Product products[] = {
    {1, 1, 1, false, false, false},   {3, 17, 5, true, false, true},       {17, 3, 300, false, true, false},
    {33, 65, 17, true, true, true},   {100, 1000, 3, false, false, false}, {257, 31, 513, true, false, true},
    {64, 64, 64, false, true, false}, {1000, 20, 64, true, false, false},  {13, 70, 600, false, true, true},
    {1, 77, 1100, true, false, false}, {1, 64, 80, true, true, false}};

// A's storage: [m, k] or, transposed, [k, m], with the leading dimension gemm_of gives it.
size_t a_size(const Product& p) { return (p.m + 3) * (p.k + 3); }
float a_at(const Gemm& g, const std::vector<float>& a, size_t i, size_t q) {
  return g.a_transposed ? a[q * g.lda + i] : a[i * g.lda + q];
}

// Bit for bit, a NaN matching any NaN: which operand's payload a sum passes on is the compiler's choice
// (it may swap an addition's operands), so payloads differ between two instantiations of one loop.
bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0 && !(std::isnan(x[i]) && std::isnan(y[i]))) return false;
  return x.size() == y.size();
}

}  // namespace

// Stated bound: normalised error ≤ 1e-5 for the fused multiply (fp32 with k up to 513).
TEST_CASE("fast matrix multiply equals the reference on awkward shapes", "[fast_kernels]") {
  ThreadPool pool(3);
  const std::string best = kernel_isa();
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (const Product& p : products) {
      INFO(isa << " m " << p.m << " n " << p.n << " k " << p.k << " transposed " << p.a_transposed << p.transposed);
      const auto a = random_floats(a_size(p), 1), b = random_floats((p.transposed ? p.n : p.k) * (p.n + p.k + 1), 2);
      std::vector<float> c = random_floats(p.m * (p.n + 2), 3), ref = c;
      gemm(gemm_of(p, a, b, c), &pool);
      reference::gemm(gemm_of(p, a, b, ref));
      CHECK(normalised_error(c, ref) <= 1e-5);
    }
  }
  set_kernel_isa(best);
}

TEST_CASE("exact rounding gives the bits of the PyTorch-order loop on every instruction set", "[fast_kernels]") {
  const std::string best = kernel_isa();
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (const Product& p : products) {
      INFO(isa << " m " << p.m << " n " << p.n << " k " << p.k << " transposed " << p.a_transposed << p.transposed);
      const auto a = random_floats(a_size(p), 4), b = random_floats((p.transposed ? p.n : p.k) * (p.n + p.k + 1), 5);
      std::vector<float> c(p.m * (p.n + 2)), want(c.size());
      Gemm g = gemm_of(p, a, b, c);
      g.accumulate = false;
      g.rounding = Rounding::exact;
      gemm(g);
      for (size_t i = 0; i < p.m; ++i)  // c = c + a·b in k order, each step rounded
        for (size_t j = 0; j < p.n; ++j) {
          float acc = 0.0f;
          for (size_t q = 0; q < p.k; ++q) {
            const float bv = p.transposed ? b[j * g.ldb + q] : b[q * g.ldb + j];
            const float product = a_at(g, a, i, q) * bv;
            acc = acc + product;
          }
          want[i * g.ldc + j] = acc;
        }
      size_t mismatch = 0;
      while (mismatch < c.size() && c[mismatch] == want[mismatch]) ++mismatch;
      INFO("first mismatch at " << mismatch << ": " << (mismatch < c.size() ? c[mismatch] - want[mismatch] : 0.0f));
      CHECK(mismatch == c.size());
    }
  }
  set_kernel_isa(best);
}

// The vector loop without packing is only for tiny products: 2048³ once wrapped to 0 in wasm32's size_t
// and ran that loop, 20× slower than the packed kernel.
TEST_CASE("only tiny products skip packing, however large the product", "[fast_kernels]") {
  CHECK(small_product(16, 6, 6));
  CHECK(small_product(4096, 1, 1));
  CHECK_FALSE(small_product(4097, 1, 1));
  CHECK_FALSE(small_product(2048, 2048, 2048));
  CHECK_FALSE(small_product(65536, 65536, 1));
}

// A row's bits do not depend on how many rows share its product, though one row alone is a tiny product
// (unpacked) and many are not: both roundings, with and without C, k shallower and deeper than a slice.
TEST_CASE("a row of a product has the same bits in a tiny product and in a large one", "[fast_kernels]") {
  const std::string best = kernel_isa();
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (size_t k : {5, 600})
      for (Rounding rounding : {Rounding::exact, Rounding::fused})
        for (bool accumulate : {false, true}) {
          INFO(isa << " k " << k << " exact " << (rounding == Rounding::exact) << " accumulate " << accumulate);
          const size_t m = 200, n = 6;
          REQUIRE(small_product(1, n, k));
          REQUIRE_FALSE(small_product(m, n, k));
          const auto a = random_floats(m * k, 31), b = random_floats(k * n, 32), c0 = random_floats(m * n, 33);
          std::vector<float> many = c0, one = c0;
          Gemm g;
          g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = n, g.c = many.data();
          g.ldc = n, g.accumulate = accumulate, g.rounding = rounding;
          gemm(g);
          for (size_t i = 0; i < m; i += 37) {
            Gemm row = g;
            row.m = 1, row.a = a.data() + i * k, row.c = one.data() + i * n;
            gemm(row);
            CHECK(std::equal(one.begin() + i * n, one.begin() + (i + 1) * n, many.begin() + i * n));
          }
        }
  }
  set_kernel_isa(best);
}

// A single row times an nn.Linear weight (B[n, k]ᵀ, generation's one position) is computed without
// packing B: the same bits as the row in a product of many rows, both roundings, with and without C,
// bias and ReLU, k deeper than a slice and not a multiple of the lanes, n not a multiple of a panel, on
// one thread and with the panels split over three.
TEST_CASE("a row times a weight has the bits of the row in a large product", "[fast_kernels]") {
  const std::string best = kernel_isa();
  ThreadPool pool(3);
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (size_t k : {80, 1100})
      for (size_t n : {64, 77, 230})
        for (Rounding rounding : {Rounding::exact, Rounding::fused})
          for (bool accumulate : {false, true}) {
            INFO(isa << " k " << k << " n " << n << " exact " << (rounding == Rounding::exact) << " accumulate " << accumulate);
            const size_t m = 40;
            REQUIRE_FALSE(small_product(1, n, k));
            const auto a = random_floats(m * k, 41), b = random_floats(n * k, 42), c0 = random_floats(m * n, 43);
            const auto bias = random_floats(n, 44);
            std::vector<float> many = c0, one = c0;
            Gemm g;
            g.m = m, g.n = n, g.k = k, g.a = a.data(), g.lda = k, g.b = b.data(), g.ldb = k, g.b_transposed = true;
            g.c = many.data(), g.ldc = n, g.accumulate = accumulate, g.rounding = rounding;
            g.bias = accumulate ? nullptr : bias.data(), g.relu = !accumulate;
            gemm(g);
            for (size_t i = 0; i < m; i += 13) {
              Gemm row = g;
              row.m = 1, row.a = a.data() + i * k, row.c = one.data() + i * n;
              std::vector<float> pooled = one;
              gemm(row);
              CHECK(std::equal(one.begin() + i * n, one.begin() + (i + 1) * n, many.begin() + i * n));
              row.c = pooled.data() + i * n;
              gemm(row, &pool);
              CHECK(std::equal(pooled.begin() + i * n, pooled.begin() + (i + 1) * n, many.begin() + i * n));
            }
          }
  }
  set_kernel_isa(best);
}

// The epilogue (bias, ReLU) is the separate steps without their trips through memory: the same bits as
// the product followed by c + bias[j] and std::max(c, 0), for tiny, edge and deep (k > one slice)
// products, both roundings, a packed B, on every instruction set.
TEST_CASE("a product's bias and ReLU epilogue has the bits of the separate steps", "[fast_kernels]") {
  const std::string best = kernel_isa();
  ThreadPool pool(2);
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (const Product& p : {Product{3, 5, 7, true, false, true}, Product{37, 70, 600, true, false, true},
                             Product{100, 33, 64, false, true, false}, Product{1, 4, 1, true, false, false}})
      for (Rounding rounding : {Rounding::exact, Rounding::fused})
        for (bool relu : {false, true})
          for (bool packed : {false, true}) {
            INFO(isa << " m " << p.m << " n " << p.n << " k " << p.k << " relu " << relu << " packed " << packed);
            const auto a = random_floats(a_size(p), 41), b = random_floats(p.n * (p.n + p.k + 1), 42);
            const auto bias = random_floats(p.n, 43), c0 = random_floats(p.m * (p.n + 2), 44);
            std::vector<float> separate = c0, fused = c0;
            Gemm g = gemm_of(p, a, b, separate);
            g.rounding = rounding;
            const PackedB packed_b(g.b, g.ldb, g.b_transposed, p.k, p.n);
            if (packed) g.b_packed = &packed_b;
            gemm(g, &pool);
            for (size_t i = 0; i < p.m; ++i)
              for (size_t j = 0; j < p.n; ++j) {
                float& c = separate[i * g.ldc + j];
                c = c + bias[j];
                if (relu) c = std::max(c, 0.0f);
              }
            g.c = fused.data(), g.bias = bias.data(), g.relu = relu;
            gemm(g, &pool);
            CHECK(fused == separate);
          }
  }
  set_kernel_isa(best);
}

// Packing B once (a weight) changes nothing but when the packing happens: the same bits, both roundings,
// including a product wider than one column block (n > 4096) and deeper than one k slice.
TEST_CASE("a B packed once gives the bits of packing it in every call", "[fast_kernels]") {
  ThreadPool pool(2);
  const std::string best = kernel_isa();
  std::vector<Product> shapes(std::begin(products), std::end(products));
  shapes.push_back({5, 4100, 600, true, true, true});
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (const Product& p : shapes)
      for (Rounding rounding : {Rounding::fused, Rounding::exact}) {
        INFO(isa << " m " << p.m << " n " << p.n << " k " << p.k << " exact " << (rounding == Rounding::exact));
        const auto a = random_floats(a_size(p), 11), b = random_floats((p.transposed ? p.n : p.k) * (p.n + p.k + 1), 12);
        std::vector<float> c = random_floats(p.m * (p.n + 2), 13), packed = c;
        Gemm g = gemm_of(p, a, b, c);
        g.rounding = rounding;
        gemm(g, &pool);
        const PackedB b_packed(g.b, g.ldb, g.b_transposed, p.k, p.n);
        g.c = packed.data(), g.b = nullptr, g.b_packed = &b_packed;
        gemm(g, &pool);
        CHECK(packed == c);
      }
  }
  set_kernel_isa(best);
  const auto b = random_floats(64 * 64, 14);
  std::vector<float> c(64 * 64);
  const PackedB b_packed(b.data(), 64, false, 64, 64);
  Gemm g;
  g.m = g.n = g.k = 64, g.a = b.data(), g.lda = 64, g.c = c.data(), g.ldc = 64, g.b_packed = &b_packed;
  if (isas().size() > 1) {  // packed for the best, used with another
    set_kernel_isa(isas().back());
    CHECK_THROWS_AS(gemm(g), InputError);
    set_kernel_isa(best);
  }
  g.k = 63;
  CHECK_THROWS_AS(gemm(g), InputError);
}

// A half-precision B (a bfloat16 or float16 weight, widened while packed or read) against the same product
// on B widened by core/base/half.hpp's scalar conversion: the same bits, on every path (tiny products, a
// row times a weight, blocked; B transposed or not), rounding and instruction set.
TEST_CASE("a half-precision B gives the bits of the product on the widened B", "[fast_kernels]") {
  ThreadPool pool(2);
  const std::string best = kernel_isa();
  std::vector<Product> shapes(std::begin(products), std::end(products));
  shapes.push_back({5, 4100, 600, true, true, true});
  std::mt19937 gen(21);
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (HalfType type : {HalfType::bf16, HalfType::f16})
      for (const Product& p : shapes)
        for (Rounding rounding : {Rounding::fused, Rounding::exact}) {
          INFO(isa << " " << half_name(type) << " m " << p.m << " n " << p.n << " k " << p.k);
          std::vector<uint16_t> bits((p.transposed ? p.n : p.k) * (p.n + p.k + 1));
          for (uint16_t& h : bits) {  // finite values of every magnitude, subnormals included
            h = uint16_t(gen());
            if (std::isinf(from_half(type, h)) || std::isnan(from_half(type, h))) h &= 0x83FF;
          }
          std::vector<float> widened(bits.size());
          std::transform(bits.begin(), bits.end(), widened.begin(), [&](uint16_t h) { return from_half(type, h); });
          const auto a = random_floats(a_size(p), 22);
          std::vector<float> c = random_floats(p.m * (p.n + 2), 23), half = c;
          Gemm g = gemm_of(p, a, widened, c);
          g.rounding = rounding;
          gemm(g, &pool);
          g.c = half.data(), g.b = nullptr, g.b_half = bits.data(), g.b_half_type = type;
          gemm(g, &pool);
          CHECK(same_bits(half, c));
        }
    // Every 16-bit pattern (infinities, NaNs, subnormals, −0) through the vector conversions: B [64, 1024].
    for (HalfType type : {HalfType::bf16, HalfType::f16})
      for (bool transposed : {false, true}) {
        INFO(isa << " " << half_name(type) << " every pattern, transposed " << transposed);
        std::vector<uint16_t> bits(65536);
        std::iota(bits.begin(), bits.end(), 0);
        std::vector<float> widened(bits.size());
        std::transform(bits.begin(), bits.end(), widened.begin(), [&](uint16_t h) { return from_half(type, h); });
        const Product p{1, 1024, 64, transposed, false, false};
        std::vector<float> a(a_size(p), 0.0f), c(p.n + 2), half(p.n + 2);
        a[5] = 1.0f;  // C's row is B's row 5 (B's column 5 transposed) times one, plus zeros
        Gemm g = gemm_of(p, a, widened, c);
        g.ldb = transposed ? p.k : p.n;
        gemm(g);
        g.c = half.data(), g.b = nullptr, g.b_half = bits.data(), g.b_half_type = type;
        gemm(g);
        CHECK(same_bits(half, c));
      }
  }
  set_kernel_isa(best);
}

// Jobs back to back (the workers still spinning from the last one) and after a pause (asleep): every
// item runs exactly once, and an item's exception reaches the caller.
TEST_CASE("the thread pool runs every item once and passes on an item's exception", "[fast_kernels]") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(1000);
  for (size_t job = 0; job < 200; ++job) {
    if (job % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const size_t count = 1 + job * 37 % runs.size();
    pool.parallel_for(count, [&](size_t i) { ++runs[i]; });
    for (size_t i = 0; i < count; ++i) REQUIRE(runs[i].exchange(0) == 1);
  }
  CHECK_THROWS_AS(pool.parallel_for(100, [&](size_t i) {
    if (i == 42) throw InputError("item 42");
  }), InputError);
}

TEST_CASE("results do not depend on the thread count", "[fast_kernels]") {
  const Product p{517, 300, 700, true, false, true};
  const auto a = random_floats(a_size(p), 6), b = random_floats(p.n * (p.n + p.k + 1), 7);
  std::vector<float> one(p.m * (p.n + 2)), three(one.size());
  ThreadPool pool1(1), pool3(3);
  gemm(gemm_of(p, a, b, one), &pool1);
  gemm(gemm_of(p, a, b, three), &pool3);
  CHECK(one == three);
  FlashAttention f;
  f.batch = 2, f.heads = 3, f.seq_q = f.seq_k = 300, f.head_dim = 20, f.causal = true, f.scale = 0.2f;
  const auto q = random_floats(2 * 300 * 60, 8), k = random_floats(q.size(), 9), v = random_floats(q.size(), 10);
  std::vector<float> o1(q.size()), o3(q.size());
  f.q = q.data(), f.k = k.data(), f.v = v.data();
  f.out = o1.data();
  flash_attention(f, &pool1);
  f.out = o3.data();
  flash_attention(f, &pool3);
  CHECK(o1 == o3);
}

// Stated bound: normalised error ≤ 2e-6 against softmax computed in double.
TEST_CASE("flash attention equals materialised attention with every mask", "[fast_kernels]") {
  struct Case {
    size_t batch, heads, seq_q, seq_k, dim;
    bool causal, padding;
  };
  const Case cases[] = {{1, 1, 1, 1, 1, false, false},  {2, 3, 3, 17, 5, false, true},  {1, 2, 17, 17, 8, true, false},
                        {2, 1, 300, 300, 64, true, true}, {1, 4, 1000, 1000, 16, false, true},
                        {1, 1, 5, 700, 33, false, false}};
  ThreadPool pool(2);
  const std::string best = kernel_isa();
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (const Case& c : cases) {
      INFO(isa << " B " << c.batch << " H " << c.heads << " Sq " << c.seq_q << " Sk " << c.seq_k << " D " << c.dim
               << " causal " << c.causal << " padding " << c.padding);
      const size_t width = c.heads * c.dim;
      const auto q = random_floats(c.batch * c.seq_q * width, 11), k = random_floats(c.batch * c.seq_k * width, 12),
                 v = random_floats(c.batch * c.seq_k * width, 13);
      std::vector<uint8_t> keep(c.batch * c.seq_k, 1);
      for (size_t b = 0; b < c.batch; ++b)  // batch item b keeps its first seq_k − 2b − 1 keys
        for (size_t j = c.seq_k > 2 * b + 1 ? c.seq_k - 2 * b - 1 : 1; j < c.seq_k && c.padding; ++j)
          keep[b * c.seq_k + j] = 0;
      if (c.padding && c.batch > 1 && c.seq_k > 200) std::fill_n(keep.begin() + c.seq_k, c.seq_k, uint8_t(0));
      FlashAttention f;
      f.q = q.data(), f.k = k.data(), f.v = v.data(), f.key_keep = c.padding ? keep.data() : nullptr;
      f.batch = c.batch, f.heads = c.heads, f.seq_q = c.seq_q, f.seq_k = c.seq_k, f.head_dim = c.dim;
      f.scale = 1.0f / std::sqrt(float(c.dim)), f.causal = c.causal;
      std::vector<float> out(q.size()), ref(q.size());
      f.out = out.data();
      flash_attention(f, &pool);
      f.out = ref.data();
      reference::flash_attention(f);
      CHECK(normalised_error(out, ref) <= 2e-6);
    }
  }
  set_kernel_isa(best);
}

// Packed sequences (offsets): each sequence's output has the bits of that sequence attended alone, and
// the reference with offsets agrees (normalised error ≤ 2e-6).
TEST_CASE("flash attention over packed sequences equals each sequence alone", "[fast_kernels]") {
  const std::vector<size_t> lengths = {1, 17, 3, 300, 5};
  std::vector<size_t> offsets = {0};
  for (size_t n : lengths) offsets.push_back(offsets.back() + n);
  const size_t heads = 3, dim = 20, width = heads * dim, rows = offsets.back();
  const auto q = random_floats(rows * width, 21), k = random_floats(q.size(), 22), v = random_floats(q.size(), 23);
  std::vector<uint8_t> keep(rows, 1);
  for (size_t r = 2; r < rows; r += 7) keep[r] = 0;
  ThreadPool pool(2);
  const std::string best = kernel_isa();
  for (const std::string& isa : isas()) {
    set_kernel_isa(isa);
    for (bool causal : {false, true})
      for (bool padding : {false, true}) {
        INFO(isa << " causal " << causal << " padding " << padding);
        FlashAttention f;
        f.q = q.data(), f.k = k.data(), f.v = v.data(), f.key_keep = padding ? keep.data() : nullptr;
        f.batch = lengths.size(), f.heads = heads, f.head_dim = dim, f.scale = 0.25f, f.causal = causal;
        f.offsets = offsets.data();
        std::vector<float> packed(q.size()), alone(q.size()), ref(q.size());
        f.out = packed.data();
        flash_attention(f, &pool);
        f.out = ref.data();
        reference::flash_attention(f);
        CHECK(normalised_error(packed, ref) <= 2e-6);
        for (size_t b = 0; b < lengths.size(); ++b) {
          FlashAttention one = f;
          const size_t at = offsets[b] * width;
          one.q = q.data() + at, one.k = k.data() + at, one.v = v.data() + at, one.out = alone.data() + at;
          one.key_keep = padding ? keep.data() + offsets[b] : nullptr;
          one.batch = 1, one.seq_q = one.seq_k = lengths[b], one.offsets = nullptr;
          flash_attention(one, &pool);
        }
        CHECK(packed == alone);
      }
  }
  set_kernel_isa(best);
}

TEST_CASE("an unknown instruction set or a causal mask over unequal lengths is refused", "[fast_kernels]") {
  CHECK_THROWS_AS(set_kernel_isa("avx9000"), InputError);
  FlashAttention f;
  f.seq_q = 2, f.seq_k = 3, f.causal = true;
  CHECK_THROWS_AS(flash_attention(f), InputError);
}

// Stated bound: the fast path (fused multiply-adds, blocked sums, float LayerNorm) within 1e-4 relative
// + 1e-4 absolute of PyTorch for every stage it computes.
TEST_CASE("the model on the CPU backend matches the PyTorch stages", "[fast_kernels]") {
  for (const char* name : {"small", "one_head_gelu_prenorm_causal", "eight_heads_three_layers"}) {
    SECTION(name) {
      const auto f = test::load_fixture(std::string("transformer_") + name + ".json");
      const TransformerConfig config = config_from_json(Json::parse(f.at("config").dump()));
      TorchGenerator gen(parse_torch_seed(f.at("seed").get<std::string>()).value());
      const TransformerModel model = init_transformer(config, gen);
      std::vector<int64_t> ids;
      for (const auto& row : f.at("ids"))
        for (const auto& id : row) ids.push_back(id.get<int64_t>());
      const size_t batch = f.at("ids").size(), seq = ids.size() / batch;
      auto backend = make_cpu_backend(2);
      DeviceModel device(*backend, model);
      Trace trace;
      device.classify(ids, batch, seq, parse_mask_kind(f.at("mask").get<std::string>()), &trace);
      size_t compared = 0;
      for (const auto& e : f.at("stages")) {
        const std::string stage = e.at("name").get<std::string>();
        if (stage.find("scores") != std::string::npos || stage.find("attention_weights") != std::string::npos)
          continue;  // never stored by the fused path
        INFO("stage " << stage);
        const test::Deviation d = test::compare(trace.at(stage), e, 1e-4, 1e-4);
        INFO("max abs error " << d.max_abs);
        CHECK(d.failures == 0);
        ++compared;
      }
      CHECK(compared + 2 * config.num_layers == f.at("stages").size());
    }
  }
}

// Stated bound as above: the fast path within 1e-4 relative + 1e-4 absolute of the exact one.
TEST_CASE("attn batch on the CPU backend matches the exact path and keeps the wanted weights", "[fast_kernels]") {
  TransformerConfig config;
  config.vocab_size = 20, config.d_model = 32, config.num_heads = 4, config.num_layers = 2, config.max_len = 16;
  TorchGenerator gen(3);
  const TransformerModel model = init_transformer(config, gen);
  std::vector<batch::Item> items(3);
  for (size_t i = 0; i < items.size(); ++i) items[i].ids = {int64_t(i + 1), 7, 9, 0, 4};
  auto backend = make_cpu_backend(1);
  DeviceModel device(*backend, model);
  device.record_only({"logits", "layers.1.self_attn.attention_weights"});
  for (MaskKind mask : {MaskKind::padding, MaskKind::padding_causal}) {
    const Trace exact = batch::compute(model, items, mask);
    const Trace fast = batch::compute(model, items, mask, &device);
    for (const char* stage : {"logits", "layers.1.self_attn.attention_weights"}) {
      INFO(stage);
      const Tensor& want = exact.at(stage);
      const Tensor& got = fast.at(stage);
      REQUIRE(got.shape() == want.shape());
      for (size_t i = 0; i < got.size(); ++i)
        CHECK(std::fabs(got.data()[i] - want.data()[i]) <= 1e-4 * (1 + std::fabs(want.data()[i])));
    }
    CHECK_THROWS(fast.at("layers.0.self_attn.attention_weights"));  // not asked for: never materialised
  }
}

// Sequences of several lengths computed together, unpadded: every stage of every item has the bits of
// that item computed alone, the attention weights asked for included.
TEST_CASE("packed sequences give each item the bits it gets alone", "[fast_kernels]") {
  TransformerConfig config;
  config.vocab_size = 20, config.d_model = 32, config.num_heads = 4, config.num_layers = 2, config.max_len = 40;
  TorchGenerator gen(5);
  const TransformerModel model = init_transformer(config, gen);
  std::vector<batch::Item> items;
  for (const std::vector<int64_t>& ids : std::vector<std::vector<int64_t>>{
           {3}, {1, 7, 9, 0, 4}, {5, 5}, std::vector<int64_t>(33, 6), {2, 0, 8}, {9, 1, 4, 4, 12}})
    items.push_back({items.size() + 1, nullptr, {}, ids, {}});
  auto backend = make_cpu_backend(2);
  for (const std::vector<std::string>& wanted :
       {std::vector<std::string>{}, {"logits", "layers.1.self_attn.attention_weights", "layers.0.norm2"}}) {
    DeviceModel device(*backend, model);
    device.record_only(wanted);
    for (MaskKind mask : {MaskKind::none, MaskKind::padding, MaskKind::padding_causal}) {
      const std::vector<Trace> packed = batch::compute_packed(items, mask, device);
      REQUIRE(packed.size() == items.size());
      for (size_t i = 0; i < items.size(); ++i) {
        const Trace alone = batch::compute(model, {items[i]}, mask, &device);
        REQUIRE(packed[i].stages().size() == alone.stages().size());
        for (size_t s = 0; s < alone.stages().size(); ++s) {
          INFO("mask " << mask_kind_name(mask) << " item " << i << " stage " << alone.stages()[s].name);
          CHECK(packed[i].stages()[s].name == alone.stages()[s].name);
          CHECK(packed[i].stages()[s].value == alone.stages()[s].value);
        }
      }
    }
  }
}
