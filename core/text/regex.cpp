#include "core/text/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/base/error.hpp"

namespace attn {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// The length of the UTF-8 character starting with byte `lead`.
size_t char_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& what) : what_(what) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UCP: \s, \d, \w and case folding by Unicode properties, as Oniguruma's Unicode mode has them.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code)
    throw InputError(what + ": cannot compile the pattern " + pattern + " (at offset " + std::to_string(offset) +
                     "): " + pcre2_message(error));
  auto owned = std::make_shared<Code>();
  owned->code = code;
  code_ = std::move(owned);
}

std::vector<std::pair<size_t, size_t>> Regex::matches(const std::string& text) const {
  std::vector<std::pair<size_t, size_t>> out;
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (size_t at = 0; at <= text.size();) {
    // NO_UTF_CHECK: the text was checked once (utf8::decode) before any pattern sees it.
    const int rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw InputError(what_ + ": matching failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) out.emplace_back(begin, end);
    at = end > begin ? end : end < text.size() ? end + char_length(static_cast<unsigned char>(text[end])) : end + 1;
  }
  return out;
}

}  // namespace attn
