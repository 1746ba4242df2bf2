// The text a frame drew, read back from its draw data, for the language check (attn-gui --check-layout
// --lang ko): every glyph is a quad whose texture coordinates are that glyph's place in the font atlas,
// so the font's glyph table gives its code point; spaces draw nothing and are read from the gaps.
#pragma once
#include <string>
#include <vector>

struct ImDrawData;
struct ImFontAtlas;

namespace attn::ui {

// One string per run of text drawn (a line, or a widget's label), in drawing order, as UTF-8.
std::vector<std::string> drawn_text(const ImDrawData& data, const ImFontAtlas& atlas);

}  // namespace attn::ui
