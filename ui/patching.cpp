#include "ui/patching.hpp"

#include <chrono>

#include "core/base/error.hpp"
#include "ui/model_files.hpp"

namespace attn::ui {
namespace {

// The engine's view of the playground's model, sharing it (no copy).
attn::LoadedModel model_of(const PlaygroundConfig& c, const Computed& r) {
  attn::LoadedModel m;
  if (c.model == ModelKind::loaded && c.loaded && c.loaded->pretrained) {
    m.pretrained = std::shared_ptr<const Pretrained>(c.loaded, &*c.loaded->pretrained);
  } else {
    m.classifier = r.model;
    m.mask = c.mask;
    m.vocab = r.vocab;
  }
  return m;
}

}  // namespace

std::string PatchingSweep::start(const PlaygroundConfig& c, const Computed& r) {
  run_.reset();  // the run refers to model_, replaced below
  ++id_;
  try {
    if (r.stages.layers == 0) throw InputError(tr(Str::interventions_tutorial));
    model_ = model_of(c, r);
    const PlaygroundConfig::Patching& p = c.patching;
    const auto sentence = [&](const std::string& text, size_t i) {
      return !text.empty() ? text : c.sentences[std::min(i, c.sentences.size() - 1)];
    };
    ModelInput clean = model_.tokenize({sentence(p.clean, 0)});
    ModelInput corrupted = model_.tokenize({sentence(p.corrupted, 1)});
    metric_ = patch_metric(model_, clean, {p.answer, "", p.wrong, "", model_.classifier ? p.label : ""});
    clean_tokens_ = clean.tokens[0];
    run_ = std::make_unique<PatchingRun>(model_, std::move(clean), std::move(corrupted), metric_.function,
                                         parse_patch_kinds("heads,resid_pre,attn_out,mlp_out"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void PatchingSweep::pump(double budget_ms) {
  const auto start = std::chrono::steady_clock::now();
  do {
    run_->step();
  } while (running() &&
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < budget_ms);
}

Json PatchingSweep::json() const {
  if (!run_) return Json();
  const Patching& p = run_->result();
  return {{"model", model_.description()},
          {"clean", {{"ids", run_->clean().ids}, {"tokens", clean_tokens_}, {"metric", p.clean_metric}}},
          {"corrupted", {{"ids", run_->corrupted().ids}, {"metric", p.corrupted_metric}}},
          {"metric", metric_.about},
          {"done", run_->done()},
          {"runs", p.runs},
          {"layers_run", p.layers_run},
          {"layers_full", p.layers_full},
          {"patches", patches_json(p)}};
}

}  // namespace attn::ui
