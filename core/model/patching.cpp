#include "core/model/patching.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"

namespace attn {

namespace {

constexpr PatchKind all_kinds[] = {PatchKind::heads, PatchKind::resid_pre, PatchKind::attn_out, PatchKind::mlp_out};

// Rows [row_begin, row_end) (positions) and columns [col_begin, col_end) of every item: the part of a
// [B, S, W] stage a patch copies from the clean run.
struct Box {
  size_t row_begin, row_end, col_begin, col_end;
};

void copy_box(const Tensor& from, Tensor& to, const Box& box) {
  const size_t B = to.shape(0), S = to.shape(1), W = to.shape(2);
  for (size_t b = 0; b < B; ++b)
    for (size_t s = box.row_begin; s < box.row_end; ++s)
      std::copy(from.data() + (b * S + s) * W + box.col_begin, from.data() + (b * S + s) * W + box.col_end,
                to.data() + (b * S + s) * W + box.col_begin);
}

// One patched run: `stage` of layer `layer`, `box` of it from the clean run.
struct Patch {
  size_t layer;
  std::string stage;
  Box box;
};

// The patches of one kind, row-major over the sweep's axes.
std::vector<Patch> patches(PatchKind kind, const ModelStages& m, const std::vector<std::string>& resid, size_t seq,
                           size_t width, PatchSweep& sweep) {
  std::vector<Patch> out;
  const Box all{0, seq, 0, width};
  sweep.kind = kind;
  sweep.axes = {"layer"};
  sweep.shape = {m.layers};
  for (size_t layer = 0; layer < m.layers; ++layer) switch (kind) {
      case PatchKind::heads:
        for (size_t h = 0; h < m.heads; ++h)
          out.push_back({layer, head_output_stage(m, layer), {0, seq, h * m.head_dim, (h + 1) * m.head_dim}});
        break;
      case PatchKind::resid_pre:
        for (size_t s = 0; s < seq; ++s) out.push_back({layer, resid[layer], {s, s + 1, 0, width}});
        break;
      case PatchKind::attn_out: out.push_back({layer, attention_output_stage(m, layer), all}); break;
      case PatchKind::mlp_out: out.push_back({layer, mlp_output_stage(m, layer), all}); break;
    }
  if (kind == PatchKind::heads) sweep.axes.push_back("head"), sweep.shape.push_back(m.heads);
  if (kind == PatchKind::resid_pre) sweep.axes.push_back("position"), sweep.shape.push_back(seq);
  return out;
}

double checked_metric(const PatchMetric& metric, const Trace& trace, const char* run) {
  const double value = metric(trace);
  if (!std::isfinite(value)) throw InputError(std::string("the metric of the ") + run + " run is not finite");
  return value;
}

}  // namespace

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

Patching activation_patching(const LoadedModel& model, const ModelInput& clean, const ModelInput& corrupted,
                             const PatchMetric& metric, const std::vector<PatchKind>& kinds, const PatchOptions& o) {
  if (clean.batch != 1 || corrupted.batch != 1) throw InputError("patching takes one clean and one corrupted input");
  if (clean.lengths[0] != corrupted.lengths[0])
    throw InputError("the clean input has " + std::to_string(clean.lengths[0]) + " tokens and the corrupted one " +
                     std::to_string(corrupted.lengths[0]) + ": patching needs the same token count");
  const ModelStages m = model.stages();
  if (m.layers == 0) throw InputError("this model has no layers to patch");
  const Trace clean_run = model.forward(clean), corrupted_run = model.forward(corrupted);
  Patching p;
  p.clean_metric = checked_metric(metric, clean_run, "clean");
  p.corrupted_metric = checked_metric(metric, corrupted_run, "corrupted");
  const double span = p.clean_metric - p.corrupted_metric;
  if (span == 0)
    throw InputError("the clean and corrupted runs give the same metric (" + std::to_string(p.clean_metric) +
                     "): there is nothing for a patch to recover");
  const std::vector<std::string> resid = residual_stream_stages(m);
  const size_t seq = clean.seq, width = m.heads * m.head_dim;
  std::vector<std::vector<Patch>> plan;
  for (PatchKind kind : kinds) {
    p.sweeps.emplace_back();
    plan.push_back(patches(kind, m, resid, seq, width, p.sweeps.back()));
    p.runs += plan.back().size();
  }
  size_t done = 0;
  for (size_t k = 0; k < plan.size(); ++k)
    for (const Patch& patch : plan[k]) {
      const Tensor& from = clean_run.at(patch.stage);
      Hooks hooks;
      hooks.add(patch.stage, [&from, box = patch.box](Tensor& value) { copy_box(from, value, box); });
      const LayerStart start{patch.layer, corrupted_run.at(resid[patch.layer])};
      const Trace run = model.forward(corrupted, &hooks, o.resume ? &start : nullptr);
      const double value = checked_metric(metric, run, "patched");
      p.sweeps[k].metric.push_back(value);
      p.sweeps[k].recovery.push_back((value - p.corrupted_metric) / span);
      p.layers_run += o.resume ? m.layers - patch.layer : m.layers;
      p.layers_full += m.layers;
      if (o.progress && !o.progress(++done, p.runs)) throw InputError("patching stopped");
    }
  return p;
}

}  // namespace attn
