#include "ui/drawn_text.hpp"

#include <cmath>
#include <map>
#include <utility>

#include <imgui.h>

#include "core/text/utf8.hpp"

namespace attn::ui {

std::vector<std::string> drawn_text(const ImDrawData& data, const ImFontAtlas& atlas) {
  struct Glyph {
    const ImFontGlyph* glyph;
    float space;  // the font's space advance (unscaled)
  };
  std::map<std::pair<float, float>, Glyph> by_uv;  // each glyph's top-left in the atlas
  for (const ImFont* font : atlas.Fonts) {
    const ImFontGlyph* space = font->FindGlyphNoFallback(' ');
    for (const ImFontGlyph& g : font->Glyphs)
      if (g.Visible) by_uv.emplace(std::make_pair(g.U0, g.V0), Glyph{&g, space ? space->AdvanceX : font->FontSize / 4});
  }
  std::vector<std::string> runs;
  for (const ImDrawList* list : data.CmdLists) {
    const ImDrawVert* v = list->VtxBuffer.Data;
    const int n = list->VtxBuffer.Size;
    float pen = 0, top = NAN;  // where the run's next glyph would start without a space, and its line's top
    for (int i = 0; i + 3 < n; ++i) {
      const auto found = by_uv.find({v[i].uv.x, v[i].uv.y});
      if (found == by_uv.end()) continue;
      const ImFontGlyph& g = *found->second.glyph;
      if (v[i + 1].uv.x != g.U1 || v[i + 2].uv.x != g.U1 || v[i + 2].uv.y != g.V1) continue;  // not its quad
      const float width = v[i + 1].pos.x - v[i].pos.x;
      const float scale = g.X1 > g.X0 ? width / (g.X1 - g.X0) : 1;
      const float start = v[i].pos.x - g.X0 * scale, line_top = v[i].pos.y - g.Y0 * scale;
      const float gap = start - pen, space = found->second.space * scale;
      if (runs.empty() || std::isnan(top) || std::fabs(line_top - top) > 0.5f || gap < -0.5f || gap > 3 * space)
        runs.emplace_back();
      else if (gap > 0.5f * space)
        runs.back() += ' ';
      utf8::append(runs.back(), char32_t(g.Codepoint));
      pen = start + g.AdvanceX * scale;
      top = line_top;
      i += 3;
    }
  }
  return runs;
}

}  // namespace attn::ui
