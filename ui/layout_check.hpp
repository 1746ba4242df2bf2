// The layout checker: while a frame is drawn, the UI records where each heatmap, axis label, legend
// and title went (screen pixels) and the visible region it was drawn in; problems() then lists what
// collides (a label running into another or into a heatmap, a legend into the next heatmap) and what is
// cut off by its region. attn-gui --check-layout and the JS API (state().view.layout) report them.
// No ImGui here (tests/test_ui.cpp tests it headless).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attn::ui {

struct LayoutRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool contains(const LayoutRect& r) const;
  // True when they share more than a sliver (touching edges and sub-pixel rounding are fine).
  bool overlaps(const LayoutRect& r) const;
};

enum class LayoutKind { heatmap, chart, label, legend, title };
const char* layout_kind_name(LayoutKind kind);  // "heatmap" | "chart" | "label" | "legend" | "title"

struct LayoutBox {
  LayoutKind kind;
  char owner[24];  // what it belongs to ("mask", "grid", …), truncated
  char text[24];   // a label's text, truncated (for the messages)
  LayoutRect box, region;
};

// One frame's boxes. Recording reuses the storage of the frames before: an idle frame allocates nothing.
class LayoutLog {
 public:
  void clear() { boxes_.clear(); }
  void add(LayoutKind kind, std::string_view owner, std::string_view text, LayoutRect box, LayoutRect region);
  const std::vector<LayoutBox>& boxes() const { return boxes_; }
  // Overlapping pairs and boxes outside their region, one sentence each ("label '학교에' of mask overlaps
  // label '간다' of mask"); at most `limit` of them, then how many more.
  std::vector<std::string> problems(size_t limit = 40) const;

 private:
  std::vector<LayoutBox> boxes_;
};

}  // namespace attn::ui
