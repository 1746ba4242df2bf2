// Small pieces the App's files share (ui/app.cpp, ui/app_train.cpp): colours and a clamping slider.
#pragma once
#include <algorithm>
#include <cstddef>

#include <imgui.h>

namespace attn::ui {

inline const ImVec4 error_color(1.0f, 0.45f, 0.4f, 1.0f);
inline const ImVec4 dim_color(0.65f, 0.65f, 0.7f, 1.0f);
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

}  // namespace attn::ui
