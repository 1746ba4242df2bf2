// The cuda backend's kernels. Matrix products go to cuBLAS; the rest are small kernels of our own, and
// attention is fused flash style (no Sq×Sk scores in memory): see flash_attention below.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <new>
#include <stdexcept>
#include <string>

#include "core/base/error.hpp"
#include "native/cuda/cuda_ops.hpp"

namespace attn::cuda {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(status));
}
void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }
void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS ") + what + " failed with status " + std::to_string(status));
}

constexpr int kThreads = 256;
constexpr float kMasked = -1.0e9f;  // masked_fill's value in the tutorial

// Blocks for a grid-stride loop over `size` elements (enough to fill the device, no more).
unsigned elementwise_blocks(size_t size) {
  return static_cast<unsigned>(std::clamp<size_t>((size + kThreads - 1) / kThreads, 1, 65536));
}

__global__ void add_kernel(const float* a, const float* b, float* out, size_t size, size_t period) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < size; i += size_t{gridDim.x} * blockDim.x)
    out[i] = a[i] + b[i % period];
}

__global__ void activation_kernel(float* x, size_t size, bool gelu) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < size; i += size_t{gridDim.x} * blockDim.x) {
    float v = x[i];
    x[i] = gelu ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) : fmaxf(v, 0.0f);
  }
}

// The max or sum of one value per thread of the block, returned to every thread. `partial` holds a
// value per warp; the first barrier lets a previous reduction finish reading it.
template <bool kMax>
__device__ float block_reduce(float value, float* partial) {
  auto combine = [](float a, float b) { return kMax ? fmaxf(a, b) : a + b; };
  for (int offset = 16; offset > 0; offset >>= 1) value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  value = threadIdx.x % 32 < kThreads / 32 ? partial[threadIdx.x % 32] : (kMax ? -FLT_MAX : 0.0f);
  for (int offset = 16; offset > 0; offset >>= 1) value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// One block per row.
__global__ void softmax_kernel(float* x, size_t n) {
  __shared__ float partial[kThreads / 32];
  float* row = x + blockIdx.x * n;
  float row_max = -FLT_MAX;
  for (size_t j = threadIdx.x; j < n; j += kThreads) row_max = fmaxf(row_max, row[j]);
  row_max = block_reduce<true>(row_max, partial);
  float sum = 0.0f;
  for (size_t j = threadIdx.x; j < n; j += kThreads) sum += expf(row[j] - row_max);
  sum = block_reduce<false>(sum, partial);
  for (size_t j = threadIdx.x; j < n; j += kThreads) row[j] = expf(row[j] - row_max) / sum;
}

// One block per row; the variance around the mean in a second pass (no cancellation).
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, size_t n,
                                  float eps) {
  __shared__ float partial[kThreads / 32];
  const float* in = x + blockIdx.x * n;
  float* out = y + blockIdx.x * n;
  float sum = 0.0f;
  for (size_t j = threadIdx.x; j < n; j += kThreads) sum += in[j];
  float mean = block_reduce<false>(sum, partial) / static_cast<float>(n);
  float squares = 0.0f;
  for (size_t j = threadIdx.x; j < n; j += kThreads) squares += (in[j] - mean) * (in[j] - mean);
  float inv_std = 1.0f / sqrtf(block_reduce<false>(squares, partial) / static_cast<float>(n) + eps);
  for (size_t j = threadIdx.x; j < n; j += kThreads) out[j] = (in[j] - mean) * inv_std * gamma[j] + beta[j];
}

// --- fused attention ---
// A block takes kQueries queries of one (batch, head); kLanes threads share each query, each lane owning
// head dimensions lane, lane + kLanes, … (kPerLane of them, in registers). Keys stream through shared
// memory in tiles; per tile, each query's scores (a lane-wise dot product summed across its lanes by
// butterfly shuffles, so every lane holds the same bits), then one online-softmax rescale of the running
// max m, sum l and weighted values. A masked score is −1e9, as masked_fill in the tutorial. Under the
// causal mask the tiles after the block's last query are skipped: their keys are masked and add
// exp(−1e9 − m) = 0, unless every key of a row is masked; such a row is the mean of all Sk values.
constexpr int kLanes = 8;
constexpr int kQueries = 16;
constexpr int kFlashThreads = kLanes * kQueries;

template <int kPerLane>
struct FlashTile {
  static constexpr int dim = kLanes * kPerLane;                   // head_dim, padded
  static constexpr int keys = 4096 / dim < 32 ? 4096 / dim : 32;  // K + V tiles ≤ 32 KiB
};

// Stages keys k0 … k0 + keys − 1 of (b, h); out-of-range keys and padded dimensions load as 0.
template <int kPerLane>
__device__ void load_key_tile(const AttentionArgs& a, size_t b, size_t h, size_t k0,
                              float (*k_tile)[FlashTile<kPerLane>::dim], float (*v_tile)[FlashTile<kPerLane>::dim],
                              bool* keep_tile) {
  using Tile = FlashTile<kPerLane>;
  for (int e = threadIdx.x; e < Tile::keys * Tile::dim; e += kFlashThreads) {
    int j = e / Tile::dim, d = e % Tile::dim;
    bool inside = k0 + j < a.seq_k && size_t(d) < a.head_dim;
    size_t at = ((b * a.seq_k + k0 + j) * a.heads + h) * a.head_dim + d;
    k_tile[j][d] = inside ? a.k[at] : 0.0f;
    v_tile[j][d] = inside ? a.v[at] : 0.0f;
  }
  for (int j = threadIdx.x; j < Tile::keys; j += kFlashThreads)
    keep_tile[j] = !a.keep || (k0 + j < a.seq_k && a.keep[b * a.seq_k + k0 + j] != 0.0f);
}

template <int kPerLane>
struct RowState {
  float q[kPerLane], acc[kPerLane];
  float m = -INFINITY, l = 0.0f;
  bool any_kept = false;
};

// Folds the staged tile (keys k0 … k0 + len − 1) into query i's state. Every lane runs it, also for
// queries past the end, so the shuffles see all 32 lanes.
template <int kPerLane>
__device__ void consume_tile(const AttentionArgs& a, size_t i, size_t k0, size_t len,
                             const float (*k_tile)[FlashTile<kPerLane>::dim],
                             const float (*v_tile)[FlashTile<kPerLane>::dim], const bool* keep_tile,
                             RowState<kPerLane>& st) {
  using Tile = FlashTile<kPerLane>;
  const int lane = threadIdx.x % kLanes;
  float s[Tile::keys];
  float tile_max = -INFINITY;
#pragma unroll
  for (int j = 0; j < Tile::keys; ++j) {
    float dot = 0.0f;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) dot = fmaf(st.q[t], k_tile[j][lane + kLanes * t], dot);
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    bool kept = keep_tile[j] && !(a.causal && k0 + j > i);
    s[j] = size_t(j) >= len ? -INFINITY : kept ? dot * a.scale : kMasked;  // −inf: not a key at all
    st.any_kept = st.any_kept || (size_t(j) < len && kept);
    tile_max = fmaxf(tile_max, s[j]);
  }
  float m_new = fmaxf(st.m, tile_max);
  float correction = expf(st.m - m_new);
  st.l *= correction;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) st.acc[t] *= correction;
#pragma unroll
  for (int j = 0; j < Tile::keys; ++j) {
    float p = expf(s[j] - m_new);
    st.l += p;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) st.acc[t] = fmaf(p, v_tile[j][lane + kLanes * t], st.acc[t]);
  }
  st.m = m_new;
}

// Every score of the row is −1e9: uniform weights over all Sk keys, skipped tiles included.
template <int kPerLane>
__device__ void average_all_values(const AttentionArgs& a, size_t b, size_t h, RowState<kPerLane>& st) {
  const int lane = threadIdx.x % kLanes;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    size_t d = lane + kLanes * t;
    st.acc[t] = 0.0f;
    for (size_t j = 0; d < a.head_dim && j < a.seq_k; ++j)
      st.acc[t] += a.v[((b * a.seq_k + j) * a.heads + h) * a.head_dim + d];
  }
  st.m = kMasked;
  st.l = static_cast<float>(a.seq_k);
}

template <int kPerLane>
__global__ void __launch_bounds__(kFlashThreads) flash_attention(AttentionArgs a) {
  using Tile = FlashTile<kPerLane>;
  __shared__ float k_tile[Tile::keys][Tile::dim];
  __shared__ float v_tile[Tile::keys][Tile::dim];
  __shared__ bool keep_tile[Tile::keys];
  const size_t q_blocks = (a.seq_q + kQueries - 1) / kQueries;
  const size_t q0 = blockIdx.x % q_blocks * kQueries, h = blockIdx.x / q_blocks % a.heads,
               b = blockIdx.x / q_blocks / a.heads;
  const size_t i = q0 + threadIdx.x / kLanes;
  const int lane = threadIdx.x % kLanes;
  const bool active = i < a.seq_q;
  const size_t row_at = ((b * a.seq_q + i) * a.heads + h) * a.head_dim;
  RowState<kPerLane> st;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    size_t d = lane + kLanes * t;
    st.q[t] = active && d < a.head_dim ? a.q[row_at + d] : 0.0f;
    st.acc[t] = 0.0f;
  }
  const size_t key_end = a.causal && q0 + kQueries < a.seq_k ? q0 + kQueries : a.seq_k;
  for (size_t k0 = 0; k0 < key_end; k0 += Tile::keys) {
    __syncthreads();  // the previous tile is consumed
    load_key_tile<kPerLane>(a, b, h, k0, k_tile, v_tile, keep_tile);
    __syncthreads();
    size_t len = key_end - k0 < size_t(Tile::keys) ? key_end - k0 : size_t(Tile::keys);
    consume_tile<kPerLane>(a, i, k0, len, k_tile, v_tile, keep_tile, st);
  }
  if (!active) return;
  if (!st.any_kept) average_all_values<kPerLane>(a, b, h, st);
#pragma unroll
  for (int t = 0; t < kPerLane; ++t)
    if (size_t(lane + kLanes * t) < a.head_dim) a.out[row_at + lane + kLanes * t] = st.acc[t] / st.l;
  if (a.stats && lane == 0) {
    size_t row = (b * a.heads + h) * a.seq_q + i;
    a.stats[2 * row] = st.m;
    a.stats[2 * row + 1] = st.l;
  }
}

// w = exp(s − m) / l with the row's m and l from flash_attention's stats and s the masked, scaled score.
__global__ void attention_weights_kernel(AttentionArgs a, float* weights) {
  size_t size = a.batch * a.heads * a.seq_q * a.seq_k;
  for (size_t e = blockIdx.x * size_t{blockDim.x} + threadIdx.x; e < size; e += size_t{gridDim.x} * blockDim.x) {
    size_t j = e % a.seq_k, row = e / a.seq_k;
    size_t i = row % a.seq_q, h = row / a.seq_q % a.heads, b = row / a.seq_q / a.heads;
    bool kept = (!a.keep || a.keep[b * a.seq_k + j] != 0.0f) && !(a.causal && j > i);
    float s = kMasked;
    if (kept) {
      const float* q = a.q + ((b * a.seq_q + i) * a.heads + h) * a.head_dim;
      const float* k = a.k + ((b * a.seq_k + j) * a.heads + h) * a.head_dim;
      float dot = 0.0f;
      for (size_t d = 0; d < a.head_dim; ++d) dot = fmaf(q[d], k[d], dot);
      s = dot * a.scale;
    }
    weights[e] = expf(s - a.stats[2 * row]) / a.stats[2 * row + 1];
  }
}

template <int kPerLane>
void launch_flash(const AttentionArgs& a) {
  size_t blocks = a.batch * a.heads * ((a.seq_q + kQueries - 1) / kQueries);
  if (blocks > INT_MAX)
    throw InputError("cuda backend: attention of " + std::to_string(blocks) + " blocks is too large");
  flash_attention<kPerLane><<<static_cast<unsigned>(blocks), kFlashThreads>>>(a);
  check_launch("flash_attention");
}

}  // namespace

// cuBLAS, opened when a Device is made rather than linked: its libraries (cuBLASLt included, about half
// a gigabyte) would add about a second to the start of every run of attn, GPU or not.
class Blas {
 public:
  Blas() {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    library_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library_)  // the toolkit this was built with, when the loader's paths lack it
      library_ = dlopen((std::string(ATTN_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library_) throw InputError("cuda backend unavailable: cannot load " + name + " (" + dlerror() + ")");
    create_ = symbol<decltype(&cublasCreate_v2)>("cublasCreate_v2");
    destroy_ = symbol<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
    sgemm_ = symbol<decltype(&cublasSgemm_v2)>("cublasSgemm_v2");
    check_blas(create_(&handle_), "cublasCreate");
  }
  ~Blas() { destroy_(handle_); }  // the library stays loaded: cuBLAS registers handlers for exit
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  void sgemm(cublasOperation_t op_a, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
             int ldc) {
    const float one = 1.0f, zero = 0.0f;
    check_blas(sgemm_(handle_, op_a, CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc), "sgemm");
  }

 private:
  template <typename F>
  F symbol(const char* name) {
    auto function = reinterpret_cast<F>(dlsym(library_, name));
    if (!function) throw InputError(std::string("cuda backend unavailable: cuBLAS lacks ") + name);
    return function;
  }

  void* library_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  decltype(&cublasCreate_v2) create_ = nullptr;
  decltype(&cublasDestroy_v2) destroy_ = nullptr;
  decltype(&cublasSgemm_v2) sgemm_ = nullptr;
};

struct Device::Impl {
  std::unique_ptr<Blas> blas;
  std::string description;
};

Device::Device() : impl_(std::make_unique<Impl>()) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw InputError(std::string("cuda backend unavailable: no CUDA device or driver (") +
                     (status != cudaSuccess ? cudaGetErrorString(status) : "no device found") + ")");
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  check(cudaSetDevice(0), "cudaSetDevice");
  impl_->blas = std::make_unique<Blas>();
  impl_->description = std::string(props.name) + ", compute capability " + std::to_string(props.major) + "." +
                       std::to_string(props.minor) + ", " + std::to_string(props.totalGlobalMem >> 20) + " MiB";
}

Device::~Device() = default;

std::string Device::description() const { return impl_->description; }

float* Device::allocate(size_t size) {
  void* data = nullptr;
  if (cudaMalloc(&data, std::max<size_t>(size, 1) * sizeof(float)) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not report it
    throw std::bad_alloc();
  }
  return static_cast<float*>(data);
}

void Device::release(float* data) noexcept { cudaFree(data); }

void Device::to_device(float* dst, const float* src, size_t size) {
  check(cudaMemcpy(dst, src, size * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void Device::to_host(float* dst, const float* src, size_t size) {
  check(cudaMemcpy(dst, src, size * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

void Device::synchronize() { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

void Device::matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n, bool b_transposed) {
  if (m == 0 || n == 0) return;
  if (m > INT_MAX || k > INT_MAX || n > INT_MAX) throw InputError("cuda backend: matrix too large for cuBLAS");
  const int mi = static_cast<int>(m), ki = static_cast<int>(k), ni = static_cast<int>(n);
  // Row-major c = a·op(b) is column-major cᵀ = op(b)ᵀ·aᵀ: cuBLAS with the operands swapped.
  impl_->blas->sgemm(b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, ni, mi, ki, b, b_transposed ? std::max(ki, 1) : ni, a,
                     std::max(ki, 1), c, ni);
}

void add(const float* a, const float* b, float* out, size_t size, size_t period) {
  if (size == 0) return;
  add_kernel<<<elementwise_blocks(size), kThreads>>>(a, b, out, size, period);
  check_launch("add");
}

void activation(float* x, size_t size, bool gelu) {
  if (size == 0) return;
  activation_kernel<<<elementwise_blocks(size), kThreads>>>(x, size, gelu);
  check_launch("activation");
}

void softmax_rows(float* x, size_t rows, size_t n) {
  if (rows == 0) return;
  if (rows > INT_MAX) throw InputError("cuda backend: too many rows for softmax");
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads>>>(x, n);
  check_launch("softmax");
}

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, size_t rows, size_t n, float eps) {
  if (rows == 0) return;
  if (rows > INT_MAX) throw InputError("cuda backend: too many rows for layer_norm");
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads>>>(x, gamma, beta, y, n, eps);
  check_launch("layer_norm");
}

void attention(const AttentionArgs& args) {
  if (args.batch * args.heads * args.seq_q == 0) return;
  size_t per_lane = (args.head_dim + kLanes - 1) / kLanes;
  if (per_lane <= 1) launch_flash<1>(args);
  else if (per_lane <= 2) launch_flash<2>(args);
  else if (per_lane <= 4) launch_flash<4>(args);
  else if (per_lane <= 8) launch_flash<8>(args);
  else if (per_lane <= 16) launch_flash<16>(args);
  else if (per_lane <= 32) launch_flash<32>(args);
  else if (per_lane <= 64) launch_flash<64>(args);
  else
    throw InputError("cuda backend: head_dim " + std::to_string(args.head_dim) + " exceeds " +
                     std::to_string(kMaxHeadDim) + ", the most the fused attention kernel holds");
}

void attention_weights(const AttentionArgs& args, float* weights) {
  size_t size = args.batch * args.heads * args.seq_q * args.seq_k;
  if (size == 0) return;
  attention_weights_kernel<<<elementwise_blocks(size), kThreads>>>(args, weights);
  check_launch("attention_weights");
}

}  // namespace attn::cuda
