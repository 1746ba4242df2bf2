// The App's heatmap widget, which every view draws with: a 2-D slice of a tensor as a cached texture,
// its axis labels (thinned and cut to fit), the legend, the cell values when they fit, zoom and pan with
// a minimap for long inputs, the hover's tooltip, the number table, and the exports (PNG, SVG, CSV,
// LaTeX, JSON, .npy).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/plot/png.hpp"
#include "core/plot/svg.hpp"
#include "core/plot/table.hpp"
#include "imgui_internal.h"  // SetItemKeyOwner: the wheel zooms a heatmap instead of scrolling
#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {
namespace {

constexpr size_t max_texture = 4096;  // WebGL2 guarantees at least this texture size

float luminance(const Rgba& c) { return (0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]) / 255.0f; }

// The exact value under the mouse, with its indices and labels.
void cell_tooltip(const Heatmap& h, const std::vector<std::string>* row_labels,
                  const std::vector<std::string>* col_labels) {
  const ImVec2 m = ImGui::GetMousePos();
  const size_t i = std::min(size_t(std::max(0.0f, (m.y - h.y) / h.cell_h)), h.slice.rows - 1);
  const size_t j = std::min(size_t(std::max(0.0f, (m.x - h.x) / h.cell_w)), h.slice.cols - 1);
  const float v = h.slice.values[i * h.slice.cols + j];
  ImGui::BeginTooltip();
  char where[96] = "";
  for (size_t k = 0; k < h.slice.leading.size(); ++k) {
    const size_t used = std::strlen(where);
    std::snprintf(where + used, sizeof where - used, "%zu, ", h.slice.leading[k]);
  }
  ImGui::Text("[%s%zu, %zu]", where, i, j);
  if (row_labels && i < row_labels->size()) ImGui::Text(tr(Str::tip_row), (*row_labels)[i].c_str());
  if (col_labels && j < col_labels->size()) ImGui::Text(tr(Str::tip_column), (*col_labels)[j].c_str());
  if (v <= masked_threshold)
    ImGui::Text(tr(Str::tip_masked), double(v));
  else
    ImGui::Text("%.9g", double(v));
  if (i < h.row_sums.size() && j < h.col_sums.size())
    ImGui::TextColored(dim_color, tr(Str::tip_sums), double(h.row_sums[i]), double(h.col_sums[j]));
  ImGui::EndTooltip();
}

// Wheel over the map: zoom about the cursor (from the whole slice to 4 cells across); drag: pan;
// double-click: the whole slice again. The view stays within the slice.
void zoom_and_pan(Heatmap& h, ImVec2 origin, ImVec2 size, bool hovered, bool active) {
  const float rows = float(h.slice.rows), cols = float(h.slice.cols);
  const ImGuiIO& io = ImGui::GetIO();
  if (hovered) ImGui::SetItemKeyOwner(ImGuiKey_MouseWheelY);  // the wheel zooms here, not the window's scroll
  if (hovered && io.MouseWheel != 0) {
    const float z = std::clamp(h.zoom * std::pow(1.25f, io.MouseWheel), 1.0f, std::max(1.0f, std::max(rows, cols) / 4));
    const float fx = (io.MousePos.x - origin.x) / size.x, fy = (io.MousePos.y - origin.y) / size.y;
    h.view_col += fx * cols * (1 / h.zoom - 1 / z);  // the cell under the cursor stays under it
    h.view_row += fy * rows * (1 / h.zoom - 1 / z);
    h.zoom = z;
  }
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0)) {
    h.view_col -= io.MouseDelta.x / size.x * cols / h.zoom;
    h.view_row -= io.MouseDelta.y / size.y * rows / h.zoom;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) h.zoom = 1;
  h.zoom = std::clamp(h.zoom, 1.0f, std::max(1.0f, std::max(rows, cols) / 4));  // select_view's too
  h.view_col = std::clamp(h.view_col, 0.0f, cols - cols / h.zoom);
  h.view_row = std::clamp(h.view_row, 0.0f, rows - rows / h.zoom);
}

constexpr const char* ellipsis = "\u2026";

// The part of a text that fits in max_w pixels, [text, end), and its width with the ellipsis that
// follows when it was cut; a width above max_w means not even the ellipsis fits.
struct FittedText {
  const char* end;
  float width, prefix_w;
  bool elided;
};

FittedText fit_text(const char* text, float max_w) {
  const char* end = text + std::strlen(text);
  const float full = ImGui::CalcTextSize(text, end).x;
  if (full <= max_w) return {end, full, full, false};
  const float dots = ImGui::CalcTextSize(ellipsis).x;
  const char* cut = text;
  const float part =
      max_w > dots ? ImGui::GetFont()->CalcTextSizeA(ImGui::GetFontSize(), max_w - dots, 0, text, end, &cut).x : 0;
  return {cut, part + dots, part, true};
}

void draw_fitted(ImDrawList* dl, ImVec2 at, ImU32 color, const char* text, const FittedText& fit) {
  dl->AddText(at, color, text, fit.end);
  if (fit.elided) dl->AddText(ImVec2(at.x + fit.prefix_w, at.y), color, ellipsis);
}

// The widest of the first `count` labels (at most 512 measured: a long axis shows few of them anyway).
float widest_label(const std::vector<std::string>& labels, size_t count) {
  float widest = 0;
  for (size_t i = 0; i < count && i < labels.size() && i < 512; ++i)
    widest = std::max(widest, ImGui::CalcTextSize(labels[i].c_str()).x);
  return widest;
}

// The colour scale right of a heatmap: a gap, the bar, its range's three values, a margin; box_w is
// the room all of it takes, sized to the values.
constexpr float legend_gap = 10, legend_bar = 14, legend_margin = 6;
struct LegendText {
  char hi[24], mid[24], lo[24];
  float box_w;
};

LegendText legend_text(const Heatmap& h) {
  LegendText t;
  std::snprintf(t.hi, sizeof t.hi, "%.4g", double(h.range.hi));
  std::snprintf(t.mid, sizeof t.mid, "%.4g", (double(h.range.lo) + double(h.range.hi)) / 2);
  std::snprintf(t.lo, sizeof t.lo, "%.4g", double(h.range.lo));
  const float text_w =
      std::max({ImGui::CalcTextSize(t.hi).x, ImGui::CalcTextSize(t.mid).x, ImGui::CalcTextSize(t.lo).x});
  t.box_w = legend_gap + legend_bar + 4 + text_w + legend_margin;
  return t;
}

void draw_legend(const Heatmap& h, const LegendText& text, ImVec2 at, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  constexpr int steps = 24;
  for (int s = 0; s < steps; ++s) {
    const double t0 = 1.0 - double(s) / steps, t1 = 1.0 - double(s + 1) / steps;
    const Rgba a = color_at(h.map, t0), b = color_at(h.map, t1);
    const ImU32 ca = IM_COL32(a[0], a[1], a[2], 255), cb = IM_COL32(b[0], b[1], b[2], 255);
    const float y0 = at.y + height * float(s) / steps, y1 = at.y + height * float(s + 1) / steps;
    dl->AddRectFilledMultiColor(ImVec2(at.x, y0), ImVec2(at.x + legend_bar, y1), ca, ca, cb, cb);
  }
  const float x = at.x + legend_bar + 4;
  dl->AddText(ImVec2(x, at.y), text_col, text.hi);
  dl->AddText(ImVec2(x, at.y + height / 2 - line / 2), text_col, text.mid);
  dl->AddText(ImVec2(x, at.y + height - line), text_col, text.lo);
}

// The top-left part of a slice a texture can hold.
Slice cut_to_texture(Slice s) {
  if (s.rows <= max_texture && s.cols <= max_texture) return s;
  Slice cut;
  cut.rows = std::min(s.rows, max_texture);
  cut.cols = std::min(s.cols, max_texture);
  cut.leading = s.leading;
  for (size_t i = 0; i < cut.rows; ++i)
    cut.values.insert(cut.values.end(), s.values.begin() + std::ptrdiff_t(i * s.cols),
                      s.values.begin() + std::ptrdiff_t(i * s.cols + cut.cols));
  return cut;
}

}  // namespace

bool App::refresh(Heatmap& h, const ViewKey& key, const Tensor& t, ColorMap map, bool is_mask) {
  if (h.key == key && h.texture) return false;
  h.key = key;
  h.slice = slice_2d(t, {key.i0, key.i1});  // indices past the tensor's leading axes are ignored
  show_slice(h, map, is_mask ? ValueRange{0.0f, 1.0f} : map_range(map, h.slice.values));  // all-ones: "may attend"
  return true;
}

void App::show_slice(Heatmap& h, ColorMap map, ValueRange range) {
  const size_t rows = h.row_sums.size(), cols = h.col_sums.size();
  h.slice = cut_to_texture(std::move(h.slice));
  if (rows && (h.slice.rows != rows || h.slice.cols != cols)) h.zoom = 1, h.view_row = h.view_col = 0;  // another shape
  h.row_sums.assign(h.slice.rows, 0.0f);
  h.col_sums.assign(h.slice.cols, 0.0f);
  for (size_t i = 0; i < h.slice.rows; ++i)
    for (size_t j = 0; j < h.slice.cols; ++j)
      if (const float v = h.slice.values[i * h.slice.cols + j]; v > masked_threshold) h.row_sums[i] += v, h.col_sums[j] += v;
  h.map = map;
  h.range = range;
  h.pixels = slice_pixels(h.slice, map, h.range);
  h.texture = platform_.upload_texture(h.texture, int(h.slice.cols), int(h.slice.rows), h.pixels.data());
}

// --- heatmaps ---

void App::fitted_title(const char* text, float max_w, const char* owner) {
  const FittedText fit = fit_text(text, max_w);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(std::min(fit.width, max_w), ImGui::GetTextLineHeight()));
  if (fit.width > max_w) return;
  draw_fitted(ImGui::GetWindowDrawList(), at, ImGui::GetColorU32(ImGuiCol_Text), text, fit);
  if (fit.elided && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text);
  record_box(layout_, LayoutKind::title, owner, text, at, ImVec2(at.x + fit.width, at.y + ImGui::GetTextLineHeight()));
}

// Cells fill the room given, square for square matrices (attention); for the others they may be up to 4
// times wider than tall, or taller than wide (a [100, 6] table fills the width; a [4, 128] stage has
// readable rows).
// Column labels take one line when they fit their columns, else two (staggered).
void App::draw_heatmap(Heatmap& h, const std::vector<std::string>* row_labels,
                       const std::vector<std::string>* col_labels, float max_w, float max_h, const char* id,
                       float legend_room) {
  if (!h.texture || h.slice.rows == 0 || h.slice.cols == 0) return;
  const float line = ImGui::GetTextLineHeight();
  const float rows = float(h.slice.rows), cols = float(h.slice.cols);
  const LegendText legend = legend_text(h);
  const float legend_w = std::max(legend.box_w, legend_room);
  float label_w =
      row_labels ? std::min({widest_label(*row_labels, h.slice.rows) + 8, 120.0f, std::max(40.0f, max_w * 0.25f)}) : 0;
  // Too narrow for row labels too (under 8 pixels a column, and under half the width): the heatmap first.
  const bool show_rows = row_labels && max_w - label_w - legend_w >= std::min(8 * cols, max_w * 0.5f);
  if (!show_rows) label_w = 0;
  const float widest_col = col_labels ? widest_label(*col_labels, h.slice.cols) + 4 : 0;
  int label_lines = col_labels ? 1 : 0;
  const float max_cell = 12 * line;  // cells grow with the canvas up to about 12 lines of text (~160 px)
  const auto fit_cells = [&] {
    const float fit_w = (max_w - label_w - legend_w) / cols, fit_h = (max_h - float(label_lines) * line - 4) / rows;
    const float side = std::clamp(std::min(fit_w, fit_h), 0.05f, max_cell);
    const bool square = h.slice.rows == h.slice.cols;
    h.cell_w = square ? side : std::clamp(std::min(fit_w, 4 * side), side, max_cell);
    h.cell_h = square ? side : std::clamp(std::min(fit_h, 4 * side), side, max_cell);
  };
  fit_cells();
  if (col_labels && widest_col > h.cell_w) {
    label_lines = 2;
    fit_cells();
  }
  const float label_h = col_labels ? float(label_lines) * line + 4 : 0;
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 origin(top.x + label_w, top.y + label_h), size(h.cell_w * cols, h.cell_h * rows);
  ImGui::PushID(id);
  ImGui::SetCursorScreenPos(origin);
  ImGui::InvisibleButton("map", size);
  const bool hovered = ImGui::IsItemHovered();
  zoom_and_pan(h, origin, size, hovered, ImGui::IsItemActive());
  h.cell_w *= h.zoom;
  h.cell_h *= h.zoom;
  h.x = origin.x - h.view_col * h.cell_w;
  h.y = origin.y - h.view_row * h.cell_h;
  const float box[4] = {origin.x, origin.y, size.x, size.y};
  std::copy(box, box + 4, h.box);
  const ImVec2 uv0(h.view_col / cols, h.view_row / rows), uv1(uv0.x + 1 / h.zoom, uv0.y + 1 / h.zoom);
  ImGui::GetWindowDrawList()->AddImage(h.texture, origin, ImVec2(origin.x + size.x, origin.y + size.y), uv0, uv1);
  record_box(layout_, LayoutKind::heatmap, id, "", origin, ImVec2(origin.x + size.x, origin.y + size.y));
  if (show_rows) draw_row_labels(h, *row_labels, top, label_w, id);
  if (col_labels)
    draw_col_labels(h, *col_labels, label_lines, widest_col, ImVec2(top.x, origin.x + size.x + legend_w), top.y, id);
  if (hovered) cell_tooltip(h, row_labels, col_labels);
  draw_cell_values(h);
  const float legend_h = std::max(3 * line + 6, std::min(size.y, 240.0f));
  const ImVec2 legend_at(origin.x + size.x + legend_gap, origin.y);
  draw_legend(h, legend, legend_at, legend_h);
  record_box(layout_, LayoutKind::legend, id, "", legend_at,
             ImVec2(origin.x + size.x + legend.box_w - legend_margin, origin.y + legend_h));
  const float minimap_h = h.zoom > 1 ? 8 + draw_minimap(h, ImVec2(legend_at.x, legend_at.y + legend_h + 8),
                                                        legend.box_w - legend_gap - legend_margin, id)
                                     : 0;
  if (h.zoom == 1) std::fill(h.minimap, h.minimap + 4, 0.0f);
  ImGui::SetCursorScreenPos(top);
  ImGui::Dummy(ImVec2(label_w + size.x + legend_w, label_h + std::max(size.y, legend_h + minimap_h) + 4));
  ImGui::PopID();
}

float App::draw_minimap(Heatmap& h, ImVec2 at, float w, const char* id) {
  const float aspect = h.box[3] / h.box[2];
  const float mw = aspect > 1 ? std::max(16.0f, std::min(w, 120.0f / aspect)) : w, mh = mw * aspect;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 end(at.x + mw, at.y + mh);
  dl->AddImage(h.texture, at, end);
  const float x0 = at.x + h.view_col / float(h.slice.cols) * mw, y0 = at.y + h.view_row / float(h.slice.rows) * mh;
  dl->AddRect(ImVec2(x0, y0), ImVec2(x0 + mw / h.zoom, y0 + mh / h.zoom), IM_COL32(255, 255, 255, 255), 0, 0, 1.5f);
  dl->AddRect(at, end, ImGui::GetColorU32(ImGuiCol_Border));
  ImGui::SetCursorScreenPos(at);
  ImGui::InvisibleButton("minimap", ImVec2(mw, mh));
  if (ImGui::IsItemActive()) {  // centre the view where the mouse is
    const ImVec2 m = ImGui::GetMousePos();
    const float cols = float(h.slice.cols), rows = float(h.slice.rows);
    h.view_col = std::clamp((m.x - at.x) / mw * cols - cols / h.zoom / 2, 0.0f, cols - cols / h.zoom);
    h.view_row = std::clamp((m.y - at.y) / mh * rows - rows / h.zoom / 2, 0.0f, rows - rows / h.zoom);
  }
  const float rect[4] = {at.x, at.y, mw, mh};
  std::copy(rect, rect + 4, h.minimap);
  record_box(layout_, LayoutKind::legend, id, "", at, end);
  return mh;
}

// Row labels in label_w left of the rows: every row's when a line fits in a row, else every k-th; each
// cut to the width (an ellipsis).
void App::draw_row_labels(const Heatmap& h, const std::vector<std::string>& labels, ImVec2 top, float label_w,
                          const char* id) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
  const float bottom = h.box[1] + h.box[3];  // the rows shown (zoomed: some)
  const size_t step = h.cell_h >= line ? 1 : size_t(std::ceil(line / h.cell_h));
  for (size_t i = 0; i < h.slice.rows && i < labels.size(); i += step) {
    const float y = h.y + float(i) * h.cell_h + (step == 1 ? (h.cell_h - line) * 0.5f : 0);
    if (y < h.box[1] - 0.5f) continue;
    if (y + line > bottom + 0.5f) break;
    const FittedText fit = fit_text(labels[i].c_str(), label_w - 8);
    if (fit.width > label_w - 8) continue;
    draw_fitted(dl, ImVec2(top.x, y), color, labels[i].c_str(), fit);
    record_box(layout_, LayoutKind::label, id, labels[i], ImVec2(top.x, y), ImVec2(top.x + fit.width, y + line));
  }
}

// Column labels centred above their columns, in `lines` lines: on one line each has its column's room;
// on two, alternating lines, each has the room of two columns, or of 2k when only every k-th label
// fits (k up to what a label of 3 line heights needs; `widest`: the widest label's room). Cut to their
// room (an ellipsis), and kept within [bounds.x, bounds.y] (the left edge of the row labels, the right
// edge of the legend).
void App::draw_col_labels(const Heatmap& h, const std::vector<std::string>& labels, int lines, float widest,
                          ImVec2 bounds, float top, const char* id) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight(), cell = h.cell_w;
  const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
  const float wanted = std::min(widest, 3 * line);
  const size_t step = lines == 1 ? 1 : size_t(std::max(1.0f, std::ceil(wanted / (2 * cell))));
  const float room = float(lines * step) * cell;
  for (size_t j = 0; j < h.slice.cols && j < labels.size(); j += step) {
    const float centre = h.x + (float(j) + 0.5f) * cell;
    if (centre < h.box[0] || centre > h.box[0] + h.box[2]) continue;  // a column out of the zoomed view
    const float width = std::min({room, 2 * (centre - bounds.x), 2 * (bounds.y - centre)}) - 4;
    const FittedText fit = fit_text(labels[j].c_str(), width);
    if (fit.width > width) continue;
    const ImVec2 at(centre - fit.width * 0.5f, top + float((j / step) % size_t(lines)) * line);
    draw_fitted(dl, at, color, labels[j].c_str(), fit);
    record_box(layout_, LayoutKind::label, id, labels[j], at, ImVec2(at.x + fit.width, at.y + line));
  }
}

// Values printed on the cells when they fit (at most ~1,000 short numbers, only on big cells).
void App::draw_cell_values(const Heatmap& h) {
  // The cells wholly in view (zoomed: some of them).
  const size_t r0 = size_t(std::ceil(h.view_row - 1e-3f)), c0 = size_t(std::ceil(h.view_col - 1e-3f));
  const size_t r1 = std::min(h.slice.rows, size_t(h.view_row + float(h.slice.rows) / h.zoom + 1e-3f));
  const size_t c1 = std::min(h.slice.cols, size_t(h.view_col + float(h.slice.cols) / h.zoom + 1e-3f));
  if (h.cell_w < 46 || h.cell_h < ImGui::GetTextLineHeight() + 2 || r1 <= r0 || c1 <= c0 || (r1 - r0) * (c1 - c0) > 1024)
    return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (size_t i = r0; i < r1; ++i)
    for (size_t j = c0; j < c1; ++j) {
      const float v = h.slice.values[i * h.slice.cols + j];
      char text[24];
      if (v <= masked_threshold)
        std::snprintf(text, sizeof text, "-1e9");
      else
        std::snprintf(text, sizeof text, "%.3f", double(v));
      const Rgba c = value_color(h.map, h.range, v);
      const ImVec2 size = ImGui::CalcTextSize(text);
      dl->AddText(ImVec2(h.x + float(j) * h.cell_w + (h.cell_w - size.x) * 0.5f,
                         h.y + float(i) * h.cell_h + (h.cell_h - size.y) * 0.5f),
                  luminance(c) > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), text);
    }
}

void App::draw_number_table(const Heatmap& h, const std::vector<std::string>* row_labels,
                            const std::vector<std::string>* col_labels) {
  const int ncols = int(h.slice.cols) + 1;
  if (ncols > 64 || !ImGui::BeginTable("numbers", ncols, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
    return;
  ImGui::TableSetupColumn("");
  for (size_t j = 0; j < h.slice.cols; ++j)
    ImGui::TableSetupColumn(col_labels && j < col_labels->size() ? (*col_labels)[j].c_str() : "");
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < h.slice.rows; ++i) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (row_labels && i < row_labels->size())
      ImGui::TextUnformatted((*row_labels)[i].c_str());
    else
      ImGui::Text("%zu", i);
    for (size_t j = 0; j < h.slice.cols; ++j) {
      ImGui::TableNextColumn();
      const float v = h.slice.values[i * h.slice.cols + j];
      if (v <= masked_threshold)
        ImGui::TextUnformatted("-1e9");
      else
        ImGui::Text("%.4f", double(v));
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("[%zu, %zu] = %.9g", i, j, double(v));
    }
  }
  ImGui::EndTable();
}

// The file names, bytes and texts are built only when a button is pressed.
void App::export_buttons(const Heatmap& h, const char* name, const Tensor& value, PrintDtype dtype, bool menu,
                         const std::vector<std::string>* rows, const std::vector<std::string>* cols) {
  if (menu) {
    if (ImGui::SmallButton(tr(Str::export_menu))) ImGui::OpenPopup("export");
    if (!ImGui::BeginPopup("export")) return;
  }
  if (!menu) export_buttons_.clear();
  const auto item = [&](Str label, const char* key) {
    if (menu) return ImGui::MenuItem(tr(label));
    if (!export_buttons_.empty()) ImGui::SameLine();
    return kept_button(export_buttons_, key, tr(label));
  };
  const auto file_name = [&](const char* extension) {  // on a click only: an idle frame allocates nothing
    std::string base = name;
    for (size_t k : h.slice.leading) base += "_" + std::to_string(k);
    return base + extension;
  };
  const auto figure = [&] {  // what attn encode --plot draws (core/plot)
    return HeatmapFigure{slice_title(name, h.slice), h.slice, h.map, h.range, rows ? *rows : std::vector<std::string>{},
                         cols ? *cols : std::vector<std::string>{}};
  };
  const auto copy = [&](const std::string& text, const char* what) {
    platform_.copy_text(text);
    status_ = format(Str::status_copied, what, text.size());
  };
  try {
    if (item(Str::export_png, "png")) {
      const size_t cell = png_cell(h.slice.rows, h.slice.cols) * size_t(png_scale_);
      status_ = platform_.save_file(file_name(".png"), png_bytes(h.pixels, h.slice.cols, h.slice.rows, cell), "image/png");
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("4×").x + ImGui::GetFrameHeight() + 12);
    static const char* const scales[] = {"1×", "2×", "4×"};
    int scale_index = png_scale_ == 4 ? 2 : png_scale_ - 1;
    if (ImGui::Combo("##png_scale", &scale_index, scales, 3)) png_scale_ = 1 << scale_index;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::export_png_scale_tip));
    if (item(Str::export_svg, "svg")) save_svg(file_name(".svg"), [&] { return heatmap_svg(figure()); });
    if (item(Str::copy_csv, "csv")) copy(figure_csv(figure()), "CSV");
    if (item(Str::copy_latex, "latex")) copy(figure_latex(figure()), "LaTeX");
    if (item(Str::export_json, "json")) {
      const std::string text = stage_json_text(Stage{name, value, dtype});
      status_ = platform_.save_file(std::string(name) + ".json", std::vector<uint8_t>(text.begin(), text.end()), "application/json");
    }
    if (item(Str::export_npy, "npy"))
      status_ = platform_.save_file(std::string(name) + ".npy", stage_npy_bytes(value), "application/octet-stream");
  } catch (const std::exception& e) {
    status_ = format(Str::status_export_failed, e.what());
  }
  if (menu) ImGui::EndPopup();
}

void App::save_svg(const std::string& file, const std::function<std::string()>& make) {
  try {
    const std::string svg = make();
    status_ = platform_.save_file(file, std::vector<uint8_t>(svg.begin(), svg.end()), "image/svg+xml");
  } catch (const std::exception& e) {
    status_ = format(Str::status_export_failed, e.what());
  }
}

float legend_width(const Heatmap& h) { return legend_text(h).box_w; }

}  // namespace attn::ui
