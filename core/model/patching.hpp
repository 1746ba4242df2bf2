// Activation patching, as TransformerLens's patching.py defines it: run a clean and a corrupted input
// of the same length, then rerun the corrupted one with one activation taken from the clean run, and
// measure how much of the clean metric that single activation restores. Every patch is a hook on a
// named stage (core/model/trace.hpp); each patched run resumes the cached corrupted run at the patched
// layer instead of recomputing the layers before it. docs/interventions.md#activation-patching.
#pragma once
#include <functional>
#include <string>
#include <vector>

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

struct PatchOptions {
  bool resume = true;  // false: every patched run from the embeddings (to measure what resuming saves)
  // Called after each patched run with (done, total); returning false stops the sweep (InputError).
  std::function<bool(size_t, size_t)> progress;
};

// `clean` and `corrupted` hold one item each, of the same token count (else InputError naming both);
// the clean and corrupted metrics must differ.
Patching activation_patching(const LoadedModel& model, const ModelInput& clean, const ModelInput& corrupted,
                             const PatchMetric& metric, const std::vector<PatchKind>& kinds,
                             const PatchOptions& options = {});

}  // namespace attn
