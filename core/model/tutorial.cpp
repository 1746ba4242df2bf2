#include "core/model/tutorial.hpp"

#include <cmath>

#include "core/base/error.hpp"
#include "core/kernels/kernels.hpp"
#include "core/base/memory.hpp"
#include "core/torch/rng.hpp"

namespace attn {

std::vector<std::string> tutorial_sentences() {
  return {"나는 오늘 학교에 간다", "나는 오늘 도서관에 간다", "오늘 나는 학교에서 공부한다", "나는 집에 간다"};
}

namespace {

void validate(const TutorialConfig& c, const TokenBatch& batch, size_t vocab_size) {
  if (c.d_model < 2 || c.d_model % 2 != 0)
    throw InputError("d_model must be an even number >= 2 (got " + std::to_string(c.d_model) +
                     "): the sinusoidal positional encoding pairs sin and cos columns");
  if (c.max_len < 1) throw InputError("max_len must be at least 1");
  if (batch.seq > c.max_len)
    throw InputError("a sentence has " + std::to_string(batch.seq) + " tokens, more than max_len " +
                     std::to_string(c.max_len));
  // Everything the run keeps, in float32: parameters, the positional table, ~8 [B,S,d] and ~5 [B,S,S]
  // tensors (trace plus temporaries). Doubles cannot overflow here.
  const double d = double(c.d_model), bs = double(batch.batch) * double(batch.seq);
  const double floats = double(vocab_size) * d + double(c.max_len) * d + 3 * d * d + 8 * bs * d +
                        5 * bs * double(batch.seq);
  check_fits_in_memory(4 * floats, "this configuration");
}

Tensor draw_linear_weight(TorchGenerator& g, size_t out_features, size_t in_features) {
  Tensor w = Tensor::from_shape({out_features, in_features});
  linear_init(g, w.data(), nullptr, out_features, in_features);
  return w;
}

Tensor ids_tensor(const TokenBatch& batch) {
  Tensor t = Tensor::from_shape({batch.batch, batch.seq});
  std::copy(batch.ids.begin(), batch.ids.end(), t.begin());
  return t;
}

}  // namespace

TutorialRun run_tutorial(const TutorialConfig& config, const Hooks* hooks) {
  TutorialRun run{config, Vocab(), TokenBatch(), TutorialParameters(), Trace()};
  run.batch = tokenize_batch(config.sentences, run.vocab);
  validate(config, run.batch, run.vocab.size());
  const size_t d = config.d_model, B = run.batch.batch, S = run.batch.seq;

  // Parameters in PyTorch's construction order: Embedding, then W_Q, W_K, W_V.
  TorchGenerator gen(config.seed);
  auto& p = run.parameters;
  p.embedding = Tensor::from_shape({run.vocab.size(), d});
  embedding_init(gen, p.embedding.data(), run.vocab.size(), d, 0);
  p.w_q = draw_linear_weight(gen, d, d);
  p.w_k = draw_linear_weight(gen, d, d);
  p.w_v = draw_linear_weight(gen, d, d);

  // Hooks (core/model/interventions.hpp) may replace every stage the pass continues from; the inputs,
  // the mask and the steps inside the attention kernel before its weights are recorded only.
  run.trace = Trace(hooks);
  Trace& t = run.trace;
  t.record("token_ids", ids_tensor(run.batch), PrintDtype::int64);
  Tensor embedding = embed(p.embedding, run.batch.ids, B, S);
  t.stage("embedding", embedding);
  const Tensor table = positional_encoding_table(config.max_len, d);
  Tensor used = Tensor::from_shape({1, S, d});
  std::copy_n(table.data(), S * d, used.data());
  t.record("positional_encoding", used);
  Tensor x = add_positional_encoding(embedding, table);
  t.stage("embedded", x);
  Tensor q = linear(x, p.w_q), k = linear(x, p.w_k), v = linear(x, p.w_v);
  t.stage("query", q);
  t.stage("key", k);
  t.stage("value", v);
  const MaskTensor mask = attention_mask(config.mask, run.batch.ids, B, S);
  t.record("mask", to_tensor(mask), PrintDtype::boolean);
  AttentionSteps a = scaled_dot_product_attention(q, k, v, {config.mask == MaskKind::none ? nullptr : &mask});
  t.record("scores", std::move(a.scores));
  t.record("scaled_scores", std::move(a.scaled_scores));
  t.record("masked_scores", std::move(a.masked_scores));
  if (t.hooked("attention_weights")) {
    t.stage("attention_weights", a.attention_weights);
    attend_to_values(a.attention_weights, v, a.attention_output);  // a replaced pattern: its output again
  } else {
    t.record("attention_weights", std::move(a.attention_weights));
  }
  t.stage("attention_output", a.attention_output);
  if (hooks) hooks->check_reached(t);
  return run;
}

TutorialForward::TutorialForward(const TutorialRun& run)
    : run_(run), table_(positional_encoding_table(run.batch.seq, run.config.d_model)) {
  const size_t rows = run.batch.batch * run.batch.seq, d = run.config.d_model, S = run.batch.seq;
  for (auto* b : {&x_, &q_, &k_, &v_, &out_}) b->resize(rows * d);
  scores_.resize(rows * S);
  mask_.resize(rows * S);
}

const std::vector<float>& TutorialForward::operator()(const std::vector<int64_t>& ids) {
  const TutorialParameters& p = run_.parameters;
  const size_t B = run_.batch.batch, S = run_.batch.seq, d = run_.config.d_model, rows = B * S;
  for (size_t t = 0; t < rows; ++t) std::copy_n(p.embedding.data() + size_t(ids[t]) * d, d, x_.data() + t * d);
  multiply_scalar(x_.data(), x_.size(), float(std::sqrt(double(d))));
  for (size_t b = 0; b < B; ++b) add(x_.data() + b * S * d, table_.data(), x_.data() + b * S * d, S * d);
  matmul_nt(x_.data(), p.w_q.data(), q_.data(), rows, d, d);
  matmul_nt(x_.data(), p.w_k.data(), k_.data(), rows, d, d);
  matmul_nt(x_.data(), p.w_v.data(), v_.data(), rows, d, d);
  for (size_t b = 0; b < B; ++b)
    matmul_nt(q_.data() + b * S * d, k_.data() + b * S * d, scores_.data() + b * S * S, S, d, S);
  divide_scalar(scores_.data(), scores_.size(), float(std::sqrt(double(d))));
  const bool padding = masks_padding(run_.config.mask), causal = masks_future(run_.config.mask);
  for (size_t b = 0; b < B; ++b)
    for (size_t i = 0; i < S; ++i)
      for (size_t j = 0; j < S; ++j)
        mask_[(b * S + i) * S + j] = (!padding || ids[b * S + j] != 0) && (!causal || j <= i);
  if (run_.config.mask != MaskKind::none) masked_fill(scores_.data(), mask_.data(), mask_.size(), -1e9f);
  softmax_rows(scores_.data(), rows, S);
  for (size_t b = 0; b < B; ++b)
    matmul(scores_.data() + b * S * S, v_.data() + b * S * d, out_.data() + b * S * d, S, S, d);
  return out_;
}

Json tutorial_json(const TutorialRun& run) {
  const auto& c = run.config;
  Json config = {{"seed", c.seed},         {"d_model", c.d_model}, {"d_k", c.d_model},
                 {"d_v", c.d_model},       {"max_len", c.max_len}, {"mask", mask_kind_name(c.mask)},
                 {"dropout", 0.0f},        {"batch", run.batch.batch}, {"seq", run.batch.seq},
                 {"vocab_size", run.vocab.size()}};
  Json vocab = Json::object();
  for (size_t id = 0; id < run.vocab.size(); ++id) vocab[run.vocab.tokens()[id]] = id;
  return {{"config", std::move(config)}, {"vocab", std::move(vocab)}, {"tokens", run.batch.tokens},
          {"stages", stages_json(run.trace)}};
}

}  // namespace attn
