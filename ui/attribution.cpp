#include "ui/attribution.hpp"

#include <system_error>

#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#include "ui/model_files.hpp"
#include "ui/strings.hpp"

namespace attn::ui {

namespace {

// The engine's refusals (core/model/attribution.cpp), said in the UI's language before it runs.
void refuse_what_it_cannot_give(const attn::LoadedModel& m, AttributionOptions& o) {
  const bool gradient_or_logits = o.method != AttributionMethod::rollout && o.method != AttributionMethod::flow;
  if (m.decoder && (m.decoder->config.sandwich_norms || m.decoder->config.final_softcap > 0) &&
      o.method == AttributionMethod::logit_attribution)
    throw InputError(tr(Str::attribution_gemma));
  const bool bert = m.pretrained && m.pretrained->model.config.family == ModelFamily::bert;
  if (bert && gradient_or_logits) throw InputError(tr(Str::attribution_bert));
  if (bert) o.target.reset();  // nothing to name
  if (m.classifier && o.method == AttributionMethod::logit_attribution) throw InputError(tr(Str::attribution_classifier));
  if (o.method != AttributionMethod::integrated_gradients) o.baseline_id.reset();  // the others have none
  if (o.baseline_id && size_t(*o.baseline_id) >= m.vocab_size())
    throw InputError(format(Str::attribution_baseline_range, (long long)*o.baseline_id, m.vocab_size()));
}

}  // namespace

AttributionRun::~AttributionRun() {
  if (worker_.joinable()) worker_.join();
}

std::string AttributionRun::start(const PlaygroundConfig& c, const Computed& r, size_t item, AttributionOptions o) {
  if (worker_.joinable()) worker_.join();  // the run in flight cannot be interrupted: its result is dropped
  finished_ = false;
  try {
    if (r.stages.family == StageFamily::tutorial) throw InputError(tr(Str::attribution_tutorial));
    if (item >= c.sentences.size())
      throw InputError("item " + std::to_string(item) + " does not exist (" + std::to_string(c.sentences.size()) + " sentences)");
    attn::LoadedModel model = engine_model(c, r);
    refuse_what_it_cannot_give(model, o);
    input_ = model.tokenize({c.sentences[item]});
    stages_ = model.stages();
    model_ = std::move(model);
  } catch (const InputError& e) {
    return e.what();
  }
  o.every_output = true;
  options_ = o;
  item_ = item;
  tokens_.clear();
  for (const std::string& t : input_.tokens[0]) tokens_.push_back(shown_token(t));
  if (o.method == AttributionMethod::integrated_gradients && threads_available) {
    try {
      worker_ = std::thread([this] { compute(); });
      return "";
    } catch (const std::system_error&) {  // no thread to be had (a browser's pool in use): at once
    }
  }
  compute();
  poll();
  return "";
}

void AttributionRun::compute() {
  try {
    computed_ = attribute(model_, input_, options_);
    computed_error_.clear();
  } catch (const InputError& e) {
    computed_ = Attribution();
    computed_error_ = e.what();
  }
  finished_ = true;
}

bool AttributionRun::poll() {
  if (!finished_) return false;
  if (worker_.joinable()) worker_.join();
  finished_ = false;
  has_result_ = computed_error_.empty();
  result_ = std::move(computed_);
  error_ = std::move(computed_error_);
  computed_error_.clear();
  return true;
}

Json AttributionRun::json() const {
  Json j = has_result_ ? attribution_json(model_, input_, result_) : Json::object();
  j["running"] = running();
  j["item"] = item_;
  if (has_result_ && !result_.shares.empty()) j["shares"] = result_.shares;
  return j;
}

}  // namespace attn::ui
