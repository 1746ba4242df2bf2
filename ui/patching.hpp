// The Interventions tab's activation patching without any window: attn patch's sweeps (core/model/
// patching.hpp) on the playground's model, from the configuration's inputs and metric, one patched run
// at a time. Natively, and in a browser page with threads, they run on a worker thread; where a thread
// cannot start, pump() runs a few milliseconds of them each frame. Either way the UI stays responsive
// and reads the sweeps as they fill in. tests/test_ui.cpp tests it headless.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/model/patching.hpp"
#include "ui/playground.hpp"

namespace attn::ui {

class PatchingSweep {
 public:
  PatchingSweep() = default;
  ~PatchingSweep();
  PatchingSweep(const PatchingSweep&) = delete;
  PatchingSweep& operator=(const PatchingSweep&) = delete;

  // Starts every sweep (heads, resid_pre, attn_out, mlp_out) on the result's model with the
  // configuration's patching inputs (empty ones: the first two sentences); "" or why it cannot start
  // (a sweep in flight is stopped either way). The clean and corrupted runs happen here.
  std::string start(const PlaygroundConfig& config, const Computed& result);
  bool started() const { return run_ != nullptr; }
  bool running() const { return done_ < total_; }
  // Without a worker: patched runs until `budget_ms` have passed (at least one). With one: nothing.
  void pump(double budget_ms);
  uint64_t id() const { return id_; }  // +1 per start
  size_t done() const { return done_; }
  size_t total() const { return total_; }
  Patching result() const;  // the sweeps so far (a copy: the worker goes on filling its own)
  const std::vector<std::string>& clean_tokens() const { return clean_tokens_; }
  const Json& metric_about() const { return metric_.about; }  // core/model/patching.hpp's PatchMetricChoice
  // attn patch --json's document so far: model, clean, corrupted, metric, done, runs, layers_run,
  // layers_full, patches.
  Json json() const;

 private:
  void stop();
  void step_and_publish();

  attn::LoadedModel model_;
  std::vector<int64_t> clean_ids_, corrupted_ids_;
  std::vector<std::string> clean_tokens_;
  PatchMetricChoice metric_;
  std::unique_ptr<PatchingRun> run_;  // stepped by the worker while it runs
  uint64_t id_ = 0;
  std::atomic<size_t> done_{0}, total_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex published_mutex_;
  Patching published_;
  std::thread worker_;
};

}  // namespace attn::ui
