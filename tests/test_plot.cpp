// The SVG figure's text handling and layout (tests/svg_check.py reads whole figures back with an XML
// parser against the trace's values and colours).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/base/error.hpp"
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

TEST_CASE("heads_svg: every head a group of its cells, under head and layer labels", "[plot]") {
  std::vector<attn::HeatmapFigure> heads(6);
  for (size_t k = 0; k < heads.size(); ++k) {
    heads[k].title = "L" + std::to_string(k / 3) + " H" + std::to_string(k % 3);
    heads[k].slice.rows = heads[k].slice.cols = 4;
    heads[k].slice.values.assign(16, float(k) / 6);
    heads[k].range = {0, 1};
  }
  const std::string svg = attn::heads_svg("every head", heads, 2);
  CHECK(count(svg, "<g class=\"head\"") == 6);
  CHECK(count(svg, "<rect class=\"cell\"") == 96);
  CHECK(count(svg, "data-layer=\"1\" data-head=\"2\"") == 1);
  CHECK(count(svg, ">H2</text>") == 1);
  CHECK(count(svg, ">L1</text>") == 1);
  CHECK(count(svg, "<image") == 0);
  CHECK_THROWS_AS(attn::heads_svg("none", {}, 2), attn::InputError);
  heads[0].slice.rows = heads[0].slice.cols = 1024;  // past the cells a vector figure holds
  heads[0].slice.values.assign(1024 * 1024, 0.5f);
  CHECK_THROWS_WITH(attn::heads_svg("big", heads, 2), Catch::Contains("more than a vector figure holds"));
}

TEST_CASE("curves_svg: a polyline per curve over the plot's box, log10 on y when asked", "[plot]") {
  const std::vector<attn::Curve> curves = {{"training", "#59a1ff", {{0, 0}, {5, 0.5}, {10, 1}}},
                                           {"validation", "#ffab3d", {{0, 0.25}, {5, NAN}, {10, 0.75}}}};
  const std::string svg = attn::curves_svg("loss", curves, false);
  CHECK(count(svg, "<polyline class=\"curve\"") == 2);
  // x 0–10 over [70, 550], y 0–1 over [300, 40]: the ends in the box's corners; the NaN left out.
  CHECK(count(svg, "points=\"70.00,300.00 310.00,170.00 550.00,40.00\"") == 1);
  CHECK(count(svg, "points=\"70.00,235.00 550.00,105.00\"") == 1);
  CHECK(count(svg, ">validation</text>") == 1);
  const std::string log = attn::curves_svg("loss", {{"training", "#59a1ff", {{1, 0.01}, {2, 1}}}}, true);
  CHECK(count(log, ">0.01</text>") == 1);  // the ticks give the values, not their logarithms
  CHECK(count(log, ">0.1</text>") == 1);
  CHECK_THROWS_AS(attn::curves_svg("loss", {{"training", "#59a1ff", {}}}, false), attn::InputError);
}
