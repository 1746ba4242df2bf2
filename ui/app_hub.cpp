// The App's "Hugging Face model" field: a Hub name typed or picked from suggestions, or asked for by a link
// (model=ORG/NAME@REVISION), downloaded by the shell's HubDownload (ui/hub.hpp) with a progress bar and
// Cancel, then read as a model folder is (the loader's own progress bar follows).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/base/error.hpp"
#include "ui/app.hpp"
#include "ui/strings.hpp"

namespace attn::ui {

const std::vector<std::string>& suggested_hub_models() {
  static const std::vector<std::string> names = {
      "openai-community/gpt2",       "distilbert/distilgpt2", "HuggingFaceTB/SmolLM2-135M",
      "Qwen/Qwen2.5-0.5B",           "EleutherAI/pythia-70m", "google-bert/bert-base-uncased"};
  return names;
}

std::string App::open_hub_model(const std::string& name) {
  hub::Reference ref;
  try {
    ref = hub::parse_reference(name);
  } catch (const InputError& e) {
    hub_requested_ = name;
    hub_error_ = e.what();
    status_ = format(Str::hub_failed, name.c_str(), e.what());
    return e.what();
  }
  if (hub_download_) hub_download_->cancel();
  hub_download_.reset();
  hub_requested_ = hub_pending_ = hub_name(ref);
  hub_error_.clear();
  hub_started_ = std::chrono::steady_clock::now();
  hub_download_ = platform_.open_hub(ref, playground_.config().hub_endpoint);
  if (!hub_download_) return hub_error_ = status_ = tr(Str::hub_unavailable);
  status_ = format(Str::hub_downloading, hub_pending_.c_str());
  return "";
}

void App::cancel_hub_download() {
  if (!hub_download_) return;
  hub_download_->cancel();
  hub_download_.reset();
  hub_gave_up(tr(Str::hub_cancelled), tr(Str::hub_cancelled));
}

// A link's model=ORG/NAME is asked for once (a failed or cancelled one is not retried every frame); a
// finished download is read as a folder.
void App::poll_hub() {
  const PlaygroundConfig& c = playground_.config();
  if (awaits_hub_model(c) && !hub_download_ && !loader_.running() && c.hub != hub_requested_ && platform_.has_hub())
    open_hub_model(c.hub);
  if (!hub_download_) return;
  std::optional<HubResult> done = hub_download_->take();
  if (!done) return;
  if (!done->error.empty()) {
    hub_download_.reset();
    return hub_gave_up(done->error, format(Str::hub_failed, hub_pending_.c_str(), done->error.c_str()));
  }
  hub_reading_ = std::move(hub_download_);  // its files (in the page, a MEMFS folder) stay until they are read
  try {
    start_loading(sort_model_files({done->folder}));  // named by the repository once read (use_model)
  } catch (const InputError& e) {  // a snapshot without a checkpoint's files
    use_model({nullptr, e.what()});
  }
}

// A download that failed or was cancelled, or whose files were refused: the model shown before stays (the
// first tutorial where there was none), and the message on the status line.
void App::hub_gave_up(const std::string& error, const std::string& status) {
  hub_error_ = error;
  status_ = status;
  PlaygroundConfig c = playground_.config();
  if (!awaits_hub_model(c)) return;
  c.hub = c.loaded ? c.loaded->hub : "";
  if (!c.loaded) c = defaults_for(ModelKind::tutorial, c);
  apply(c);
}

// The download's bar (also with the section closed, as for a link): the file, its size done of its total,
// the rate over the whole download and the time its file has left, then the bar and Cancel.
void App::draw_hub_progress() {
  if (!hub_download_) return;
  const HubProgress p = hub_download_->progress();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - hub_started_).count();
  const double rate = seconds > 0 ? double(p.earlier + p.done) / seconds : 0;
  const int left = rate > 0 && p.total > p.done ? int(std::min(double(p.total - p.done) / rate, 359999.0)) : 0;
  if (p.total == 0) {
    ImGui::TextWrapped(tr(Str::hub_asking), hub_pending_.c_str(), p.file.c_str());
  } else {
    const double mib = 1 << 20;
    ImGui::TextWrapped(tr(Str::hub_progress), p.file.c_str(), double(p.done) / mib, double(p.total) / mib, rate / mib,
                       left / 60, left % 60);
  }
  const float fraction = p.total ? float(double(p.done) / double(p.total)) : 0.0f;
  char percent[16];
  std::snprintf(percent, sizeof percent, "%.0f%%", 100.0 * fraction);
  ImGui::ProgressBar(fraction, ImVec2(-FLT_MIN, 0), percent);
  ImGui::PushID("hub");
  if (ImGui::Button(tr(Str::cancel))) cancel_hub_download();
  ImGui::PopID();
}

void App::draw_hub() {
  poll_hub();
  if (!platform_.has_hub()) return;
  draw_hub_progress();
  if (!ImGui::CollapsingHeader(tr(Str::hub_model), ImGuiTreeNodeFlags_DefaultOpen)) return;
  ImGui::PushID("hub");
  ImGui::PushItemWidth(-FLT_MIN);
  const bool enter = ImGui::InputTextWithHint("##name", "ORG/NAME[@REVISION]", hub_name_, sizeof hub_name_,
                                              ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::PopItemWidth();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::hub_tip));
  if (ImGui::BeginCombo("##suggested", tr(Str::hub_suggested))) {
    for (const std::string& name : suggested_hub_models())
      if (ImGui::Selectable(name.c_str())) std::snprintf(hub_name_, sizeof hub_name_, "%s", name.c_str());
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if ((ImGui::Button(tr(Str::open)) || enter) && hub_name_[0]) {
    open_hub_model(hub_name_);
  }
  ImGui::PopID();
}

Json App::hub_json() const {
  Json j = {{"name", hub_pending_}, {"running", bool(hub_download_)}, {"error", hub_error_}};
  if (hub_download_) {
    const HubProgress p = hub_download_->progress();
    j.update({{"file", p.file}, {"done", p.done}, {"total", p.total}, {"earlier", p.earlier}});
  }
  return j;
}

}  // namespace attn::ui
