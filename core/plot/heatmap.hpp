// A stage as a heatmap: the 2-D slice shown, its colour map and range, each cell's colour. The
// playground's textures, its exported pictures and attn encode --svg all take their colours from here.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/tensor.hpp"

namespace attn {

// A 2-D slice of a stage: the last two axes, the leading ones fixed by `index` (clamped); a 1-D stage
// is one row. Values in row-major order.
struct Slice {
  size_t rows = 0, cols = 0;
  std::vector<float> values;
  std::vector<size_t> leading;  // the fixed leading indices actually used
};
Slice slice_2d(const Tensor& t, const std::vector<size_t>& index);
// Every stage but token_ids is a float stage; attention matrices are [.., S, S] stages whose name ends
// in scores/weights or is `mask`.
bool is_attention_matrix(const std::string& stage_name);

// --- colour maps ---
using Rgba = std::array<uint8_t, 4>;
enum class ColorMap { sequential, diverging };
// Probabilities, ids and masks are sequential (viridis); every other stage diverges around 0.
ColorMap stage_color_map(const std::string& stage_name);
// t in [0, 1] (clamped): sequential = viridis, diverging = RdBu reversed (blue − white + red).
Rgba color_at(ColorMap map, double t);
// Values ≤ masked_threshold (masked_fill's -1e9) are not part of the range and drawn grey.
inline constexpr float masked_threshold = -1e8f;
inline constexpr Rgba masked_color = {96, 96, 96, 255};
struct ValueRange {
  float lo = 0, hi = 0;
};
ValueRange value_range(const std::vector<float>& values);  // ignoring masked values; lo == hi possible
// Diverging maps centre the range on 0 (lo = -hi = -max|v|).
ValueRange map_range(ColorMap map, const std::vector<float>& values);
Rgba value_color(ColorMap map, ValueRange range, float v);
// RGBA pixels of a slice, one per cell (rows × cols × 4 bytes).
std::vector<uint8_t> slice_pixels(const Slice& s, ColorMap map, ValueRange range);

}  // namespace attn
