#include "core/plot/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"
#include "core/text/utf8.hpp"

namespace attn {
namespace {

constexpr double label_font = 12, title_font = 14;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// %.9g: every float32 reads back from 9 digits (the cells' titles); %.4g for the colour bar's ends.
std::string value_text(float v, int digits = 9) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
  return buf;
}

std::string hex(const Rgba& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

// A width estimate for layout only (the viewer measures the real one): wide for Hangul and CJK.
double text_width(const std::string& text) {
  double w = 0;
  for (unsigned char ch : text)
    if ((ch & 0xC0) != 0x80) w += ch >= 0xE1 ? label_font : label_font * 0.6;
  return w;
}

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, size_t n) {
  if (labels.size() == n) return labels;
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
  return out;
}

}  // namespace

std::string xml_text(const std::string& text) {
  std::u32string cps;
  try {
    cps = utf8::decode(text, "label");
  } catch (const InputError&) {  // a byte-level token: each byte of a broken sequence stands alone
    for (unsigned char ch : text) cps.push_back(ch < 0x80 ? char32_t(ch) : U'\uFFFD');
  }
  std::string out;
  for (char32_t cp : cps) {
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: {
        const bool allowed = cp == '\t' || cp == '\n' || cp == '\r' || (cp >= 0x20 && cp < 0xD800) ||
                             (cp >= 0xE000 && cp < 0xFFFE) || cp >= 0x10000;
        utf8::append(out, allowed ? cp : U'\uFFFD');
      }
    }
  }
  return out;
}

std::string slice_title(const std::string& stage_name, const Slice& slice) {
  if (slice.leading.empty()) return stage_name;
  std::string out = stage_name + " [";
  for (size_t i = 0; i < slice.leading.size(); ++i) out += (i ? ", " : "") + std::to_string(slice.leading[i]);
  return out + "]";
}

HeatmapFigure stage_figure(const Stage& stage, const std::vector<size_t>& index,
                           const std::vector<std::vector<std::string>>& tokens) {
  HeatmapFigure f;
  f.slice = slice_2d(stage.value, index);
  f.map = stage_color_map(stage.name);
  f.range = stage.name == "mask" ? ValueRange{0.0f, 1.0f} : map_range(f.map, f.slice.values);
  f.title = slice_title(stage.name, f.slice);
  const auto& shape = stage.value.shape();
  if (tokens.empty() || shape.size() < 2) return f;
  const std::vector<std::string>& item = tokens[std::min(f.slice.leading.empty() ? 0 : f.slice.leading[0], tokens.size() - 1)];
  if (shape.size() >= 3 && f.slice.rows == item.size()) f.row_labels = item;
  if (is_attention_matrix(stage.name) && f.slice.cols == item.size()) f.col_labels = item;
  return f;
}

std::string heatmap_svg(const HeatmapFigure& f) {
  const Slice& s = f.slice;
  // Each axis fits 560 px at 2–28 px a cell (square cells for the square attention maps).
  const auto cell_size = [](size_t n) { return std::clamp(560.0 / double(std::max<size_t>(n, 1)), 2.0, 28.0); };
  const double cell_w = cell_size(s.cols), cell_h = cell_size(s.rows);
  // Label thinning: every k-th label on an axis, so that labels never overlap.
  const auto every = [](double cell) { return size_t(std::ceil((label_font + 2) / cell)); };
  const auto rows = labels_or_indices(f.row_labels, s.rows), cols = labels_or_indices(f.col_labels, s.cols);
  double row_w = 0, col_h = 0;
  for (const auto& l : rows) row_w = std::max(row_w, text_width(l));
  for (const auto& l : cols) col_h = std::max(col_h, text_width(l));
  const double left = 10 + row_w + 6, top = 10 + title_font + 10 + col_h + 6;
  const double map_w = double(s.cols) * cell_w, map_h = double(s.rows) * cell_h;
  const double bar_x = left + map_w + 16, bar_h = std::max(map_h, 100.0);
  const double width = bar_x + 14 + 8 + 10 * label_font * 0.6, height = top + bar_h + 12;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"" + xml_text(figure_font) +
         "\" font-size=\"" + num(label_font) + "\">\n";
  out += "<title>" + xml_text(f.title) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  out += "<text class=\"title\" x=\"10\" y=\"" + num(10 + title_font) + "\" font-size=\"" + num(title_font) + "\">" +
         xml_text(f.title) + "</text>\n<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
  for (size_t i = 0; i < s.rows; ++i)
    for (size_t j = 0; j < s.cols; ++j) {
      const float v = s.values[i * s.cols + j];
      out += "<rect class=\"cell\" x=\"" + num(left + double(j) * cell_w) + "\" y=\"" + num(top + double(i) * cell_h) +
             "\" width=\"" + num(cell_w) + "\" height=\"" + num(cell_h) + "\" fill=\"" + hex(value_color(f.map, f.range, v)) +
             "\"><title>" + std::to_string(i) + ", " + std::to_string(j) + ": " + value_text(v) + "</title></rect>\n";
    }
  out += "</g>\n<g class=\"row-labels\" text-anchor=\"end\">\n";
  for (size_t i = 0; i < s.rows; i += every(cell_h))
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(top + (double(i) + 0.5) * cell_h + label_font * 0.35) + "\">" +
           xml_text(rows[i]) + "</text>\n";
  out += "</g>\n<g class=\"col-labels\">\n";
  for (size_t j = 0; j < s.cols; j += every(cell_w)) {
    const double x = left + (double(j) + 0.5) * cell_w + label_font * 0.35, y = top - 6;
    out += "<text transform=\"translate(" + num(x) + " " + num(y) + ") rotate(-90)\">" + xml_text(cols[j]) + "</text>\n";
  }
  out += "</g>\n<defs><linearGradient id=\"bar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
  for (int k = 0; k <= 10; ++k)
    out += "<stop offset=\"" + num(k / 10.0) + "\" stop-color=\"" + hex(color_at(f.map, k / 10.0)) + "\"/>\n";
  out += "</linearGradient></defs>\n<rect class=\"colorbar\" x=\"" + num(bar_x) + "\" y=\"" + num(top) +
         "\" width=\"14\" height=\"" + num(bar_h) + "\" fill=\"url(#bar)\"/>\n";
  out += "<text class=\"range-hi\" x=\"" + num(bar_x + 20) + "\" y=\"" + num(top + label_font) + "\">" +
         value_text(f.range.hi, 4) + "</text>\n";
  out += "<text class=\"range-lo\" x=\"" + num(bar_x + 20) + "\" y=\"" + num(top + bar_h) + "\">" + value_text(f.range.lo, 4) +
         "</text>\n</svg>\n";
  return out;
}

}  // namespace attn
