// The regular expressions tokenizer.json's Split pre-tokenizers and Replace normalizers carry (Llama 3's
// and Qwen2's patterns: \p{L}, \p{N}, (?i:…), \s+(?!\S)), on PCRE2 in UTF mode with Unicode classes.
// Why PCRE2: std::regex has no Unicode classes, and these are Oniguruma patterns (what Hugging Face's
// tokenizers compiles), which PCRE2 reads alike, lookahead included. It is compiled from Debian's
// source package (scripts/deps.sh) as utf8proc is, so native and WebAssembly builds match the same way.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attn {

class Regex {
 public:
  // Throws InputError naming `what` when PCRE2 cannot compile `pattern`.
  Regex(const std::string& pattern, const std::string& what);
  // The non-overlapping matches in valid UTF-8 `text`, left to right, as [begin, end) byte offsets; an
  // empty match is skipped past (one character on) as JavaScript's matchAll does.
  std::vector<std::pair<size_t, size_t>> matches(const std::string& text) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string what_;
};

}  // namespace attn
