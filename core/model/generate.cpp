#include "core/model/generate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/model/pretrained.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/torch/rng.hpp"

namespace attn {

void check_sampling(const SamplingOptions& o) {
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw InputError("--temperature must be 0 (greedy) or positive and finite, got " + std::to_string(o.temperature));
  if (!(o.top_p > 0 && o.top_p <= 1)) throw InputError("--top-p must be in (0, 1], got " + std::to_string(o.top_p));
}

namespace {

// Softmax over the entries of `x` that are not -inf, in double.
std::vector<double> softmax_kept(const std::vector<float>& x) {
  const float max = *std::max_element(x.begin(), x.end());
  std::vector<double> p(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += p[i] = std::isinf(x[i]) ? 0.0 : std::exp(double(x[i]) - double(max));
  for (double& v : p) v /= sum;
  return p;
}

// TopKLogitsWarper: every score below the k-th largest becomes -inf.
void keep_top_k(std::vector<float>& scores, size_t k) {
  if (k == 0 || k >= scores.size()) return;
  std::vector<float> sorted = scores;
  std::nth_element(sorted.begin(), sorted.begin() + std::ptrdiff_t(k - 1), sorted.end(), std::greater<float>());
  const float threshold = sorted[k - 1];
  for (float& s : scores)
    if (s < threshold) s = -std::numeric_limits<float>::infinity();
}

// TopPLogitsWarper: in ascending order of score, the tokens whose cumulative probability stays <= 1 − p
// become -inf (the likeliest token always stays).
void keep_top_p(std::vector<float>& scores, double top_p) {
  if (top_p >= 1) return;
  const std::vector<double> p = softmax_kept(scores);
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double cumulative = 0;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    cumulative += p[order[i]];
    if (cumulative > 1 - top_p) break;
    scores[order[i]] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace

std::vector<double> next_token_distribution(const float* logits, size_t vocab, const SamplingOptions& o) {
  std::vector<float> scores(logits, logits + vocab);
  if (o.temperature == 0) return softmax_kept(scores);
  for (float& s : scores) s = s / float(o.temperature);
  keep_top_k(scores, o.top_k);
  keep_top_p(scores, o.top_p);
  return softmax_kept(scores);
}

namespace {

// The first token whose cumulative probability (vocabulary order) passes u · total: u = torch.rand(1).
size_t draw(const std::vector<double>& p, TorchGenerator& gen) {
  float u = 0;
  gen.uniform_(&u, 1, 0.0, 1.0);
  const double target = double(u) * std::accumulate(p.begin(), p.end(), 0.0);
  double cumulative = 0;
  size_t last = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    last = i;
    cumulative += p[i];
    if (cumulative > target) return i;
  }
  return last;  // rounding left u · total past the end
}

// The last query row of each layer's attention weights [1, heads, Sq, Sk]: [heads, Sk].
std::vector<Tensor> last_row_attention(const Trace& t, size_t layers) {
  std::vector<Tensor> out;
  for (size_t l = 0; l < layers; ++l) {
    const Tensor& w = t.at(attention_weights_stage(ModelFamily::gpt2, l));
    const size_t heads = w.shape(1), sq = w.shape(2), sk = w.shape(3);
    Tensor row = Tensor::from_shape({heads, sk});
    for (size_t h = 0; h < heads; ++h) std::copy_n(w.data() + (h * sq + sq - 1) * sk, sk, row.data() + h * sk);
    out.push_back(std::move(row));
  }
  return out;
}

PretrainedInput one_token(int64_t id) { return {{id}, {}, {1}, 1, 1}; }

// The distribution's likeliest tokens, most likely first (the first id of equals first).
std::vector<NextToken> candidates(const Pretrained& p, const std::vector<double>& dist) {
  std::vector<size_t> order(dist.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const size_t k = std::min(candidates_kept, order.size());
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                    [&](size_t a, size_t b) { return dist[a] > dist[b] || (dist[a] == dist[b] && a < b); });
  std::vector<NextToken> out;
  for (size_t i = 0; i < k && dist[order[i]] > 0; ++i)
    out.push_back({int64_t(order[i]), token_label(p, int64_t(order[i])), dist[order[i]]});
  return out;
}

}  // namespace

namespace {

// The prompt's ids through the checkpoint's tokenizer (the model is checked with them).
std::vector<int64_t> prompt_ids(const Pretrained& p, const std::string& prompt) {
  if (prompt.empty()) throw InputError("the prompt is empty: give the text to continue");
  return tokenize_pretrained(p, {prompt}).input.ids;
}

}  // namespace

TokenGenerator::TokenGenerator(const Pretrained& p, const std::string& prompt, size_t max_new_tokens,
                               const SamplingOptions& o)
    : TokenGenerator(p, prompt_ids(p, prompt), max_new_tokens, o) {}

TokenGenerator::TokenGenerator(const Pretrained& p, std::vector<int64_t> ids, size_t max_new_tokens,
                               const SamplingOptions& o)
    : p_(p), max_new_tokens_(max_new_tokens), o_(o), end_(tokenizer_find(p.tokenizer, "<|endoftext|>")), gen_(o.seed) {
  const PretrainedModel& m = p.model;
  if (m.config.family != ModelFamily::gpt2) throw InputError("generation needs a GPT-2 checkpoint (this one is BERT)");
  check_sampling(o);
  if (ids.empty()) throw InputError("the prompt is empty: give the text to continue");
  for (int64_t id : ids)
    if (id < 0 || size_t(id) >= m.config.vocab_size)
      throw InputError("prompt id " + std::to_string(id) + " is outside the model's " + std::to_string(m.config.vocab_size) +
                       " tokens");
  const size_t S = ids.size(), positions = m.config.max_positions;
  if (S + max_new_tokens > positions)
    throw InputError("the prompt's " + std::to_string(S) + " tokens and " + std::to_string(max_new_tokens) +
                     " new ones make more than the model's " + std::to_string(positions) + " positions");
  g_.prompt_ids = std::move(ids);
  for (int64_t id : g_.prompt_ids) g_.prompt_tokens.push_back(token_label(p, id));
  trace_ = gpt2_forward(m, {g_.prompt_ids, {}, {S}, 1, S}, nullptr, nullptr, &cache_);
  for (int64_t id : g_.prompt_ids) text_tokens_.push_back(tokenizer_token(p.tokenizer, id));
  g_.text = byte_level_text(text_tokens_);
  done_ = max_new_tokens == 0;
}

void TokenGenerator::step() {
  if (done_) return;
  const PretrainedModel& m = p_.model;
  const size_t V = m.config.vocab_size;
  const Tensor& logits = trace_.at("logits");
  const std::vector<double> dist = next_token_distribution(logits.data() + (logits.shape(1) - 1) * V, V, o_);
  const size_t id = o_.temperature == 0 ? size_t(std::max_element(dist.begin(), dist.end()) - dist.begin()) : draw(dist, gen_);
  g_.tokens.push_back({int64_t(id), token_label(p_, int64_t(id)), dist[id], last_row_attention(trace_, m.layers.size()),
                       candidates(p_, dist)});
  text_tokens_.push_back(tokenizer_token(p_.tokenizer, int64_t(id)));
  g_.text = byte_level_text(text_tokens_);
  done_ = (end_ && int64_t(id) == *end_) || g_.tokens.size() == max_new_tokens_;
  if (!done_) trace_ = gpt2_forward(m, one_token(int64_t(id)), nullptr, nullptr, &cache_);
}

Generation generate(const Pretrained& p, const std::string& prompt, size_t max_new_tokens, const SamplingOptions& o) {
  TokenGenerator generator(p, prompt, max_new_tokens, o);
  while (!generator.done()) generator.step();
  return generator.generation();
}

namespace {

// A whole number >= min from a JSON number; else an InputError naming `key`.
uint64_t whole_number(const Json& v, const std::string& key, uint64_t min) {
  return json_integer<uint64_t>(v, "generate: " + key, min);
}

double number(const Json& v, const std::string& key) { return json_number(v, "generate: " + key); }

}  // namespace

GenerateSettings generate_settings(const Json& j) {
  if (!j.is_object()) throw InputError("generate expects an object {prompt, max_new_tokens, temperature, top_k, top_p, seed}");
  GenerateSettings g;
  for (const auto& [key, v] : j.items()) {
    if (key == "prompt") {
      if (!v.is_string()) throw InputError("generate: prompt expects a string, got " + v.dump());
      g.prompt = v.get<std::string>();
    } else if (key == "max_new_tokens") {
      g.max_new_tokens = size_t(whole_number(v, key, 1));
    } else if (key == "temperature") {
      g.sampling.temperature = number(v, key);
    } else if (key == "top_k") {
      g.sampling.top_k = size_t(whole_number(v, key, 0));
    } else if (key == "top_p") {
      g.sampling.top_p = number(v, key);
    } else if (key == "seed") {
      g.sampling.seed = whole_number(v, key, 0);
    } else {
      throw InputError("generate: unknown setting '" + key + "' (prompt, max_new_tokens, temperature, top_k, top_p, seed)");
    }
  }
  check_sampling(g.sampling);
  return g;
}

Json generation_json(const Pretrained& p, const Generation& g, size_t max_new_tokens, const SamplingOptions& o) {
  Json generated = Json::array();
  for (const GeneratedToken& t : g.tokens) {
    Json layers = Json::array();
    for (const Tensor& a : t.attention) {
      Json heads = Json::array();
      for (size_t h = 0; h < a.shape(0); ++h)
        heads.push_back(std::vector<float>(a.data() + h * a.shape(1), a.data() + (h + 1) * a.shape(1)));
      layers.push_back(std::move(heads));
    }
    generated.push_back({{"id", t.id}, {"token", t.token}, {"probability", t.probability}, {"attention", std::move(layers)}});
  }
  const PretrainedConfig& c = p.model.config;
  return {{"model", {{"architecture", c.architecture}, {"layers", c.num_layers}, {"heads", c.num_heads}}},
          {"prompt", {{"ids", g.prompt_ids}, {"tokens", g.prompt_tokens}}},
          {"settings", {{"max_new_tokens", max_new_tokens}, {"temperature", o.temperature}, {"top_k", o.top_k},
                        {"top_p", o.top_p}, {"seed", o.seed}}},
          {"generated", std::move(generated)},
          {"text", g.text}};
}

}  // namespace attn
