// The fast kernels as templates over an xsimd architecture. Included only by the per-instruction-set
// translation units (kernels_avx512.cpp, kernels_avx2.cpp, kernels_sse42.cpp, kernels_wasm.cpp), each
// compiled with its own target flags; fast_kernels.cpp picks one table at run time.
//
// Matrix multiply, as BLIS does it: C is computed in MR×NR tiles held in registers (NR = two vectors),
// from A packed into MR-row panels and B into NR-column panels so the inner loop reads both
// sequentially; KC-deep slices of k keep an A block in L2 while B panels stream through. Every tile
// walks k in order, so the split over threads never changes a result.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "core/base/half.hpp"
#include "core/base/threads.hpp"
#include "core/kernels/fast_kernels.hpp"

namespace attn {
namespace simd {

struct KernelTable {
  const char* isa;
  size_t panel_width;  // NR: columns of op(B) per packed panel
  void (*pack_b)(const float* b, size_t ldb, bool transposed, size_t k, size_t n, float* dst, ThreadPool* pool);
  void (*gemm)(const Gemm&, ThreadPool*);
  void (*flash_attention)(const FlashAttention&, ThreadPool*);
  double (*fma_peak)(size_t iterations);
};
const KernelTable* avx512_table();  // null where not compiled in
const KernelTable* avx2_table();
const KernelTable* sse42_table();
const KernelTable* wasm_table();

// A vector type of each instruction set's own: a std::vector's members instantiated in the AVX-512 file
// hold AVX-512 code, and the linker keeps one copy of each for the whole program (it kept that one,
// and a CPU without AVX-512 stopped on an illegal instruction in the AVX2 kernels).
template <class Arch>
struct KernelAllocator : xsimd::aligned_allocator<float, 64> {};
template <class Arch>
using AlignedFloats = std::vector<float, KernelAllocator<Arch>>;

template <class Arch>
float* scratch(AlignedFloats<Arch>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

// t[0 … L) transposed in registers (L = the batch's lanes): xsimd's transpose, except AVX-512's float one,
// which xsimd does element by element through memory: 64 shuffles here.
template <class Arch>
inline void transpose_square(xsimd::batch<float, Arch>* t) {
  xsimd::transpose(t, t + xsimd::batch<float, Arch>::size);
}
#ifdef __AVX512F__
inline void transpose_square(xsimd::batch<float, xsimd::avx512f>* r) {
  __m512 t[16], u[16], v[16];
  for (int i = 0; i < 8; ++i) {  // pairs of rows interleaved
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // 4×4 blocks transposed within each 128-bit lane
    u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 2; ++i)  // then the lanes: two rounds of 128-bit shuffles
    for (int j = 0; j < 4; ++j) {
      v[8 * i + j] = _mm512_shuffle_f32x4(u[8 * i + j], u[8 * i + 4 + j], 0x88);
      v[8 * i + 4 + j] = _mm512_shuffle_f32x4(u[8 * i + j], u[8 * i + 4 + j], 0xDD);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(v[j], v[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v[j], v[8 + j], 0xDD);
  }
}
#endif

template <class Arch, size_t MR>
struct Kernels {
  using batch = xsimd::batch<float, Arch>;
  static constexpr size_t L = batch::size, NR = 2 * L;
  static constexpr size_t KC = 512, MC_MAX = MR * (L == 16 ? 16 : 24), NC = 4096;

  // --- where op(B) comes from: float32, or a half-precision weight widened as it is read ---

  enum Source { f32, bf16, f16 };
  template <int S>
  using Element = std::conditional_t<S == f32, float, uint16_t>;

  // L zero-extended 16-bit values from p (unaligned).
  static xsimd::batch<uint32_t, Arch> widen_u16(const uint16_t* p) {
    using ubatch = xsimd::batch<uint32_t, Arch>;
#if defined(__AVX512F__)
    if constexpr (L == 16) return ubatch(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#endif
#if defined(__AVX2__)
    if constexpr (L == 8) return ubatch(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#endif
#if defined(__SSE4_1__)
    if constexpr (L == 4) return ubatch(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#endif
#if defined(__wasm_simd128__)
    if constexpr (L == 4) return ubatch(wasm_u32x4_load16x4(p));
#endif
    alignas(64) uint32_t t[L];
    for (size_t i = 0; i < L; ++i) t[i] = p[i];
    return ubatch::load_aligned(t);
  }

  // L values of op(B)'s source as float32, bit for bit core/base/half.hpp's widening (PyTorch's .float()).
  template <int S>
  static batch load_b(const Element<S>* p) {
    if constexpr (S == f32) {
      return batch::load_unaligned(p);
    } else {
      using ubatch = xsimd::batch<uint32_t, Arch>;
      const ubatch h = widen_u16(p);
      if constexpr (S == bf16) {
        return xsimd::bitwise_cast<float>(h << 16);
      } else {
        // The exponent and mantissa placed in float32's fields, then scaled by 2^(127 − 15): exact for
        // normal and subnormal values alike. Infinities and NaNs (exponent 31) keep their payload, quieted.
        const ubatch magnitude = (h & ubatch(0x7FFFu)) << 13;
        const ubatch scaled = xsimd::bitwise_cast<uint32_t>(xsimd::bitwise_cast<float>(magnitude) * batch(0x1p112f));
        const ubatch quiet = xsimd::select((h & ubatch(0x3FFu)) != ubatch(0u), ubatch(0x400000u), ubatch(0u));
        const ubatch special = ubatch(0x7F800000u) | magnitude | quiet;
        const ubatch bits = xsimd::select((h & ubatch(0x7C00u)) == ubatch(0x7C00u), special, scaled);
        return xsimd::bitwise_cast<float>(bits | ((h & ubatch(0x8000u)) << 16));
      }
    }
  }

  template <int S>
  static float value_b(Element<S> x) {
    if constexpr (S == f32) return x;
    else return from_half(S == bf16 ? HalfType::bf16 : HalfType::f16, x);
  }

  // --- packing ---

  // A[rows, kc] (row stride lda, scaled by `scale`) as MR-row panels: panel p holds, for each kk, the
  // MR values A[p·MR + r, kk]; rows past the end are zeros.
  // Full panels go four columns at a time through 4×4 transposes in registers. dst holds
  // a_panels_size(rows, kc) floats.
  static void pack_a(const float* a, size_t lda, size_t rows, size_t kc, float scale, float* dst) {
    for (size_t p = 0; p < rows; p += MR) {
      const size_t pr = std::min(MR, rows - p);
      size_t kk = 0;
      if (pr == MR)
        for (; kk + 4 <= kc; kk += 4, dst += 4 * MR) pack_a_columns(a + p * lda + kk, lda, scale, dst);
      for (; kk < kc; ++kk, dst += MR) {
        for (size_t r = 0; r < pr; ++r) dst[r] = a[(p + r) * lda + kk] * scale;
        std::fill(dst + pr, dst + MR, 0.0f);
      }
    }
  }

  // The same panels from Aᵀ stored as [kc, rows] (row stride lda): a panel's column is MR adjacent values.
  static void pack_at(const float* a, size_t lda, size_t rows, size_t kc, float* dst) {
    for (size_t p = 0; p < rows; p += MR) {
      const size_t pr = std::min(MR, rows - p);
      for (size_t kk = 0; kk < kc; ++kk, dst += MR) {
        const float* column = a + kk * lda + p;
#pragma GCC unroll 16
        for (size_t r = 0; r < MR; ++r) dst[r] = r < pr ? column[r] : 0.0f;
      }
    }
  }

  // Where MR is not a multiple of 4, the last 4-row group's extra lanes land in the next column (or
  // A_SLACK floats past the last panel), which is stored after them.
  static constexpr size_t A_GROUPS = (MR + 3) / 4, A_SLACK = 4 * A_GROUPS - MR;
  static size_t a_panels_size(size_t rows, size_t kc) { return ceil_div(rows, MR) * MR * kc + A_SLACK; }

  // Columns 0-3 of MR rows of A (times scale) as four packed columns of MR values.
  static void pack_a_columns(const float* a, size_t lda, float scale, float* dst) {
    using quad = xsimd::make_sized_batch_t<float, 4>;
    quad t[A_GROUPS][4];
    for (size_t g = 0; g < A_GROUPS; ++g) {
      for (size_t r = 0; r < 4; ++r)
        t[g][r] = 4 * g + r < MR ? quad::load_unaligned(a + (4 * g + r) * lda) * quad(scale) : quad(0.0f);
      xsimd::transpose(t[g], t[g] + 4);
    }
    for (size_t j = 0; j < 4; ++j)
      for (size_t g = 0; g < A_GROUPS; ++g) t[g][j].store_unaligned(dst + j * MR + 4 * g);
  }

  // Rows kk0 … kk1 of a row-major B[·, n] (row stride ldb) into NR-column panels (panel q at
  // dst + q·panel_stride, row kk at + kk·NR; zeros past n), each row read once front to back: down a
  // column, every row is a new page and the prefetchers give up.
  template <int S = f32>
  static void pack_b_rows(const Element<S>* b, size_t ldb, size_t kk0, size_t kk1, size_t n, float* dst,
                          size_t panel_stride) {
    for (size_t kk = kk0; kk < kk1; ++kk) {
      const Element<S>* row = b + kk * ldb;
      float* d = dst + kk * NR;
      size_t j = 0;
      for (; j + NR <= n; j += NR, d += panel_stride)
        for (size_t c = 0; c < NR; c += L) load_b<S>(row + j + c).store_aligned(d + c);
      if (j < n) std::fill(std::transform(row + j, row + n, d, value_b<S>), d + NR, 0.0f);
    }
  }

  // One NR-column panel of op(B) = Bᵀ from rows of B[cols, kc] (row stride ldb); zeros past cols. A
  // full panel goes through L×L transposes in registers (nn.Linear's weight, every forward).
  template <int S = f32>
  static void pack_bt_panel(const Element<S>* b, size_t ldb, size_t kc, size_t cols, float* dst) {
    if (cols < NR) std::fill(dst, dst + kc * NR, 0.0f);
    size_t kk0 = 0;
    for (; cols == NR && kk0 + L <= kc; kk0 += L)
      for (size_t c0 = 0; c0 < NR; c0 += L) {
        batch t[L];
        for (size_t r = 0; r < L; ++r) t[r] = load_b<S>(b + (c0 + r) * ldb + kk0);
        transpose_square(t);
        for (size_t j = 0; j < L; ++j) t[j].store_unaligned(dst + (kk0 + j) * NR + c0);
      }
    for (size_t c = 0; c < cols; ++c)
      for (size_t kk = kk0; kk < kc; ++kk) dst[kk * NR + c] = value_b<S>(b[c * ldb + kk]);
  }

  // op(B)[k, n] as NR-column panels: panel q at dst + q·k·NR (a PackedB, or one k slice of a product).
  template <int S = f32>
  static void pack_b(const Element<S>* b, size_t ldb, bool transposed, size_t k, size_t n, float* dst,
                     ThreadPool* pool) {
    if (transposed)
      return run(pool, ceil_div(n, NR), [&](size_t q) {
        pack_bt_panel<S>(b + q * NR * ldb, ldb, k, std::min(NR, n - q * NR), dst + q * k * NR);
      });
    const size_t parts = std::min(k, pool ? pool->size() : size_t(1));
    run(pool, parts, [&](size_t t) { pack_b_rows<S>(b, ldb, t * k / parts, (t + 1) * k / parts, n, dst, k * NR); });
  }

  // Rows pc … pc + kc and columns jc … jc + nc of op(B), wherever and however it is stored, as panels.
  static void pack_b_slice(const Gemm& g, size_t pc, size_t kc, size_t jc, size_t nc, float* dst, ThreadPool* pool) {
    const size_t at = g.b_transposed ? jc * g.ldb + pc : pc * g.ldb + jc;
    if (!g.b_half) return pack_b<f32>(g.b + at, g.ldb, g.b_transposed, kc, nc, dst, pool);
    if (g.b_half_type == HalfType::bf16) return pack_b<bf16>(g.b_half + at, g.ldb, g.b_transposed, kc, nc, dst, pool);
    pack_b<f16>(g.b_half + at, g.ldb, g.b_transposed, kc, nc, dst, pool);
  }

  // --- the register tile ---

  // What a product's last k slice does to each sum before storing it: + bias[column], then max(·, 0).
  struct Epilogue {
    const float* bias = nullptr;  // the tile's first column's (NR readable values), or null
    bool relu = false;
  };

  // C[MR, NR] (row stride ldc) = (load_c ? C : 0) + Σ_kk a[kk] ⊗ b[kk], k in order, then the epilogue.
  template <bool Fused>
  static void tile(size_t kc, const float* ap, const float* bp, float* c, size_t ldc, bool load_c, Epilogue e) {
    batch acc[MR][2];
    // Fused: C is added after the k loop, so its rows (often far in memory) arrive while the tile
    // computes. Exact: C must be the first term of every sum.
    const bool c_first = load_c && !Fused;
    if (load_c && Fused)
      for (size_t r = 0; r < MR; ++r) {
        __builtin_prefetch(c + r * ldc, 1);
        __builtin_prefetch(c + r * ldc + NR - 1, 1);
      }
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r) {
      acc[r][0] = c_first ? batch::load_unaligned(c + r * ldc) : batch(0.0f);
      acc[r][1] = c_first ? batch::load_unaligned(c + r * ldc + L) : batch(0.0f);
    }
    for (size_t kk = 0; kk < kc; ++kk, ap += MR, bp += NR) {
      const batch b0 = batch::load_aligned(bp), b1 = batch::load_aligned(bp + L);
#pragma GCC unroll 16
      for (size_t r = 0; r < MR; ++r) {
        const batch av(ap[r]);
        if (Fused) {
          acc[r][0] = xsimd::fma(av, b0, acc[r][0]);
          acc[r][1] = xsimd::fma(av, b1, acc[r][1]);
        } else {  // two roundings, as the reference BLAS
          acc[r][0] = acc[r][0] + av * b0;
          acc[r][1] = acc[r][1] + av * b1;
        }
      }
    }
#pragma GCC unroll 16
    for (size_t r = 0; r < MR && load_c && Fused; ++r) {
      acc[r][0] += batch::load_unaligned(c + r * ldc);
      acc[r][1] += batch::load_unaligned(c + r * ldc + L);
    }
    const batch bias0 = e.bias ? batch::load_unaligned(e.bias) : batch(0.0f);
    const batch bias1 = e.bias ? batch::load_unaligned(e.bias + L) : batch(0.0f);
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r) {
      finish(acc[r][0], bias0, e).store_unaligned(c + r * ldc);
      finish(acc[r][1], bias1, e).store_unaligned(c + r * ldc + L);
    }
  }

  // A finished sum through the epilogue: the bias added as a separate step (as add_bias would), and
  // ReLU as std::max(x, 0.0f) (−0 and NaN kept).
  static batch finish(batch x, batch bias, Epilogue e) {
    if (e.bias) x += bias;
    return e.relu ? xsimd::select(x < batch(0.0f), batch(0.0f), x) : x;
  }

  // A partial tile (at the edges of C) goes through a full one on the stack.
  template <bool Fused>
  static void edge_tile(size_t kc, const float* ap, const float* bp, float* c, size_t ldc, size_t rows, size_t cols,
                        bool load_c, Epilogue e) {
    alignas(64) float t[MR * NR];
    alignas(64) float bias[NR] = {};
    if (load_c)
      for (size_t r = 0; r < rows; ++r) std::copy_n(c + r * ldc, cols, t + r * NR);
    if (e.bias) e.bias = std::copy_n(e.bias, cols, bias) - cols;
    tile<Fused>(kc, ap, bp, t, NR, load_c, e);
    for (size_t r = 0; r < rows; ++r) std::copy_n(t + r * NR, cols, c + r * ldc);
  }

  // C[rows, cols] from packed A panels and packed B panels (panel q at bp + q·b_panel_stride); the
  // epilogue's bias is column 0's.
  template <bool Fused>
  static void macro(size_t rows, size_t cols, size_t kc, const float* ap, const float* bp, size_t b_panel_stride,
                    float* c, size_t ldc, bool load_c, Epilogue e = {}) {
    for (size_t j = 0; j < cols; j += NR, bp += b_panel_stride) {
      const size_t nc = std::min(NR, cols - j);
      const Epilogue ej{e.bias ? e.bias + j : nullptr, e.relu};
      for (size_t i = 0; i < rows; i += MR) {
        const size_t mc = std::min(MR, rows - i);
        float* ct = c + i * ldc + j;
        if (mc == MR && nc == NR)
          tile<Fused>(kc, ap + i * kc, bp, ct, ldc, load_c, ej);
        else
          edge_tile<Fused>(kc, ap + i * kc, bp, ct, ldc, mc, nc, load_c, ej);
      }
    }
  }

  // --- matrix multiply ---

  static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

  template <bool Fused>
  static void gemm_blocked(const Gemm& g, ThreadPool* pool) {
    thread_local AlignedFloats<Arch> b_buffer;
    const size_t threads = pool ? pool->size() : 1;
    // Row blocks: at most MC_MAX rows, and a multiple of the thread count when there are several.
    size_t row_blocks = ceil_div(g.m, MC_MAX);
    if (threads > 1) row_blocks = ceil_div(row_blocks, threads) * threads;
    const size_t mc = std::min(g.m, ceil_div(ceil_div(g.m, row_blocks), MR) * MR);
    row_blocks = ceil_div(g.m, mc);
    for (size_t jc = 0; jc < g.n; jc += NC) {
      const size_t nc = std::min(NC, g.n - jc), panels = ceil_div(nc, NR);
      // Column chunks too when there are fewer row blocks than threads (short, wide products).
      const size_t col_chunks = std::min(panels, row_blocks >= 2 * threads ? 1 : ceil_div(2 * threads, row_blocks));
      const size_t chunk_panels = ceil_div(panels, col_chunks);
      for (size_t pc = 0; pc < g.k; pc += KC) {
        const size_t kc = std::min(KC, g.k - pc);
        const bool load_c = g.accumulate || pc > 0;
        // Panel q's rows pc … pc + kc: in b_packed (whole-k panels), else packed here.
        const size_t b_stride = (g.b_packed ? g.k : kc) * NR;
        const float* bp = g.b_packed ? g.b_packed->data() + (jc / NR) * g.k * NR + pc * NR : nullptr;
        if (!g.b_packed) {
          float* dst = scratch(b_buffer, panels * kc * NR);
          pack_b_slice(g, pc, kc, jc, nc, dst, pool);
          bp = dst;
        }
        run(pool, row_blocks * col_chunks, [&](size_t item) {
          thread_local AlignedFloats<Arch> a_buffer;
          const size_t i0 = (item / col_chunks) * mc, rows = std::min(mc, g.m - i0);
          const size_t q0 = (item % col_chunks) * chunk_panels;
          if (q0 >= panels) return;
          const size_t cols = std::min(chunk_panels * NR, nc - q0 * NR);
          float* ap = scratch(a_buffer, a_panels_size(rows, kc));
          if (g.a_transposed)
            pack_at(g.a + pc * g.lda + i0, g.lda, rows, kc, ap);
          else
            pack_a(g.a + i0 * g.lda + pc, g.lda, rows, kc, 1.0f, ap);
          float* c = g.c + i0 * g.ldc + jc + q0 * NR;
          const bool last = pc + kc == g.k;
          const Epilogue e{last && g.bias ? g.bias + jc + q0 * NR : nullptr, last && g.relu};
          macro<Fused>(rows, cols, kc, ap, bp + q0 * b_stride, b_stride, c, g.ldc, load_c, e);
        });
      }
    }
  }

  // op(A)[i, kk] and op(B)[kk, j], wherever they are.
  static float a_at(const Gemm& g, size_t i, size_t kk) {
    return g.a_transposed ? g.a[kk * g.lda + i] : g.a[i * g.lda + kk];
  }

  static float b_at(const Gemm& g, size_t kk, size_t j) {
    if (g.b_packed) return g.b_packed->data()[(j / NR) * g.k * NR + kk * NR + j % NR];
    const size_t at = g.b_transposed ? j * g.ldb + kk : kk * g.ldb + j;
    return g.b_half ? from_half(g.b_half_type, g.b_half[at]) : g.b[at];
  }

  // Vectors across the columns of op(B), copied once into a zero-padded [k, n] block, each element's
  // sum made as the blocked product makes it for the same rounding. Four rows at a time: independent
  // chains, so tiny products are not bound by the latency of one running sum.
  template <bool Fused>
  static void gemm_small(const Gemm& g) {
    thread_local AlignedFloats<Arch> buffer;
    const size_t np = ceil_div(g.n, L) * L;
    float* bt = scratch(buffer, g.k * np + 4 * L + np);
    float* tail = bt + g.k * np;  // the partial last vector of up to four rows of C
    float* bias = tail + 4 * L;   // zero-padded
    for (size_t kk = 0; kk < g.k; ++kk) batch(0.0f).store_aligned(bt + (kk + 1) * np - L);  // the padding
    if (g.b_packed || g.b_half)
      for (size_t kk = 0; kk < g.k; ++kk)
        for (size_t j = 0; j < g.n; ++j) bt[kk * np + j] = b_at(g, kk, j);
    else if (g.b_transposed)
      for (size_t j = 0; j < g.n; ++j)
        for (size_t kk = 0; kk < g.k; ++kk) bt[kk * np + j] = g.b[j * g.ldb + kk];
    else
      for (size_t kk = 0; kk < g.k; ++kk)
        if (g.n < L)
          copy_partial(g.b + kk * g.ldb, g.n, bt + kk * np);
        else
          std::copy_n(g.b + kk * g.ldb, g.n, bt + kk * np);
    Epilogue e{nullptr, g.relu};
    if (g.bias) {
      std::fill_n(bias, np, 0.0f);
      e.bias = std::copy_n(g.bias, g.n, bias) - g.n;
    }
    size_t i = 0;
    for (; i + 4 <= g.m; i += 4) small_rows<Fused, 4>(g, i, bt, np, tail, e);
    for (; i < g.m; ++i) small_rows<Fused, 1>(g, i, bt, np, tail, e);
  }

  // One row of C = a · op(B) with op(B) = B[n, k]ᵀ (an nn.Linear weight) read where it is, without
  // packing: a single row uses each weight once, so packing would copy all of it for that one use
  // (generation runs one position at a time). L×L blocks of B are transposed in registers; each sum is
  // made as the blocked product makes it (KC slices; exact: one running sum, fused: each slice's sum
  // added to C), so the bits do not depend on the path. Columns are split across the pool.
  template <bool Fused, int S = f32>
  static void row_times_bt(const Gemm& g, const Element<S>* b, ThreadPool* pool) {
    const size_t panels = ceil_div(g.n, NR), parts = std::min(panels, pool ? pool->size() : size_t(1));
    run(pool, parts, [&](size_t part) {
      for (size_t q = part * panels / parts; q < (part + 1) * panels / parts; ++q)
        row_times_bt_panel<Fused, S>(g, b, q * NR);
    });
  }

  template <bool Fused>
  static void row_times_bt(const Gemm& g, ThreadPool* pool) {
    if (!g.b_half) return row_times_bt<Fused, f32>(g, g.b, pool);
    if (g.b_half_type == HalfType::bf16) return row_times_bt<Fused, bf16>(g, g.b_half, pool);
    row_times_bt<Fused, f16>(g, g.b_half, pool);
  }

  // The next panel's weights, a cache line per call in address order. The loads read NR rows at once,
  // more streams than the hardware prefetchers follow; this turns them into one stream, a panel ahead.
  struct NextPanel {
    const char* row;
    size_t rows, row_bytes, stride_bytes, at = 0;
    void prefetch() {
      if (rows == 0) return;
      __builtin_prefetch(row + at);
      if ((at += 64) < row_bytes) return;
      at = 0, row += stride_bytes, --rows;
    }
  };

  // Columns j … j + NR − 1 (fewer at the end) of row_times_bt's product.
  template <bool Fused, int S>
  static void row_times_bt_panel(const Gemm& g, const Element<S>* b, size_t j) {
    const size_t cols = std::min(NR, g.n - j);
    alignas(64) float partial[NR] = {}, bias[NR] = {}, column[NR] = {};
    float* out = cols == NR ? g.c + j : partial;
    if (cols < NR && g.accumulate) std::copy_n(g.c + j, cols, partial);
    if (g.bias) std::copy_n(g.bias + j, cols, bias);
    const Epilogue e{g.bias ? bias : nullptr, g.relu};
    constexpr size_t size = sizeof(Element<S>);
    NextPanel next{reinterpret_cast<const char*>(b + (j + NR) * g.ldb), j + NR < g.n ? std::min(NR, g.n - j - NR) : 0,
                   g.k * size, g.ldb * size};
    for (size_t pc = 0; pc < g.k; pc += KC) {
      const size_t end = std::min(g.k, pc + KC);
      const bool load_c = g.accumulate || pc > 0, c_first = load_c && !Fused;
      batch acc[2] = {c_first ? batch::load_unaligned(out) : batch(0.0f), c_first ? batch::load_unaligned(out + L) : batch(0.0f)};
      const auto add = [&](batch& sum, float a, const batch& b_kk) {
        sum = Fused ? xsimd::fma(batch(a), b_kk, sum) : sum + batch(a) * b_kk;
      };
      size_t kk = pc;
      for (; cols == NR && kk + L <= end; kk += L)
        for (size_t h = 0; h < 2; ++h) {  // each half's columns: their own running sums, k in order
          batch t[L];
          for (size_t r = 0; r < L; ++r) {
            next.prefetch();
            t[r] = load_b<S>(b + (j + h * L + r) * g.ldb + kk);
          }
          transpose_square(t);
          for (size_t r = 0; r < L; ++r) add(acc[h], g.a[kk + r], t[r]);
        }
      for (; kk < end; ++kk) {  // the rest of the slice, and partial panels: a column gathered
        for (size_t c = 0; c < cols; ++c) column[c] = value_b<S>(b[(j + c) * g.ldb + kk]);
        add(acc[0], g.a[kk], batch::load_aligned(column));
        add(acc[1], g.a[kk], batch::load_aligned(column + L));
      }
      for (size_t h = 0; h < 2; ++h) {
        if (load_c && Fused) acc[h] += batch::load_unaligned(out + h * L);
        if (end == g.k) acc[h] = finish(acc[h], batch::load_aligned(bias + h * L), e);
        acc[h].store_unaligned(out + h * L);
      }
    }
    if (cols < NR) std::copy_n(partial, cols, g.c + j);
  }

  // count < L floats, without a call to memmove (which costs tiny products more than the copy).
  static void copy_partial(const float* from, size_t count, float* to) {
#pragma GCC unroll 16
    for (size_t t = 0; t < L; ++t)
      if (t < count) to[t] = from[t];
  }

  // Rows i … i + R − 1 of gemm_small's product; e.bias is the zero-padded bias.
  template <bool Fused, size_t R>
  static void small_rows(const Gemm& g, size_t i, const float* bt, size_t np, float* tail, Epilogue e) {
    for (size_t j = 0; j < np; j += L) {
      const size_t width = std::min(L, g.n - j);
      float* out[R];
      for (size_t r = 0; r < R; ++r) {
        float* c = g.c + (i + r) * g.ldc + j;
        out[r] = width == L ? c : tail + r * L;
        if (width < L && g.accumulate) copy_partial(c, width, out[r]);
      }
      for (size_t pc = 0; pc < g.k; pc += KC) {  // the blocked product's sums, so a row's bits do not
        const bool load_c = g.accumulate || pc > 0;  // depend on how many rows share its product
        const bool last = pc + KC >= g.k;
        batch acc[R];
        for (size_t r = 0; r < R; ++r) acc[r] = load_c && !Fused ? batch::load_unaligned(out[r]) : batch(0.0f);
        for (size_t kk = pc; kk < std::min(g.k, pc + KC); ++kk) {
          const batch b = batch::load_aligned(bt + kk * np + j);
#pragma GCC unroll 4
          for (size_t r = 0; r < R; ++r) {
            const batch a(a_at(g, i + r, kk));
            acc[r] = Fused ? xsimd::fma(a, b, acc[r]) : acc[r] + a * b;
          }
        }
        const batch bias = last && e.bias ? batch::load_aligned(e.bias + j) : batch(0.0f);
        for (size_t r = 0; r < R; ++r) {
          if (load_c && Fused) acc[r] += batch::load_unaligned(out[r]);
          if (last) acc[r] = finish(acc[r], bias, e);
          acc[r].store_unaligned(out[r]);
        }
      }
      for (size_t r = 0; r < R && width < L; ++r) copy_partial(out[r], width, g.c + (i + r) * g.ldc + j);
    }
  }

  // Floating-point operations per second of independent FMA chains, enough of them to cover the
  // latency of every FMA unit: the peak the benchmark reports fractions of.
  static double fma_peak(size_t iterations) {
    // Enough independent chains to cover the FMA latency on two ports, and few enough to stay in
    // registers with x and y: 16 accumulators spill with 16 ymm registers (AVX2 read half the peak).
    constexpr size_t chains = L == 16 ? 16 : 12;
    batch acc[chains];
    for (size_t i = 0; i < chains; ++i) acc[i] = batch(float(i));
    volatile float opaque_x = 0.999999f, opaque_y = 1e-7f;  // not constants the compiler could fold
    const batch x(opaque_x), y(opaque_y);
    const auto start = std::chrono::steady_clock::now();
    for (size_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
      for (size_t i = 0; i < chains; ++i) acc[i] = xsimd::fma(acc[i], x, y);
    }
    batch sum(0.0f);
    for (const batch& a : acc) sum += a;
    volatile float sink = xsimd::reduce_add(sum);  // the loop must finish before the clock is read
    (void)sink;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return double(iterations) * chains * L * 2.0 / seconds;
  }

  template <class F>
  static void run(ThreadPool* pool, size_t count, const F& fn) {
    if (pool && pool->size() > 1 && count > 1)
      pool->parallel_for(count, fn);
    else
      for (size_t i = 0; i < count; ++i) fn(i);
  }

  static void gemm(const Gemm& g, ThreadPool* pool) {
    if (g.m == 0 || g.n == 0) return;
    if (g.k == 0) {  // an empty sum, then the epilogue
      for (size_t i = 0; i < g.m; ++i)
        for (size_t j = 0; j < g.n; ++j) {
          float& c = g.c[i * g.ldc + j];
          if (!g.accumulate) c = 0.0f;
          if (g.bias) c += g.bias[j];
          if (g.relu) c = std::max(c, 0.0f);
        }
      return;
    }
    const bool fused = g.rounding == Rounding::fused;
    if (small_product(g.m, g.n, g.k)) return fused ? gemm_small<true>(g) : gemm_small<false>(g);
    if (g.m == 1 && g.b_transposed && !g.b_packed && !g.a_transposed)
      return fused ? row_times_bt<true>(g, pool) : row_times_bt<false>(g, pool);
    if (fused)
      gemm_blocked<true>(g, pool);
    else
      gemm_blocked<false>(g, pool);
  }

  // --- flash attention ---

  // e^x for x ≤ 0 (the only arguments online softmax takes): Cephes' expf polynomial after
  // x = n·ln2 + r; below −87.3 the result is 0 (as −1e9 and −∞ give).
  static batch exp_nonpositive(batch x) {
    const batch clamped = xsimd::max(x, batch(-87.3f));
    const batch n = xsimd::nearbyint(clamped * batch(1.44269504088896341f));
    batch r = xsimd::fnma(n, batch(0.693359375f), clamped);
    r = xsimd::fnma(n, batch(-2.12194440e-4f), r);
    batch p(1.9875691500e-4f);
    p = xsimd::fma(p, r, batch(1.3981999507e-3f));
    p = xsimd::fma(p, r, batch(8.3334519073e-3f));
    p = xsimd::fma(p, r, batch(4.1665795894e-2f));
    p = xsimd::fma(p, r, batch(1.6666665459e-1f));
    p = xsimd::fma(p, r, batch(5.0000001201e-1f));
    p = xsimd::fma(p * r, r, r) + batch(1.0f);
    // 2^n through the exponent field. n + 1.5·2^23 holds the integer n in its low bits, which avoids a
    // float-to-int conversion (saturating in WebAssembly, several instructions in V8).
    using ibatch = xsimd::batch<int32_t, Arch>;
    const ibatch n_int = xsimd::bitwise_cast<int32_t>(n + batch(12582912.0f)) - ibatch(0x4B400000);
    const ibatch bits = (n_int + ibatch(127)) << 23;
    const batch result = p * xsimd::bitwise_cast<float>(bits);
    return xsimd::select(x < batch(-87.3f), batch(0.0f), result);
  }

  static constexpr size_t BR = 4 * MR, BC = 256;  // query rows and keys per block
  static constexpr float masked = -std::numeric_limits<float>::infinity();

  struct FlashScratch {
    AlignedFloats<Arch> k, v, q, s, p, o, row;
  };

  // One (batch, head, query range): K and V packed once, then query blocks stream over key blocks.
  static void flash_item(const FlashAttention& f, size_t b, size_t h, size_t q_begin, size_t q_end) {
    thread_local FlashScratch s;
    const SequenceSpan span = sequence_span(f, b);
    const size_t D = f.head_dim, stride = f.heads * D, Sk = span.seq_k;
    const float* kh = f.k + span.k_row * stride + h * D;
    const float* vh = f.v + span.k_row * stride + h * D;
    const size_t key_panels = ceil_div(Sk, NR), d_panels = ceil_div(D, NR);
    float* kp = scratch(s.k, key_panels * D * NR);  // Kᵀ[D, Sk] as NR-key panels
    for (size_t q = 0; q < key_panels; ++q)
      pack_bt_panel(kh + q * NR * stride, stride, D, std::min(NR, Sk - q * NR), kp + q * D * NR);
    const size_t sk_pad = key_panels * NR;
    float* vp = scratch(s.v, d_panels * sk_pad * NR);  // V[Sk, D] as NR-column panels
    pack_b_rows(vh, stride, 0, Sk, D, vp, sk_pad * NR);
    for (size_t i0 = q_begin; i0 < q_end; i0 += BR)
      flash_block(f, span, h, i0, std::min(BR, q_end - i0), kp, vp, sk_pad, s);
  }

  static void flash_block(const FlashAttention& f, const SequenceSpan& span, size_t h, size_t i0, size_t br,
                          const float* kp, const float* vp, size_t sk_pad, FlashScratch& s) {
    const size_t D = f.head_dim, stride = f.heads * D, Sk = span.seq_k;
    float* qp = scratch(s.q, a_panels_size(br, D));
    pack_a(f.q + (span.q_row + i0) * stride + h * D, stride, br, D, f.scale, qp);
    float* o = scratch(s.o, br * D);
    std::fill_n(o, br * D, 0.0f);
    float* m = scratch(s.row, 2 * br);
    float* l = m + br;
    std::fill_n(m, br, masked);
    std::fill_n(l, br, 0.0f);
    const size_t key_end = f.causal ? std::min(Sk, i0 + br) : Sk;  // later keys are masked for every row
    float* sc = scratch(s.s, br * BC);
    float* pp = scratch(s.p, a_panels_size(br, BC));
    const uint8_t* keep = f.key_keep ? f.key_keep + span.k_row : nullptr;
    for (size_t k0 = 0; k0 < key_end; k0 += BC) {
      const size_t kb = std::min(BC, key_end - k0);
      if (keep && std::find(keep + k0, keep + k0 + kb, uint8_t(1)) == keep + k0 + kb) continue;
      macro<true>(br, kb, D, qp, kp + (k0 / NR) * D * NR, D * NR, sc, BC, false);
      mask_scores(f, keep, i0, br, k0, kb, sc);
      online_softmax(br, kb, sc, m, l, o, D);
      pack_a(sc, BC, br, kb, 1.0f, pp);
      macro<true>(br, D, kb, pp, vp + k0 * NR, sk_pad * NR, o, D, true);
    }
    write_rows(f, span, h, i0, br, o, l);
  }

  static void mask_scores(const FlashAttention& f, const uint8_t* keep, size_t i0, size_t br, size_t k0, size_t kb,
                          float* sc) {
    for (size_t r = 0; r < br; ++r) {
      float* row = sc + r * BC;
      if (keep)
        for (size_t j = 0; j < kb; ++j) row[j] = keep[k0 + j] ? row[j] : masked;
      if (f.causal)
        for (size_t j = std::max(k0, i0 + r + 1); j < k0 + kb; ++j) row[j - k0] = masked;
    }
  }

  // Rescales each row's running sum and output by e^(m_old − m_new), then turns the scores into
  // e^(s − m_new) and adds them to the sum. Rows go in groups of L, so that one vector exponential
  // makes the group's rescaling factors (each lane as a row's own would be).
  static void online_softmax(size_t br, size_t kb, float* sc, float* m, float* l, float* o, size_t D) {
    for (size_t r0 = 0; r0 < br; r0 += L) {
      const size_t rows = std::min(L, br - r0);
      alignas(64) float old_m[L] = {}, new_m[L] = {}, alpha[L];
      for (size_t r = 0; r < rows; ++r) {
        old_m[r] = m[r0 + r];
        new_m[r] = row_max(sc + (r0 + r) * BC, kb, old_m[r]);
      }
      exp_nonpositive(batch::load_aligned(old_m) - batch::load_aligned(new_m)).store_aligned(alpha);
      for (size_t r = 0; r < rows; ++r) {
        float* row = sc + (r0 + r) * BC;
        const float mx = new_m[r];
        if (mx == masked) {  // nothing to attend to yet in this row
          std::fill_n(row, kb, 0.0f);
          continue;
        }
        l[r0 + r] = l[r0 + r] * alpha[r] + exp_row(row, kb, mx);
        m[r0 + r] = mx;
        if (alpha[r] != 1.0f) scale_row(o + (r0 + r) * D, D, alpha[r]);
      }
    }
  }

  // The largest of a row's kb scores and `start`.
  static float row_max(const float* row, size_t kb, float start) {
    const size_t kv = kb / L * L;
    batch vmax(start);
    for (size_t j = 0; j < kv; j += L) vmax = xsimd::max(vmax, batch::load_unaligned(row + j));
    float mx = xsimd::reduce_max(vmax);
    for (size_t j = kv; j < kb; ++j) mx = std::max(mx, row[j]);
    return mx;
  }

  // e^(s − mx) in place of each score s of the row; returns their sum.
  static float exp_row(float* row, size_t kb, float mx) {
    const size_t kv = kb / L * L;
    batch sum(0.0f);
    size_t j = 0;
    for (; j < kv; j += L) {
      const batch e = exp_nonpositive(batch::load_unaligned(row + j) - batch(mx));
      e.store_unaligned(row + j);
      sum += e;
    }
    float total = xsimd::reduce_add(sum);
    for (; j < kb; ++j) total += row[j] = exp_nonpositive(batch(row[j] - mx)).get(0);
    return total;
  }

  static void scale_row(float* x, size_t n, float factor) {
    size_t j = 0;
    for (; j + L <= n; j += L) (batch::load_unaligned(x + j) * batch(factor)).store_unaligned(x + j);
    for (; j < n; ++j) x[j] *= factor;
  }

  // out = o / l; a row that had no key to attend to is the mean of all values (−1e9 masking).
  static void write_rows(const FlashAttention& f, const SequenceSpan& span, size_t h, size_t i0, size_t br,
                         const float* o, const float* l) {
    const size_t D = f.head_dim, stride = f.heads * D;
    for (size_t r = 0; r < br; ++r) {
      float* out = f.out + (span.q_row + i0 + r) * stride + h * D;
      if (l[r] > 0.0f) {
        const float inv = 1.0f / l[r];
        for (size_t d = 0; d < D; ++d) out[d] = o[r * D + d] * inv;
        continue;
      }
      std::fill_n(out, D, 0.0f);
      for (size_t j = 0; j < span.seq_k; ++j)
        for (size_t d = 0; d < D; ++d) out[d] += f.v[(span.k_row + j) * stride + h * D + d];
      for (size_t d = 0; d < D; ++d) out[d] /= float(span.seq_k);
    }
  }

  static void flash_attention(const FlashAttention& f, ThreadPool* pool) {
    const size_t heads = f.batch * f.heads, threads = pool ? pool->size() : 1;
    size_t longest = 0;
    for (size_t b = 0; b < f.batch; ++b) longest = std::max(longest, sequence_span(f, b).seq_q);
    if (longest == 0) return;
    // Split each head's queries when there are fewer heads than twice the threads.
    const size_t chunks = std::min(ceil_div(longest, BR), heads >= 2 * threads ? 1 : ceil_div(2 * threads, heads));
    const size_t chunk_rows = ceil_div(ceil_div(longest, chunks), BR) * BR;
    run(pool, heads * chunks, [&](size_t item) {
      const size_t bh = item / chunks, q0 = (item % chunks) * chunk_rows;
      const size_t sq = sequence_span(f, bh / f.heads).seq_q;
      if (q0 < sq) flash_item(f, bh / f.heads, bh % f.heads, q0, std::min(sq, q0 + chunk_rows));
    });
  }

  static const KernelTable* table(const char* isa) {
    static const KernelTable t{isa, NR, &pack_b<f32>, &gemm, &flash_attention, &fma_peak};
    return &t;
  }
};

}  // namespace simd
}  // namespace attn
