#include "native/bench.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if !defined(__EMSCRIPTEN__)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>

#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/kernels/fast_kernels.hpp"
#include "core/kernels/kernels.hpp"
#include "core/base/memory.hpp"
#include "core/base/threads.hpp"
#include "core/io/npy.hpp"
#include "core/io/safetensors.hpp"
#include "core/batch/batch.hpp"
#include "core/train/train.hpp"
#include "core/base/bits.hpp"
#include "core/model/attribution.hpp"
#include "core/model/decoder.hpp"
#include "core/model/generate.hpp"
#include "core/train/train_lm.hpp"
#include "core/model/patching.hpp"
#include "core/model/tutorial.hpp"
#include "native/cli.hpp"
#if defined(ATTN_HAVE_BACKENDS)
#include "native/backends.hpp"
#endif

namespace attn::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// Measuring

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Restarts the kernel's peak-RSS counter (VmHWM) so a case's own peak can be read afterwards, after
// handing back the memory earlier cases freed (attn keeps it for reuse), which would hide this one's.
void reset_peak_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  std::ofstream out("/proc/self/clear_refs");
  if (out) out << "5";
}

struct Timing {
  std::vector<double> seconds;  // per call
  double extra_bytes = 0;       // peak resident memory during the case (warm-up included) over its start
};

// Calls fn until both 3 samples and `budget` seconds are reached (capped at 50 samples); each
// sample runs fn `inner` times and records the time per call.
Timing measure(const std::function<void()>& fn, double budget, size_t inner = 1) {
  reset_peak_memory();
  const double before = process_status_bytes("VmRSS:");
  fn();  // warm up: caches, thread start, and the buffers it keeps (counted in extra_bytes)
  Timing t;
  const double start = now();
  while (t.seconds.size() < 3 || (now() - start < budget && t.seconds.size() < 50)) {
    const double t0 = now();
    for (size_t i = 0; i < inner; ++i) fn();
    t.seconds.push_back((now() - t0) / double(inner));
  }
  t.extra_bytes = std::max(0.0, process_status_bytes("VmHWM:") - before);
  return t;
}

// One call, timed: for cases of many seconds, where measure()'s four calls would take minutes.
Timing measure_once(const std::function<void()>& fn) {
  reset_peak_memory();
  const double before = process_status_bytes("VmRSS:"), t0 = now();
  fn();
  return {{now() - t0}, std::max(0.0, process_status_bytes("VmHWM:") - before)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// ---------------------------------------------------------------------------------------------
// The cases

struct Context {
  const BenchOptions& options;
  size_t threads;
  ThreadPool& pool;
  Backend& backend;
  double budget;
  Json results = Json::array();
  double peak = 0;  // peak_flops(), once measured

  // Every thread's FMA rate at once, the best of 5 tries (one try can meet a busy neighbour), measured once.
  double peak_flops() {
    if (peak > 0) return peak;
    for (int attempt = 0; attempt < 5; ++attempt) {
      std::vector<double> rates(threads);
      pool.parallel_for(threads, [&](size_t i) { rates[i] = fma_peak_flops(5000000); });
      double sum = 0;
      for (double r : rates) sum += r;
      peak = std::max(peak, sum);
    }
    return peak;
  }

  void report(const std::string& name, Json params, const Timing& t, double flops, Json extra = Json::object()) {
    const double med = median(t.seconds);
    Json r = {{"case", name},
              {"params", std::move(params)},
              {"median_s", med},
              {"min_s", *std::min_element(t.seconds.begin(), t.seconds.end())},
              {"max_s", *std::max_element(t.seconds.begin(), t.seconds.end())},
              {"samples", t.seconds.size()},
              {"gflops", flops / med / 1e9},
              {"extra_memory_mb", t.extra_bytes / 1048576.0},
              {"peak_rss_mb", process_status_bytes("VmHWM:") / 1048576.0}};
    r.update(extra);
    results.push_back(std::move(r));
  }
};

void bench_tutorial(Context& c) {
  const TutorialRun run = run_tutorial(TutorialConfig{});
  TutorialForward forward(run);
  const Timing t = measure([&] { forward(run.batch.ids); }, c.budget, 1000);
  const double d = double(run.config.d_model), rows = double(run.batch.ids.size()), S = double(run.batch.seq);
  c.report("tutorial", {{"batch", run.batch.batch}, {"seq", run.batch.seq}, {"d_model", run.config.d_model}}, t,
           2 * rows * d * d * 3 + 4 * rows * S * d);
}

struct DeviceTensor {
  BufferPtr buffer;
  DeviceTensor(Backend& b, const std::vector<float>& host) : buffer(b.allocate(host.size())) {
    b.upload(*buffer, host.data(), host.size());
  }
};

void bench_sdpa(Context& c) {
  const size_t heads = 8, dim = 64;
  const std::vector<size_t> lengths =
      c.options.quick ? std::vector<size_t>{128, 512} : std::vector<size_t>{128, 512, 1024, 2048, 4096, 8192};
  Backend& be = c.backend;
  for (size_t S : lengths) {
    DeviceTensor q(be, random_floats(S * heads * dim, 1)), k(be, random_floats(S * heads * dim, 2)),
        v(be, random_floats(S * heads * dim, 3));
    const BufferPtr out = be.allocate(S * heads * dim);
    for (bool causal : {false, true}) {
      const AttentionShape shape{1, heads, S, S, dim, 1.0f / 8.0f, causal};
      const Timing t = measure(
          [&] {
            be.attention(*q.buffer, *k.buffer, *v.buffer, nullptr, *out, shape, nullptr);
            be.synchronize();
          },
          c.budget);
      const double flops = 4.0 * double(S) * double(S) * double(dim * heads) * (causal ? 0.5 : 1.0);
      c.report("sdpa", {{"batch", 1}, {"heads", heads}, {"head_dim", dim}, {"seq", S}, {"causal", causal}}, t, flops);
    }
  }
}

// The tutorial's MultiHeadAttention: W_Q, W_K, W_V, fused attention over the heads, W_O.
void bench_mha(Context& c) {
  const size_t d = 512, heads = 8;
  const std::vector<std::pair<size_t, size_t>> shapes =
      c.options.quick ? std::vector<std::pair<size_t, size_t>>{{2, 64}} : std::vector<std::pair<size_t, size_t>>{{8, 128}, {1, 2048}};
  Backend& be = c.backend;
  std::vector<BufferPtr> w, bias;  // nn.Linear's [out, in] and [out]
  for (uint32_t i = 0; i < 4; ++i) {
    w.push_back(be.upload_weight(random_floats(d * d, 10 + i, 0.04f).data(), d, d, true));
    bias.push_back(DeviceTensor(be, random_floats(d, 20 + i, 0.04f)).buffer);
  }
  for (auto [B, S] : shapes) {
    const size_t rows = B * S;
    DeviceTensor x(be, random_floats(rows * d, 4));
    std::vector<BufferPtr> buf;
    for (int i = 0; i < 5; ++i) buf.push_back(be.allocate(rows * d));
    const AttentionShape shape{B, heads, S, S, d / heads, 1.0f / 8.0f, false};
    const Timing t = measure(
        [&] {
          for (size_t i = 0; i < 3; ++i) be.linear(*x.buffer, *w[i], *bias[i], *buf[i], rows, d, d);
          be.attention(*buf[0], *buf[1], *buf[2], nullptr, *buf[3], shape, nullptr);
          be.linear(*buf[3], *w[3], *bias[3], *buf[4], rows, d, d);
          be.synchronize();
        },
        c.budget);
    const double flops = 8.0 * double(rows) * d * d + 4.0 * double(B) * double(S) * double(S) * d;
    c.report("mha", {{"batch", B}, {"seq", S}, {"d_model", d}, {"heads", heads}}, t, flops);
  }
}

// A stack of the tutorial's encoder layers (no embedding, no final norm) on random input: at the tutorial
// classifier's size and at a BERT-base-like width. --dump writes each one's weights, input and output.
void bench_encoder(Context& c) {
  struct Size {
    size_t d, heads, layers, d_ff, batch, seq;
  };
  const std::vector<Size> sizes = c.options.quick ? std::vector<Size>{{512, 8, 1, 2048, 2, 64}}
                                                  : std::vector<Size>{{128, 8, 4, 512, 32, 16}, {512, 8, 6, 2048, 8, 128}};
  for (const Size& z : sizes) {
    TransformerConfig config;
    config.vocab_size = 0, config.classifier_head = false, config.final_norm = false;
    config.d_model = z.d, config.num_heads = z.heads, config.num_layers = z.layers, config.d_ff = z.d_ff;
    config.dropout = 0.0;
    TorchGenerator gen(0);
    const TransformerModel model = init_encoder(config, gen);
    DeviceModel device(c.backend, model);
    Tensor x = Tensor::from_shape({z.batch, z.seq, z.d});
    const auto values = random_floats(x.size(), 5);
    std::copy(values.begin(), values.end(), x.begin());
    Tensor y;  // every call's output is the same
    const Timing t = measure([&] { y = device.encode(x, nullptr, false); }, c.budget);
    batch::Fnv1a output;  // the output's bytes: the same on any number of threads
    output.update(y.data(), y.size() * sizeof(float));
    if (!c.options.dump.empty()) {
      const std::string stem = c.options.dump + "/encoder_d" + std::to_string(z.d);
      write_safetensors(stem + ".safetensors", state_dict(model));
      write_npy(stem + "_input.npy", x);
      write_npy(stem + "_output.npy", y);
    }
    const double rows = double(z.batch * z.seq), d = double(z.d), ff = double(z.d_ff);
    const double flops = double(z.layers) * (rows * (8 * d * d + 4 * d * ff) + 4.0 * rows * double(z.seq) * d);
    c.report("encoder", {{"batch", z.batch}, {"seq", z.seq}, {"d_model", z.d}, {"heads", z.heads}, {"layers", z.layers},
                         {"d_ff", z.d_ff}},
             t, flops, {{"tokens_per_s", rows / median(t.seconds)}, {"output_fnv1a64", output.hex()}});
  }
}

void bench_gemm(Context& c) {
  const double peak = c.peak_flops();
  c.results.push_back({{"case", "fma_peak"}, {"params", {{"threads", c.threads}}}, {"gflops", peak / 1e9}});
  const std::vector<size_t> sizes = c.options.quick ? std::vector<size_t>{256} : std::vector<size_t>{256, 512, 1024, 2048};
  for (size_t n : sizes) {
    const auto a = random_floats(n * n, 6), b = random_floats(n * n, 7);
    std::vector<float> out(n * n);
    Gemm g;
    g.m = g.n = g.k = n;
    g.a = a.data(), g.lda = n, g.b = b.data(), g.ldb = n, g.c = out.data(), g.ldc = n;
    const Timing t = measure([&] { gemm(g, &c.pool); }, c.budget);
    const double flops = 2.0 * double(n) * double(n) * double(n);
    c.report("gemm", {{"n", n}}, t, flops, {{"fraction_of_peak", flops / median(t.seconds) / peak}});
  }
}

// `n` items of `seq` ids drawn in [low, vocab) (std::mt19937 seeded 1), item i labelled i mod 5.
std::vector<train::LabelledItem> random_items(size_t n, size_t seq, size_t low, size_t vocab) {
  std::vector<train::LabelledItem> items(n);
  std::mt19937 draw(1);
  for (size_t i = 0; i < n; ++i) {
    items[i].line = i + 1, items[i].label = int64_t(i % 5);
    for (size_t s = 0; s < seq; ++s) items[i].ids.push_back(int64_t(low + draw() % (vocab - low)));
  }
  return items;
}

// One training step (forward in train mode with dropout 0.1, backward, AdamW) of the tutorial's classifier
// on B items of S tokens, at the tutorial classifier's size and the encoder's: by the exact path
// (PyTorch's rounding) and the fast one (attn train --backend cpu: fused products), on --threads.
void bench_train(Context& c) {
  struct Size {
    size_t d, heads, layers, vocab, batch, seq;
  };
  const std::vector<Size> sizes = c.options.quick ? std::vector<Size>{{32, 4, 1, 100, 4, 8}}
                                                  : std::vector<Size>{{128, 8, 4, 1000, 32, 16}, {512, 8, 6, 1000, 8, 128}};
  const double peak = c.peak_flops();
  for (const Size& z : sizes) {
    TransformerConfig config;
    config.vocab_size = z.vocab, config.d_model = z.d, config.num_heads = z.heads, config.num_layers = z.layers;
    config.max_len = z.seq, config.num_classes = 5;
    const std::vector<train::LabelledItem> items = random_items(z.batch, z.seq, 1, z.vocab);
    const double rows = double(z.batch * z.seq), d = double(z.d), ff = 4 * d;
    const double forward = double(z.layers) * (rows * (8 * d * d + 4 * d * ff) + 4.0 * rows * double(z.seq) * d);
    const double flops = 3 * forward;
    for (Rounding rounding : {Rounding::exact, Rounding::fused}) {
      TorchGenerator gen(0);
      TransformerModel model = init_transformer(config, gen);
      train::TrainSettings settings;
      settings.steps = size_t(1) << 30, settings.batch_size = z.batch, settings.shuffle = false;
      settings.rounding = rounding, settings.threads = c.threads;
      train::Trainer trainer(std::move(model), items, settings, gen);
      batch::Fnv1a losses;  // the first four steps' losses (measure takes at least four): the same on any threads
      size_t steps = 0;
      const Timing t = measure(
          [&] {
            const float loss = trainer.step().loss;
            if (steps++ < 4) losses.update(&loss, sizeof loss);
          },
          c.budget);
      c.report("train", {{"batch", z.batch}, {"seq", z.seq}, {"d_model", z.d}, {"heads", z.heads}, {"layers", z.layers},
                         {"vocab", z.vocab}, {"path", rounding == Rounding::exact ? "exact" : "fast"}},
               t, flops, {{"steps_per_s", 1 / median(t.seconds)}, {"fraction_of_peak", flops / median(t.seconds) / peak},
                   {"losses_fnv1a64", losses.hex()}});
    }
  }
}

// One training step of GPT-2 (GPT2LMHeadModel from its config, initialised as transformers does; dropout
// 0.1; the next-token loss; backward; AdamW) on B windows of S tokens: d 128 × 4 layers, S 64, B 16,
// vocab 256, and GPT-2 small's layer stack (d 768, 12 heads, 12 layers, vocab 50257) at S 128, B 4.
void bench_train_lm(Context& c) {
  struct Size {
    size_t d, heads, layers, vocab, batch, seq;
  };
  const std::vector<Size> sizes = c.options.quick ? std::vector<Size>{{32, 2, 1, 64, 2, 8}}
                                                  : std::vector<Size>{{128, 4, 4, 256, 16, 64}, {768, 12, 12, 50257, 4, 128}};
  const double peak = c.peak_flops();
  for (const Size& z : sizes) {
    PretrainedConfig config;
    config.family = ModelFamily::gpt2, config.vocab_size = z.vocab, config.hidden_size = z.d, config.num_heads = z.heads;
    config.num_layers = z.layers, config.intermediate_size = 4 * z.d, config.max_positions = z.seq;
    config.layer_norm_eps = 1e-5, config.activation = HiddenAct::gelu_new;
    const std::vector<train::LabelledItem> items = random_items(z.batch, z.seq, 0, z.vocab);
    const double rows = double(z.batch * z.seq), d = double(z.d);
    const double forward = double(z.layers) * (rows * 24 * d * d + 4.0 * rows * double(z.seq) * d) + 2 * rows * d * double(z.vocab);
    const double flops = 3 * forward;
    for (Rounding rounding : {Rounding::exact, Rounding::fused}) {
      TorchGenerator gen(0);
      PretrainedModel model = gpt2_init(config, gen);
      train::TrainSettings settings;
      settings.steps = size_t(1) << 30, settings.batch_size = z.batch, settings.shuffle = false;
      settings.rounding = rounding, settings.threads = c.threads;
      train::LmTrainer trainer(std::move(model), items, settings, gen);
      const Timing t = measure([&] { trainer.step(); }, c.budget);
      c.report("train-lm", {{"batch", z.batch}, {"seq", z.seq}, {"d_model", z.d}, {"heads", z.heads}, {"layers", z.layers},
                            {"vocab", z.vocab}, {"path", rounding == Rounding::exact ? "exact" : "fast"}},
               t, flops, {{"steps_per_s", 1 / median(t.seconds)}, {"fraction_of_peak", flops / median(t.seconds) / peak}});
    }
  }
}

// A GPT-2-shaped model of random weights (N(0, 0.02), as GPT-2 initialises them; LayerNorms 1 and 0).
PretrainedModel random_gpt2(size_t layers, size_t heads, size_t d, size_t vocab, size_t positions) {
  PretrainedModel m;
  PretrainedConfig& c = m.config;
  c.family = ModelFamily::gpt2, c.architecture = "GPT2LMHeadModel", c.vocab_size = vocab, c.hidden_size = d;
  c.num_heads = heads, c.num_layers = layers, c.intermediate_size = 4 * d, c.max_positions = positions;
  c.layer_norm_eps = 1e-5, c.activation = HiddenAct::gelu_new;
  uint32_t seed = 10;
  const auto tensor = [&](const Shape& shape) {
    Tensor t = Tensor::from_shape(shape);
    const std::vector<float> v = random_floats(t.size(), seed++, 0.02f);
    std::copy(v.begin(), v.end(), t.begin());
    return t;
  };
  const auto linear = [&](size_t out, size_t in) { return Linear{tensor({out, in}), tensor({out})}; };
  const auto norm = [&] {
    LayerNorm n{Tensor::from_shape({d}), Tensor::from_shape({d})};
    std::fill(n.weight.begin(), n.weight.end(), 1.0f);
    std::fill(n.bias.begin(), n.bias.end(), 0.0f);
    return n;
  };
  m.word_embeddings = tensor({vocab, d});
  m.position_embeddings = tensor({positions, d});
  for (size_t i = 0; i < layers; ++i)
    m.layers.push_back({linear(d, d), linear(d, d), linear(d, d), linear(d, d), linear(4 * d, d), linear(d, 4 * d), norm(), norm()});
  m.final_norm = norm();
  return m;
}

// attn patch's layer × head sweep on a GPT-2-small-shaped model of random weights and a 20-token
// prompt (one token differs between clean and corrupted): resumed at the patched layer, as attn patch
// runs, and with full reruns, to measure what resuming saves. PyTorch's peer reruns the whole model
// with a forward pre-hook per patch, as TransformerLens does.
void bench_patch(Context& c) {
  struct Size {
    size_t layers, heads, d, vocab, seq;
  };
  const Size z = c.options.quick ? Size{2, 4, 64, 1000, 8} : Size{12, 12, 768, 50257, 20};
  LoadedModel m;  // no tokenizer needed: the prompts are ids
  m.pretrained = std::make_shared<const Pretrained>(
      Pretrained{random_gpt2(z.layers, z.heads, z.d, z.vocab, 1024), BytePairTokenizer({}, {})});
  std::mt19937 draw(2);
  std::vector<int64_t> clean(z.seq);
  for (int64_t& id : clean) id = int64_t(draw() % z.vocab);
  std::vector<int64_t> corrupted = clean;
  corrupted[z.seq / 2] = (corrupted[z.seq / 2] + 1) % int64_t(z.vocab);
  const double d = double(z.d), S = double(z.seq);
  for (bool resume : {true, false}) {
    Patching p;
    const auto sweep = [&] {
      p = activation_patching(m, m.from_ids({clean}), m.from_ids({corrupted}), logit_difference(z.seq - 1, 0, 1),
                              {PatchKind::heads}, resume);
    };
    const Timing t = c.options.quick ? measure(sweep, c.budget) : measure_once(sweep);
    batch::Fnv1a recovery;
    recovery.update(p.sweeps[0].recovery.data(), p.sweeps[0].recovery.size() * sizeof(double));
    const double flops = S * (double(p.layers_run) * (24 * d * d + 4 * S * d) + double(p.runs) * 2 * d * double(z.vocab));
    c.report("patch", {{"layers", z.layers}, {"heads", z.heads}, {"d_model", z.d}, {"vocab", z.vocab}, {"seq", z.seq},
                       {"sweep", "heads"}, {"path", resume ? "resumed" : "full reruns"}},
             t, flops, {{"runs", p.runs}, {"layers_run", p.layers_run}, {"recovery_fnv1a64", recovery.hex()}});
  }
}

// attn generate's loop on a GPT-2-small-shaped model of random weights: a 20-token prompt, then 32 new
// tokens, greedy, each new one a single position through the model with every layer's keys and values
// cached (TokenGenerator). PyTorch's peer runs the same loop on its own cache, as transformers'
// generate(use_cache=True) does.
void bench_generate(Context& c) {
  struct Size {
    size_t layers, heads, d, vocab, prompt, new_tokens;
  };
  const Size z = c.options.quick ? Size{2, 4, 64, 1000, 8, 4} : Size{12, 12, 768, 50257, 20, 32};
  std::vector<std::string> tokens;  // a vocabulary to decode with: "t0", "t1", …
  for (size_t i = 0; i < z.vocab; ++i) tokens.push_back("t" + std::to_string(i));
  const Pretrained p{random_gpt2(z.layers, z.heads, z.d, z.vocab, 1024), BytePairTokenizer(std::move(tokens), {})};
  std::mt19937 draw(2);
  std::vector<int64_t> prompt(z.prompt);
  for (int64_t& id : prompt) id = int64_t(draw() % z.vocab);
  std::vector<int64_t> generated;
  const ProductMode products(Rounding::exact, &c.pool);  // attn generate's, on --threads
  const Timing t = measure(
      [&] {
        TokenGenerator g(p, prompt, z.new_tokens, SamplingOptions{0.0, 0, 1.0, 0});
        while (!g.done()) g.step();
        generated.clear();
        for (const GeneratedToken& token : g.generation().tokens) generated.push_back(token.id);
      },
      c.budget);
  // Each position: the layers' products (24 d² + 4 · context · d) and, for the prompt's last position and
  // each new one, the logits (2 d V).
  const double d = double(z.d);
  double flops = 0;
  for (size_t position = 0; position + 1 < z.prompt + z.new_tokens; ++position)
    flops += double(z.layers) * (24 * d * d + 4 * double(position + 1) * d) +
             (position + 1 >= z.prompt ? 2 * d * double(z.vocab) : 0);
  batch::Fnv1a ids;
  ids.update(generated.data(), generated.size() * sizeof(int64_t));
  c.report("generate", {{"layers", z.layers}, {"heads", z.heads}, {"d_model", z.d}, {"vocab", z.vocab},
                        {"prompt", z.prompt}, {"new_tokens", z.new_tokens}},
           t, flops, {{"tokens_per_s", double(z.new_tokens) / median(t.seconds)}, {"ids_fnv1a64", ids.hex()}});
}

// attn attribute's integrated gradients (50 Gauss–Legendre steps, the top next token) on a
// GPT-2-small-shaped model of random weights and 32 tokens: F and ∂F/∂x on 52 rows (the steps, the input
// and the baseline), forward and backward. PyTorch's peer batches the 50 steps as Captum does, its
// weights frozen and only the target's logit computed (its best; Captum on the stock model also runs the
// whole LM head).
void bench_attribute(Context& c) {
  struct Size {
    size_t layers, heads, d, vocab, seq, steps;
  };
  const Size z = c.options.quick ? Size{2, 4, 64, 1000, 8, 8} : Size{12, 12, 768, 50257, 32, 50};
  LoadedModel m;
  m.pretrained = std::make_shared<const Pretrained>(
      Pretrained{random_gpt2(z.layers, z.heads, z.d, z.vocab, 1024), BytePairTokenizer({}, {})});
  std::mt19937 draw(3);
  std::vector<int64_t> ids(z.seq);
  for (int64_t& id : ids) id = int64_t(draw() % z.vocab);
  const ProductMode products(Rounding::exact, &c.pool);  // attn attribute's, on --threads
  Attribution a;
  const auto run = [&] { a = attribute(m, m.from_ids({ids}), {AttributionMethod::integrated_gradients, {}, z.steps, false, {}}); };
  const Timing t = measure(run, c.budget);  // the median of 3 (seconds each): one sample swings by 20 % here
  // Forward and the input's backward: about twice the forward's products.
  const double d = double(z.d), S = double(z.seq), rows = double(z.steps + 2) * S;
  const double flops = 2 * double(z.layers) * (rows * 24 * d * d + 4 * rows * S * d);
  batch::Fnv1a scores;
  scores.update(a.scores.data(), a.scores.size() * sizeof(double));
  c.report("attribute", {{"layers", z.layers}, {"heads", z.heads}, {"d_model", z.d}, {"vocab", z.vocab}, {"seq", z.seq},
                         {"steps", z.steps}},
           t, flops, {{"delta", a.delta}, {"scores_fnv1a64", scores.hex()}});
}

// A SmolLM2-135M-shaped Llama (30 layers, hidden 576, 9 query heads over 3 key/value heads, MLP 1536,
// vocabulary 49152, tied embeddings) of random bfloat16 weights (N(0, 0.02) rounded, norms 1), kept in
// bfloat16 as a checkpoint's are, or widened to float32 (the same values).
struct DecoderSize {
  size_t layers, hidden, heads, kv_heads, intermediate, vocab;
};

DecoderModel random_llama(const DecoderSize& z, bool half) {
  DecoderModel m;
  DecoderConfig& c = m.config;
  c.model_type = "llama", c.architecture = "LlamaForCausalLM", c.vocab_size = z.vocab, c.hidden_size = z.hidden;
  c.num_layers = z.layers, c.intermediate_size = z.intermediate, c.max_positions = 8192, c.num_heads = z.heads;
  c.num_kv_heads = z.kv_heads, c.head_dim = z.hidden / z.heads, c.rms_norm_eps = 1e-5, c.rope_theta = 100000;
  c.tie_word_embeddings = true;
  uint32_t seed = 30;
  const auto matrix = [&](size_t out, size_t in) {
    const std::vector<float> v = random_floats(out * in, seed++, 0.02f);
    auto bits = std::make_shared<std::vector<uint16_t>>(v.size());
    for (size_t i = 0; i < v.size(); ++i) {  // round to nearest even, as torch's .to(torch.bfloat16)
      const uint32_t x = bits_of(v[i]);
      (*bits)[i] = uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
    }
    const Weight w(HalfType::bf16, {out, in}, std::shared_ptr<const uint16_t>(bits, bits->data()));
    return half ? w : Weight(w.widened());
  };
  const auto norm = [&] {
    LayerNorm n{Tensor::from_shape({z.hidden}), Tensor()};
    std::fill(n.weight.begin(), n.weight.end(), 1.0f);
    return n;
  };
  const size_t d = c.head_dim;
  m.embed_tokens = matrix(z.vocab, z.hidden);
  m.lm_head = m.embed_tokens;
  for (size_t i = 0; i < z.layers; ++i) {
    DecoderLayer l;
    l.input_norm = norm(), l.post_attention_norm = norm();
    l.q_proj.weight = matrix(z.heads * d, z.hidden), l.k_proj.weight = matrix(z.kv_heads * d, z.hidden);
    l.v_proj.weight = matrix(z.kv_heads * d, z.hidden), l.o_proj.weight = matrix(z.hidden, z.heads * d);
    l.gate_proj.weight = matrix(z.intermediate, z.hidden), l.up_proj.weight = matrix(z.intermediate, z.hidden);
    l.down_proj.weight = matrix(z.hidden, z.intermediate);
    m.layers.push_back(std::move(l));
  }
  m.norm = norm();
  return m;
}

DecoderSize decoder_size(const Context& c) {
  return c.options.quick ? DecoderSize{2, 64, 4, 2, 128, 1000} : DecoderSize{30, 576, 9, 3, 1536, 49152};
}

Json decoder_params(const DecoderSize& z, bool half) {
  return {{"layers", z.layers}, {"hidden", z.hidden}, {"heads", z.heads}, {"kv_heads", z.kv_heads},
          {"vocab", z.vocab}, {"weights", half ? "bfloat16" : "float32"}};
}

// The products of one position with `context` keys: q, k, v, o and the gated MLP, then the LM head's.
double decoder_position_flops(const DecoderSize& z, double context, bool logits) {
  const double H = double(z.hidden), kv = double(z.kv_heads * (z.hidden / z.heads)), I = double(z.intermediate);
  return double(z.layers) * (2 * H * (2 * H + 2 * kv) + 6 * H * I + 4 * context * H) + (logits ? 2 * H * double(z.vocab) : 0);
}

// attn encode's forward on the Llama above, 128 tokens, the weights in bfloat16 and in float32 (what
// products pay to widen bfloat16 while packing). PyTorch's peer: the same model in float32 (transformers'
// eager modules, tests/torchgen/decoder.py), the logits of every position, under inference_mode.
void bench_decoder(Context& c) {
  const DecoderSize z = decoder_size(c);
  const size_t seq = c.options.quick ? 16 : 128;
  std::mt19937 draw(4);
  std::vector<int64_t> ids(seq);
  for (int64_t& id : ids) id = int64_t(draw() % z.vocab);
  const ProductMode products(Rounding::exact, &c.pool);
  for (bool half : {true, false}) {
    const DecoderModel m = random_llama(z, half);
    float first = 0;
    const Timing t = measure([&] { first = decoder_forward(m, ids, 1, seq).at("logits").data()[0]; }, c.budget);
    double flops = 0;
    for (size_t p = 0; p < seq; ++p) flops += decoder_position_flops(z, double(p + 1), true);
    Json params = decoder_params(z, half);
    params["seq"] = seq;
    c.report("decoder", params, t, flops,
             {{"weights_mb", double(decoder_weight_bytes(m)) / 1048576.0}, {"first_logit", first}});
  }
}

// attn generate's loop on the Llama above: a 16-token prompt, then 64 new tokens, greedy, each one
// position through the model with the key/value heads' cache. PyTorch's peer runs the same loop on its
// own cache (transformers' generate(use_cache=True) at its best: the last position's logits alone).
void bench_decoder_generate(Context& c) {
  const DecoderSize z = decoder_size(c);
  const size_t prompt_length = c.options.quick ? 4 : 16, new_tokens = c.options.quick ? 4 : 64;
  std::mt19937 draw(5);
  std::vector<int64_t> prompt(prompt_length);
  for (int64_t& id : prompt) id = int64_t(draw() % z.vocab);
  const ProductMode products(Rounding::exact, &c.pool);  // attn generate's, on --threads
  for (bool half : {true, false}) {
    const DecoderModel m = random_llama(z, half);
    std::vector<int64_t> generated;
    const Timing t = measure(
        [&] {
          TokenGenerator g(causal_lm(m, nullptr, {}), prompt, new_tokens, SamplingOptions{0.0, 0, 1.0, 0});
          while (!g.done()) g.step();
          generated.clear();
          for (const GeneratedToken& token : g.generation().tokens) generated.push_back(token.id);
        },
        c.budget);
    double flops = 0;
    for (size_t p = 0; p + 1 < prompt_length + new_tokens; ++p)
      flops += decoder_position_flops(z, double(p + 1), p + 1 >= prompt_length);
    Json params = decoder_params(z, half);
    params["prompt"] = prompt_length, params["new_tokens"] = new_tokens;
    batch::Fnv1a hashed;
    hashed.update(generated.data(), generated.size() * sizeof(int64_t));
    c.report("decoder-generate", params, t, flops,
             {{"tokens_per_s", double(new_tokens) / median(t.seconds)}, {"ids_fnv1a64", hashed.hex()}});
  }
}

#if !defined(__EMSCRIPTEN__)
// The Llama above as a Hugging Face folder: config.json and a bfloat16 model.safetensors.
void write_llama_folder(const DecoderModel& m, const std::filesystem::path& dir) {
  const DecoderConfig& c = m.config;
  const Json config = {{"model_type", c.model_type}, {"architectures", {c.architecture}}, {"hidden_size", c.hidden_size},
                       {"num_hidden_layers", c.num_layers}, {"num_attention_heads", c.num_heads},
                       {"num_key_value_heads", c.num_kv_heads}, {"intermediate_size", c.intermediate_size},
                       {"vocab_size", c.vocab_size}, {"max_position_embeddings", c.max_positions},
                       {"rms_norm_eps", c.rms_norm_eps}, {"rope_theta", c.rope_theta}, {"hidden_act", "silu"},
                       {"tie_word_embeddings", true}, {"torch_dtype", "bfloat16"}};
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  write_safetensors_weights((dir / "model.safetensors").string(), decoder_weights(m));
}

// attn encode's peak resident memory (VmHWM) on that folder with 128 token ids, a child process of this
// program, against the checkpoint's size and the activations the trace keeps (every stage, float32).
void bench_decoder_memory(Context& c) {
  const DecoderSize z = decoder_size(c);
  const size_t seq = c.options.quick ? 16 : 128;
  const DecoderModel m = random_llama(z, true);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("attn-bench-llama-" + std::to_string(getpid()));
  write_llama_folder(m, dir);
  std::string ids;
  for (size_t i = 0; i < seq; ++i) ids += (i ? " " : "") + std::to_string((i * 7919) % z.vocab);
  const std::vector<std::string> args = {"attn", "encode", "--model-dir", dir.string(), "--ids", ids};
  struct rusage usage {};
  const double start = now();
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!std::freopen("/dev/null", "w", stdout)) _exit(127);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  const bool ran = pid > 0 && wait4(pid, &status, 0, &usage) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const double seconds = now() - start;
  const double file = double(std::filesystem::file_size(dir / "model.safetensors"));
  std::filesystem::remove_all(dir);
  if (!ran) throw InputError("attn encode on the benchmark's bfloat16 checkpoint failed");
  const double rss = double(usage.ru_maxrss) * 1024.0, activations = 4.0 * decoder_trace_floats(m.config, 1, seq);
  Json params = decoder_params(z, true);
  params["seq"] = seq;
  c.report("decoder-memory", params, Timing{{seconds}, 0}, 0,
           {{"peak_rss_mb", rss / 1048576.0}, {"file_mb", file / 1048576.0}, {"activations_mb", activations / 1048576.0},
            {"rss_over_file_plus_activations", rss / (file + activations)}});
}
#endif

const std::vector<std::pair<std::string, void (*)(Context&)>> all_cases = {
    {"tutorial", bench_tutorial}, {"sdpa", bench_sdpa},   {"mha", bench_mha},    {"encoder", bench_encoder},
    {"gemm", bench_gemm},         {"train", bench_train}, {"patch", bench_patch},  {"train-lm", bench_train_lm},
    {"generate", bench_generate}, {"attribute", bench_attribute}, {"decoder", bench_decoder},
    {"decoder-generate", bench_decoder_generate},
#if !defined(__EMSCRIPTEN__)
    {"decoder-memory", bench_decoder_memory},
#endif
};

// ---------------------------------------------------------------------------------------------
// PyTorch side by side

#if !defined(__EMSCRIPTEN__)
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// tests/bench_torch.py with PyTorch's best settings for this thread count (see docs/speed.md).
Json run_torch(const BenchOptions& o, const std::vector<std::string>& cases, size_t threads) {
  std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE LD_LIBRARY_PATH=" +
                    shell_quote(std::string(ATTN_SOURCE_DIR) + "/.deps/openblas/usr/lib/x86_64-linux-gnu/openblas-pthread");
  if (threads == 2) cmd += " OMP_WAIT_POLICY=PASSIVE";
  cmd += " " + shell_quote(o.torch_python) + " " + shell_quote(std::string(ATTN_SOURCE_DIR) + "/tests/bench_torch.py");
  cmd += " --threads " + std::to_string(threads);
  if (o.quick) cmd += " --quick";
  for (const auto& c : cases) cmd += " " + c;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw InputError("could not start " + o.torch_python);
  std::string text;
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof chunk, pipe)) > 0;) text.append(chunk, n);
  if (pclose(pipe) != 0) throw InputError("the PyTorch benchmark failed: " + cmd);
  return Json::parse(text);
}

// PyTorch has one path: ours, exact or fast ("path"), both meet the same PyTorch case.
std::string key_of(const Json& r) {
  Json params = r["params"];
  params.erase("path");
  return r["case"].get<std::string>() + params.dump();
}

// Adds torch_* fields and ratios (PyTorch's time / ours: > 1 means faster here) to matching cases.
void merge_torch(Json& ours, const Json& torch) {
  for (Json& r : ours) {
    for (const Json& t : torch["results"]) {
      if (key_of(t) != key_of(r)) continue;
      if (t.contains("median_s") && r.contains("median_s")) {
        r["torch_median_s"] = t["median_s"];
        r["speedup"] = t["median_s"].get<double>() / r["median_s"].get<double>();
        r["torch_extra_memory_mb"] = t["extra_memory_mb"];
        if (t.contains("variant")) r["torch_variant"] = t["variant"];
      }
    }
  }
}

#endif

std::string format_row(const Json& r) {
  char line[512];
  if (r["case"] == "fma_peak") {
    std::snprintf(line, sizeof line, "%-9s %-44s %39.1f GFLOP/s", "fma_peak", r["params"].dump().c_str(),
                  r["gflops"].get<double>());
    return line;
  }
  std::snprintf(line, sizeof line, "%-9s %-44s %10.4g %10.4g %10.4g %8.1f %9.1f", r["case"].get<std::string>().c_str(),
                r["params"].dump().c_str(), r["median_s"].get<double>() * 1e3, r["min_s"].get<double>() * 1e3,
                r["max_s"].get<double>() * 1e3, r["gflops"].get<double>(), r["extra_memory_mb"].get<double>());
  std::string out = line;
  if (r.contains("fraction_of_peak")) out += "  " + std::to_string(int(std::lround(100 * r["fraction_of_peak"].get<double>()))) + "% of peak";
  if (r.contains("tokens_per_s")) out += "  " + std::to_string(std::lround(r["tokens_per_s"].get<double>())) + " tokens/s";
  if (r.contains("weights_mb")) {
    std::snprintf(line, sizeof line, "  weights %.1f MB", r["weights_mb"].get<double>());
    out += line;
  }
  if (r.contains("file_mb")) {
    std::snprintf(line, sizeof line, "  peak RSS %.1f MB = %.2fx (file %.1f MB + activations %.1f MB)",
                  r["peak_rss_mb"].get<double>(), r["rss_over_file_plus_activations"].get<double>(),
                  r["file_mb"].get<double>(), r["activations_mb"].get<double>());
    out += line;
  }
  if (r.contains("steps_per_s")) {
    std::snprintf(line, sizeof line, "  %.1f steps/s", r["steps_per_s"].get<double>());
    out += line;
  }
  if (r.contains("speedup")) {
    std::snprintf(line, sizeof line, "  | torch %.4g ms: %.2fx, memory %.1f MB", r["torch_median_s"].get<double>() * 1e3,
                  r["speedup"].get<double>(), r["torch_extra_memory_mb"].get<double>());
    out += line;
  }
  return out;
}

}  // namespace

void add_bench_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("cases", o.cases, "tutorial, sdpa, mha, encoder, gemm, train, patch, train-lm, generate, attribute (default: all)");
  cmd.add_option("--threads", o.threads, "threads (default: the number of cores)");
  cmd.add_option("--isa", o.isa, "force the kernels' instruction set: avx512, avx2, sse4.2");
  cmd.add_option("--backend", o.backend, "compute backend of the sdpa, mha and encoder cases (cpu, gl, cuda, auto)");
  cmd.add_flag("--torch", o.torch, "run the same cases in PyTorch (tests/bench_torch.py) and print ratios");
  cmd.add_option("--torch-python", o.torch_python, "the Python with PyTorch (default /usr/bin/python3)");
  cmd.add_flag("--quick", o.quick, "small sizes only (a smoke test)");
  cmd.add_flag("--json", o.json, "print the results as JSON");
  cmd.add_option("--dump", o.dump,
                 "write each encoder size's weights (DIR/encoder_dD.safetensors), input and output (_input.npy, "
                 "_output.npy) into the folder DIR, for another engine to run (tests/ort)");
}

void add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", "time the kernels and the model, side by side with PyTorch (--torch)");
  add_bench_options(*cmd, o);
  cmd->callback([&o] { run_bench(o); });
}

void run_bench(const BenchOptions& o) {
  for (const std::string& name : o.cases)
    if (std::none_of(all_cases.begin(), all_cases.end(), [&](const auto& c) { return c.first == name; }))
      throw InputError("unknown benchmark case '" + name +
                       "' (expected tutorial, sdpa, mha, encoder, gemm, train, patch, train-lm, generate, attribute, "
                       "decoder, decoder-generate or decoder-memory)");
  if (!o.isa.empty()) set_kernel_isa(o.isa);
  const size_t threads = o.threads.empty() ? hardware_threads() : parse_size("--threads", o.threads, 1);
  ThreadPool pool(threads);
  std::string note = "cpu";
#if defined(ATTN_HAVE_BACKENDS)
  std::unique_ptr<Backend> backend = make_backend(o.backend, threads, note);
#else
  if (o.backend != "cpu") throw InputError("only the cpu backend exists in this build");
  std::unique_ptr<Backend> backend = make_cpu_backend(threads);
#endif
  Context c{o, threads, pool, *backend, o.quick ? 0.05 : 0.5};
  std::vector<std::string> ran;
  for (const auto& [name, fn] : all_cases)
    if (o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), name) != o.cases.end()) {
      fn(c);
      ran.push_back(name);
    }
  Json doc = {{"isa", kernel_isa()}, {"threads", threads}, {"backend", note}};
  if (o.torch) {
#if !defined(__EMSCRIPTEN__)
    const Json torch = run_torch(o, ran, threads);
    merge_torch(c.results, torch);
    doc["torch"] = torch["torch"].get<std::string>() + " (" + torch["blas"].get<std::string>() + ")";
#else
    throw InputError("--torch runs natively only");
#endif
  }
  doc["results"] = c.results;
  if (o.json) return print(doc.dump(2) + "\n");
  std::ostringstream out;
  out << "attn bench: kernels " << kernel_isa() << ", " << threads << " thread(s), backend " << note << "\n";
  if (doc.contains("torch")) out << "PyTorch " << doc["torch"].get<std::string>() << "; ratios are PyTorch's time / ours\n";
  out << "case      params                                        median ms     min ms     max ms  GFLOP/s  extra MB\n";
  for (const Json& r : c.results) out << format_row(r) << "\n";
  print(out.str());
}

}  // namespace attn::cli
