// PyTorch 1.13's float32 exp, sin, cos and tanh on x86-64, bit for bit.
//
// Debian's python3-torch runs these ops through its AVX2 Vectorized<float>, which calls the system
// Sleef 3.5.1: Sleef_expf8_u10, Sleef_sinf8_u10, Sleef_cosf8_u10 and Sleef_tanhf8_u10, i.e. xexpf,
// xsinf_u1, xcosf_u1 and xtanhf of src/libm/sleefsimdsp.c with the double-float helpers of src/libm/df.h, built for AVX2
// with FMA (helperavx2.h: vmla and vfma are _mm256_fmadd_ps). Each of those fused multiply-adds is
// an explicit single-rounding fma below, and no other operation may be contracted: this file must
// be compiled with -ffp-contract=off. Plain IEEE float32 otherwise, so x86-64 and WebAssembly
// agree.
//
// exp is one algorithm for float and xsimd::batch<float> (overloaded helpers below). sin and cos
// are scalar: they build the positional-encoding table, once.
#include "core/torch/torch_math.hpp"

#include "core/base/bits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace attn {
namespace {

using Batch = xsimd::batch<float>;
using IntBatch = xsimd::batch<int32_t>;


// ---- The vector primitives Sleef's kernels are written in, for float and for Batch ----

// vmla_vf_vf_vf_vf: a * b + c rounded once (_mm256_fmadd_ps).
float mla(float a, float b, float c) { return std::fma(a, b, c); }

Batch mla(const Batch& a, const Batch& b, const Batch& c) {
#ifdef __FMA__
  return xsimd::fma(a, b, c);
#else
  // Without hardware FMA (plain SSE2, WebAssembly SIMD128) xsimd::fma rounds the product first;
  // std::fma on each lane keeps the single rounding.
  alignas(Batch::arch_type::alignment()) float pa[Batch::size], pb[Batch::size], pc[Batch::size];
  a.store_aligned(pa);
  b.store_aligned(pb);
  c.store_aligned(pc);
  for (std::size_t i = 0; i < Batch::size; ++i) pa[i] = std::fma(pa[i], pb[i], pc[i]);
  return Batch::load_aligned(pa);
#endif
}

float select(bool take_a, float a, float b) { return take_a ? a : b; }

Batch select(const xsimd::batch_bool<float>& take_a, const Batch& a, const Batch& b) {
  return xsimd::select(take_a, a, b);
}

// vrint_vf_vf: round half to even (_mm256_round_ps, default MXCSR).
float round_even(float x) { return std::nearbyint(x); }

Batch round_even(const Batch& x) { return xsimd::nearbyint(x); }

float abs(float x) { return std::fabs(x); }

Batch abs(const Batch& x) { return xsimd::abs(x); }

bool is_nan(float x) { return std::isnan(x); }

xsimd::batch_bool<float> is_nan(const Batch& x) { return xsimd::isnan(x); }

// An integral float in [-200, 200] as int32 (std::fmax maps NaN to the low end, so the conversion
// is always defined).
int32_t small_int(float x) {
  return static_cast<int32_t>(std::fmin(std::fmax(x, -200.0f), 200.0f));
}

IntBatch small_int(const Batch& x) {
  return xsimd::batch_cast<int32_t>(xsimd::clip(x, Batch(-200.0f), Batch(200.0f)));
}

float to_float(int32_t q) { return float(q); }

Batch to_float(const IntBatch& q) { return xsimd::batch_cast<float>(q); }

// vpow2i_vf_vi2: 2^q written straight into the exponent field; -126 <= q <= 127.
float pow2i(int32_t q) { return float_from_bits(static_cast<uint32_t>(q + 0x7f) << 23); }

Batch pow2i(const IntBatch& q) { return xsimd::bitwise_cast<float>((q + IntBatch(0x7f)) << 23); }

// vldexp2_vf_vf_vi2: d * 2^e in two steps, so that e down to -252 still gives normal factors.
template <class V, class I>
V ldexp2(const V& d, const I& e) {
  return d * pow2i(e >> 1) * pow2i(e - (e >> 1));
}

// ---- xexpf ----

constexpr float kRLn2f = 1.442695040888963407359924681001892137426645954152985934135449406931f;
constexpr float kL2Uf = 0.693145751953125f;  // ln 2 = L2Uf + L2Lf (misc.h)
constexpr float kL2Lf = 1.428606765330187045e-06f;

// xexpf: e^d = 2^q * e^s with s = d - q ln 2 in [-ln2/2, ln2/2] and a degree-7 polynomial for e^s.
template <class V>
V sleef_expf(const V& d) {
  const V q = round_even(d * V(kRLn2f));
  V s = mla(q, V(-kL2Uf), d);
  s = mla(q, V(-kL2Lf), s);
  V u = V(0.000198527617612853646278381f);
  u = mla(u, s, V(0.00139304355252534151077271f));
  u = mla(u, s, V(0.00833336077630519866943359f));
  u = mla(u, s, V(0.0416664853692054748535156f));
  u = mla(u, s, V(0.166666671633720397949219f));
  u = mla(u, s, V(0.5f));
  u = V(1.0f) + mla(s * s, u, s);
  // Where the result is kept, -104 <= d <= 100 and so |q| <= 150: small_int's clamp is exact there.
  u = ldexp2(u, small_int(q));
  u = select(d < V(-104.0f), V(0.0f), u);
  return select(V(100.0f) < d, V(std::numeric_limits<float>::infinity()), u);
}

// ---- Double-float arithmetic (df.h with ENABLE_FMA_SP): a value as the unevaluated sum x + y ----

template <class V>
struct DoubleFloat {
  V x, y;
};
using DF = DoubleFloat<float>;

// dfadd_vf2_vf_vf (|x| >= |y|).
template <class V>
DoubleFloat<V> df_add(V x, V y) {
  const V r = x + y;
  return {r, x - r + y};
}

// dfadd_vf2_vf_vf2 (|x| >= |y|).
template <class V>
DoubleFloat<V> df_add(V x, DoubleFloat<V> y) {
  const V r = x + y.x;
  return {r, x - r + y.x + y.y};
}

// dfadd_vf2_vf2_vf (|x| >= |y|).
template <class V>
DoubleFloat<V> df_add(DoubleFloat<V> x, V y) {
  const V r = x.x + y;
  return {r, x.x - r + y + x.y};
}

// dfadd2_vf2_vf_vf: exact for any magnitudes (Knuth's two-sum).
template <class V>
DoubleFloat<V> df_add2(V x, V y) {
  const V r = x + y, v = r - x;
  return {r, (x - (r - v)) + (y - v)};
}

// dfadd2_vf2_vf2_vf.
template <class V>
DoubleFloat<V> df_add2(DoubleFloat<V> x, V y) {
  const V r = x.x + y, v = r - x.x;
  return {r, (x.x - (r - v)) + (y - v) + x.y};
}

// dfadd2_vf2_vf2_vf2.
template <class V>
DoubleFloat<V> df_add2(DoubleFloat<V> x, DoubleFloat<V> y) {
  const V r = x.x + y.x, v = r - x.x;
  return {r, (x.x - (r - v)) + (y.x - v) + (x.y + y.y)};
}

// dfnormalize_vf2_vf2.
template <class V>
DoubleFloat<V> df_normalize(DoubleFloat<V> t) {
  const V s = t.x + t.y;
  return {s, t.x - s + t.y};
}

// dfmul_vf2_vf_vf: the product exactly, its rounding error recovered by an FMA.
template <class V>
DoubleFloat<V> df_mul(V x, V y) {
  const V r = x * y;
  return {r, mla(x, y, -r)};
}

// dfmul_vf2_vf2_vf.
template <class V>
DoubleFloat<V> df_mul(DoubleFloat<V> x, V y) {
  const V r = x.x * y;
  return {r, mla(x.y, y, mla(x.x, y, -r))};
}

// dfmul_vf2_vf2_vf2.
template <class V>
DoubleFloat<V> df_mul(DoubleFloat<V> x, DoubleFloat<V> y) {
  const V r = x.x * y.x;
  return {r, mla(x.x, y.y, mla(x.y, y.x, mla(x.x, y.x, -r)))};
}

// dfmul_vf_vf2_vf2: the product rounded to one float.
float df_mul_to_float(DF x, DF y) { return mla(x.x, y.x, mla(x.y, y.x, x.x * y.y)); }

// dfsqu_vf2_vf2.
template <class V>
DoubleFloat<V> df_sqr(DoubleFloat<V> x) {
  const V r = x.x * x.x;
  return {r, mla(x.x + x.x, x.y, mla(x.x, x.x, -r))};
}

// dfadd_vf2_vf2_vf2 (|x| >= |y|).
template <class V>
DoubleFloat<V> df_add(DoubleFloat<V> x, DoubleFloat<V> y) {
  const V r = x.x + y.x;
  return {r, x.x - r + y.x + x.y + y.y};
}

template <class V>
DoubleFloat<V> df_neg(DoubleFloat<V> x) {
  return {-x.x, -x.y};
}

// dfrec_vf2_vf2: 1 / d (vfmanp(a, b, c) = c - a·b rounded once).
template <class V>
DoubleFloat<V> df_rec(DoubleFloat<V> d) {
  const V s = V(1.0f) / d.x;
  return {s, s * mla(-d.y, s, mla(-d.x, s, V(1.0f)))};
}

// dfdiv_vf2_vf2_vf2: n / d.
template <class V>
DoubleFloat<V> df_div(DoubleFloat<V> n, DoubleFloat<V> d) {
  const V t = V(1.0f) / d.x, s = n.x * t;
  const V u = mla(t, n.x, -s), v = mla(-d.y, t, mla(-d.x, t, V(1.0f)));
  return {s, mla(s, v, mla(n.y, t, u))};
}

// vmulsign_vf_vf_vf: x with its sign flipped where y is negative.
float mulsign(float x, float y) { return std::signbit(y) ? -x : x; }

Batch mulsign(const Batch& x, const Batch& y) { return x ^ xsimd::bitofsign(y); }

// ---- Argument reduction ----

// Sleef_rempitabsp (rempitab.c; the same 412 floats as in libsleef.so.3.5.1): row i holds, as 4
// floats, the bits of 1/(2 pi) that still matter for an argument of binary exponent 25 + i, whose
// product with the higher bits is a whole number of turns. Smaller exponents use row 0.
constexpr float kRempiTab[] = {
    0.15915489f, 5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f,
    0.034154937f, 6.4206382e-9f, 7.342738e-17f, 8.135952e-24f,
    0.034154937f, 6.4206382e-9f, 7.342738e-17f, 8.135952e-24f,
    0.0029049432f, -9.8619696e-11f, -9.8393365e-18f, -1.7902159e-24f,
    0.0029049432f, -9.8619696e-11f, -9.8393365e-18f, -1.7902159e-24f,
    0.0029049432f, -9.8619696e-11f, -9.8393365e-18f, -1.7902159e-24f,
    0.0029049432f, -9.8619696e-11f, -9.8393365e-18f, -1.7902159e-24f,
    0.00095181796f, 1.3421092e-10f, 1.7916236e-17f, 1.5185067e-24f,
    0.00095181796f, 1.3421092e-10f, 1.7916236e-17f, 1.5185067e-24f,
    0.00046353682f, 1.7795612e-11f, 4.0384496e-18f, -1.358546e-25f,
    0.0002193962f, 1.7795612e-11f, 4.0384496e-18f, -1.358546e-25f,
    9.732589e-5f, 1.7795612e-11f, 4.0384496e-18f, -1.358546e-25f,
    3.6290745e-5f, 3.2437004e-12f, 5.6900245e-19f, 7.094055e-26f,
    5.7731686e-6f, 1.4247115e-12f, 1.3532163e-19f, 1.9241763e-26f,
    5.7731686e-6f, 1.4247115e-12f, 1.3532163e-19f, 1.9241763e-26f,
    5.7731686e-6f, 1.4247115e-12f, 1.3532163e-19f, 1.9241763e-26f,
    1.9584722e-6f, 5.152168e-13f, 1.3532163e-19f, 1.9241763e-26f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    5.112412e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    2.1321796e-8f, 3.6261413e-15f, -2.0362229e-22f, 6.1778472e-30f,
    6.4206382e-9f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    6.4206382e-9f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    2.695348e-9f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    8.327028e-10f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    8.327028e-10f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    3.670415e-10f, 7.342738e-17f, 8.135952e-24f, -1.3304005e-31f,
    1.3421092e-10f, 1.7916236e-17f, 1.5185064e-24f, 2.613904e-31f,
    1.7795612e-11f, 4.0384496e-18f, -1.3585457e-25f, -3.443244e-32f,
    1.7795612e-11f, 4.0384496e-18f, -1.3585457e-25f, -3.443244e-32f,
    1.7795612e-11f, 4.0384496e-18f, -1.3585457e-25f, -3.443244e-32f,
    3.2437004e-12f, 5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f,
    3.2437004e-12f, 5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f,
    3.2437004e-12f, 5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f,
    1.4247115e-12f, 1.3532163e-19f, 1.924176e-26f, 2.545416e-33f,
    5.152168e-13f, 1.3532163e-19f, 1.924176e-26f, 2.545416e-33f,
    6.046956e-14f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    6.046956e-14f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    6.046956e-14f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    3.6261413e-15f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    3.6261413e-15f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    3.6261413e-15f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    3.6261413e-15f, -2.0362229e-22f, 6.177846e-30f, 1.0820844e-36f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    7.342738e-17f, 8.135952e-24f, -1.3304005e-31f, 6.29605e-40f,
    1.7916236e-17f, 1.5185064e-24f, 2.6139035e-31f, 4.764938e-38f,
    1.7916236e-17f, 1.5185064e-24f, 2.6139035e-31f, 4.764938e-38f,
    4.0384496e-18f, -1.3585457e-25f, -3.443244e-32f, 6.29605e-40f,
    4.0384496e-18f, -1.3585457e-25f, -3.443244e-32f, 6.29605e-40f,
    5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f, 6.29605e-40f,
    5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f, 6.29605e-40f,
    5.6900245e-19f, 7.0940536e-26f, 1.4871367e-32f, 6.29605e-40f,
    1.3532163e-19f, 1.924176e-26f, 2.5454155e-33f, 6.29605e-40f,
    1.3532163e-19f, 1.924176e-26f, 2.5454155e-33f, 6.29605e-40f,
    2.6901432e-20f, -1.4528344e-28f, -6.441078e-36f, -1.764e-42f,
    2.6901432e-20f, -1.4528344e-28f, -6.441078e-36f, -1.764e-42f,
    2.6901432e-20f, -1.4528344e-28f, -6.441078e-36f, -1.764e-42f,
    1.3348905e-20f, -1.4528344e-28f, -6.441078e-36f, -1.764e-42f,
    6.5726414e-21f, -1.4528344e-28f, -6.441078e-36f, -1.764e-42f,
    0.05874382f, 1.2221154e-8f, 7.693613e-16f, 1.7920544e-22f,
    0.027493827f, 4.7705733e-9f, 7.693613e-16f, 1.7920544e-22f,
    0.011868831f, 1.0452834e-9f, 3.252722e-16f, 7.332633e-23f,
    0.004056331f, 1.0452834e-9f, 3.252722e-16f, 7.332633e-23f,
    0.00015008182f, -2.4541558e-12f, 1.1614149e-20f, 1.2913193e-27f,
    0.00015008182f, -2.4541558e-12f, 1.1614149e-20f, 1.2913193e-27f,
    0.00015008182f, -2.4541558e-12f, 1.1614149e-20f, 1.2913193e-27f,
    0.00015008182f, -2.4541558e-12f, 1.1614149e-20f, 1.2913193e-27f,
    0.00015008182f, -2.4541558e-12f, 1.1614149e-20f, 1.2913193e-27f,
    2.8011498e-5f, 4.821801e-12f, 8.789758e-19f, 1.2084476e-25f,
    2.8011498e-5f, 4.821801e-12f, 8.789758e-19f, 1.2084476e-25f,
    2.8011498e-5f, 4.821801e-12f, 8.789758e-19f, 1.2084476e-25f,
    1.2752713e-5f, 1.183823e-12f, 1.1614149e-20f, 1.2913193e-27f,
    5.1233183e-6f, 1.183823e-12f, 1.1614149e-20f, 1.2913193e-27f,
    1.3086219e-6f, 2.743283e-13f, 1.1614149e-20f, 1.2913193e-27f,
    1.3086219e-6f, 2.743283e-13f, 1.1614149e-20f, 1.2913193e-27f,
    3.5494782e-7f, 4.6954628e-14f, 1.1614149e-20f, 1.2913193e-27f,
    3.5494782e-7f, 4.6954628e-14f, 1.1614149e-20f, 1.2913193e-27f,
    1.16529264e-7f, 1.8532925e-14f, 4.8378854e-21f, 1.2913193e-27f,
    1.16529264e-7f, 1.8532925e-14f, 4.8378854e-21f, 1.2913193e-27f,
    5.6924634e-8f, 4.3220737e-15f, 1.4497548e-21f, 7.9628904e-29f,
    2.7122312e-8f, 4.3220737e-15f, 1.4497548e-21f, 7.9628904e-29f,
    1.2221154e-8f, 7.693613e-16f, 1.7920542e-22f, 2.9141803e-29f,
    4.7705733e-9f, 7.693613e-16f, 1.7920542e-22f, 2.9141803e-29f,
    1.0452834e-9f, 3.252722e-16f, 7.3326325e-23f, 3.8982537e-30f,
    1.0452834e-9f, 3.252722e-16f, 7.3326325e-23f, 3.8982537e-30f,
    1.13961146e-10f, 1.9960934e-17f, 5.344349e-25f, 1.5116448e-31f,
    1.13961146e-10f, 1.9960934e-17f, 5.344349e-25f, 1.5116448e-31f,
    1.13961146e-10f, 1.9960934e-17f, 5.344349e-25f, 1.5116448e-31f,
    1.13961146e-10f, 1.9960934e-17f, 5.344349e-25f, 1.5116448e-31f,
    5.57535e-11f, 6.0831458e-18f, 5.344349e-25f, 1.5116448e-31f,
    2.6649676e-11f, -8.557475e-19f, -8.5950365e-26f, -2.1398839e-32f,
    1.2097757e-11f, 2.6136988e-18f, 5.344349e-25f, 1.5116448e-31f,
    4.821801e-12f, 8.789758e-19f, 1.2084476e-25f, 3.2530645e-33f,
    1.183823e-12f, 1.1614149e-20f, 1.2913191e-27f, 1.7157662e-34f,
    1.183823e-12f, 1.1614149e-20f, 1.2913191e-27f, 1.7157662e-34f,
    2.743283e-13f, 1.1614149e-20f, 1.2913191e-27f, 1.7157662e-34f,
};

// vilogb2k_vi2_vf: the unbiased binary exponent of a normal float.
int32_t exponent(float a) { return static_cast<int32_t>((bits_of(a) >> 23) & 0xff) - 0x7f; }

// x = (an integer) + quarters / 4 + rest, with |quarters| <= 2 and |rest| <= 1/8.
struct QuarterSplit {
  float rest;
  int32_t quarters;
};

// rempisubf with FULL_FP_ROUNDING (defined by helperavx2.h).
QuarterSplit rempisubf(float x) {
  const float y = round_even(x * 4.0f);
  return {x - y * 0.25f, static_cast<int32_t>(y - round_even(x) * 4.0f)};
}

struct Reduced {
  DF r;       // the argument minus q quarter turns, in radians, as a double-float
  int32_t q;  // only q mod 4 matters
};

// rempif: Payne-Hanek reduction of a finite float by pi/2 with the table above.
Reduced rempif(float a) {
  int32_t ex = exponent(a) - 25;
  if (ex > 90 - 25) a = float_from_bits(bits_of(a) - (64u << 23));  // vldexp3_vf_vf_vi2(a, -64)
  const float* t = kRempiTab + 4 * std::max(ex, 0);
  DF x = df_mul(a, t[0]);
  QuarterSplit di = rempisubf(x.x);
  int32_t q = di.quarters;
  x = df_normalize(DF{di.rest, x.y});
  x = df_add2(x, df_mul(a, t[1]));
  di = rempisubf(x.x);
  q += di.quarters;
  x = df_normalize(DF{di.rest, x.y});
  x = df_normalize(df_add2(x, df_mul(DF{t[2], t[3]}, a)));
  x = df_mul(x, DF{3.1415927410125732422f * 2, -8.7422776573475857731e-08f * 2});
  if (std::fabs(a) < 0.7f) x = {a, 0.0f};
  return {x, q};
}

// misc.h: pi split into PI_A2f + PI_B2f + PI_C2f for the Cody-Waite reduction.
constexpr float kPiA2f = 3.1414794921875f;
constexpr float kPiB2f = 0.00011315941810607910156f;
constexpr float kPiC2f = 1.9841872589410058936e-09f;
constexpr float kOneOverPi = 0.318309886183790671537767526745028724f;  // (float)M_1_PI
constexpr float kHalfPiHi = 3.1415927410125732422f * -0.5f;            // -pi/2 as a double-float
constexpr float kHalfPiLo = -8.7422776573475857731e-08f * -0.5f;
// TRIGRANGEMAX2f: the largest |x| for which xsinf_u1 / xcosf_u1 use the Cody-Waite branch.
constexpr float kTrigRangeMax2f = 125.0f;

// True when a vector holding x takes rempif in xsinf_u1 / xcosf_u1 (also for inf and NaN).
bool takes_rempif(float x) { return !(std::fabs(x) < kTrigRangeMax2f); }

struct SinCosArg {
  DF s;       // the argument reduced into [-pi/2, pi/2]
  int32_t q;  // selects the sign of the result
};

// xsinf_u1's Cody-Waite branch: s = d - u pi with u = round(d / pi).
SinCosArg reduce_sin_small(float d) {
  const float u = round_even(d * kOneOverPi);
  DF s = df_add2(mla(u, -kPiA2f, d), u * -kPiB2f);
  s = df_add(s, u * -kPiC2f);
  return {s, static_cast<int32_t>(u)};
}

// xsinf_u1's rempif branch: from quarter turns back to half turns of pi.
SinCosArg reduce_sin_large(float d) {
  Reduced r = rempif(d);
  const int32_t q = ((r.q & 3) * 2 + (r.r.x > 0 ? 2 : 1)) >> 2;
  if ((r.q & 1) == 1) r.r = df_add2(r.r, DF{mulsign(kHalfPiHi, r.r.x), mulsign(kHalfPiLo, r.r.x)});
  return {df_normalize(r.r), q};
}

// xcosf_u1's Cody-Waite branch: s = d - dq pi/2 with dq the odd integer nearest to 2d/pi.
SinCosArg reduce_cos_small(float d) {
  const float dq = mla(round_even(mla(d, kOneOverPi, -0.5f)), 2.0f, 1.0f);
  DF s = df_add2(d, dq * (-kPiA2f * 0.5f));
  s = df_add2(s, dq * (-kPiB2f * 0.5f));
  s = df_add2(s, dq * (-kPiC2f * 0.5f));
  return {s, static_cast<int32_t>(dq)};
}

// xcosf_u1's rempif branch.
SinCosArg reduce_cos_large(float d) {
  Reduced r = rempif(d);
  const int32_t q = ((r.q & 3) * 2 + (r.r.x > 0 ? 8 : 7)) >> 1;
  if ((r.q & 1) == 0) {
    const float y = r.r.x > 0 ? 0.0f : -1.0f;
    r.r = df_add2(r.r, DF{mulsign(kHalfPiHi, y), mulsign(kHalfPiLo, y)});
  }
  return {df_normalize(r.r), q};
}

// The shared end of xsinf_u1 and xcosf_u1: sin(t) for the reduced t, |t| <= pi/2, as
// t * (1 + t^2 (c1 + t^2 (c2 + t^2 c3))) with the outer terms in double-float.
float sin_kernel(DF t) {
  const DF s = df_sqr(t);
  float u = 2.6083159809786593541503e-06f;
  u = mla(u, s.x, -0.0001981069071916863322258f);
  u = mla(u, s.x, 0.00833307858556509017944336f);
  const DF x = df_add(1.0f, df_mul(df_add(-0.166666597127914428710938f, u * s.x), s));
  return df_mul_to_float(t, x);
}

// For inf and NaN, Sleef ORs all ones into the reduced argument; the NaN that comes out has every
// bit set, whatever the input.
const float kSleefNaN = float_from_bits(0xffffffffu);

// xsinf_u1 for one lane; large_branch says whether its vector took rempif.
float sleef_sinf_u1(float d, bool large_branch) {
  if (!std::isfinite(d)) return kSleefNaN;
  if (d == 0.0f && std::signbit(d)) return d;  // sin(-0) = -0
  const SinCosArg a = large_branch ? reduce_sin_large(d) : reduce_sin_small(d);
  const float u = sin_kernel(a.s);
  return (a.q & 1) == 1 ? -u : u;
}

// xcosf_u1 for one lane.
float sleef_cosf_u1(float d, bool large_branch) {
  if (!std::isfinite(d)) return kSleefNaN;
  const SinCosArg a = large_branch ? reduce_cos_large(d) : reduce_cos_small(d);
  const float u = sin_kernel(a.s);
  return (a.q & 2) == 0 ? -u : u;
}

// Vectorized<float>::size() under AVX2, the unit of vec::map in PyTorch's unary kernels.
constexpr std::size_t kTorchLanes = 8;

// vec::map over a contiguous tensor: full vectors of 8 from the start, then one shorter one
// (padded with zeros, which never take rempif).
template <class Lane>
void map_torch_vectors(const float* x, float* out, std::size_t n, Lane lane) {
  for (std::size_t i = 0; i < n; i += kTorchLanes) {
    const std::size_t end = std::min(n, i + kTorchLanes);
    const bool large_branch = std::any_of(x + i, x + end, takes_rempif);
    for (std::size_t j = i; j < end; ++j) out[j] = lane(x[j], large_branch);
  }
}

// ---- xtanhf (Sleef_tanhf8_u10) ----

// expk2f: e^d of a double-float d >= -104 as a double-float.
template <class V>
DoubleFloat<V> sleef_expk2f(DoubleFloat<V> d) {
  const auto q = small_int(round_even((d.x + d.y) * V(kRLn2f)));  // vrint_vi2_vf; |q| <= 13 where kept
  const V qf = to_float(q);
  DoubleFloat<V> s = df_add2(d, qf * V(-kL2Uf));
  s = df_add2(s, qf * V(-kL2Lf));
  V u = V(0.1980960224e-3f);
  u = mla(u, s.x, V(0.1394256484e-2f));
  u = mla(u, s.x, V(0.8333456703e-2f));
  u = mla(u, s.x, V(0.4166637361e-1f));
  DoubleFloat<V> t = df_add2(df_mul(s, u), V(0.166666659414234244790680580464e+0f));
  t = df_add2(df_mul(s, t), V(0.5f));
  t = df_add2(s, df_mul(df_sqr(s), t));
  t = df_add(V(1.0f), t);
  return {ldexp2(t.x, q), ldexp2(t.y, q)};
}

// tanh |x| = (e^|x| − e^−|x|) / (e^|x| + e^−|x|) in double-float; 1 past 8.664339742, the sign of x.
template <class V>
V sleef_tanhf(const V& x) {
  const V y = abs(x);
  DoubleFloat<V> d = sleef_expk2f(DoubleFloat<V>{y, V(0.0f)});
  const DoubleFloat<V> e = df_rec(d);
  d = df_div(df_add(d, df_neg(e)), df_add(d, e));
  V t = d.x + d.y;
  t = select((V(8.664339742f) < y) | is_nan(t), V(1.0f), t);
  return select(is_nan(x), V(float_from_bits(0xffffffffu)), mulsign(t, x));  // vor with the NaN lanes' mask
}

}  // namespace

float torch_expf(float x) { return sleef_expf(x); }

float torch_tanhf(float x) { return sleef_tanhf(x); }

xsimd::batch<float> torch_tanh(const xsimd::batch<float>& x) { return sleef_tanhf(x); }

xsimd::batch<float> torch_exp(const xsimd::batch<float>& x) { return sleef_expf(x); }

float torch_sinf(float x) { return sleef_sinf_u1(x, takes_rempif(x)); }

float torch_cosf(float x) { return sleef_cosf_u1(x, takes_rempif(x)); }

void torch_sin(const float* x, float* out, std::size_t n) {
  map_torch_vectors(x, out, n, sleef_sinf_u1);
}

void torch_cos(const float* x, float* out, std::size_t n) {
  map_torch_vectors(x, out, n, sleef_cosf_u1);
}

}  // namespace attn
