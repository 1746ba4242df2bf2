#include "core/base/parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/threads.hpp"

namespace attn {

size_t parse_size(const std::string& flag, const std::string& text, size_t min) {
  bool ok = !text.empty() && text.size() <= 18;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  const size_t value = ok ? std::stoull(text) : 0;
  if (!ok || value < min)
    throw InputError(flag + " expects an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

size_t parse_threads(const std::string& text) {
  if (text == "auto") return hardware_threads();
  try {
    return parse_size("--threads", text, 1);
  } catch (const InputError&) {  // the same refusal, naming auto too
    throw InputError("--threads expects auto or an integer >= 1, got '" + text + "'");
  }
}

double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw InputError(flag + " expects a finite number, got '" + text + "'");
  return v;
}

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + what + " '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::vector<size_t> parse_choices(const std::string& flag, const std::string& text, const std::vector<std::string>& names,
                                  const std::string& what) {
  std::vector<size_t> chosen;
  for (const std::string& item : split_commas(text)) {
    const size_t i = size_t(std::find(names.begin(), names.end(), item) - names.begin());
    if (i == names.size()) {
      std::string expected;
      for (size_t n = 0; n < names.size(); ++n)
        expected += (n == 0 ? "" : n + 1 == names.size() ? " or " : ", ") + names[n];
      throw InputError(flag + ": unknown " + what + " '" + item + "' (expected " + expected + ", separated by commas)");
    }
    if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) throw InputError(flag + " names " + item + " twice");
    chosen.push_back(i);
  }
  return chosen;
}

}  // namespace attn
