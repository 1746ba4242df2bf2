#include "ui/patching.hpp"

#include <chrono>

#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#include "ui/model_files.hpp"

namespace attn::ui {

PatchingSweep::~PatchingSweep() { stop(); }

void PatchingSweep::stop() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
  stop_ = false;
}

std::string PatchingSweep::start(const PlaygroundConfig& c, const Computed& r) {
  stop();
  run_.reset();  // the run refers to model_, replaced below
  done_ = total_ = 0;
  ++id_;
  try {
    if (r.stages.family == StageFamily::tutorial) throw InputError(tr(Str::patching_tutorial));
    if (c.model == ModelKind::loaded && c.loaded && c.loaded->checkpoint() && !c.loaded->causal_lm())
      throw InputError(tr(Str::patching_bert));
    model_ = engine_model(c, r);
    const PlaygroundConfig::Patching& p = c.patching;
    const auto sentence = [&](const std::string& text, size_t i) {
      return !text.empty() ? text : c.sentences[std::min(i, c.sentences.size() - 1)];
    };
    ModelInput clean = model_.tokenize({sentence(p.clean, 0)});
    ModelInput corrupted = model_.tokenize({sentence(p.corrupted, 1)});
    metric_ = patch_metric(model_, clean, {p.answer, "", p.wrong, "", model_.classifier ? p.label : ""});
    clean_tokens_.clear();
    for (const std::string& t : clean.tokens[0]) clean_tokens_.push_back(shown_token(t));
    clean_ids_ = clean.ids;
    corrupted_ids_ = corrupted.ids;
    run_ = std::make_unique<PatchingRun>(model_, std::move(clean), std::move(corrupted), metric_.function,
                                         parse_patch_kinds("heads,resid_pre,attn_out,mlp_out"));
  } catch (const InputError& e) {
    return e.what();
  }
  {
    std::lock_guard<std::mutex> lock(published_mutex_);
    published_ = run_->result();
  }
  total_ = run_->total();
  if (threads_available) {
    try {
      worker_ = std::thread([this] {
        while (!stop_ && running()) step_and_publish();
      });
    } catch (const std::system_error&) {  // no thread to be had (a browser's pool in use): pump() steps
    }
  }
  return "";
}

void PatchingSweep::step_and_publish() {
  run_->step();
  std::lock_guard<std::mutex> lock(published_mutex_);
  published_ = run_->result();
  done_ = run_->done();
}

void PatchingSweep::pump(double budget_ms) {
  if (worker_.joinable() || !running()) return;
  const auto start = std::chrono::steady_clock::now();
  do {
    step_and_publish();
  } while (running() &&
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < budget_ms);
}

Patching PatchingSweep::result() const {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return published_;
}

Json PatchingSweep::json() const {
  if (!run_) return Json();
  const Patching p = result();
  return {{"model", model_.description()},
          {"clean", {{"ids", clean_ids_}, {"tokens", clean_tokens_}, {"metric", p.clean_metric}}},
          {"corrupted", {{"ids", corrupted_ids_}, {"metric", p.corrupted_metric}}},
          {"metric", metric_.about},
          {"done", done()},
          {"runs", p.runs},
          {"layers_run", p.layers_run},
          {"layers_full", p.layers_full},
          {"patches", patches_json(p)}};
}

}  // namespace attn::ui
