// Small pieces the App's files share (ui/app.cpp, ui/app_train.cpp): colours, a clamping slider and
// the layout record.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string_view>

#include <imgui.h>

#include "ui/layout_check.hpp"

namespace attn::ui {

inline const ImVec4 error_color(1.0f, 0.45f, 0.4f, 1.0f);
inline const ImVec4 dim_color(0.65f, 0.65f, 0.7f, 1.0f);
inline constexpr size_t max_json_cells = 65536;  // view_json's heatmap values and colours: none for larger maps
inline const char* const mask_names[] = {"none", "padding", "causal", "padding+causal"};  // MaskKind's order

// A slider over [0, count) that clamps `value` even when hidden (count 1) or when the count shrank.
inline void index_slider(const char* label, int& value, size_t count, bool same_line) {
  const int last = std::max(0, int(count) - 1);
  if (count > 1) {
    if (same_line) ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    ImGui::SliderInt(label, &value, 0, last);
  }
  value = std::clamp(value, 0, last);
}

// The height left in the window above a row of buttons that must stay in view.
inline float height_above_buttons() {
  return ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() - ImGui::GetStyle().ItemSpacing.y;
}

// Records a box drawn in the current window, with the region it shows (the window's clip rectangle).
inline void record_box(LayoutLog& log, LayoutKind kind, std::string_view owner, std::string_view text, ImVec2 min,
                       ImVec2 max) {
  const ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 c0 = dl->GetClipRectMin(), c1 = dl->GetClipRectMax();
  log.add(kind, owner, text, {min.x, min.y, max.x, max.y}, {c0.x, c0.y, c1.x, c1.y});
}

}  // namespace attn::ui
