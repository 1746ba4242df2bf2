#include "core/text/utf8.hpp"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

#include "core/base/error.hpp"

namespace attn::utf8 {
namespace {

std::string mapped(const std::string& text, int options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          utf8proc_ssize_t(text.size()), &out, utf8proc_option_t(options));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) throw InputError(std::string("cannot normalise the text: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

}  // namespace

std::u32string decode(const std::string& text, const std::string& what) {
  std::u32string out;
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (utf8proc_ssize_t i = 0, n = utf8proc_ssize_t(text.size()); i < n;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(s + i, n - i, &cp);
    if (len <= 0) throw InputError(what + ": invalid UTF-8 at byte " + std::to_string(i));
    out.push_back(char32_t(cp));
    i += len;
  }
  return out;
}

void append(std::string& out, char32_t cp) {
  utf8proc_uint8_t bytes[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_int32_t(cp), bytes);
  out.append(reinterpret_cast<const char*>(bytes), size_t(n));
}

std::string encode(const std::u32string& text) {
  std::string out;
  for (char32_t cp : text) append(out, cp);
  return out;
}

Category category(char32_t cp) {
  switch (utf8proc_category(utf8proc_int32_t(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return Category::letter;
    case UTF8PROC_CATEGORY_MN: return Category::mark_nonspacing;
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: return Category::mark_other;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: return Category::number;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO: return Category::punctuation;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK: case UTF8PROC_CATEGORY_SO:
      return Category::symbol;
    case UTF8PROC_CATEGORY_ZS: return Category::space_separator;
    case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: return Category::line_separator;
    case UTF8PROC_CATEGORY_CC: return Category::control;
    case UTF8PROC_CATEGORY_CF: return Category::format;
    default: return Category::other;  // Cn, Cs, Co
  }
}

bool is_other(char32_t cp) {
  const Category c = category(cp);
  return c == Category::control || c == Category::format || c == Category::other;
}

namespace {

bool is_cased(char32_t c) {
  const auto k = utf8proc_category(utf8proc_int32_t(c));
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}
// Case_Ignorable, as far as the final-sigma rule meets it: marks, format characters, modifiers and the
// MidLetter punctuation.
bool is_case_ignorable(char32_t c) {
  const auto k = utf8proc_category(utf8proc_int32_t(c));
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK || c == '\'' || c == '.' || c == ':' || c == 0xB7 ||
         c == 0x2018 || c == 0x2019 || c == 0x2024 || c == 0xFE13 || c == 0xFE52 || c == 0xFE55 || c == 0xFF07 ||
         c == 0xFF0E || c == 0xFF1A;
}

// Σ at `at` ends a word: a cased letter before it and none after (case-ignorable ones skipped).
bool is_final_sigma(const std::u32string& t, size_t at) {
  size_t before = at;
  while (before > 0 && is_case_ignorable(t[before - 1])) --before;
  if (before == 0 || !is_cased(t[before - 1])) return false;
  size_t after = at + 1;
  while (after < t.size() && is_case_ignorable(t[after])) ++after;
  return after == t.size() || !is_cased(t[after]);
}

}  // namespace

std::u32string lower(const std::u32string& text) {
  std::u32string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == 0x130) out += U"i\u0307";
    else if (text[i] == 0x3A3) out += is_final_sigma(text, i) ? U'\u03C2' : U'\u03C3';
    else out += char32_t(utf8proc_tolower(utf8proc_int32_t(text[i])));
  }
  return out;
}

std::string nfd(const std::string& text) { return mapped(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE); }
std::string nfc(const std::string& text) { return mapped(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE); }
std::string nfkd(const std::string& text) { return mapped(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); }
std::string nfkc(const std::string& text) { return mapped(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT); }

bool is_js_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

}  // namespace attn::utf8
