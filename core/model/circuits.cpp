#include "core/model/circuits.hpp"

#include <algorithm>
#include <cmath>

namespace attn {

namespace {

// A head's d_model × d_model circuit X·Yᵀ in factored form: Xᵀ and Yᵀ, each [d_head, d_model] in rows
// (X = W_Q, W_K or W_V: [d_model, d_head]; Y = W_Oᵀ), with their Gram matrices XᵀX and YᵀY (Yᵀ is
// only read through its Gram matrix). Its norms
// and products need only d_head × d_head matrices, never a d_model × d_model one: GPT-2 small's 9,504
// pairs of heads take seconds.
struct Factored {
  const std::vector<double> *xt, *gx, *gy;
};

// W_Qᵀ, W_Kᵀ, W_Vᵀ, W_O: [d_head, d_model] each; and each one's Gram matrix [d_head, d_head], computed
// once per head rather than once per pair.
struct HeadWeights {
  std::vector<double> q, k, v, o;
  std::vector<double> gq, gk, gv, go;
};

double dot(const double* a, const double* b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// [d_head, d_head]: A·Bᵀ of two [d_head, d_model] matrices.
std::vector<double> products(const std::vector<double>& a, const std::vector<double>& b, size_t dh, size_t d) {
  std::vector<double> m(dh * dh);
  for (size_t i = 0; i < dh; ++i)
    for (size_t j = 0; j < dh; ++j) m[i * dh + j] = dot(&a[i * d], &b[j * d], d);
  return m;
}

// Rows h·d_head … of an nn.Linear weight [out, in] (a head's W_Qᵀ, W_Kᵀ or W_Vᵀ), each input column
// scaled by the LayerNorm before it (folded in) when there is one.
std::vector<double> reading_rows(const Tensor& weight, size_t h, size_t dh, const Tensor* norm) {
  const size_t d = weight.shape()[1];
  std::vector<double> rows(dh * d);
  for (size_t a = 0; a < dh; ++a)
    for (size_t i = 0; i < d; ++i)
      rows[a * d + i] = double(weight(h * dh + a, i)) * (norm ? double((*norm)(i)) : 1.0);
  return rows;
}

// A head's W_O [d_head, d_model] from the output projection's columns h·d_head …, each row centred
// over d_model when the model is pre-norm (TransformerLens's center_writing_weights).
std::vector<double> writing_rows(const Tensor& weight, size_t h, size_t dh, bool centre) {
  const size_t d = weight.shape()[0];
  std::vector<double> rows(dh * d);
  for (size_t a = 0; a < dh; ++a) {
    double mean = 0;
    for (size_t j = 0; j < d; ++j) mean += rows[a * d + j] = double(weight(j, h * dh + a));
    mean /= double(d);
    if (centre)
      for (size_t j = 0; j < d; ++j) rows[a * d + j] -= mean;
  }
  return rows;
}

std::vector<std::vector<HeadWeights>> head_weights(const std::vector<EncoderLayer>& layers, size_t H,
                                                   WeightProcessing processing) {
  std::vector<std::vector<HeadWeights>> all;
  for (const EncoderLayer& l : layers) {
    const size_t dh = l.query.weight.shape()[0] / H;
    const Tensor* norm = processing.fold_norm ? &l.norm1.weight : nullptr;
    std::vector<HeadWeights>& heads = all.emplace_back(H);
    const size_t d = l.query.weight.shape()[1];
    for (size_t h = 0; h < H; ++h) {
      HeadWeights& w = heads[h];
      w.q = reading_rows(l.query.weight, h, dh, norm), w.k = reading_rows(l.key.weight, h, dh, norm);
      w.v = reading_rows(l.value.weight, h, dh, norm), w.o = writing_rows(l.output.weight, h, dh, processing.centre_writing);
      w.gq = products(w.q, w.q, dh, d), w.gk = products(w.k, w.k, dh, d);
      w.gv = products(w.v, w.v, dh, d), w.go = products(w.o, w.o, dh, d);
    }
  }
  return all;
}

// Σ of the element-wise product of two [n, n] matrices: trace(Aᵀ·B).
double frobenius_inner(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// [n, n] product of two [n, n] matrices.
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, size_t n) {
  std::vector<double> c(n * n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n; ++k)
      for (size_t j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}

Factored right_circuit(const HeadWeights& w, CompositionKind kind) {
  switch (kind) {
    case CompositionKind::q: return {&w.q, &w.gq, &w.gk};
    case CompositionKind::k: return {&w.k, &w.gk, &w.gq};
    case CompositionKind::v: return {&w.v, &w.gv, &w.go};
  }
  return {};
}

}  // namespace

std::string composition_kind_name(CompositionKind kind) {
  switch (kind) {
    case CompositionKind::q: return "Q";
    case CompositionKind::k: return "K";
    case CompositionKind::v: return "V";
  }
  return "";
}

// ‖X1·Y1ᵀ·X2·Y2ᵀ‖² = trace(Mᵀ·G1·M·G2) with M = Y1ᵀ·X2, G1 = X1ᵀ·X1 and G2 = Y2ᵀ·Y2 (all d_head square);
// ‖X·Yᵀ‖² = trace(XᵀX·YᵀY).
CompositionScores composition_scores(const std::vector<EncoderLayer>& layers, size_t num_heads, WeightProcessing processing,
                                     CompositionKind kind) {
  const size_t L = layers.size(), H = num_heads;
  CompositionScores out{kind, L, H, std::vector<double>(L * H * L * H, 0.0)};
  if (L == 0) return out;
  const auto w = head_weights(layers, H, processing);
  const size_t d = layers[0].query.weight.shape()[1], dh = w[0][0].q.size() / d;
  for (size_t l1 = 0; l1 < L; ++l1)
    for (size_t h1 = 0; h1 < H; ++h1) {
      const HeadWeights& a = w[l1][h1];  // OV: X = W_V, Y = W_Oᵀ
      const double left = std::sqrt(frobenius_inner(a.gv, a.go));
      for (size_t l2 = l1 + 1; l2 < L; ++l2)
        for (size_t h2 = 0; h2 < H; ++h2) {
          const Factored b = right_circuit(w[l2][h2], kind);
          const std::vector<double> m = products(a.o, *b.xt, dh, d);
          const double right = std::sqrt(frobenius_inner(*b.gx, *b.gy));
          const double both = std::sqrt(std::max(0.0, frobenius_inner(matmul(a.gv, m, dh), matmul(m, *b.gy, dh))));
          out.scores[((l1 * H + h1) * L + l2) * H + h2] = left > 0 && right > 0 ? both / (left * right) : 0.0;
        }
    }
  return out;
}

namespace {

// Rows of key/value head h / g for each query head h: [n_kv·d, in] → [n·d, in] (repeat_kv on the weights).
Tensor repeated_heads(const Tensor& weight, size_t heads, size_t group) {
  const size_t d = weight.shape(0) / (heads / group), in = weight.shape(1);
  Tensor out = Tensor::from_shape({heads * d, in});
  for (size_t h = 0; h < heads; ++h) std::copy_n(weight.data() + (h / group) * d * in, d * in, out.data() + h * d * in);
  return out;
}

}  // namespace

CompositionScores decoder_composition_scores(const DecoderModel& m, CompositionKind kind) {
  const DecoderConfig& c = m.config;
  std::vector<EncoderLayer> layers(m.layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const DecoderLayer& l = m.layers[i];
    layers[i].query.weight = l.q_proj.weight.widened();
    layers[i].key.weight = repeated_heads(l.k_proj.weight.widened(), c.num_heads, c.group());
    layers[i].value.weight = repeated_heads(l.v_proj.weight.widened(), c.num_heads, c.group());
    layers[i].output.weight = l.o_proj.weight.widened();
    layers[i].norm1.weight = l.input_norm.weight;
    if (c.norm == NormKind::rms_one_plus) layers[i].norm1.weight += 1.0f;  // Gemma's scale is 1 + w
  }
  return composition_scores(layers, c.num_heads, {true, c.norm == NormKind::layer_norm}, kind);
}

Json composition_json(const std::vector<CompositionScores>& scores) {
  Json out = Json::object();
  for (const CompositionScores& s : scores) {
    Json l1s = Json::array();
    for (size_t l1 = 0; l1 < s.layers; ++l1) {
      Json h1s = Json::array();
      for (size_t h1 = 0; h1 < s.heads; ++h1) {
        Json l2s = Json::array();
        for (size_t l2 = 0; l2 < s.layers; ++l2) {
          Json h2s = Json::array();
          for (size_t h2 = 0; h2 < s.heads; ++h2) h2s.push_back(s.at(l1, h1, l2, h2));
          l2s.push_back(std::move(h2s));
        }
        h1s.push_back(std::move(l2s));
      }
      l1s.push_back(std::move(h1s));
    }
    out[composition_kind_name(s.kind)] = {{"axes", {"layer", "head", "layer", "head"}}, {"scores", std::move(l1s)}};
  }
  return out;
}

}  // namespace attn
