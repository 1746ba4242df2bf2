// A heatmap as a PNG picture: one square of cell × cell pixels per cell, in the heatmap's colours, at
// a scale chosen apart from the screen (the playground's Export PNG, attn encode --png --scale). Text
// stays out of it: a labelled figure is the SVG (svg.hpp), sharp at any scale.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn {

// The pixels a cell takes at scale 1: the picture's longer side about 512 pixels, a cell 1 to 32.
size_t png_cell(size_t rows, size_t cols);
// The largest scale accepted (a 512-pixel picture at 16× is 8192 pixels a side).
inline constexpr size_t max_png_scale = 16;

// RGBA pixels (width × height × 4 bytes) each drawn as cell × cell pixels, as PNG bytes (stb_image_write);
// InputError where the build has no PNG writer.
std::vector<uint8_t> png_bytes(const std::vector<uint8_t>& rgba, size_t width, size_t height, size_t cell = 1);

}  // namespace attn
