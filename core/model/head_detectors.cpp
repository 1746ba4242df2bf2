#include "core/model/head_detectors.hpp"

#include <cmath>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"

namespace attn {

namespace {

constexpr HeadKind all_kinds[] = {HeadKind::previous_token, HeadKind::duplicate_token, HeadKind::induction};

}  // namespace

std::string head_kind_name(HeadKind kind) {
  switch (kind) {
    case HeadKind::previous_token: return "previous_token";
    case HeadKind::duplicate_token: return "duplicate_token";
    case HeadKind::induction: return "induction";
  }
  return "";
}

std::vector<HeadKind> parse_head_kinds(const std::string& text) {
  std::vector<std::string> names;
  for (HeadKind k : all_kinds) names.push_back(head_kind_name(k));
  std::vector<HeadKind> kinds;
  for (size_t i : parse_choices("--detect", text, names, "head kind")) kinds.push_back(all_kinds[i]);
  return kinds;
}

ErrorMeasure parse_error_measure(const std::string& text) {
  if (text == "mul") return ErrorMeasure::mul;
  if (text == "abs") return ErrorMeasure::abs;
  throw InputError("--error-measure expects mul or abs, got '" + text + "'");
}

// get_*_head_detection_pattern of TransformerLens: duplicate = tokens equal, diagonal cleared;
// induction = duplicate shifted one column right (column 0 cleared); all lower triangular.
std::vector<float> detection_pattern(HeadKind kind, const int64_t* tokens, size_t n) {
  std::vector<float> p(n * n, 0.0f);
  for (size_t q = 0; q < n; ++q)
    for (size_t k = 0; k <= q; ++k) {
      bool on = false;
      switch (kind) {
        case HeadKind::previous_token: on = k + 1 == q; break;
        case HeadKind::duplicate_token: on = k < q && tokens[q] == tokens[k]; break;
        case HeadKind::induction: on = k > 0 && tokens[q] == tokens[k - 1]; break;  // the diagonal too
      }
      p[q * n + k] = on ? 1.0f : 0.0f;
    }
  return p;
}

double head_score(const float* attention, const std::vector<float>& pattern, size_t n, const DetectOptions& o) {
  const auto counted = [&](size_t q, size_t k) { return !(o.exclude_bos && k == 0) && !(o.exclude_current_token && q == k); };
  double matched = 0, total = 0;
  for (size_t q = 0; q < n; ++q)
    for (size_t k = 0; k < n; ++k) {
      const double a = attention[q * n + k], p = pattern[q * n + k];
      if (o.measure == ErrorMeasure::mul) {
        if (!counted(q, k)) continue;  // TransformerLens zeroes these weights, in the sum too
        matched += a * p;
        total += a;
      } else if (counted(q, k)) {
        total += std::fabs(a - p);
      }
    }
  if (o.measure == ErrorMeasure::abs) return 1.0 - total / double(n);  // n · mean over n² cells
  return total > 0 ? matched / total : 0.0;
}

std::vector<HeadScores> detect_heads(const ModelStages& m, const Trace& trace, const std::vector<int64_t>& ids,
                                     const std::vector<size_t>& lengths, const std::vector<HeadKind>& kinds,
                                     const DetectOptions& o) {
  const size_t B = lengths.size(), S = B ? ids.size() / B : 0;
  std::vector<HeadScores> out;
  for (HeadKind kind : kinds) out.push_back({kind, m.layers, m.heads, std::vector<double>(m.layers * m.heads, 0.0)});
  std::vector<const Tensor*> weights;
  for (size_t layer = 0; layer < m.layers; ++layer)
    weights.push_back(&trace.at(resolve_stage_name(m, "blocks." + std::to_string(layer) + ".attn.hook_pattern")));
  std::vector<float> square;
  for (size_t b = 0; b < B; ++b) {
    const size_t n = lengths[b];
    for (size_t k = 0; k < kinds.size(); ++k) {
      const std::vector<float> pattern = detection_pattern(kinds[k], ids.data() + b * S, n);
      for (size_t layer = 0; layer < m.layers; ++layer) {
        const Tensor& w = *weights[layer];
        for (size_t h = 0; h < m.heads; ++h) {
          square.resize(n * n);  // the item's real positions: the [n, n] corner of [S, S]
          for (size_t q = 0; q < n; ++q)
            for (size_t c = 0; c < n; ++c) square[q * n + c] = w.data()[((b * m.heads + h) * S + q) * S + c];
          out[k].scores[layer * m.heads + h] += head_score(square.data(), pattern, n, o) / double(B);
        }
      }
    }
  }
  return out;
}

Json head_scores_json(const std::vector<HeadScores>& scores) {
  Json detectors = Json::object();
  for (const HeadScores& s : scores) {
    Json rows = Json::array();
    for (size_t layer = 0; layer < s.layers; ++layer)
      rows.push_back(std::vector<double>(s.scores.begin() + layer * s.heads, s.scores.begin() + (layer + 1) * s.heads));
    detectors[head_kind_name(s.kind)] = {{"axes", {"layer", "head"}}, {"scores", rows}};
  }
  return detectors;
}

TokenRange parse_token_range(const std::string& text, size_t vocab_size) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw InputError("--token-range expects LOW:HIGH, got '" + text + "'");
  const size_t low = parse_size("--token-range (low)", text.substr(0, colon), 0),
               high = parse_size("--token-range (high)", text.substr(colon + 1), 1);
  if (high > vocab_size)
    throw InputError("--token-range " + text + ": the vocabulary has " + std::to_string(vocab_size) + " ids");
  if (low >= high) throw InputError("--token-range " + text + ": LOW must be below HIGH");
  return {int64_t(low), int64_t(high)};
}

std::vector<int64_t> repeated_random_tokens(TorchGenerator& gen, size_t batch, size_t half, int64_t low, int64_t high) {
  std::vector<int64_t> drawn(batch * half), out(batch * 2 * half);
  gen.randint(drawn.data(), drawn.size(), low, high);
  for (size_t b = 0; b < batch; ++b)
    for (size_t i = 0; i < 2 * half; ++i) out[b * 2 * half + i] = drawn[b * half + i % half];
  return out;
}

}  // namespace attn
