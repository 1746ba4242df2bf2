// App::draw_head_grid, the grid of every layer x head that the Stage tab's model view, the Train tab and
// the Interventions tab draw: a template (each passes its own cell lookup), defined here for the files
// that draw one.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

// Every cell is placed at its own position (not after the item before): the header row starts a
// fresh line wherever the grid is drawn, and the cells fit `size` (16 to 120 pixels a side). With
// `group` > 1 (grouped-query attention) the query heads stand in groups of `group` under the key/value
// head they share ("KV0" above them), a wider gap between groups.
template <class CellTensor>
bool App::draw_head_grid(std::vector<Heatmap>& cells, std::vector<GridCell>& drawn, size_t layers, size_t heads,
                         CellTensor cell_tensor, ImVec2 size, int& layer, int& head, const char* id, Str tip,
                         size_t group) {
  drawn.clear();
  cells.resize(std::max(cells.size(), layers * heads));
  heads = std::max<size_t>(heads, 1);
  group = std::clamp<size_t>(group, 1, heads);
  const size_t groups = group > 1 ? (heads + group - 1) / group : 0;
  char text[24];
  std::snprintf(text, sizeof text, "L%zu", layers ? layers - 1 : 0);
  const float label_w = ImGui::CalcTextSize(text).x + 8, gap = 4, pad = 1, group_gap = groups ? 10.0f : 0.0f;
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float header_h = groups ? 2 * line_h : line_h;
  const float by_width = (size.x - label_w - float(groups) * group_gap) / float(heads);
  const float by_height = (size.y - header_h) / float(std::max<size_t>(layers, 1));
  const float side = std::clamp(std::min(by_width, by_height) - gap - 2 * pad, 16.0f, 120.0f);
  const float stride = side + 2 * pad + gap;
  const ImVec2 start = ImGui::GetCursorScreenPos();
  const auto column_x = [&](size_t h) { return start.x + label_w + float(h) * stride + float(h / group) * group_gap; };
  const auto label = [&](ImVec2 at) {
    ImGui::SetCursorScreenPos(at);
    ImGui::TextUnformatted(text);
    record_box(layout_, LayoutKind::label, id, text, ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  };
  if (groups) {  // each key/value head's name over its query heads, a line under them
    std::snprintf(text, sizeof text, "KV%zu", groups - 1);
    const size_t kv_step = size_t(std::ceil((ImGui::CalcTextSize(text).x + gap) / (float(group) * stride + group_gap)));
    for (size_t g = 0; g < groups; ++g) {
      const float x0 = column_x(g * group), x1 = column_x(std::min(heads, (g + 1) * group) - 1) + side + 2 * pad;
      ImGui::GetWindowDrawList()->AddLine(ImVec2(x0, start.y + line_h - 2), ImVec2(x1, start.y + line_h - 2),
                                          ImGui::GetColorU32(ImGuiCol_TextDisabled));
      if (g % kv_step) continue;
      std::snprintf(text, sizeof text, "KV%zu", g);
      label(ImVec2(x0, start.y));
    }
  }
  std::snprintf(text, sizeof text, "H%zu", heads - 1);
  const size_t step = size_t(std::ceil((ImGui::CalcTextSize(text).x + gap) / stride));  // every k-th head named
  for (size_t h = 0; h < heads; h += step) {
    std::snprintf(text, sizeof text, "H%zu", h);
    label(ImVec2(column_x(h), start.y + header_h - line_h));
  }
  bool clicked = false;
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(pad, pad));
  for (size_t l = 0; l < layers; ++l) {
    const float y = start.y + header_h + float(l) * stride;
    std::snprintf(text, sizeof text, "L%zu", l);
    label(ImVec2(start.x, y + (side + 2 * pad - ImGui::GetTextLineHeight()) * 0.5f));
    for (size_t h = 0; h < heads; ++h) {
      Heatmap& cell = cells[l * heads + h];
      ViewKey key;
      const Tensor* t = cell_tensor(l, h, key);
      ImGui::PushID(int(l * heads + h));
      const ImVec2 at(column_x(h), y);
      ImGui::SetCursorScreenPos(at);
      if (t) {
        refresh(cell, key, *t, ColorMap::sequential);
        if (ImGui::ImageButton("cell", cell.texture, ImVec2(side, side), ImVec2(0, 0), ImVec2(1, 1))) {
          layer = int(l);
          head = int(h);
          clicked = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(tr(tip), l, h);
      } else {
        ImGui::Button("-", ImVec2(side, side));
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(tr(Str::grid_not_computed), l);
      }
      const ImVec2 end(at.x + side + 2 * pad, at.y + side + 2 * pad);
      if (int(l) == layer && int(h) == head)
        ImGui::GetWindowDrawList()->AddRect(at, end, IM_COL32(255, 220, 80, 255), 0, 0, 2);
      record_box(layout_, LayoutKind::heatmap, id, "", at, end);
      drawn.push_back({int(l), int(h), at.x, at.y, side, side});
      ImGui::PopID();
    }
  }
  ImGui::PopStyleVar();
  return clicked;
}

}  // namespace attn::ui
