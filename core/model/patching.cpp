#include "core/model/patching.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"

namespace attn {

namespace {

constexpr PatchKind all_kinds[] = {PatchKind::heads, PatchKind::resid_pre, PatchKind::attn_out, PatchKind::mlp_out};

double checked_metric(const PatchMetric& metric, const Trace& trace, const char* run) {
  const double value = metric(trace);
  if (!std::isfinite(value)) throw InputError(std::string("the metric of the ") + run + " run is not finite");
  return value;
}

struct Answer {
  int64_t id = -1;
  std::string token;
};

// --answer TEXT or --answer-id N (likewise --wrong): one token of the language model's vocabulary.
Answer answer_token(const LoadedModel& m, const std::string& flag, const std::string& text, const std::string& id) {
  if (text.empty() == id.empty()) throw InputError("give one of " + flag + " TEXT and " + flag + "-id N");
  if (!id.empty()) {
    const size_t n = parse_size(flag + "-id", id, 0);
    if (n >= m.vocab_size())
      throw InputError(flag + "-id " + id + " is outside the vocabulary (" + std::to_string(m.vocab_size()) + " ids)");
    return {int64_t(n), m.token(int64_t(n))};
  }
  // A decoder's tokenizer.json would add its BOS before the word.
  const ModelInput in = m.decoder_tokenizer ? m.from_ids({m.decoder_tokenizer->encode(text, false).ids}) : m.tokenize({text});
  if (in.lengths[0] != 1) {
    std::string tokens;
    for (size_t i = 0; i < in.lengths[0]; ++i) tokens += (i ? ", '" : "'") + in.tokens[0][i] + "'";
    throw InputError(flag + " '" + text + "' is " + std::to_string(in.lengths[0]) + " tokens (" + tokens +
                     "); the metric needs one (GPT-2's words usually start with a space: ' Paris')");
  }
  return {in.ids[0], in.tokens[0][0]};
}

Json sweep_json(const PatchSweep& s) {
  Json recovery = Json::array(), metric = Json::array();
  const size_t columns = s.shape.size() > 1 ? s.shape[1] : 0;
  if (columns == 0) return {{"axes", s.axes}, {"recovery", s.recovery}, {"metric", s.metric}};
  for (size_t layer = 0; layer < s.shape[0]; ++layer) {
    recovery.push_back(std::vector<double>(s.recovery.begin() + layer * columns, s.recovery.begin() + (layer + 1) * columns));
    metric.push_back(std::vector<double>(s.metric.begin() + layer * columns, s.metric.begin() + (layer + 1) * columns));
  }
  return {{"axes", s.axes}, {"recovery", recovery}, {"metric", metric}};
}

}  // namespace

PatchMetricChoice patch_metric(const LoadedModel& m, const ModelInput& clean, const PatchMetricOptions& o) {
  const bool lm_flags = !o.answer.empty() || !o.answer_id.empty() || !o.wrong.empty() || !o.wrong_id.empty();
  if (m.pretrained && m.pretrained->model.config.family == ModelFamily::bert)
    throw InputError("attn patch measures a language model's logits or a classifier's; BERT's base model has no output head");
  if (m.classifier) {
    if (lm_flags) throw InputError("--answer and --wrong measure a language model; a classifier's metric is --label K");
    if (o.label.empty()) throw InputError("the classifier's metric needs --label K (the class whose margin is measured)");
    const size_t classes = m.classifier->config.num_classes;
    if (!m.classifier->config.classifier_head || classes < 2)
      throw InputError("--label needs a classifier head with at least 2 classes");
    const size_t label = parse_size("--label", o.label, 0);
    if (label >= classes)
      throw InputError("--label " + o.label + " is out of range (the classifier has " + std::to_string(classes) +
                       " classes)");
    return {label_margin(int64_t(label)), {{"kind", "label_margin"}, {"label", label}},
            "logit of class " + o.label + " minus the best other class's"};
  }
  if (!o.label.empty()) throw InputError("--label is a classifier's metric; a language model's is --answer and --wrong");
  const Answer answer = answer_token(m, "--answer", o.answer, o.answer_id);
  const Answer wrong = answer_token(m, "--wrong", o.wrong, o.wrong_id);
  if (answer.id == wrong.id) throw InputError("--answer and --wrong are the same token ('" + answer.token + "')");
  const size_t last = clean.lengths[0] - 1;
  return {logit_difference(last, answer.id, wrong.id),
          {{"kind", "logit_difference"}, {"position", last},
           {"answer", {{"id", answer.id}, {"token", answer.token}}}, {"wrong", {{"id", wrong.id}, {"token", wrong.token}}}},
          "logit('" + answer.token + "') - logit('" + wrong.token + "') at the last position"};
}

Json patches_json(const Patching& p) {
  Json out = Json::object();
  for (const PatchSweep& s : p.sweeps) out[patch_kind_name(s.kind)] = sweep_json(s);
  return out;
}

std::string patch_kind_name(PatchKind kind) {
  switch (kind) {
    case PatchKind::heads: return "heads";
    case PatchKind::resid_pre: return "resid_pre";
    case PatchKind::attn_out: return "attn_out";
    case PatchKind::mlp_out: return "mlp_out";
  }
  return "";
}

std::vector<PatchKind> parse_patch_kinds(const std::string& text) {
  std::vector<std::string> names;
  for (PatchKind k : all_kinds) names.push_back(patch_kind_name(k));
  std::vector<PatchKind> kinds;
  for (size_t i : parse_choices("--sweep", text, names, "patch")) kinds.push_back(all_kinds[i]);
  return kinds;
}

PatchMetric logit_difference(size_t position, int64_t answer, int64_t wrong) {
  return [=](const Trace& t) {
    const Tensor& logits = t.at("logits");  // [B, S, V]
    const float* row = logits.data() + position * logits.shape(2);
    return double(row[answer]) - double(row[wrong]);
  };
}

PatchMetric label_margin(int64_t label) {
  return [=](const Trace& t) {
    const Tensor& logits = t.at("logits");  // [B, C]
    double best_other = -INFINITY;
    for (size_t c = 0; c < logits.shape(1); ++c)
      if (int64_t(c) != label) best_other = std::max(best_other, double(logits.data()[c]));
    return double(logits.data()[label]) - best_other;
  };
}

PatchingRun::PatchingRun(const LoadedModel& model, ModelInput clean, ModelInput corrupted, PatchMetric metric,
                         const std::vector<PatchKind>& kinds, bool resume)
    : model_(model), clean_(std::move(clean)), corrupted_(std::move(corrupted)), metric_(std::move(metric)),
      resume_(resume && !model.decoder) {  // the decoder reruns every layer: it cannot resume at one
  if (clean_.batch != 1 || corrupted_.batch != 1) throw InputError("patching takes one clean and one corrupted input");
  if (clean_.lengths[0] != corrupted_.lengths[0])
    throw InputError("the clean input has " + std::to_string(clean_.lengths[0]) + " tokens and the corrupted one " +
                     std::to_string(corrupted_.lengths[0]) + ": patching needs the same token count");
  const ModelStages m = model_.stages();
  if (m.layers == 0) throw InputError("this model has no layers to patch");
  clean_run_ = model_.forward(clean_);
  corrupted_run_ = model_.forward(corrupted_);
  result_.clean_metric = checked_metric(metric_, clean_run_, "clean");
  result_.corrupted_metric = checked_metric(metric_, corrupted_run_, "corrupted");
  if (result_.clean_metric == result_.corrupted_metric)
    throw InputError("the clean and corrupted runs give the same metric (" + std::to_string(result_.clean_metric) +
                     "): there is nothing for a patch to recover");
  resid_ = residual_stream_stages(m);
  const size_t seq = clean_.seq, width = m.width(), dk = m.head_dim;
  for (PatchKind kind : kinds) {
    PatchSweep s{kind, {"layer"}, {m.layers}, {}, {}};
    const size_t k = result_.sweeps.size();
    for (size_t layer = 0; layer < m.layers; ++layer) switch (kind) {
        case PatchKind::heads:
          for (size_t h = 0; h < m.heads; ++h) plan_.push_back({k, {layer, head_output_stage(m, layer), 0, seq, h * dk, (h + 1) * dk}});
          break;
        case PatchKind::resid_pre:
          for (size_t p = 0; p < seq; ++p) plan_.push_back({k, {layer, resid_[layer], p, p + 1, 0, width}});
          break;
        case PatchKind::attn_out: plan_.push_back({k, {layer, attention_output_stage(m, layer), 0, seq, 0, width}}); break;
        case PatchKind::mlp_out: plan_.push_back({k, {layer, mlp_output_stage(m, layer), 0, seq, 0, width}}); break;
      }
    if (kind == PatchKind::heads) s.axes.push_back("head"), s.shape.push_back(m.heads);
    if (kind == PatchKind::resid_pre) s.axes.push_back("position"), s.shape.push_back(seq);
    result_.sweeps.push_back(std::move(s));
  }
  result_.runs = plan_.size();
}

void PatchingRun::step() {
  if (finished()) return;
  const auto& [k, patch] = plan_[done_++];
  const Tensor& from = clean_run_.at(patch.stage);
  Hooks hooks;
  hooks.add(patch.stage, [&from, &patch = patch](Tensor& value) {  // [B, S, W]: the patch's rows and columns
    const size_t S = value.shape(1), W = value.shape(2);
    for (size_t b = 0; b < value.shape(0); ++b)
      for (size_t s = patch.row_begin; s < patch.row_end; ++s)
        std::copy(from.data() + (b * S + s) * W + patch.col_begin, from.data() + (b * S + s) * W + patch.col_end,
                  value.data() + (b * S + s) * W + patch.col_begin);
  });
  std::optional<LayerStart> start;  // the corrupted run's stream entering the patched layer
  if (resume_) start = LayerStart{patch.layer, corrupted_run_.at(resid_[patch.layer])};
  const double value = checked_metric(metric_, model_.forward(corrupted_, &hooks, start ? &*start : nullptr), "patched");
  PatchSweep& sweep = result_.sweeps[k];
  sweep.metric.push_back(value);
  sweep.recovery.push_back((value - result_.corrupted_metric) / (result_.clean_metric - result_.corrupted_metric));
  const size_t layers = model_.stages().layers;
  result_.layers_run += resume_ ? layers - patch.layer : layers;
  result_.layers_full += layers;
}

Patching activation_patching(const LoadedModel& model, const ModelInput& clean, const ModelInput& corrupted,
                             const PatchMetric& metric, const std::vector<PatchKind>& kinds, bool resume) {
  PatchingRun run(model, clean, corrupted, metric, kinds, resume);
  while (!run.finished()) run.step();
  return run.result();
}

}  // namespace attn
