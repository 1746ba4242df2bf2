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
std::vector<Tensor> last_row_attention(const Trace& t, const CausalLM& lm) {
  std::vector<Tensor> out;
  for (size_t l = 0; l < lm.layers; ++l) {
    const Tensor& w = t.at(lm.attention_weights(l));
    const size_t heads = w.shape(1), sq = w.shape(2), sk = w.shape(3);
    Tensor row = Tensor::from_shape({heads, sk});
    for (size_t h = 0; h < heads; ++h) std::copy_n(w.data() + (h * sq + sq - 1) * sk, sk, row.data() + h * sk);
    out.push_back(std::move(row));
  }
  return out;
}

// The distribution's likeliest tokens, most likely first (the first id of equals first).
std::vector<NextToken> candidates(const CausalLM& lm, const std::vector<double>& dist) {
  std::vector<size_t> order(dist.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const size_t k = std::min(candidates_kept, order.size());
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                    [&](size_t a, size_t b) { return dist[a] > dist[b] || (dist[a] == dist[b] && a < b); });
  std::vector<NextToken> out;
  for (size_t i = 0; i < k && dist[order[i]] > 0; ++i)
    out.push_back({int64_t(order[i]), lm.label(int64_t(order[i])), dist[order[i]]});
  return out;
}

}  // namespace

CausalLM causal_lm(const Pretrained& p) {
  const PretrainedConfig& c = p.model.config;
  if (c.family != ModelFamily::gpt2) throw InputError("generation needs a GPT-2 checkpoint (this one is BERT)");
  CausalLM lm{c.vocab_size, c.max_positions, c.num_layers, {}, {}, {}, {}, {}, {}};
  if (const auto end = tokenizer_find(p.tokenizer, "<|endoftext|>")) lm.ends = {*end};
  lm.label = [&p](int64_t id) { return token_label(p, id); };
  lm.text = [&p](const std::vector<int64_t>& ids) {
    std::vector<std::string> tokens;
    for (int64_t id : ids) tokens.push_back(tokenizer_token(p.tokenizer, id));
    return byte_level_text(tokens);
  };
  lm.forward = [&p](const std::vector<int64_t>& ids, KeyValueCache& cache) {
    return gpt2_forward(p.model, {ids, {}, {ids.size()}, 1, ids.size()}, nullptr, nullptr, &cache);
  };
  lm.attention_weights = [](size_t layer) { return attention_weights_stage(ModelFamily::gpt2, layer); };
  lm.description = {{"architecture", c.architecture}, {"layers", c.num_layers}, {"heads", c.num_heads}};
  return lm;
}

CausalLM causal_lm(const DecoderModel& m, const JsonTokenizer* tokenizer, std::vector<int64_t> ends) {
  const DecoderConfig& c = m.config;
  CausalLM lm{c.vocab_size, c.max_positions, c.num_layers, std::move(ends), {}, {}, {}, {}, {}};
  lm.label = [tokenizer](int64_t id) {
    return tokenizer && size_t(id) < tokenizer->size() ? tokenizer->label(id) : "<id " + std::to_string(id) + ">";
  };
  lm.text = [tokenizer, label = lm.label](const std::vector<int64_t>& ids) {
    if (tokenizer) return tokenizer->decode(ids);
    std::string out;
    for (int64_t id : ids) out += (out.empty() ? "" : " ") + label(id);
    return out;
  };
  lm.forward = [&m](const std::vector<int64_t>& ids, KeyValueCache& cache) {
    return decoder_forward(m, ids, 1, ids.size(), nullptr, &cache);
  };
  lm.attention_weights = [](size_t layer) { return "model.layers." + std::to_string(layer) + ".self_attn.attn_weights"; };
  lm.description = {{"architecture", c.architecture}, {"layers", c.num_layers}, {"heads", c.num_heads},
                    {"key_value_heads", c.num_kv_heads}};
  return lm;
}

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
    : TokenGenerator(causal_lm(p), std::move(ids), max_new_tokens, o) {}

TokenGenerator::TokenGenerator(CausalLM lm, std::vector<int64_t> ids, size_t max_new_tokens, const SamplingOptions& o)
    : lm_(std::move(lm)), max_new_tokens_(max_new_tokens), o_(o), gen_(o.seed) {
  check_sampling(o);
  if (ids.empty()) throw InputError("the prompt is empty: give the text to continue");
  for (int64_t id : ids)
    if (id < 0 || size_t(id) >= lm_.vocab)
      throw InputError("prompt id " + std::to_string(id) + " is outside the model's " + std::to_string(lm_.vocab) + " tokens");
  if (ids.size() + max_new_tokens > lm_.positions)
    throw InputError("the prompt's " + std::to_string(ids.size()) + " tokens and " + std::to_string(max_new_tokens) +
                     " new ones make more than the model's " + std::to_string(lm_.positions) + " positions");
  g_.prompt_ids = ids;
  for (int64_t id : ids) g_.prompt_tokens.push_back(lm_.label(id));
  trace_ = lm_.forward(ids, cache_);
  g_.text = lm_.text(ids);
  ids_ = std::move(ids);
  done_ = max_new_tokens == 0;
}

void TokenGenerator::step() {
  if (done_) return;
  const size_t V = lm_.vocab;
  const Tensor& logits = trace_.at("logits");
  const std::vector<double> dist = next_token_distribution(logits.data() + (logits.shape(1) - 1) * V, V, o_);
  const size_t id = o_.temperature == 0 ? size_t(std::max_element(dist.begin(), dist.end()) - dist.begin()) : draw(dist, gen_);
  g_.tokens.push_back({int64_t(id), lm_.label(int64_t(id)), dist[id], last_row_attention(trace_, lm_), candidates(lm_, dist)});
  ids_.push_back(int64_t(id));
  g_.text = lm_.text(ids_);
  const bool end = std::find(lm_.ends.begin(), lm_.ends.end(), int64_t(id)) != lm_.ends.end();
  done_ = end || g_.tokens.size() == max_new_tokens_;
  if (!done_) trace_ = lm_.forward({int64_t(id)}, cache_);
}

Generation generate(const CausalLM& lm, std::vector<int64_t> prompt_ids, size_t max_new_tokens, const SamplingOptions& o) {
  TokenGenerator generator(lm, std::move(prompt_ids), max_new_tokens, o);
  while (!generator.done()) generator.step();
  return generator.generation();
}

Generation generate(const Pretrained& p, const std::string& prompt, size_t max_new_tokens, const SamplingOptions& o) {
  return generate(causal_lm(p), prompt_ids(p, prompt), max_new_tokens, o);
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
  return generation_json(causal_lm(p), g, max_new_tokens, o);
}

Json generation_json(const CausalLM& lm, const Generation& g, size_t max_new_tokens, const SamplingOptions& o) {
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
  return {{"model", lm.description},
          {"prompt", {{"ids", g.prompt_ids}, {"tokens", g.prompt_tokens}}},
          {"settings", {{"max_new_tokens", max_new_tokens}, {"temperature", o.temperature}, {"top_k", o.top_k},
                        {"top_p", o.top_p}, {"seed", o.seed}}},
          {"generated", std::move(generated)},
          {"text", g.text}};
}

}  // namespace attn
