#include "ui/layout_check.hpp"

#include <algorithm>
#include <cstdio>

namespace attn::ui {
namespace {

constexpr float slack = 0.5f;  // pixels: text metrics and cell sizes are fractional

// Copies `text` into a fixed buffer, cut at a whole UTF-8 character.
template <size_t N>
void copy_truncated(char (&out)[N], std::string_view text) {
  size_t n = std::min(text.size(), N - 1);
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.copy(out, n);
  out[n] = '\0';
}

std::string describe(const LayoutBox& b) {
  std::string s = layout_kind_name(b.kind);
  if (b.text[0]) s += std::string(" '") + b.text + "'";
  return s + " of " + b.owner;
}

std::string rect_text(const LayoutRect& r) {
  char text[96];
  std::snprintf(text, sizeof text, "(%.0f, %.0f)-(%.0f, %.0f)", double(r.x0), double(r.y0), double(r.x1), double(r.y1));
  return text;
}

}  // namespace

bool LayoutRect::contains(const LayoutRect& r) const {
  return r.x0 >= x0 - slack && r.y0 >= y0 - slack && r.x1 <= x1 + slack && r.y1 <= y1 + slack;
}

bool LayoutRect::overlaps(const LayoutRect& r) const {
  return std::min(x1, r.x1) - std::max(x0, r.x0) > slack && std::min(y1, r.y1) - std::max(y0, r.y0) > slack;
}

const char* layout_kind_name(LayoutKind kind) {
  switch (kind) {
    case LayoutKind::heatmap: return "heatmap";
    case LayoutKind::chart: return "chart";
    case LayoutKind::label: return "label";
    case LayoutKind::legend: return "legend";
    case LayoutKind::title: return "title";
  }
  return "?";
}

void LayoutLog::add(LayoutKind kind, std::string_view owner, std::string_view text, LayoutRect box, LayoutRect region) {
  LayoutBox b{kind, {}, {}, box, region};
  copy_truncated(b.owner, owner);
  copy_truncated(b.text, text);
  boxes_.push_back(b);
}

std::vector<std::string> LayoutLog::problems(size_t limit) const {
  std::vector<std::string> out;
  size_t more = 0;
  auto report = [&](std::string problem) {
    if (out.size() < limit) out.push_back(std::move(problem));
    else ++more;
  };
  for (size_t i = 0; i < boxes_.size(); ++i) {
    const LayoutBox& a = boxes_[i];
    if (!a.region.contains(a.box))
      report(describe(a) + " at " + rect_text(a.box) + " is cut off by its region " + rect_text(a.region));
    for (size_t j = i + 1; j < boxes_.size(); ++j)
      if (a.box.overlaps(boxes_[j].box))
        report(describe(a) + " at " + rect_text(a.box) + " overlaps " + describe(boxes_[j]) + " at " +
               rect_text(boxes_[j].box));
  }
  if (more) out.push_back("… and " + std::to_string(more) + " more");
  return out;
}

}  // namespace attn::ui
