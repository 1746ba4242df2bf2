// UTF-8 text as Unicode code points, and the Unicode properties the checkpoints' tokenizers need
// (general category, lower case, NFC/NFD), from utf8proc's tables: the same tables natively and in
// WebAssembly, so both tokenise alike.
#pragma once
#include <string>
#include <vector>

namespace attn::utf8 {

// Throws InputError naming `what` on invalid UTF-8.
std::u32string decode(const std::string& text, const std::string& what);
void append(std::string& out, char32_t cp);
std::string encode(const std::u32string& text);

enum class Category { letter, mark_nonspacing, mark_other, number, punctuation, symbol, space_separator,
                      line_separator, control, format, other };
Category category(char32_t cp);
bool is_other(char32_t cp);  // Unicode's C* categories: control, format, surrogate, private use, unassigned
// str.lower() as Python (and JavaScript's toLowerCase) compute it: the simple mappings, İ → i̇, and a
// final Σ → ς (after a cased letter, not before one).
std::u32string lower(const std::u32string& text);
// Canonical decomposition (NFD) and composition (NFC) of valid UTF-8.
std::string nfd(const std::string& text);
std::string nfc(const std::string& text);
// Compatibility decomposition (NFKD) and composition (NFKC).
std::string nfkd(const std::string& text);
std::string nfkc(const std::string& text);
// JavaScript's \s (WhiteSpace and LineTerminator), the references' whitespace: Python's `regex`
// differs at U+0085 and U+FEFF.
bool is_js_space(char32_t c);

}  // namespace attn::utf8
