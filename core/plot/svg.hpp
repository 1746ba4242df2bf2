// A heatmap as an SVG document for papers: vector cells in the playground's colours, the tokens and
// numbers as text in a named font (Hangul included), never rasterised. docs/compare.md#figures.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/model/trace.hpp"
#include "core/plot/heatmap.hpp"

namespace attn {

struct HeatmapFigure {
  std::string title;
  Slice slice;
  ColorMap map = ColorMap::sequential;
  ValueRange range;
  std::vector<std::string> row_labels, col_labels;  // one per row / column; empty: the indices
};

// A figure's labels of an axis of n: its own, or the indices 0 … n-1 where it has not n of them.
std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, size_t n);

// One slice of a stage as the playground shows it: its colour map (stage_color_map), the range over the
// slice (0–1 for a mask), and `tokens` (of the item the first index picks) on the axes that run over
// the sequence. `index` fixes the leading axes (batch item, head), as slice_2d clamps it.
HeatmapFigure stage_figure(const Stage& stage, const std::vector<size_t>& index,
                           const std::vector<std::vector<std::string>>& tokens);

// "name [i, j]": a stage's name and the leading indices of its slice.
std::string slice_title(const std::string& stage_name, const Slice& slice);

// The font the figure names: the playground's (NanumGothic, Hangul included), then the system's sans.
inline constexpr const char* figure_font = "NanumGothic, 'Nanum Gothic', 'Noto Sans CJK KR', sans-serif";

// SVG 1.1: a <rect> per cell (in row-major order, class "cell", its fill value_color's and a <title> with
// the value), row and column labels and the title as <text>, a colour bar with the range's ends.
std::string heatmap_svg(const HeatmapFigure& figure);

// The model view: every head's figure (layer-major: layer l's heads at l·H … l·H + H − 1) as a grid under
// head (H0 …) and layer (L0 …) labels, each head a <g class="head"> of one <rect class="cell"> per cell in
// its own colours. InputError past max_svg_cells cells, or with no heads.
inline constexpr size_t max_svg_cells = 1 << 20;
std::string heads_svg(const std::string& title, const std::vector<HeatmapFigure>& heads, size_t layers);

// Training curves: one <polyline class="curve"> per curve (named, coloured "#rrggbb") over (x, y) points,
// log10 on y when log_y; the axes' ends and ticks as text, a legend below. Non-finite points are left
// out; InputError when no curve has a point.
struct Curve {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
};
std::string curves_svg(const std::string& title, const std::vector<Curve>& curves, bool log_y);

// Text made safe inside XML: &, <, >, " and ' escaped; invalid UTF-8 and the control characters XML 1.0
// forbids become U+FFFD (GPT-2's byte-level tokens can hold half a character).
std::string xml_text(const std::string& text);

}  // namespace attn
