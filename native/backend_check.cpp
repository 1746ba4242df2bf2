// attn-backend-check --backend gl|cuda|cpu [--quick]: a backend against the cpu backend (the reference),
// op by op on random shapes, awkward ones included (1, 3, 17, ~1000: never a multiple of a tile), then
// the whole model stage by stage. The error of a result x against the reference r is
// max|x − r| / max(1, max|r|), checked against a bound per op. One line per case; exit status 0 when every
// case is within its bound, 1 when one is not (or the backend failed), 2 when the backend cannot run here.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <random>

#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "native/backends.hpp"

namespace attn {
namespace {

// Bounds on the normalised error. Products and reductions sum in another order than the cpu backend
// (and GPUs' exp differs by a few ulp); element-wise adds are exact. LayerNorm divides by each row's
// spread, so a short row of close values (n = 3) magnifies the rounding of x − mean: it gets more room.
constexpr double kMatmulBound = 1e-5, kExactBound = 0.0, kActivationBound = 2e-6, kSoftmaxBound = 1e-5,
                 kLayerNormBound = 3e-5, kAttentionBound = 2e-5, kWeightsBound = 1e-5, kModelBound = 2e-5;

double normalised_error(const float* x, const float* ref, size_t size) {
  double worst = 0.0, scale = 1.0;
  for (size_t i = 0; i < size; ++i) {
    double diff = std::fabs(double(x[i]) - double(ref[i]));
    worst = std::isnan(diff) ? std::numeric_limits<double>::infinity() : std::max(worst, diff);
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return worst / scale;
}

// One operation: its input (and output) arrays, what it computes on a backend, which arrays to compare.
struct Case {
  std::string name;
  std::vector<std::vector<float>> arrays;
  std::function<void(Backend&, std::vector<BufferPtr>&)> run;
  struct Result {
    size_t array;  // index in arrays
    double bound;
    std::string label;  // after the name, when a case checks several results
  };
  std::vector<Result> results;
};

class Checker {
 public:
  Checker(Backend& tested, Backend& reference, uint32_t seed) : tested_(tested), reference_(reference), rng_(seed) {}
  bool quick = false;
  int failures = 0;

  std::vector<float> random(size_t size, float low, float high) {
    std::uniform_real_distribution<float> uniform(low, high);
    std::vector<float> values(size);
    for (float& v : values) v = uniform(rng_);
    return values;
  }
  static std::vector<float> unwritten(size_t size) {  // outputs start as NaN: an element never written fails
    return std::vector<float>(size, std::numeric_limits<float>::quiet_NaN());
  }
  std::mt19937& rng() { return rng_; }

  void report(const std::string& name, double error, double bound) {
    bool ok = error <= bound;
    failures += !ok;
    std::printf("%-4s %-62s error %.2e  bound %.0e\n", ok ? "ok" : "FAIL", name.c_str(), error, bound);
    std::fflush(stdout);
  }

  void check(const Case& c) {
    std::vector<std::vector<float>> expected = run(reference_, c), got = run(tested_, c);
    for (size_t r = 0; r < c.results.size(); ++r)
      report(c.name + c.results[r].label, normalised_error(got[r].data(), expected[r].data(), got[r].size()),
             c.results[r].bound);
  }

 private:
  static std::vector<std::vector<float>> run(Backend& backend, const Case& c) {
    std::vector<BufferPtr> buffers;
    for (const auto& array : c.arrays) {
      buffers.push_back(backend.allocate(array.size()));
      backend.upload(*buffers.back(), array.data(), array.size());
    }
    c.run(backend, buffers);
    std::vector<std::vector<float>> results;
    for (const auto& result : c.results) {
      results.emplace_back(c.arrays[result.array].size());
      backend.download(*buffers[result.array], results.back().data(), results.back().size());
    }
    return results;
  }

  Backend& tested_;
  Backend& reference_;
  std::mt19937 rng_;
};

std::string dims(std::initializer_list<size_t> sizes, const char* names) {
  std::string text;
  size_t index = 0;
  for (size_t size : sizes) text += std::string(text.empty() ? "" : " ") + names[index++] + "=" + std::to_string(size);
  return text;
}

void check_matmul(Checker& checker) {
  std::vector<std::array<size_t, 3>> shapes{{1, 1, 1}, {3, 17, 5}, {17, 1000, 33}, {65, 64, 129}};
  if (!checker.quick)  // k = 40000: near the most llvmpipe's loop budget allows (gl_backend.cpp)
    shapes.insert(shapes.end(), {{3, 17, 1}, {17, 3, 1000}, {1000, 17, 3}, {257, 129, 511}, {1000, 1000, 17},
                                 {5, 40000, 7}});
  for (bool transposed : {false, true})
    for (const auto& shape : shapes) {
      const size_t m = shape[0], k = shape[1], n = shape[2];
      checker.check({"matmul " + dims({m, k, n}, "mkn") + (transposed ? " b transposed" : ""),
                     {checker.random(m * k, -1, 1), checker.random(k * n, -1, 1), Checker::unwritten(m * n)},
                     [=](Backend& b, std::vector<BufferPtr>& x) {
                       b.matmul(*x[0], *x[1], *x[2], m, k, n, transposed);
                     },
                     {{2, kMatmulBound, ""}}});
    }
}

// A Linear layer, as a backend may fuse it: x · weightᵀ + bias, then the activation.
void check_linear(Checker& checker) {
  const std::vector<std::array<size_t, 3>> shapes{{1, 1, 1}, {17, 33, 5}, {65, 129, 64}, {300, 512, 100}};
  for (std::optional<Activation> activation : {std::optional<Activation>(), std::optional(Activation::relu),
                                               std::optional(Activation::gelu)})
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], in = shape[1], out = shape[2];
      const std::string kind = !activation ? "" : *activation == Activation::relu ? " relu" : " gelu";
      checker.check({"linear " + dims({rows, in, out}, "rio") + kind,
                     {checker.random(rows * in, -1, 1), checker.random(out * in, -1, 1), checker.random(out, -1, 1),
                      Checker::unwritten(rows * out)},
                     [=](Backend& b, std::vector<BufferPtr>& x) {
                       b.linear(*x[0], *x[1], *x[2], *x[3], rows, in, out, activation);
                     },
                     {{3, kMatmulBound, ""}}});
    }
}

void check_elementwise(Checker& checker) {
  std::vector<std::array<size_t, 2>> shapes{{1, 1}, {17, 3}, {3, 1000}, {1000, 17}};
  if (!checker.quick) shapes.push_back({17000, 1001});  // 17M elements: more than one grid's worth
  for (const auto& shape : shapes) {
    const size_t rows = shape[0], n = shape[1], size = rows * n;
    checker.check({"add_bias " + dims({rows, n}, "rn"), {checker.random(size, -5, 5), checker.random(n, -5, 5)},
                   [=](Backend& b, std::vector<BufferPtr>& x) { b.add_bias(*x[0], *x[1], rows, n); },
                   {{0, kExactBound, ""}}});
    checker.check({"add " + dims({size}, "s"),
                   {checker.random(size, -5, 5), checker.random(size, -5, 5), Checker::unwritten(size)},
                   [=](Backend& b, std::vector<BufferPtr>& x) { b.add(*x[0], *x[1], *x[2], size); },
                   {{2, kExactBound, ""}}});
    for (Activation kind : {Activation::relu, Activation::gelu})
      checker.check({std::string(kind == Activation::relu ? "relu " : "gelu ") + dims({size}, "s"),
                     {checker.random(size, -6, 6)},
                     [=](Backend& b, std::vector<BufferPtr>& x) { b.activation(*x[0], size, kind); },
                     {{0, kind == Activation::relu ? kExactBound : kActivationBound, ""}}});
  }
}

void check_rows(Checker& checker) {
  std::vector<std::array<size_t, 2>> shapes{{1, 1}, {3, 17}, {1000, 3}, {17, 1000}};
  if (!checker.quick) shapes.insert(shapes.end(), {{2, 4099}, {70000, 17}});  // rows beyond one grid axis
  for (const auto& shape : shapes) {
    const size_t rows = shape[0], n = shape[1];
    checker.check({"softmax_rows " + dims({rows, n}, "rn"), {checker.random(rows * n, -10, 10)},
                   [=](Backend& b, std::vector<BufferPtr>& x) { b.softmax_rows(*x[0], rows, n); },
                   {{0, kSoftmaxBound, ""}}});
    // Rows off centre, as activations are (far off centre the cpu backend's float sums lose digits).
    checker.check({"layer_norm " + dims({rows, n}, "rn"),
                   {checker.random(rows * n, -2, 4), checker.random(n, 0.5f, 1.5f), checker.random(n, -1, 1),
                    Checker::unwritten(rows * n)},
                   [=](Backend& b, std::vector<BufferPtr>& x) {
                     b.layer_norm(*x[0], *x[1], *x[2], *x[3], rows, n, 1e-5f);
                   },
                   {{3, kLayerNormBound, ""}}});
  }
}

// key_keep with a quarter of the keys masked at random; batch 1 also masks its first 3 keys (under the
// causal mask its first queries then see no key at all) and batch 2 masks every key.
std::vector<float> key_keep(Checker& checker, size_t batch, size_t seq_k) {
  std::vector<float> keep = checker.random(batch * seq_k, 0, 1);
  for (size_t b = 0; b < batch; ++b)
    for (size_t j = 0; j < seq_k; ++j) {
      float& kept = keep[b * seq_k + j];
      kept = (kept < 0.25f || (b == 1 && j < 3) || b == 2) ? 0.0f : 1.0f;
    }
  return keep;
}

struct AttentionCase {
  AttentionShape shape;
  bool keep, weights;
};

void check_attention(Checker& checker, const AttentionCase& a) {
  const AttentionShape s = a.shape;
  const size_t q_size = s.batch * s.seq_q * s.heads * s.head_dim, k_size = s.batch * s.seq_k * s.heads * s.head_dim;
  Case c{"attention " + dims({s.batch, s.heads, s.seq_q, s.seq_k, s.head_dim}, "BHqkD") +
             (s.causal ? " causal" : "") + (a.keep ? " keep" : "") + (a.weights ? " weights" : ""),
         {checker.random(q_size, -2, 2), checker.random(k_size, -2, 2), checker.random(k_size, -2, 2),
          a.keep ? key_keep(checker, s.batch, s.seq_k) : std::vector<float>{1.0f}, Checker::unwritten(q_size),
          Checker::unwritten(a.weights ? s.batch * s.heads * s.seq_q * s.seq_k : 1)},
         [=](Backend& b, std::vector<BufferPtr>& x) {
           b.attention(*x[0], *x[1], *x[2], a.keep ? x[3].get() : nullptr, *x[4], s, a.weights ? x[5].get() : nullptr);
         },
         {{4, kAttentionBound, a.weights ? ": output" : ""}}};
  if (a.weights) c.results.push_back({5, kWeightsBound, ": weights"});
  checker.check(c);
}

AttentionShape attention_shape(size_t batch, size_t heads, size_t seq_q, size_t seq_k, size_t head_dim, bool causal) {
  return {batch, heads, seq_q, seq_k, head_dim, 1.0f / std::sqrt(float(head_dim)), causal};
}

void check_attention(Checker& checker) {
  std::vector<AttentionCase> cases{
      {attention_shape(1, 1, 1, 1, 1, false), false, true},
      {attention_shape(3, 3, 17, 17, 6, true), true, true},
      {attention_shape(3, 2, 5, 1000, 17, false), true, true},
      {attention_shape(2, 4, 130, 130, 64, true), true, false},
  };
  if (!checker.quick)
    cases.insert(cases.end(), {{attention_shape(1, 2, 1000, 1000, 3, true), false, false},
                               {attention_shape(3, 1, 65, 65, 128, false), true, true},
                               {attention_shape(3, 1, 33, 33, 257, true), true, true},
                               {attention_shape(2, 8, 1000, 1000, 64, true), true, false},
                               {attention_shape(1, 2, 3, 20000, 64, false), true, true}});
  for (const AttentionCase& a : cases) check_attention(checker, a);
}

struct ModelCase {
  std::string name;
  TransformerConfig config;
  MaskKind mask;
  std::vector<size_t> lengths;  // of each sequence; the rest is [PAD]
};

std::vector<int64_t> random_ids(Checker& checker, size_t vocab, const std::vector<size_t>& lengths, size_t seq) {
  std::uniform_int_distribution<int64_t> id(1, int64_t(vocab) - 1);
  std::vector<int64_t> ids(lengths.size() * seq, 0);
  for (size_t b = 0; b < lengths.size(); ++b)
    for (size_t j = 0; j < lengths[b]; ++j) ids[b * seq + j] = id(checker.rng());
  return ids;
}

// The model on both backends: every stage the tested backend's trace records, and the logits.
void check_model(Checker& checker, Backend& tested, Backend& reference, const ModelCase& c, uint64_t seed) {
  validate(c.config);
  TorchGenerator generator(seed);
  const TransformerModel model = init_transformer(c.config, generator);
  const size_t seq = *std::max_element(c.lengths.begin(), c.lengths.end());
  const std::vector<int64_t> ids = random_ids(checker, c.config.vocab_size, c.lengths, seq);
  Trace expected, got;
  DeviceModel reference_model(reference, model), tested_model(tested, model);
  Tensor expected_logits = reference_model.classify(ids, c.lengths.size(), seq, c.mask, &expected);
  Tensor got_logits = tested_model.classify(ids, c.lengths.size(), seq, c.mask, &got);
  for (const Stage& stage : got.stages()) {
    const Tensor& ref = expected.at(stage.name);
    double error = ref.shape() == stage.value.shape()
                       ? normalised_error(stage.value.data(), ref.data(), ref.size())
                       : std::numeric_limits<double>::infinity();
    checker.report("model " + c.name + " " + stage.name, error, kModelBound);
  }
  checker.report("model " + c.name + " classify() result", normalised_error(got_logits.data(), expected_logits.data(),
                                                                  expected_logits.size()), kModelBound);
}

TransformerConfig model_config(size_t d_model, size_t heads, size_t layers, size_t d_ff, bool norm_first,
                               Activation activation) {
  TransformerConfig config;
  config.vocab_size = 50;
  config.d_model = d_model;
  config.num_heads = heads;
  config.num_layers = layers;
  config.d_ff = d_ff;
  config.max_len = 1024;
  config.norm_first = norm_first;
  config.activation = activation;
  return config;
}

void check_models(Checker& checker, Backend& tested, Backend& reference, uint64_t seed) {
  std::vector<ModelCase> cases{
      {"post-norm relu padding", model_config(32, 4, 2, 0, false, Activation::relu), MaskKind::padding, {17, 9, 1}},
      {"pre-norm gelu padding+causal", model_config(48, 3, 2, 100, true, Activation::gelu), MaskKind::padding_causal,
       {33, 20}},
  };
  if (!checker.quick)
    cases.push_back({"post-norm gelu causal", model_config(64, 2, 3, 130, false, Activation::gelu), MaskKind::causal,
                     {300, 300}});
  for (const ModelCase& c : cases) check_model(checker, tested, reference, c, seed);
}

struct Options {
  std::string backend = "gl";
  bool quick = false;
  uint64_t seed = 0;
  size_t threads = 0;
};

int run(const Options& options) {
  std::string note, reference_note;
  std::unique_ptr<Backend> reference = make_backend("cpu", options.threads, reference_note);
  std::unique_ptr<Backend> tested = make_backend(options.backend, options.threads, note);
  std::printf("%s, checked against the %s\n", note.c_str(), reference_note.c_str());
  auto start = std::chrono::steady_clock::now();
  Checker checker(*tested, *reference, uint32_t(options.seed));
  checker.quick = options.quick;
  check_matmul(checker);
  check_linear(checker);
  check_elementwise(checker);
  check_rows(checker);
  check_attention(checker);
  check_models(checker, *tested, *reference, options.seed);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %d case(s) out of bounds, %.1f s\n", checker.failures ? "FAILED" : "passed", checker.failures,
              seconds);
  return checker.failures ? 1 : 0;
}

}  // namespace
}  // namespace attn

int main(int argc, char** argv) {
  CLI::App app{"Checks a compute backend op by op, and the whole model, against the cpu backend",
               "attn-backend-check"};
  attn::Options options;
  app.add_option("--backend", options.backend, "backend to check: cpu, gl, cuda or auto")->required();
  app.add_flag("--quick", options.quick, "fewer and smaller cases");
  app.add_option("--seed", options.seed, "seed of the random inputs and of the model's parameters");
  app.add_option("--threads", options.threads, "threads of the cpu backend (0 = every core)");
  CLI11_PARSE(app, argc, argv);
  try {
    return attn::run(options);
  } catch (const attn::InputError& e) {
    std::cerr << "attn-backend-check: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "attn-backend-check: error: " << e.what() << '\n';
    return 1;
  }
}
