// The Interventions tab's activation patching without any window: attn patch's sweeps (core/model/
// patching.hpp) on the playground's model, from the configuration's inputs and metric, one patched run
// at a time so that each frame runs a few milliseconds of it (the UI stays responsive, its progress
// shown). tests/test_ui.cpp tests it headless.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/model/patching.hpp"
#include "ui/playground.hpp"

namespace attn::ui {

class PatchingSweep {
 public:
  // Starts every sweep (heads, resid_pre, attn_out, mlp_out) on the result's model with the
  // configuration's patching inputs (empty ones: the first two sentences); "" or why it cannot start.
  std::string start(const PlaygroundConfig& config, const Computed& result);
  bool running() const { return run_ && !run_->finished(); }
  bool started() const { return run_ != nullptr; }
  // Runs patched runs until `budget_ms` have passed (at least one).
  void pump(double budget_ms);
  uint64_t id() const { return id_; }  // +1 per start
  const PatchingRun& run() const { return *run_; }
  const std::vector<std::string>& clean_tokens() const { return clean_tokens_; }
  const Json& metric_about() const { return metric_.about; }  // core/model/patching.hpp's PatchMetricChoice
  // attn patch --json's document: model, clean, corrupted, metric, runs, layers_run, layers_full, patches.
  Json json() const;

 private:
  attn::LoadedModel model_;
  ModelInput clean_, corrupted_;
  std::vector<std::string> clean_tokens_;
  PatchMetricChoice metric_;
  std::unique_ptr<PatchingRun> run_;
  uint64_t id_ = 0;
};

}  // namespace attn::ui
