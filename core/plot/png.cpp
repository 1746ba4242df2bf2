#include "core/plot/png.hpp"

#include <algorithm>
#include <iterator>

#include "core/base/error.hpp"

#ifdef ATTN_HAVE_STB
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

namespace attn {

size_t png_cell(size_t rows, size_t cols) {
  return std::max<size_t>(1, std::min<size_t>(32, 512 / std::max<size_t>(1, std::max(rows, cols))));
}

std::vector<uint8_t> png_bytes(const std::vector<uint8_t>& rgba, size_t width, size_t height, size_t cell) {
  cell = std::max<size_t>(cell, 1);
  const size_t w = width * cell, h = height * cell;
  std::vector<uint8_t> big(w * h * 4);
  for (size_t y = 0; y < h; ++y)
    for (size_t x = 0; x < w; ++x)
      std::copy_n(rgba.begin() + std::ptrdiff_t(((y / cell) * width + x / cell) * 4), 4,
                  big.begin() + std::ptrdiff_t((y * w + x) * 4));
  std::vector<uint8_t> out;
  auto sink = [](void* context, void* data, int size) {
    auto* o = static_cast<std::vector<uint8_t>*>(context);
    o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  };
#ifdef ATTN_HAVE_STB
  if (!stbi_write_png_to_func(sink, &out, int(w), int(h), 4, big.data(), int(w * 4)))
    throw InputError("PNG encoding failed");
#else
  (void)sink;
  throw InputError("PNG export is not built in (stb_image_write.h was missing: scripts/deps-gui.sh)");
#endif
  return out;
}

}  // namespace attn
