// The Attribution tab's work without any window: attn attribute's methods (core/model/attribution.hpp)
// on the playground's model and one of its sentences. Integrated gradients (steps + 2 rows forward and
// backward) runs on a worker thread where one can start, so the UI stays responsive; the other methods,
// one pass each, run at once. tests/test_ui.cpp tests it headless.
#pragma once
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/model/attribution.hpp"
#include "ui/playground.hpp"

namespace attn::ui {

class AttributionRun {
 public:
  AttributionRun() = default;
  ~AttributionRun();
  AttributionRun(const AttributionRun&) = delete;
  AttributionRun& operator=(const AttributionRun&) = delete;

  // Attributes item `item` of the result's input (its tokens alone, no padding) by `options`, flow for
  // every output position; "" or why it cannot start (the tutorial's walkthrough, a method the model
  // cannot give, an item out of range), in the UI's language. A run in flight is waited for first and its
  // result dropped; the engine's own refusals (a steps count outside 1 to 10000, a target outside the
  // vocabulary) come as error() once the run ends.
  std::string start(const PlaygroundConfig& config, const Computed& result, size_t item, AttributionOptions options);
  bool running() const { return worker_.joinable() && !finished_; }
  // Once a run has ended, takes its result (joins the worker): true when it changed since the last call.
  bool poll();
  // The last finished run: its attribution (method, target, scores, shares, contributions), or the
  // engine's message when the model cannot give the method (empty `error` then means none).
  bool has_result() const { return has_result_; }
  const Attribution& result() const { return result_; }
  const std::string& error() const { return error_; }
  const std::vector<std::string>& tokens() const { return tokens_; }  // as the UI shows them
  size_t item() const { return item_; }
  const ModelStages& stages() const { return stages_; }  // the model's layers and heads
  // attn attribute --json's document of the last finished run (empty before one), with "running", "item"
  // and (rollout, flow) "shares" added.
  Json json() const;

 private:
  void finish();
  void compute();

  attn::LoadedModel model_;
  ModelInput input_;
  AttributionOptions options_;
  std::vector<std::string> tokens_;
  ModelStages stages_;
  size_t item_ = 0;
  // Written by the worker, read once finished_ is set.
  Attribution computed_;
  std::string computed_error_;
  std::atomic<bool> finished_{false};
  std::thread worker_;
  bool has_result_ = false;
  Attribution result_;
  std::string error_;
};

}  // namespace attn::ui
