#include "core/model/decoder_views.hpp"

#include <cmath>
#include <string>

#include "core/base/error.hpp"

namespace attn {
namespace {

std::string layer_stage(size_t layer, const char* name) {
  return "model.layers." + std::to_string(layer) + ".self_attn." + name;
}

// Row `row`, head `head`, position `pos` of a [B, heads, S, d] stage.
const float* vector_at(const Tensor& t, size_t row, size_t head, size_t pos) {
  const size_t heads = t.shape(1), S = t.shape(2), d = t.shape(3);
  return t.data() + ((row * heads + head) * S + pos) * d;
}

// The rotation a layer applies: Gemma 3's sliding layers have their own base.
RotaryFrequencies layer_frequencies(const DecoderConfig& c, size_t layer) {
  const bool sliding = layer < c.sliding_layers.size() && c.sliding_layers[layer];
  return rotary_frequencies(sliding && c.local_rope_theta > 0 ? local_rotary_config(c) : c);
}

RotarySplit split(const float* q, const float* k, const float* q_rot, const float* k_rot, size_t d,
                  const RotaryFrequencies& f, double scale, size_t distances) {
  const size_t half = f.inv_freq.size(), dim = 2 * half;
  RotarySplit s;
  for (size_t i = 0; i < half; ++i) {
    s.pairs.push_back((double(q_rot[i]) * k_rot[i] + double(q_rot[i + half]) * k_rot[i + half]) / scale);
    s.score += s.pairs.back();
  }
  for (size_t j = dim; j < d; ++j) s.unrotated += double(q[j]) * k[j] / scale;
  s.score += s.unrotated;
  const double a2 = double(f.attention_factor) * f.attention_factor;
  for (size_t delta = 0; delta < distances; ++delta) {
    double sum = s.unrotated;
    for (size_t i = 0; i < half; ++i) {
      const double A = double(q[i]) * k[i] + double(q[i + half]) * k[i + half];
      const double B = double(q[i + half]) * k[i] - double(q[i]) * k[i + half];
      const double angle = double(delta) * double(f.inv_freq[i]);
      sum += a2 * (A * std::cos(angle) - B * std::sin(angle)) / scale;
    }
    s.by_distance.push_back(sum);
  }
  return s;
}

}  // namespace

std::vector<std::vector<double>> first_token_attention(const Trace& trace, size_t layers) {
  std::vector<std::vector<double>> out;
  for (size_t l = 0; l < layers; ++l) {
    const Tensor& w = trace.at(layer_stage(l, "attn_weights"));  // [B, H, S, Sk]
    const size_t B = w.shape(0), H = w.shape(1), S = w.shape(2), Sk = w.shape(3), first = S > 1 ? 1 : 0;
    out.emplace_back(H, 0.0);
    for (size_t h = 0; h < H; ++h) {
      double sum = 0;
      for (size_t b = 0; b < B; ++b)
        for (size_t q = first; q < S; ++q) sum += w.data()[((b * H + h) * S + q) * Sk];
      out.back()[h] = sum / double(B * (S - first));
    }
  }
  return out;
}

std::vector<std::vector<RotarySplit>> rotary_splits(const DecoderModel& m, const Trace& trace, size_t row,
                                                     size_t query, size_t key, size_t distances) {
  const DecoderConfig& c = m.config;
  const Tensor& first = trace.at(layer_stage(0, "queries_rotated"));
  if (row >= first.shape(0)) throw InputError("row " + std::to_string(row) + " is not among the inputs");
  if (query >= first.shape(2) || key > query)
    throw InputError("--rotary QUERY,KEY: positions of one sequence with KEY <= QUERY < " + std::to_string(first.shape(2)) +
                     ", got " + std::to_string(query) + "," + std::to_string(key));
  const double scale = std::sqrt(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : double(c.head_dim));
  std::vector<std::vector<RotarySplit>> out(c.num_layers);
  for (size_t l = 0; l < c.num_layers; ++l) {
    const RotaryFrequencies f = layer_frequencies(c, l);
    const Tensor& q = trace.at(layer_stage(l, c.qk_norm ? "q_norm" : "q_proj"));
    const Tensor& k = trace.at(layer_stage(l, c.qk_norm ? "k_norm" : "k_proj"));
    const Tensor& q_rot = trace.at(layer_stage(l, "queries_rotated"));
    const Tensor& k_rot = trace.at(layer_stage(l, "keys_rotated"));
    for (size_t h = 0; h < c.num_heads; ++h) {
      const size_t kv = h / c.group();
      out[l].push_back(split(vector_at(q, row, h, query), vector_at(k, row, kv, key), vector_at(q_rot, row, h, query),
                             vector_at(k_rot, row, kv, key), c.head_dim, f, scale, distances));
    }
  }
  return out;
}

}  // namespace attn
