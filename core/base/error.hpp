// Errors a user can cause (bad sentences, flags, sizes): one exception type whose message names the
// problem; front ends show it (CLI: stderr + exit 2, GUI: a message).
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace attn {

// Length of the well-formed UTF-8 sequence at text[i] (no overlongs, surrogates or code points past
// U+10FFFF), or 0 when there is none.
inline size_t utf8_sequence_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  const size_t n = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  const unsigned char c = byte(i + 1);
  if ((b == 0xe0 && c < 0xa0) || (b == 0xed && c > 0x9f) || (b == 0xf0 && c < 0x90) || (b == 0xf4 && c > 0x8f)) return 0;
  return n;
}

// The text with every byte that is not part of well-formed UTF-8 written as \xNN.
inline std::string printable_utf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n) {
      out.append(text, i, n);
      i += n;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(text[i++]));
    out += escaped;
  }
  return out;
}

// Messages quote what the user gave (a file's bytes, a line, a parser's "last read"), and front ends
// put them into JSON and UTF-8 text, so a message is always well-formed UTF-8.
struct InputError : std::runtime_error {
  explicit InputError(const std::string& message) : std::runtime_error(printable_utf8(message)) {}
};

}  // namespace attn
