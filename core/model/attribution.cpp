#include "core/model/attribution.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "core/base/error.hpp"
#include "core/model/attention.hpp"
#include "core/model/decoder.hpp"
#include "core/model/gpt2.hpp"
#include "core/model/pretrained_parts.hpp"

namespace attn {
namespace {

constexpr AttributionMethod all_methods[] = {AttributionMethod::integrated_gradients, AttributionMethod::gradient_x_input,
                                             AttributionMethod::rollout, AttributionMethod::flow,
                                             AttributionMethod::logit_attribution};
// Rows per forward and backward pass of the integrated gradients: the memory of a batch of steps.
constexpr size_t gradient_chunk = 16;
// Far past where Gauss–Legendre has converged; the nodes' cost grows as steps².
constexpr size_t max_steps = 10000;

bool is_bert(const LoadedModel& m) { return m.pretrained && m.pretrained->model.config.family == ModelFamily::bert; }

bool needs_output(AttributionMethod method) {
  return method != AttributionMethod::rollout && method != AttributionMethod::flow;
}

bool causal_lm(const LoadedModel& m) { return m.decoder || (m.pretrained && !is_bert(m)); }

// The target's row of a run's logits: a causal LM's at `position` ([1, S, V]), the classifier's ([1, C]).
std::vector<float> output_logits(const LoadedModel& m, const Trace& run, size_t position) {
  const Tensor& logits = run.at("logits");
  const size_t width = logits.shape(logits.dimension() - 1);
  const float* row = logits.data() + (causal_lm(m) ? position * width : 0);
  return {row, row + width};
}

AttributionTarget choose_target(const LoadedModel& m, const ModelInput& in, const Trace& run,
                                const AttributionOptions& o) {
  AttributionTarget t;
  if (is_bert(m)) {
    if (needs_output(o.method))
      throw InputError(attribution_method_name(o.method) + " attributes an output logit; BERT's base model has no output "
                       "head (rollout and flow follow its attention alone)");
    if (o.target) throw InputError("BERT's base model has no output head: --target-id has nothing to name");
    return t;
  }
  if (m.classifier && !m.classifier->config.classifier_head)
    throw InputError("this classifier has no head (--encoder-only): there is no output to attribute");
  t.position = in.lengths[0] - 1;
  const std::vector<float> logits = output_logits(m, run, t.position);
  const bool lm = causal_lm(m);
  if (o.target && (*o.target < 0 || size_t(*o.target) >= logits.size()))
    throw InputError("--target-id " + std::to_string(*o.target) + " is outside the " + (lm ? "vocabulary" : "classes") +
                     " (" + std::to_string(logits.size()) + (lm ? " ids)" : " classes)"));
  t.id = o.target ? *o.target : int64_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  t.label = lm ? m.token(t.id) : "class " + std::to_string(t.id);
  t.logit = logits[size_t(t.id)];
  return t;
}

// --- the gradient methods: F = the target's logit, x = the token embeddings (GPT-2's wte[ids], the
// classifier's embedding(ids) × √d_model), the positions' embeddings kept as they are ---

// A decoder's F and gradient on the rows `scaled` [B, S, H]: the traced forward, then its backward from
// the target's logit at the last position (lm_head's row, through Gemma's final cap).
Tensor decoder_gradients(const DecoderModel& model, const AttributionTarget& t, const Tensor& scaled,
                         std::vector<double>& values) {
  const size_t B = scaled.shape(0), S = scaled.shape(1), H = scaled.shape(2);
  const Trace run = decoder_forward_embeddings(model, scaled);
  const Tensor& logits = run.at("logits");  // [B, 1, V]: the last position's
  const size_t V = logits.shape(2);
  std::vector<float> row(H);
  model.lm_head.widen_rows(size_t(t.id), 1, row.data());
  const double cap = model.config.final_softcap;
  Tensor grad = Tensor::from_shape({B, S, H});
  grad.fill(0.0f);
  for (size_t b = 0; b < B; ++b) {
    const double logit = logits.data()[b * V + size_t(t.id)];
    values.push_back(logit);
    const double through_cap = cap > 0 ? 1.0 - (logit / cap) * (logit / cap) : 1.0;  // d(c·tanh(z/c))/dz
    for (size_t j = 0; j < H; ++j) grad.data()[(b * S + S - 1) * H + j] = float(through_cap * row[j]);
  }
  return decoder_input_gradient(model, run, grad);
}

struct WeightedGradient {
  Tensor inputs;                 // x [1, S, H]
  Tensor baseline;               // b [1, S, H]: zeros, or a token's embedding at every position
  std::vector<double> gradient;  // Σ_k weights_k · ∂F/∂x at alphas_k · x, [S · H]
  std::vector<double> values;    // F at each alphas_k · x
};

// F and its gradient on the rows baseline + alphas[b] · (x − baseline) of one batch; returns the
// gradients [B, S, H].
Tensor batch_gradients(const LoadedModel& m, const ModelInput& in, const AttributionTarget& t, const Tensor& x,
                       const Tensor& baseline, const double* alphas, size_t B, std::vector<double>& values) {
  const size_t S = in.seq, H = x.shape(2);
  std::vector<int64_t> ids;
  Tensor scaled = Tensor::from_shape({B, S, H});
  for (size_t b = 0; b < B; ++b) {
    ids.insert(ids.end(), in.ids.begin(), in.ids.begin() + long(S));
    for (size_t i = 0; i < S * H; ++i)
      scaled.data()[b * S * H + i] = baseline.data()[i] + float(alphas[b]) * (x.data()[i] - baseline.data()[i]);
  }
  // The target's logit of each row, whose gradient (1 there, 0 elsewhere) the backward takes.
  auto select = [&](const Tensor& logits, size_t row_width, size_t offset) {
    Tensor grad = Tensor::from_shape(logits.shape());
    grad.fill(0.0f);
    for (size_t b = 0; b < B; ++b) {
      const size_t at = b * row_width + offset + size_t(t.id);
      values.push_back(logits.data()[at]);
      grad.data()[at] = 1.0f;
    }
    return grad;
  };
  if (m.decoder) return decoder_gradients(*m.decoder, t, scaled, values);
  if (m.pretrained) {
    const PretrainedModel& model = m.pretrained->model;
    Gpt2Saved saved;  // the target is the last position's (t.position = S − 1): its logits alone
    const Tensor logits =
        gpt2_train_forward(model, {ids, {}, std::vector<size_t>(B, S), B, S}, nullptr, saved, &scaled, true);
    PretrainedModel frozen = frozen_like(model);
    return gpt2_backward(model, saved, select(logits, logits.shape(2), 0), frozen);
  }
  const TransformerModel& model = *m.classifier;
  ClassifierSaved saved;
  const Tensor logits = classifier_forward(model, ids, B, S, m.mask, nullptr, saved, &scaled);
  TransformerModel frozen = frozen_like(model);
  return classifier_backward(model, saved, select(logits, logits.shape(1), 0), frozen);
}

// The token embeddings of `ids` (one row), as the gradient methods' x: GPT-2's and the decoders' table
// rows, the classifier's embedding × √d_model.
Tensor token_embeddings(const LoadedModel& m, const std::vector<int64_t>& ids) {
  return m.decoder      ? lookup(m.decoder->embed_tokens, ids, 1, ids.size(), "token id")
         : m.pretrained ? lookup(m.pretrained->model.word_embeddings, ids, 1, ids.size(), "token id")
                        : embed(m.classifier->embedding, ids, 1, ids.size());
}

WeightedGradient weighted_gradient(const LoadedModel& m, const ModelInput& in, const AttributionTarget& t,
                                   const std::vector<double>& alphas, const std::vector<double>& weights,
                                   std::optional<int64_t> baseline_id = std::nullopt) {
  WeightedGradient g;
  g.inputs = token_embeddings(m, {in.ids.begin(), in.ids.begin() + long(in.seq)});
  if (baseline_id) {
    g.baseline = token_embeddings(m, std::vector<int64_t>(in.seq, *baseline_id));
  } else {
    g.baseline = Tensor::from_shape(g.inputs.shape());
    g.baseline.fill(0.0f);
  }
  const size_t SH = g.inputs.size();
  g.gradient.assign(SH, 0.0);
  // Batches of equal size (52 rows: 4 of 13, not 3 of 16 and one of 4, which would run narrow products).
  const size_t batches = (alphas.size() + gradient_chunk - 1) / gradient_chunk;
  const size_t rows = (alphas.size() + batches - 1) / batches;
  for (size_t first = 0; first < alphas.size(); first += rows) {
    const size_t B = std::min(rows, alphas.size() - first);
    const Tensor grads = batch_gradients(m, in, t, g.inputs, g.baseline, alphas.data() + first, B, g.values);
    for (size_t b = 0; b < B; ++b)
      for (size_t i = 0; i < SH; ++i) g.gradient[i] += weights[first + b] * double(grads.data()[b * SH + i]);
  }
  return g;
}

// Each token's attribution: (x − baseline) · gradient summed over the embedding dimension (gradient × input:
// the zero baseline).
std::vector<double> token_scores(const WeightedGradient& g) {
  const size_t S = g.inputs.shape(1), H = g.inputs.shape(2);
  std::vector<double> scores(S, 0.0);
  for (size_t s = 0; s < S; ++s)
    for (size_t d = 0; d < H; ++d)
      scores[s] += double(g.inputs.data()[s * H + d] - g.baseline.data()[s * H + d]) * g.gradient[s * H + d];
  return scores;
}

// Captum's IntegratedGradients with its defaults: (x − b) · Σ_k w_k ∂F/∂x(b + α_k · (x − b)) over
// Gauss–Legendre nodes, b zero or a token's embeddings; F(x) and F(b) come from the same batches (two more
// rows, weighted 0) for the delta.
void integrated_gradients(const LoadedModel& m, const ModelInput& in, const AttributionOptions& o, Attribution& a) {
  const size_t steps = o.steps;
  std::vector<double> alphas, weights;
  gauss_legendre(steps, alphas, weights);
  alphas.push_back(1.0), alphas.push_back(0.0);
  weights.resize(alphas.size(), 0.0);
  const WeightedGradient g = weighted_gradient(m, in, a.target, alphas, weights, o.baseline_id);
  a.scores = token_scores(g);
  a.steps = steps, a.baseline_id = o.baseline_id;
  a.input_value = g.values[steps], a.baseline_value = g.values[steps + 1];
  a.delta = std::accumulate(a.scores.begin(), a.scores.end(), 0.0) - (a.input_value - a.baseline_value);
}

// --- rollout and flow (Abnar & Zuidema 2020) ---

using Matrix = std::vector<std::vector<double>>;

// Each layer's attention with the residual as identity: 0.5 · (the heads' mean) + 0.5 · I, rows normalised.
std::vector<Matrix> residual_attention(const LoadedModel& m, const Trace& run, size_t S) {
  const ModelStages stages = m.stages();
  std::vector<Matrix> out;
  for (size_t l = 0; l < stages.layers; ++l) {
    const Tensor& w = run.at(resolve_stage_name(stages, "blocks." + std::to_string(l) + ".attn.hook_pattern"));
    const size_t n = w.shape(1);
    Matrix a(S, std::vector<double>(S, 0.0));
    for (size_t i = 0; i < S; ++i) {
      for (size_t j = 0; j < S; ++j) {
        for (size_t h = 0; h < n; ++h) a[i][j] += double(w.data()[(h * S + i) * S + j]);
        a[i][j] = 0.5 * a[i][j] / double(n) + (i == j ? 0.5 : 0.0);
      }
      const double row = std::accumulate(a[i].begin(), a[i].end(), 0.0);
      for (double& v : a[i]) v /= row;
    }
    out.push_back(std::move(a));
  }
  return out;
}

// The positions whose inputs are followed: GPT-2's last (its next token), BERT's [CLS] (what its pooler
// and sequence classifiers read), every position of the classifier (it pools their mean).
std::vector<size_t> output_positions(const LoadedModel& m, size_t S) {
  if (m.classifier) {
    std::vector<size_t> all(S);
    std::iota(all.begin(), all.end(), size_t(0));
    return all;
  }
  return {is_bert(m) ? 0 : S - 1};
}

// The mean over the output positions of each input's share.
std::vector<double> mean_rows(const Matrix& shares, const std::vector<size_t>& outputs) {
  std::vector<double> mean(shares[0].size(), 0.0);
  for (size_t o : outputs)
    for (size_t j = 0; j < mean.size(); ++j) mean[j] += shares[o][j] / double(outputs.size());
  return mean;
}

void rollout(const std::vector<Matrix>& layers, size_t S, Attribution& a) {
  Matrix r(S, std::vector<double>(S, 0.0));
  for (size_t i = 0; i < S; ++i) r[i][i] = 1.0;
  for (const Matrix& layer : layers) {  // r ← A'_l · r
    Matrix next(S, std::vector<double>(S, 0.0));
    for (size_t i = 0; i < S; ++i)
      for (size_t k = 0; k < S; ++k)
        for (size_t j = 0; j < S; ++j) next[i][j] += layer[i][k] * r[k][j];
    r = std::move(next);
  }
  a.scores = mean_rows(r, a.outputs);
  for (const auto& row : r) a.shares.insert(a.shares.end(), row.begin(), row.end());
}

// Attention flow: the layer graph's nodes are (layer l ∈ 0…L, position i), an edge from (l, j) to (l + 1, i)
// holding A'_l[i][j]; each output's maximum flows from the input tokens, normalised to sum to 1 (as
// Abnar & Zuidema's compute_flows normalises them).
void flow(const std::vector<Matrix>& layers, size_t S, bool every_output, Attribution& a) {
  const size_t L = layers.size(), n = (L + 1) * S;
  Matrix capacity(n, std::vector<double>(n, 0.0));
  for (size_t l = 0; l < L; ++l)
    for (size_t i = 0; i < S; ++i)
      for (size_t j = 0; j < S; ++j) capacity[l * S + j][(l + 1) * S + i] = layers[l][i][j];
  Matrix shares(S, std::vector<double>(S, 0.0));
  for (size_t o = 0; o < S; ++o) {
    if (!every_output && std::find(a.outputs.begin(), a.outputs.end(), o) == a.outputs.end()) continue;
    for (size_t j = 0; j < S; ++j) shares[o][j] = max_flow(capacity, j, L * S + o);
    const double total = std::accumulate(shares[o].begin(), shares[o].end(), 0.0);
    for (double& v : shares[o]) v /= total;
  }
  a.scores = mean_rows(shares, a.outputs);
  for (const auto& row : shares) a.shares.insert(a.shares.end(), row.begin(), row.end());
}

// --- logit attribution (TransformerLens's apply_ln_to_stack with the cached final scale) ---

// A pre-norm model's residual stream at the target's position, as the parts that add up to it: the
// embeddings, then per layer each head's result z_h · W_O[h], W_O's bias and the MLP's output; and the
// final norm that reads it (LayerNorm centres, RMSNorm does not; Gemma's weight is 1 + w).
struct StreamParts {
  const float* stream = nullptr;  // the last layer's output [H]
  const LayerNorm* norm = nullptr;
  double eps = 0, weight_offset = 0;
  bool centre = false;
  std::string bias_name;  // the final norm's bias component ("ln_f.bias"); empty: RMSNorm has none
  std::vector<std::pair<std::string, const float*>> embeddings;
  struct Layer {
    const float* z;       // the heads' merged outputs [n·dk]
    const float* w_o;     // W_O [H, n·dk] (out, in)
    const Tensor* o_bias;  // its bias, a component when it has one
    const float* mlp;     // the MLP's output [H]
  };
  std::vector<Layer> layers;
  size_t heads = 0, head_dim = 0;
};

// Each part's direct contribution: v goes through the final norm with the whole stream's scale
// ((v − mean(v)) / scale for LayerNorm, v / scale for RMSNorm), then along (norm weight ⊙ W_U[target]);
// centring the direction instead of v gives the same sum.
void decompose(const StreamParts& s, const float* unembed, size_t H, Attribution& a) {
  double mean = 0, squares = 0;
  for (size_t j = 0; j < H; ++j) mean += s.centre ? s.stream[j] / double(H) : 0.0;
  for (size_t j = 0; j < H; ++j) squares += (s.stream[j] - mean) * (s.stream[j] - mean) / double(H);
  const double scale = std::sqrt(squares + s.eps);
  std::vector<double> d(H);
  for (size_t j = 0; j < H; ++j) d[j] = (s.weight_offset + double(s.norm->weight.data()[j])) * unembed[j];
  const double d_mean = s.centre ? std::accumulate(d.begin(), d.end(), 0.0) / double(H) : 0.0;
  for (double& v : d) v = (v - d_mean) / scale;
  auto along = [&](const float* v) {
    double sum = 0;
    for (size_t j = 0; j < H; ++j) sum += v[j] * d[j];
    return sum;
  };
  auto add = [&](const std::string& name, double value) { a.components.push_back(name), a.contributions.push_back(value); };
  for (const auto& [name, v] : s.embeddings) add(name, along(v));
  const size_t width = s.heads * s.head_dim;
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const StreamParts::Layer& layer = s.layers[l];
    const std::string name = "L" + std::to_string(l);
    for (size_t h = 0; h < s.heads; ++h) {  // the head's result z_h · W_O[h], read along d
      double sum = 0;
      for (size_t k = h * s.head_dim; k < (h + 1) * s.head_dim; ++k)
        for (size_t j = 0; j < H; ++j) sum += double(layer.z[k]) * layer.w_o[j * width + k] * d[j];
      add(name + "H" + std::to_string(h), sum);
    }
    if (layer.o_bias->dimension()) add(name + ".attn_bias", along(layer.o_bias->data()));
    add(name + ".mlp_out", along(layer.mlp));
  }
  if (s.bias_name.empty()) return;
  double bias = 0;
  for (size_t j = 0; j < H; ++j) bias += double(s.norm->bias.data()[j]) * unembed[j];
  add(s.bias_name, bias);
}

// GPT-2: wte and wpe, each block's attn.merged through c_proj and its mlp.c_proj, ln_f.
void gpt2_logit_attribution(const PretrainedModel& model, const Trace& run, Attribution& a) {
  const size_t H = model.config.hidden_size, L = model.layers.size(), p = a.target.position;
  StreamParts s;
  s.stream = run.at(L ? "h." + std::to_string(L - 1) : "embeddings").data() + p * H;
  s.norm = &model.final_norm, s.eps = model.config.layer_norm_eps, s.centre = true, s.bias_name = "ln_f.bias";
  s.embeddings = {{"embed", run.at("wte").data() + p * H}, {"pos_embed", run.at("wpe").data() + p * H}};
  s.heads = model.config.num_heads, s.head_dim = H / s.heads;
  for (size_t l = 0; l < L; ++l) {
    const std::string prefix = "h." + std::to_string(l) + ".";
    const Linear& output = model.layers[l].output;
    s.layers.push_back({run.at(prefix + "attn.merged").data() + p * H, output.weight.data(), &output.bias,
                        run.at(prefix + "mlp.c_proj").data() + p * H});
  }
  decompose(s, model.unembedding().data() + size_t(a.target.id) * H, H, a);
}

// The Llama family: embed_tokens' output, each layer's self_attn.merged through o_proj and its
// mlp.down_proj (NeoX's parallel residual adds them too), model.norm (RMSNorm's apply_ln does not centre,
// TransformerLens's for RMS).
void decoder_logit_attribution(const DecoderModel& m, const Trace& run, Attribution& a) {
  const DecoderConfig& c = m.config;
  if (c.sandwich_norms || c.final_softcap > 0)
    throw InputError("logit-attribution splits the residual stream into what each branch adds; Gemma's norms "
                     "of each branch's output and its final cap do not add up that way");
  const size_t H = c.hidden_size, L = m.layers.size(), p = a.target.position;
  StreamParts s;
  s.stream = run.at(L ? "model.layers." + std::to_string(L - 1) : "model.embed_tokens").data() + p * H;
  s.norm = &m.norm, s.eps = c.rms_norm_eps, s.centre = c.norm == NormKind::layer_norm;
  s.weight_offset = c.norm == NormKind::rms_one_plus ? 1.0 : 0.0;
  s.bias_name = s.centre ? "norm.bias" : "";
  s.embeddings = {{"embed", run.at("model.embed_tokens").data() + p * H}};
  s.heads = c.num_heads, s.head_dim = c.head_dim;
  std::vector<Tensor> widened(L);  // a half-precision o_proj as float32
  for (size_t l = 0; l < L; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    const Weight& w_o = m.layers[l].o_proj.weight;
    const float* w = w_o.half() ? (widened[l] = w_o.widened()).data() : w_o.values().data();
    s.layers.push_back({run.at(prefix + "self_attn.merged").data() + p * c.num_heads * c.head_dim, w,
                        &m.layers[l].o_proj.bias, run.at(prefix + "mlp.down_proj").data() + p * H});
  }
  std::vector<float> unembed(H);
  m.lm_head.widen_rows(size_t(a.target.id), 1, unembed.data());
  decompose(s, unembed.data(), H, a);
}

void logit_attribution(const LoadedModel& m, const Trace& run, Attribution& a) {
  if (m.decoder) return decoder_logit_attribution(*m.decoder, run, a);
  if (!m.pretrained || m.pretrained->model.config.family != ModelFamily::gpt2)
    throw InputError("logit-attribution decomposes GPT-2's residual stream into its heads' and MLPs' outputs; the "
                     "classifier's post-norm layers and mean pooling do not add up that way");
  gpt2_logit_attribution(m.pretrained->model, run, a);
}

}  // namespace

AttributionMethod parse_attribution_method(const std::string& text) {
  for (AttributionMethod method : all_methods)
    if (text == attribution_method_name(method)) return method;
  throw InputError("--method: unknown method '" + text +
                   "' (expected integrated-gradients, gradient-x-input, rollout, flow or logit-attribution)");
}

std::string attribution_method_name(AttributionMethod method) {
  switch (method) {
    case AttributionMethod::integrated_gradients: return "integrated-gradients";
    case AttributionMethod::gradient_x_input: return "gradient-x-input";
    case AttributionMethod::rollout: return "rollout";
    case AttributionMethod::flow: return "flow";
    case AttributionMethod::logit_attribution: return "logit-attribution";
  }
  return "";
}

Attribution attribute(const LoadedModel& m, const ModelInput& in, const AttributionOptions& o) {
  if (in.batch != 1) throw InputError("attribution takes one input");
  if (o.steps == 0 || o.steps > max_steps)
    throw InputError("--steps " + std::to_string(o.steps) + " is outside 1 to " + std::to_string(max_steps));
  if (o.baseline_id && o.method != AttributionMethod::integrated_gradients)
    throw InputError("--baseline-id is integrated gradients' baseline; " + attribution_method_name(o.method) + " has none");
  if (o.baseline_id && (*o.baseline_id < 0 || size_t(*o.baseline_id) >= m.vocab_size()))
    throw InputError("--baseline-id " + std::to_string(*o.baseline_id) + " is outside the vocabulary (" +
                     std::to_string(m.vocab_size()) + " ids)");
  const Trace run = m.forward(in);
  Attribution a;
  a.method = o.method;
  a.target = choose_target(m, in, run, o);
  const size_t S = in.seq;
  switch (o.method) {
    case AttributionMethod::integrated_gradients: integrated_gradients(m, in, o, a); break;
    case AttributionMethod::gradient_x_input: a.scores = token_scores(weighted_gradient(m, in, a.target, {1.0}, {1.0})); break;
    case AttributionMethod::rollout:
      a.outputs = output_positions(m, S);
      rollout(residual_attention(m, run, S), S, a);
      break;
    case AttributionMethod::flow:
      a.outputs = output_positions(m, S);
      flow(residual_attention(m, run, S), S, o.every_output, a);
      break;
    case AttributionMethod::logit_attribution: logit_attribution(m, run, a); break;
  }
  return a;
}

Json attribution_json(const LoadedModel& m, const ModelInput& in, const Attribution& a) {
  Json doc{{"model", m.description()},
           {"method", attribution_method_name(a.method)},
           {"ids", in.ids},
           {"tokens", in.tokens[0]},
           {"target", nullptr}};
  if (a.target.id >= 0) {
    doc["target"] = {{"id", a.target.id}, {"label", a.target.label}, {"logit", a.target.logit}};
    if (m.pretrained) doc["target"]["position"] = a.target.position;
  }
  if (a.method == AttributionMethod::logit_attribution) {
    doc["components"] = a.components;
    doc["contributions"] = a.contributions;
    return doc;
  }
  doc["scores"] = a.scores;
  if (!a.outputs.empty()) doc["outputs"] = a.outputs;
  if (a.method == AttributionMethod::rollout) {
    Json rows = Json::array();
    for (size_t i = 0; i < in.seq; ++i)
      rows.push_back(std::vector<double>(a.shares.begin() + long(i * in.seq), a.shares.begin() + long((i + 1) * in.seq)));
    doc["rollout"] = rows;
  }
  if (a.method == AttributionMethod::integrated_gradients)
    doc["integrated_gradients"] = {{"steps", a.steps}, {"method", "gausslegendre"}, {"baseline", a.baseline_id ? "token " + std::to_string(*a.baseline_id) + "'s embedding" : "zero token embeddings"},
                                   {"input_value", a.input_value}, {"baseline_value", a.baseline_value},
                                   {"delta", a.delta}};
  return doc;
}

void gauss_legendre(size_t n, std::vector<double>& alphas, std::vector<double>& weights) {
  alphas.assign(n, 0.0), weights.assign(n, 0.0);
  const double pi = std::acos(-1.0);
  for (size_t i = 0; i < n; ++i) {
    // Newton's method on P_n from the classic first guess; its roots descend from cos(π (i + 0.75) / (n + 0.5)).
    double x = std::cos(pi * (double(i) + 0.75) / (double(n) + 0.5)), dp = 1;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p0 = 1, p1 = x;  // P_0, P_1, then the recurrence up to P_n
      for (size_t k = 2; k <= n; ++k) {
        const double p2 = ((2.0 * double(k) - 1) * x * p1 - (double(k) - 1) * p0) / double(k);
        p0 = p1, p1 = p2;
      }
      dp = double(n) * (x * p1 - p0) / (x * x - 1);
      const double step = p1 / dp;
      x -= step;
      if (std::abs(step) < 1e-16) break;
    }
    // Ascending nodes on [−1, 1] map to [0, 1]; each weight 2 / ((1 − x²) P_n'(x)²), halved.
    alphas[n - 1 - i] = 0.5 * (x + 1);
    weights[n - 1 - i] = 0.5 * 2 / ((1 - x * x) * dp * dp);
  }
}

double max_flow(std::vector<std::vector<double>> c, size_t source, size_t sink) {
  const size_t n = c.size();
  // Residual capacities below this count as none: float sums leave crumbs that would never end the search.
  constexpr double tiny = 1e-12;
  std::vector<std::vector<size_t>> neighbours(n);
  for (size_t u = 0; u < n; ++u)
    for (size_t v = 0; v < n; ++v)
      if (c[u][v] > 0 || c[v][u] > 0) neighbours[u].push_back(v);
  double total = 0;
  std::vector<size_t> parent(n);
  for (;;) {  // the shortest augmenting path (breadth first), until none is left
    std::fill(parent.begin(), parent.end(), n);
    parent[source] = source;
    std::queue<size_t> queue;
    queue.push(source);
    while (!queue.empty() && parent[sink] == n) {
      const size_t u = queue.front();
      queue.pop();
      for (size_t v : neighbours[u])
        if (parent[v] == n && c[u][v] > tiny) parent[v] = u, queue.push(v);
    }
    if (parent[sink] == n || source == sink) return total;
    double push = std::numeric_limits<double>::infinity();
    for (size_t v = sink; v != source; v = parent[v]) push = std::min(push, c[parent[v]][v]);
    for (size_t v = sink; v != source; v = parent[v]) c[parent[v]][v] -= push, c[v][parent[v]] += push;
    total += push;
  }
}

}  // namespace attn
