// The SVG figure's text handling and layout (tests/svg_check.py reads whole figures back with an XML
// parser against the trace's values and colours).
#include <catch2/catch.hpp>

#include "core/plot/svg.hpp"

namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("xml_text escapes markup and replaces what XML cannot hold", "[plot]") {
  CHECK(attn::xml_text("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
  CHECK(attn::xml_text("고양이") == "고양이");
  CHECK(attn::xml_text("\x01x\x1f") == "\xEF\xBF\xBDx\xEF\xBF\xBD");           // control characters
  CHECK(attn::xml_text("a\xEA\xB3") == "a\xEF\xBF\xBD\xEF\xBF\xBD");           // half a Hangul syllable
  CHECK(attn::xml_text("\xEF\xBF\xBE") == "\xEF\xBF\xBD");                      // U+FFFE
}

TEST_CASE("heatmap_svg: a rect per cell, labels thinned on a long axis only", "[plot]") {
  attn::HeatmapFigure f;
  f.slice.rows = 3, f.slice.cols = 1000;
  f.slice.values.assign(3000, 0.5f);
  f.slice.values[7] = -1e9f;  // masked
  f.range = {0, 1};
  const std::string svg = attn::heatmap_svg(f);
  CHECK(count(svg, "<rect class=\"cell\"") == 3000);
  CHECK(count(svg, "fill=\"#606060\"") == 1);
  const size_t labels = count(svg, "rotate(-90)");  // column labels: 1000 cells of 2 px, one label in 7
  CHECK(labels == 143);
  CHECK(count(svg, "<text x=") == 3);  // every row label
}
