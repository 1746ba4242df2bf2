// PyTorch 1.13's CPU random generator and default initialisation, bit for bit
// (docs/torch-rng.md). Every fill is in memory order, as on a contiguous tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <istream>
#include <string>

namespace attn {

// std::mt19937's stream (torch's CPU engine), with a bulk fill whose loops the compiler vectorises:
// its state and its text form are the same everywhere (native and WebAssembly alike), as libstdc++
// writes them: the 624 state words, then the position.
class Mt19937 {
 public:
  static constexpr size_t state_size = 624;
  void seed(uint32_t seed);
  uint32_t operator()() {
    if (index_ == state_size) twist();
    return temper(state_[index_++]);
  }
  void fill(uint32_t* out, size_t count);  // the next `count` outputs, in order
  std::string text() const;
  bool parse(std::istream& in);  // false, unchanged, for text that is not a state

 private:
  static uint32_t temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }
  void twist();
  uint32_t state_[state_size] = {};
  size_t index_ = state_size;
};

class TorchGenerator {
 public:
  static constexpr uint64_t default_seed = 67280421310721ULL;  // torch's default_rng_seed_val
  explicit TorchGenerator(uint64_t seed = default_seed) { manual_seed(seed); }

  // torch.manual_seed: the full 64-bit value is kept, the low 32 bits seed the MT19937 stream.
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }

  // The whole state as text (the engine's state, the seed, a cached normal) and back, for checkpoints;
  // set_state throws InputError for text that is not such a state.
  std::string state() const;
  void set_state(const std::string& text);

  uint32_t random();    // one tempered 32-bit output
  uint64_t random64();  // (a << 32) | b

  void uniform_(float* out, size_t n, double from, double to);
  void normal_(float* out, size_t n, double mean, double std);  // >= 16: normal_fill; else scalar path
  void randn(float* out, size_t n) { normal_(out, n, 0.0, 1.0); }
  void randint(int64_t* out, size_t n, int64_t low, int64_t high);
  void bernoulli_(float* out, size_t n, double p);
  // F.dropout(x, p, training=True), in place. `noise`, when given, receives the factor each element was
  // multiplied by (0 or 1/(1-p)): autograd's saved tensor, which the backward multiplies the gradient by.
  void dropout_(float* x, size_t n, double p, float* noise = nullptr);

 private:
  void normal_fill(float* out, size_t n, float mean, float std);
  double normal_scalar(double mean, double std);
  Mt19937 engine_;
  uint64_t seed_ = 0;
  std::optional<double> cached_normal_;  // Box-Muller sine value of the scalar path
};

// nn.init / module constructors. Weights are [out, in] (PyTorch's layout).
void kaiming_uniform_(TorchGenerator& g, float* w, size_t rows, size_t cols, double a);
// nn.Linear.reset_parameters: weight, then bias (bias may be null).
void linear_init(TorchGenerator& g, float* weight, float* bias, size_t out_features, size_t in_features);
void xavier_uniform_(TorchGenerator& g, float* w, size_t fan_out, size_t fan_in, double gain = 1.0);
// nn.Embedding(num, dim, padding_idx): normal_(0,1) on all, then row padding_idx zeroed.
void embedding_init(TorchGenerator& g, float* w, size_t num, size_t dim, std::optional<int64_t> padding_idx);

// Parses a seed as torch.manual_seed accepts it: an integer in [-2^63, 2^64) (negative values as
// two's complement). Returns nullopt for anything else.
std::optional<uint64_t> parse_torch_seed(const std::string& text);
// The same as an option's value: an InputError naming --seed for anything else.
uint64_t parse_seed(const std::string& text);

}  // namespace attn
