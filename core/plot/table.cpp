#include "core/plot/table.hpp"

#include <cstdio>

namespace attn {
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string latex_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\textbackslash{}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '&': case '%': case '$': case '#': case '_': case '{': case '}': out += '\\', out += c; break;
      default: out += c;
    }
  }
  return out;
}

std::string printed(const char* format, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string figure_csv(const HeatmapFigure& f) {
  const Slice& s = f.slice;
  const auto rows = labels_or_indices(f.row_labels, s.rows), cols = labels_or_indices(f.col_labels, s.cols);
  std::string out;
  for (const auto& c : cols) out += "," + csv_field(c);
  out += "\r\n";
  for (size_t i = 0; i < s.rows; ++i) {
    out += csv_field(rows[i]);
    for (size_t j = 0; j < s.cols; ++j) out += "," + printed("%.9g", double(s.values[i * s.cols + j]));
    out += "\r\n";
  }
  return out;
}

std::string figure_latex(const HeatmapFigure& f) {
  const Slice& s = f.slice;
  const auto rows = labels_or_indices(f.row_labels, s.rows), cols = labels_or_indices(f.col_labels, s.cols);
  std::string out = "% " + f.title + " (attnlab). Needs \\usepackage[table]{xcolor}; Hangul labels: \\usepackage{kotex}.\n";
  out += "\\begin{tabular}{r|" + std::string(s.cols, 'c') + "}\n";
  for (const auto& c : cols) out += " & " + latex_text(c);
  out += " \\\\\n\\hline\n";
  for (size_t i = 0; i < s.rows; ++i) {
    out += latex_text(rows[i]);
    for (size_t j = 0; j < s.cols; ++j) {
      const float v = s.values[i * s.cols + j];
      const Rgba c = value_color(f.map, f.range, v);
      const bool dark = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 128;  // the playground's text contrast
      out += " & \\cellcolor[RGB]{" + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," + std::to_string(c[2]) + "}";
      if (v > masked_threshold) out += (dark ? "\\color{white}" : "") + printed("%.3f", double(v));
    }
    out += " \\\\\n";
  }
  return out + "\\end{tabular}\n";
}

}  // namespace attn
