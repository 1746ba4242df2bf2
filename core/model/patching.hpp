// Activation patching, as TransformerLens's patching.py defines it: run a clean and a corrupted input
// of the same length, then rerun the corrupted one with one activation taken from the clean run, and
// measure how much of the clean metric that single activation restores. Every patch is a hook on a
// named stage (core/model/trace.hpp); each patched run resumes the cached corrupted run at the patched
// layer instead of recomputing the layers before it. docs/interventions.md#activation-patching.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/loaded_model.hpp"

namespace attn {

// What is patched, each over its own axes:
//   heads      a head's z (blocks.L.attn.hook_z, its columns), every position    [layer, head]
//   resid_pre  the residual stream entering a layer (blocks.L.hook_resid_pre)     [layer, position]
//   attn_out   an attention block's output (blocks.L.hook_attn_out), every position [layer]
//   mlp_out    a feed-forward block's output (blocks.L.hook_mlp_out), every position [layer]
enum class PatchKind { heads, resid_pre, attn_out, mlp_out };
std::string patch_kind_name(PatchKind kind);
// "heads,resid_pre,attn_out,mlp_out" (any of them, each once); else InputError.
std::vector<PatchKind> parse_patch_kinds(const std::string& text);

// A number computed from a run's trace (higher: more like the clean run).
using PatchMetric = std::function<double(const Trace&)>;
// A language model's logit difference at `position` of the first item: logits[answer] − logits[wrong].
PatchMetric logit_difference(size_t position, int64_t answer, int64_t wrong);
// A classifier's margin for `label`: its logit minus the best of the other classes' (first item).
PatchMetric label_margin(int64_t label);

// The metric as attn patch's options give it (text, as typed): GPT-2's --answer/--answer-id and
// --wrong/--wrong-id (each one token), a classifier's --label.
struct PatchMetricOptions {
  std::string answer, answer_id, wrong, wrong_id, label;
};
struct PatchMetricChoice {
  PatchMetric function;
  Json about;        // {"kind": "logit_difference", "position", "answer": {id, token}, "wrong"} | {"kind": "label_margin", "label"}
  std::string text;  // what it measures, in words
};
// The metric `options` give on `model` (at the clean input's last position); InputError for options of
// the other kind of model, an answer that is not one token, a label out of range, BERT (no output head).
PatchMetricChoice patch_metric(const LoadedModel& model, const ModelInput& clean, const PatchMetricOptions& options);

struct PatchSweep {
  PatchKind kind = PatchKind::heads;
  std::vector<std::string> axes;  // "layer", then "head" or "position" where there is a second axis
  std::vector<size_t> shape;
  std::vector<double> metric;    // each patched run's metric, row-major over `shape`
  std::vector<double> recovery;  // (metric − corrupted) / (clean − corrupted): 1 = the clean run's
};

struct Patching {
  double clean_metric = 0, corrupted_metric = 0;
  std::vector<PatchSweep> sweeps;
  size_t runs = 0;          // patched forward passes
  size_t layers_run = 0;    // the layers they computed (resuming at the patched layer)
  size_t layers_full = 0;   // the layers full passes would have computed
};

// A sweep run one patched run at a time, so that a UI can spread it over frames and show its progress.
// `model` must outlive it. The constructor runs the clean and corrupted inputs; it throws InputError
// when they have different token counts (naming both) or give the same metric.
class PatchingRun {
 public:
  PatchingRun(const LoadedModel& model, ModelInput clean, ModelInput corrupted, PatchMetric metric,
              const std::vector<PatchKind>& kinds, bool resume = true);
  size_t done() const { return done_; }
  size_t total() const { return result_.runs; }
  bool finished() const { return done_ == result_.runs; }
  // The next patched run (nothing once finished).
  void step();
  // The sweeps so far: each one's values fill in as its runs are done.
  const Patching& result() const { return result_; }
  const ModelInput& clean() const { return clean_; }
  const ModelInput& corrupted() const { return corrupted_; }

 private:
  struct Patch {  // one patched run: `stage` of layer `layer`, rows and columns [begin, end) from the clean run
    size_t layer;
    std::string stage;
    size_t row_begin, row_end, col_begin, col_end;
  };
  const LoadedModel& model_;
  ModelInput clean_, corrupted_;
  PatchMetric metric_;
  bool resume_;
  Trace clean_run_, corrupted_run_;
  std::vector<std::string> resid_;
  std::vector<std::pair<size_t, Patch>> plan_;  // (sweep, patch) in run order
  size_t done_ = 0;
  Patching result_;
};

// The sweeps as attn patch --json's "patches": {KIND: {"axes", "recovery", "metric"}}, one-axis
// sweeps as flat lists.
Json patches_json(const Patching& patching);

// The whole sweep at once; `resume` false reruns every patch from the embeddings (to measure what
// resuming saves).
Patching activation_patching(const LoadedModel& model, const ModelInput& clean, const ModelInput& corrupted,
                             const PatchMetric& metric, const std::vector<PatchKind>& kinds, bool resume = true);

}  // namespace attn
