// A heatmap's numbers as text for a paper or a spreadsheet: CSV (every value, float32 exact) and a
// LaTeX table whose cells carry the heatmap's colours (the playground's Copy CSV / Copy LaTeX, attn
// encode --csv / --tex).
#pragma once
#include <string>

#include "core/plot/svg.hpp"

namespace attn {

// RFC 4180: a header of the column labels (the first field empty), then a row label and the values
// (%.9g: each float32 reads back exactly; a masked score as -1e+09). Labels are quoted where needed.
std::string figure_csv(const HeatmapFigure& figure);

// A tabular of \cellcolor[RGB] cells (xcolor's table option) with the values to 3 decimals (a masked
// score: grey, empty), the labels escaped; a comment names the packages (Hangul labels want kotex).
std::string figure_latex(const HeatmapFigure& figure);

}  // namespace attn
