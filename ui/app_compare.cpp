// The App's Compare tab: the run pinned as A (Playground::pin) beside the current run B — the selected
// stage of each side by side on one colour scale, their difference B − A on a diverging one, the first
// stage where they part, and every stage's measures (core/model/trace_diff.hpp: attn diff's, B the
// reference).
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/base/error.hpp"
#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

namespace {

const Stage* stage_named(const Computed& r, const std::string& name) {
  for (const Stage& s : r.trace.stages())
    if (s.name == name) return &s;
  return nullptr;
}

Str status_text(StageDiff::Status status) {
  switch (status) {
    case StageDiff::Status::equal: return Str::compare_equal;
    case StageDiff::Status::within: return Str::compare_within;
    case StageDiff::Status::beyond: return Str::compare_beyond;
    case StageDiff::Status::shape_differs: return Str::compare_shape_differs;
    case StageDiff::Status::only_in_a: return Str::compare_only_in_a;
    case StageDiff::Status::only_in_b: return Str::compare_only_in_b;
  }
  return Str::compare_beyond;
}

// B − A. Where one run masks a score (masked_fill's -1e9) and the other does not, the masked value (drawn
// grey: no number says how far "masked" is from a score); where both do, 0.
Tensor difference(const Tensor& a, const Tensor& b) {
  Tensor d = Tensor::from_shape(b.shape());
  const float *pa = a.data(), *pb = b.data();
  float* pd = d.data();
  for (size_t i = 0; i < d.size(); ++i) {
    const bool ma = pa[i] <= masked_threshold, mb = pb[i] <= masked_threshold;
    pd[i] = ma && mb ? 0.0f : ma || mb ? -1e9f : pb[i] - pa[i];
  }
  return d;
}

// The difference's labels: B's, "a→b" where A's differ (two sentences: the words that changed).
std::vector<std::string> merged_labels(const std::vector<std::string>* a, const std::vector<std::string>* b) {
  std::vector<std::string> out;
  if (!b) return out;
  for (size_t i = 0; i < b->size(); ++i)
    out.push_back(a && i < a->size() && (*a)[i] != (*b)[i] ? (*a)[i] + "→" + (*b)[i] : (*b)[i]);
  return out;
}

}  // namespace

void App::draw_compare_view(float width) {
  draw_compare_controls();
  const TraceDiff* diff = playground_.compare();
  if (!diff) {
    ImGui::TextWrapped("%s", tr(Str::compare_intro));
    return;
  }
  // The stage's item and head (the Stage tab's), from whichever run has the stage.
  const Stage* shown = find_stage(stage_);
  if (!shown) shown = stage_named(*playground_.pinned(), stage_);
  if (shown && shown->value.dimension() >= 3) index_slider(tr(Str::batch_item), batch_, shown->value.shape(0), false);
  if (shown && shown->value.dimension() == 4) index_slider(tr(Str::head), head_, shown->value.shape(1), true);
  refresh_compare_cache(*diff);
  fitted_title(compare_a_text_.c_str(), width, "compare");
  fitted_title(compare_b_text_.c_str(), width, "compare");
  if (playground_.pinned_config().model == ModelKind::loaded)
    ImGui::TextColored(dim_color, "%s", tr(Str::compare_not_in_link));
  fitted_title(compare_summary_.c_str(), width, "compare");
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  fitted_title(compare_counts_.c_str(), width, "compare");
  ImGui::PopStyleColor();
  fitted_title(compare_stage_text_.c_str(), width, "compare");
  const float left = ImGui::GetContentRegionAvail().y;
  draw_compare_maps(width, std::max(120.0f, left * 0.62f));
  draw_compare_table(*diff);
}

void App::draw_compare_controls() {
  if (ImGui::Button(tr(Str::compare_pin))) playground_.pin();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::compare_pin_tip));
  if (!playground_.pinned()) return;
  ImGui::SameLine();
  if (ImGui::Button(tr(Str::compare_clear))) playground_.unpin();
  const Tolerance tolerance = playground_.tolerance();
  Tolerance edited = tolerance;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(80);
  ImGui::InputDouble("rtol", &edited.rtol, 0, 0, "%g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::compare_tolerance_tip));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(80);
  ImGui::InputDouble("atol", &edited.atol, 0, 0, "%g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::compare_tolerance_tip));
  if (edited.rtol == tolerance.rtol && edited.atol == tolerance.atol) return;
  try {
    playground_.set_tolerance(edited);
  } catch (const InputError& e) {
    status_ = e.what();
  }
}

// Rebuilt only when a run, the stage, the item, the head, the tolerance or the language changed.
void App::refresh_compare_cache(const TraceDiff& diff) {
  const Computed& a = *playground_.pinned();
  const Computed& b = *playground_.result();
  const Tolerance tolerance = playground_.tolerance();
  CompareKey& k = compare_key_;
  if (k.pinned == playground_.pinned_generation() && k.result == playground_.result_generation() && k.stage == stage_ &&
      k.batch == batch_ && k.head == head_ && k.rtol == tolerance.rtol && k.atol == tolerance.atol && k.lang == language())
    return;
  k = {playground_.pinned_generation(), playground_.result_generation(), stage_, batch_, head_, tolerance.rtol,
       tolerance.atol, language()};
  compare_a_text_ = format(Str::compare_a, run_summary(playground_.pinned_config()).c_str());
  compare_b_text_ = format(Str::compare_b, run_summary(playground_.config()).c_str());
  size_t count[6] = {};
  for (const StageDiff& s : diff.stages) ++count[size_t(s.status)];
  compare_summary_ = diff.first_differing ? format(Str::compare_first, diff.stages[*diff.first_differing].name.c_str())
                                          : format(Str::compare_identical, diff.compared);
  compare_counts_ = format(Str::compare_counts, diff.compared, count[0], count[1], count[2], count[3], count[4], count[5]);
  const auto found = std::find_if(diff.stages.begin(), diff.stages.end(), [&](const StageDiff& s) { return s.name == stage_; });

  // A and B on one scale (a mask on its fixed [0, 1]), B − A on a diverging one around 0.
  const Stage* stages[2] = {stage_named(a, stage_), stage_named(b, stage_)};
  const std::vector<size_t> index = {size_t(batch_), size_t(head_)};  // past a stage's leading axes: ignored
  std::vector<float> both;
  for (int s = 0; s < 2; ++s) {
    compare_maps_[s].slice = stages[s] ? slice_2d(stages[s]->value, index) : Slice();
    both.insert(both.end(), compare_maps_[s].slice.values.begin(), compare_maps_[s].slice.values.end());
  }
  const ColorMap map = stage_color_map(stage_);
  const ValueRange range = stage_ == "mask" ? ValueRange{0.0f, 1.0f} : map_range(map, both);
  for (int s = 0; s < 2; ++s)
    if (stages[s]) show_slice(compare_maps_[s], map, range);
  const bool same_shape = stages[0] && stages[1] && stages[0]->value.shape() == stages[1]->value.shape();
  compare_delta_ = same_shape ? difference(stages[0]->value, stages[1]->value) : Tensor();
  compare_maps_[2].slice = same_shape ? slice_2d(compare_delta_, index) : Slice();
  if (same_shape) show_slice(compare_maps_[2], ColorMap::diverging, map_range(ColorMap::diverging, compare_maps_[2].slice.values));
  const AxisLabels la = stages[0] ? axis_labels(a, *stages[0], size_t(batch_)) : AxisLabels{nullptr, nullptr};
  const AxisLabels lb = stages[1] ? axis_labels(b, *stages[1], size_t(batch_)) : AxisLabels{nullptr, nullptr};
  compare_labels_[0] = merged_labels(la.rows, lb.rows);
  compare_labels_[1] = merged_labels(la.cols, lb.cols);

  std::string what;  // nothing when neither run has the stage
  if (!stages[0] || !stages[1]) what = stages[0] ? tr(Str::compare_only_a) : stages[1] ? tr(Str::compare_only_b) : "";
  else if (!same_shape)
    what = format(Str::compare_shapes, shape_text(found->shape_a).c_str(), shape_text(found->shape_b).c_str());
  else
    what = format(Str::compare_values, found->max_abs, found->max_rel, static_cast<unsigned long long>(found->max_ulps),
                  found->beyond, stages[1]->value.size());
  compare_stage_text_ = stage_ + ": " + what;
}

void App::draw_compare_maps(float width, float height) {
  const Computed* runs[2] = {playground_.pinned(), playground_.result()};
  static const char* const headings[] = {"A", "B", "B - A"};  // names, in either language
  static const char* const ids[] = {"compare_a", "compare_b", "compare_diff"};
  static const char* const prefixes[] = {"A_", "B_", "B-A_"};
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float w = std::floor((width - 2 * gap) / 3.0f);
  const float h = height - ImGui::GetTextLineHeightWithSpacing() - ImGui::GetFrameHeightWithSpacing();
  bool first = true;
  for (int k = 0; k < 3; ++k) {
    Heatmap& map = compare_maps_[k];
    if (map.slice.rows == 0) continue;
    const Stage* stage = k < 2 ? stage_named(*runs[k], stage_) : nullptr;
    const AxisLabels labels = k < 2 ? axis_labels(*runs[k], *stage, size_t(batch_))
                                    : AxisLabels{compare_labels_[0].empty() ? nullptr : &compare_labels_[0],
                                                 compare_labels_[1].empty() ? nullptr : &compare_labels_[1]};
    if (!first) ImGui::SameLine();
    first = false;
    ImGui::BeginGroup();
    fitted_title(headings[k], w, ids[k]);
    draw_heatmap(map, labels.rows, labels.cols, w, h, ids[k]);
    ImGui::PushID(ids[k]);
    char name[160];  // the exported files' names: A_attention_weights, …
    std::snprintf(name, sizeof name, "%s%s", prefixes[k], stage_.c_str());
    export_buttons(map, name, k < 2 ? stage->value : compare_delta_, k < 2 ? stage->dtype : PrintDtype::float32, true,
                   labels.rows, labels.cols);
    ImGui::PopID();
    ImGui::EndGroup();
  }
}

// Every stage's status and measures; a click shows that stage.
void App::draw_compare_table(const TraceDiff& diff) {
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingFixedFit;
  const float h = std::max(ImGui::GetContentRegionAvail().y, 4 * ImGui::GetFrameHeightWithSpacing());
  if (!ImGui::BeginTable("compare_stages", 5, flags, ImVec2(0, h))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (Str column : {Str::compare_col_stage, Str::compare_col_status, Str::compare_col_abs, Str::compare_col_rel,
                     Str::compare_col_ulps})
    ImGui::TableSetupColumn(tr(column));
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(int(diff.stages.size()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const StageDiff& s = diff.stages[size_t(i)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (ImGui::Selectable(s.name.c_str(), s.name == stage_, ImGuiSelectableFlags_SpanAllColumns)) stage_ = s.name;
      ImGui::TableNextColumn();
      const bool differs = s.status != StageDiff::Status::equal && s.status != StageDiff::Status::within;
      ImGui::TextColored(differs ? error_color : dim_color, "%s", tr(status_text(s.status)));
      if (s.status > StageDiff::Status::beyond) continue;
      ImGui::TableNextColumn();
      ImGui::Text("%.3g", s.max_abs);
      ImGui::TableNextColumn();
      ImGui::Text("%.3g", s.max_rel);
      ImGui::TableNextColumn();
      ImGui::Text("%llu", static_cast<unsigned long long>(s.max_ulps));
    }
  ImGui::EndTable();
}

Json App::compare_json() const {
  Json maps = Json::array();
  for (const Heatmap& h : compare_maps_)
    maps.push_back({{"x", h.x}, {"y", h.y}, {"cell_w", h.cell_w}, {"cell_h", h.cell_h}, {"rows", h.slice.rows},
                    {"cols", h.slice.cols}, {"lo", h.range.lo}, {"hi", h.range.hi},
                    {"values", h.slice.values.size() <= max_json_cells ? h.slice.values : std::vector<float>()}});
  return {{"pinned", playground_.pinned() != nullptr}, {"a", compare_a_text_}, {"b", compare_b_text_},
          {"summary", compare_summary_}, {"stage", compare_stage_text_}, {"maps", maps},
          {"row_labels", compare_labels_[0]}, {"col_labels", compare_labels_[1]}};
}

}  // namespace attn::ui
