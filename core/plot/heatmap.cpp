#include "core/plot/heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

namespace attn {
namespace {

// string_view: comparing against literals must not build strings (the UI calls these every frame).
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

Slice slice_2d(const Tensor& t, const std::vector<size_t>& index) {
  Slice s;
  const auto& shape = t.shape();
  if (shape.empty()) {
    s.rows = s.cols = 1;
    s.values.assign(t.begin(), t.end());
    return s;
  }
  if (shape.size() == 1) {
    s.rows = 1;
    s.cols = shape[0];
    s.values.assign(t.begin(), t.end());
    return s;
  }
  s.rows = shape[shape.size() - 2];
  s.cols = shape[shape.size() - 1];
  size_t offset = 0;
  for (size_t axis = 0; axis + 2 < shape.size(); ++axis) {
    const size_t i = std::min(axis < index.size() ? index[axis] : 0, shape[axis] - 1);
    s.leading.push_back(i);
    offset = offset * shape[axis] + i;
  }
  offset *= s.rows * s.cols;
  s.values.assign(t.data() + offset, t.data() + offset + s.rows * s.cols);
  return s;
}

bool is_attention_matrix(const std::string& n) {
  return n == "mask" || ends_with(n, "scores") || ends_with(n, "attention_weights") || ends_with(n, "attention_probs") ||
         ends_with(n, "attn_weights");
}

ColorMap stage_color_map(const std::string& name) {
  const bool sequential = name == "token_ids" || name == "input_ids" || name == "mask" || name == "next_token_probs" ||
                          contains(name, "attention_weights") || contains(name, "attention_probs") ||
                          contains(name, "attn_weights");
  return sequential ? ColorMap::sequential : ColorMap::diverging;
}

Rgba color_at(ColorMap map, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  // Key colours, linearly interpolated: viridis (9 stops) and RdBu_r (7 stops).
  static const uint8_t viridis[][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
                                       {39, 173, 129}, {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  static const uint8_t rdbu[][3] = {{33, 102, 172},  {103, 169, 207}, {209, 229, 240}, {247, 247, 247},
                                    {253, 219, 199}, {239, 138, 98},  {178, 24, 43}};
  const uint8_t(*stops)[3] = map == ColorMap::sequential ? viridis : rdbu;
  const size_t n = map == ColorMap::sequential ? std::size(viridis) : std::size(rdbu);
  const double x = t * double(n - 1);
  const size_t i = std::min(size_t(x), n - 2);
  const double f = x - double(i);
  Rgba c{0, 0, 0, 255};
  for (int k = 0; k < 3; ++k)
    c[size_t(k)] = uint8_t(std::lround(double(stops[i][k]) * (1 - f) + double(stops[i + 1][k]) * f));
  return c;
}

ValueRange value_range(const std::vector<float>& values) {
  ValueRange r;
  bool any = false;
  for (float v : values) {
    if (v <= masked_threshold || !std::isfinite(v)) continue;
    if (!any) r.lo = r.hi = v;
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
    any = true;
  }
  return r;
}

ValueRange map_range(ColorMap map, const std::vector<float>& values) {
  ValueRange r = value_range(values);
  if (map == ColorMap::diverging) {
    const float m = std::max(std::fabs(r.lo), std::fabs(r.hi));
    r.lo = -m;
    r.hi = m;
  }
  return r;
}

Rgba value_color(ColorMap map, ValueRange range, float v) {
  if (v <= masked_threshold || !std::isfinite(v)) return masked_color;
  const double span = double(range.hi) - double(range.lo);
  const double t = span > 0 ? (double(v) - double(range.lo)) / span : 0.5;
  return color_at(map, t);
}

std::vector<uint8_t> slice_pixels(const Slice& s, ColorMap map, ValueRange range) {
  std::vector<uint8_t> px(s.values.size() * 4);
  for (size_t i = 0; i < s.values.size(); ++i) {
    const Rgba c = value_color(map, range, s.values[i]);
    std::copy(c.begin(), c.end(), px.begin() + std::ptrdiff_t(i * 4));
  }
  return px;
}

}  // namespace attn
