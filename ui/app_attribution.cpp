// The App's Attribution tab: attn attribute's methods (ui/attribution.hpp runs them) on the item shown. The
// token methods colour the sentence by each token's score; rollout and flow draw their shares as an output
// x input heatmap; logit attribution draws each head's direct contribution as a layer x head heatmap, a click
// on a head opening it in the Stage tab, and lists the other components.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"
#include "core/plot/heatmap.hpp"
#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {
namespace {

constexpr AttributionMethod methods[] = {AttributionMethod::integrated_gradients, AttributionMethod::gradient_x_input,
                                         AttributionMethod::rollout, AttributionMethod::flow,
                                         AttributionMethod::logit_attribution};
const char* const method_names[] = {"integrated-gradients", "gradient-x-input", "rollout", "flow", "logit-attribution"};

bool draws_shares(AttributionMethod m) { return m == AttributionMethod::rollout || m == AttributionMethod::flow; }

}  // namespace

std::string App::start_attribution(const Json& settings) {
  if (!settings.is_object()) throw InputError("attribute: expected {method, steps, target}");
  const std::string method = settings.value("method", std::string(method_names[attribution_method_]));
  attribution_method_ = int(std::find(std::begin(methods), std::end(methods), parse_attribution_method(method)) -
                            std::begin(methods));
  if (settings.contains("steps")) attribution_steps_ = json_integer<int>(settings["steps"], "steps", 1, 10000);
  if (settings.contains("target")) attribution_target_ = json_integer<int>(settings["target"], "target", -1, 1 << 30);
  if (settings.contains("baseline"))
    attribution_baseline_ = json_integer<int>(settings["baseline"], "baseline", -1, 1 << 30);
  playground_.update();
  const Computed* r = playground_.result();
  if (!r) return attribution_error_ = playground_.error();
  AttributionOptions o;
  o.method = methods[attribution_method_];
  o.steps = size_t(attribution_steps_);
  if (attribution_target_ >= 0) o.target = attribution_target_;
  if (attribution_baseline_ >= 0) o.baseline_id = attribution_baseline_;
  attribution_error_ = attribution_.start(playground_.config(), *r, size_t(std::clamp(batch_, 0, int(r->tokens.size()) - 1)), o);
  ++attribution_version_;
  return attribution_error_;
}

void App::draw_attribution_view(float width) {
  const Computed* r = playground_.result();
  if (!r) return;
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped("%s", tr(Str::attribution_intro));
  ImGui::PopStyleColor();
  draw_attribution_controls(*r);
  if (attribution_.poll()) ++attribution_version_;
  const std::string& error = attribution_error_.empty() ? attribution_.error() : attribution_error_;
  if (!error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("%s", error.c_str());
    ImGui::PopStyleColor();
  }
  if (attribution_.running()) {
    ImGui::TextColored(dim_color, tr(Str::attribution_running), method_names[0], attribution_steps_);
    return;
  }
  if (!attribution_.has_result() || !attribution_error_.empty()) return;
  refresh_attribution_cache();
  ImGui::TextWrapped("%s", attribution_caption_.c_str());
  if (!attribution_detail_.empty()) ImGui::TextColored(dim_color, "%s", attribution_detail_.c_str());
  const AttributionMethod method = attribution_.result().method;
  if (method == AttributionMethod::logit_attribution) return draw_attribution_map(width);
  draw_attributed_tokens();
  if (draws_shares(method)) draw_attribution_map(width);
}

void App::draw_attribution_controls(const Computed& r) {
  ImGui::SetNextItemWidth(200);
  ImGui::Combo(tr(Str::attribution_method), &attribution_method_, method_names, int(std::size(method_names)));
  if (methods[attribution_method_] == AttributionMethod::integrated_gradients) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    ImGui::SliderInt(tr(Str::attribution_steps), &attribution_steps_, 1, 200);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::InputInt(tr(Str::attribution_baseline), &attribution_baseline_, 1, 10);
    attribution_baseline_ = std::max(attribution_baseline_, -1);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::attribution_baseline_tip));
  }
  ImGui::SetNextItemWidth(110);  // a second row: the target, the item, the button
  ImGui::InputInt(tr(Str::attribution_target), &attribution_target_, 1, 10);
  attribution_target_ = std::max(attribution_target_, -1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::attribution_target_tip));
  if (r.tokens.size() > 1) index_slider(tr(Str::item), batch_, r.tokens.size(), true);
  ImGui::SameLine();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::BeginDisabled(attribution_.running());
  if (ImGui::Button(tr(Str::attribute))) start_attribution(Json::object());
  ImGui::EndDisabled();
  record_box(layout_, LayoutKind::label, "attribution", "", at, ImGui::GetItemRectMax());
}

// The caption, the heatmap's values and labels, and the other components, rebuilt when a result comes or
// the language changes.
void App::refresh_attribution_cache() {
  const Lang lang = language_of(playground_.config());
  if (attribution_cache_version_ == attribution_version_ && attribution_cache_lang_ == lang) return;
  attribution_cache_version_ = attribution_version_, attribution_cache_lang_ = lang;
  const Attribution& a = attribution_.result();
  const std::string name = attribution_method_name(a.method);
  const std::string target = attribution_.stages().family == StageFamily::classifier
                                 ? format(Str::attribution_class, (long long)a.target.id)
                                 : shown_token(a.target.label);
  attribution_caption_ = a.target.id >= 0 ? format(Str::attribution_target_line, name.c_str(), attribution_.item(),
                                                   target.c_str(), (long long)a.target.id, a.target.logit)
                                          : format(Str::attribution_no_target, name.c_str(), attribution_.item());
  attribution_detail_.clear();
  if (a.method == AttributionMethod::integrated_gradients)
    attribution_detail_ = format(Str::attribution_delta, a.steps, a.input_value, a.baseline_value, a.delta);
  if (draws_shares(a.method)) attribution_detail_ = format(Str::attribution_shares_caption, name.c_str());
  attribution_largest_ = 0;
  for (double s : a.scores) attribution_largest_ = std::max(attribution_largest_, std::abs(s));
  attribution_others_.clear();
  if (draws_shares(a.method)) {
    const size_t S = attribution_.tokens().size();
    attribution_values_ = Tensor::from_shape({S, S});
    std::copy(a.shares.begin(), a.shares.end(), attribution_values_.begin());
    attribution_rows_ = attribution_cols_ = attribution_.tokens();
  } else if (a.method == AttributionMethod::logit_attribution) {
    const size_t L = attribution_.stages().layers, n = attribution_.stages().heads;
    attribution_values_ = Tensor::from_shape({L, n});
    attribution_rows_.clear(), attribution_cols_.clear();
    for (size_t l = 0; l < L; ++l) attribution_rows_.push_back("L" + std::to_string(l));
    for (size_t h = 0; h < n; ++h) attribution_cols_.push_back("H" + std::to_string(h));
    for (size_t i = 0; i < a.components.size(); ++i) {
      size_t l = 0, h = 0;
      char rest = 0;
      if (std::sscanf(a.components[i].c_str(), "L%zuH%zu%c", &l, &h, &rest) == 2 && l < L && h < n) {
        attribution_values_(l, h) = float(a.contributions[i]);
        continue;
      }
      char value[32];
      std::snprintf(value, sizeof value, "%+.5f", a.contributions[i]);
      attribution_others_.push_back(a.components[i]);
      attribution_others_.push_back(value);
    }
  }
}

// The tokens wrapped to the width, each on its score's colour (diverging around 0, the largest |score| at
// either end); the value in a tooltip.
void App::draw_attributed_tokens() {
  const Attribution& a = attribution_.result();
  const std::vector<std::string>& tokens = attribution_.tokens();
  ImGui::TextColored(dim_color, "%s", tr(Str::attribution_tokens_caption));
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  const ImGuiStyle& style = ImGui::GetStyle();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (size_t i = 0; i < tokens.size() && i < a.scores.size(); ++i) {
    const ImVec2 size = ImGui::CalcTextSize(tokens[i].c_str());
    const float w = size.x + 2 * style.FramePadding.x;
    if (i) ImGui::SameLine(0, style.ItemSpacing.x / 2);
    if (i && ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const double t = attribution_largest_ > 0 ? 0.5 + 0.5 * a.scores[i] / attribution_largest_ : 0.5;
    const Rgba c = color_at(ColorMap::diverging, t);
    dl->AddRectFilled(at, ImVec2(at.x + w, at.y + ImGui::GetFrameHeight()), IM_COL32(c[0], c[1], c[2], 255), 3.0f);
    ImGui::PushID(int(i));
    ImGui::InvisibleButton("token", ImVec2(w, ImGui::GetFrameHeight()));
    ImGui::PopID();
    dl->AddText(ImVec2(at.x + style.FramePadding.x, at.y + style.FramePadding.y), IM_COL32(20, 20, 20, 255),
                tokens[i].c_str());
    record_box(layout_, LayoutKind::label, "attribution_tokens", tokens[i], at, ImGui::GetItemRectMax());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %.6g", tokens[i].c_str(), a.scores[i]);
  }
}

// Rollout's or flow's shares (output x input), or logit attribution's heads (layer x head) and, beside
// them, the other components. A click on a head opens it in the Stage tab, on the attribution's item.
void App::draw_attribution_map(float width) {
  const bool heads = attribution_.result().method == AttributionMethod::logit_attribution;
  if (heads) ImGui::TextColored(dim_color, "%s", tr(Str::attribution_heads_caption));
  // Shares are fractions (as attention weights); contributions have a sign.
  refresh(attribution_map_, {attribution_version_, &attribution_values_, 0, 0}, attribution_values_,
          heads ? ColorMap::diverging : ColorMap::sequential);
  const float list_w = heads ? std::min(260.0f, width * 0.3f) : 0.0f;
  const float h = std::max(120.0f, ImGui::GetContentRegionAvail().y);
  ImGui::BeginGroup();
  draw_heatmap(attribution_map_, &attribution_rows_, &attribution_cols_, width - list_w, h, "attribution");
  ImGui::EndGroup();
  const Heatmap& m = attribution_map_;
  const ImVec2 mouse = ImGui::GetMousePos();
  if (heads && ImGui::IsMouseClicked(0) && mouse.x >= m.box[0] && mouse.x < m.box[0] + m.box[2] &&
      mouse.y >= m.box[1] && mouse.y < m.box[1] + m.box[3]) {
    const int layer = int((mouse.y - m.y) / m.cell_h), head = int((mouse.x - m.x) / m.cell_w);
    const Computed* r = playground_.result();
    if (r && layer >= 0 && head >= 0 && size_t(layer) < r->num_layers) {
      batch_ = int(attribution_.item());
      set_layer(layer);
      head_ = head;
      stage_ = weights_stage_name(*r, size_t(layer));
      model_view_ = false;
      select_tab(Tab::stage);
    }
  }
  if (!heads) return;
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::TextColored(dim_color, "%s", tr(Str::attribution_others));
  if (ImGui::BeginTable("others", 2, ImGuiTableFlags_SizingFixedFit)) {
    for (size_t i = 0; i + 1 < attribution_others_.size(); i += 2) {  // name, value
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(attribution_others_[i].c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(attribution_others_[i + 1].c_str());
    }
    ImGui::EndTable();
  }
  ImGui::EndGroup();
}

Json App::attribution_json() const {
  Json j = attribution_.json();
  j["error"] = attribution_error_.empty() ? attribution_.error() : attribution_error_;
  j["heatmap"] = {{"x", attribution_map_.x},           {"y", attribution_map_.y},
                  {"cell_w", attribution_map_.cell_w}, {"cell_h", attribution_map_.cell_h},
                  {"rows", attribution_map_.slice.rows}, {"cols", attribution_map_.slice.cols},
                  {"values", attribution_map_.slice.values}};
  return j;
}

}  // namespace attn::ui
