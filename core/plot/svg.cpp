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

// The document's start: its size, the font, a white page, the title as <title> and as text at the top.
std::string svg_open(double width, double height, const std::string& title) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"" + xml_text(figure_font) +
         "\" font-size=\"" + num(label_font) + "\">\n";
  out += "<title>" + xml_text(title) + "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  return out + "<text class=\"title\" x=\"10\" y=\"" + num(10 + title_font) + "\" font-size=\"" + num(title_font) + "\">" +
         xml_text(title) + "</text>\n";
}

std::string text_at(double x, double y, const std::string& text, const char* anchor = "start") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\">" + xml_text(text) + "</text>\n";
}

}  // namespace

std::vector<std::string> labels_or_indices(const std::vector<std::string>& labels, size_t n) {
  if (labels.size() == n) return labels;
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
  return out;
}

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
  std::string out = svg_open(width, height, f.title) + "<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
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

std::string heads_svg(const std::string& title, const std::vector<HeatmapFigure>& heads, size_t layers) {
  const size_t count = std::max<size_t>(layers, 1), per_layer = heads.size() / count;
  if (heads.empty() || per_layer * count != heads.size()) throw InputError("every head at once: no heads to draw");
  size_t cells = 0;
  for (const HeatmapFigure& h : heads) cells += h.slice.rows * h.slice.cols;
  if (cells > max_svg_cells)
    throw InputError("every head at once: " + std::to_string(cells) + " cells, more than a vector figure holds (" +
                     std::to_string(max_svg_cells) + "); export one head's SVG, or this view as PNG");
  const size_t n = std::max(heads[0].slice.rows, heads[0].slice.cols);
  const double side = std::clamp(800.0 / double(std::max(per_layer, count)), 24.0, 160.0), gap = 6;
  const double cell = side / double(std::max<size_t>(n, 1));
  const double left = 10 + 4 * label_font * 0.6 + 6, top = 10 + title_font + 10 + label_font + 6;
  const double width = left + double(per_layer) * (side + gap) + 10, height = top + double(count) * (side + gap) + 10;
  std::string out = svg_open(width, height, title) + "<g class=\"head-labels\" text-anchor=\"middle\">\n";
  for (size_t h = 0; h < per_layer; ++h) out += text_at(left + double(h) * (side + gap) + side / 2, top - 6, "H" + std::to_string(h), "middle");
  out += "</g>\n<g class=\"layer-labels\">\n";
  for (size_t l = 0; l < count; ++l) out += text_at(10, top + double(l) * (side + gap) + side / 2 + label_font * 0.35, "L" + std::to_string(l));
  out += "</g>\n";
  for (size_t l = 0; l < count; ++l)
    for (size_t h = 0; h < per_layer; ++h) {
      const HeatmapFigure& f = heads[l * per_layer + h];
      const double x0 = left + double(h) * (side + gap), y0 = top + double(l) * (side + gap);
      out += "<g class=\"head\" data-layer=\"" + std::to_string(l) + "\" data-head=\"" + std::to_string(h) +
             "\" shape-rendering=\"crispEdges\"><title>" + xml_text(f.title) + "</title>\n";
      for (size_t i = 0; i < f.slice.rows; ++i)
        for (size_t j = 0; j < f.slice.cols; ++j)
          out += "<rect class=\"cell\" x=\"" + num(x0 + double(j) * cell) + "\" y=\"" + num(y0 + double(i) * cell) +
                 "\" width=\"" + num(cell) + "\" height=\"" + num(cell) + "\" fill=\"" +
                 hex(value_color(f.map, f.range, f.slice.values[i * f.slice.cols + j])) + "\"/>\n";
      out += "</g>\n";
    }
  return out + "</svg>\n";
}

std::string curves_svg(const std::string& title, const std::vector<Curve>& curves, bool log_y) {
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool any = false;
  const auto y_of = [&](double v) { return log_y ? std::log10(std::max(v, 1e-12)) : v; };
  for (const Curve& c : curves)
    for (const auto& [x, v] : c.points) {
      if (!std::isfinite(v) || !std::isfinite(x)) continue;
      const double y = y_of(v);
      x0 = any ? std::min(x0, x) : x, x1 = any ? std::max(x1, x) : x;
      y0 = any ? std::min(y0, y) : y, y1 = any ? std::max(y1, y) : y;
      any = true;
    }
  if (!any) throw InputError("the curves have no points yet: nothing to draw");
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double left = 70, top = 10 + title_font + 16, plot_w = 480, plot_h = 260;
  const double width = left + plot_w + 20, height = top + plot_h + 40 + 18 * double(curves.size());
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  const auto py = [&](double y) { return top + plot_h - (y - y0) / (y1 - y0) * plot_h; };
  std::string out = svg_open(width, height, title);
  out += "<rect class=\"frame\" x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(plot_w) + "\" height=\"" +
         num(plot_h) + "\" fill=\"none\" stroke=\"#888888\"/>\n<g class=\"ticks\">\n";
  for (int k = 0; k <= 4; ++k) {  // the axes' ends and three ticks between (log: the value, not its log)
    const double y = y0 + (y1 - y0) * k / 4, x = x0 + (x1 - x0) * k / 4;
    out += text_at(left - 6, py(y) + label_font * 0.35, value_text(float(log_y ? std::pow(10.0, y) : y), 3), "end");
    out += text_at(px(x), top + plot_h + 16, value_text(float(x), 6), "middle");
  }
  out += "</g>\n";
  for (size_t c = 0; c < curves.size(); ++c) {
    std::string points;
    for (const auto& [x, v] : curves[c].points)
      if (std::isfinite(v) && std::isfinite(x)) points += (points.empty() ? "" : " ") + num(px(x)) + "," + num(py(y_of(v)));
    out += "<polyline class=\"curve\" data-name=\"" + xml_text(curves[c].name) + "\" fill=\"none\" stroke=\"" +
           curves[c].color + "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
    const double ly = top + plot_h + 34 + 18 * double(c);
    out += "<line x1=\"" + num(left) + "\" y1=\"" + num(ly - 4) + "\" x2=\"" + num(left + 20) + "\" y2=\"" + num(ly - 4) +
           "\" stroke=\"" + curves[c].color + "\" stroke-width=\"2\"/>\n" + text_at(left + 26, ly, curves[c].name);
  }
  return out + "</svg>\n";
}

}  // namespace attn
