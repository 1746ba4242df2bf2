#include "ui/strings.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>

#include "core/base/error.hpp"

namespace attn::ui {
namespace {

struct Entry {
  const char* key;
  const char* text[2];  // Lang's order
};

const Entry entries[] = {
#define ATTN_STRING(key, en, ko) {#key, {en, ko}},
#include "ui/strings_table.inc"
#undef ATTN_STRING
};
static_assert(sizeof entries / sizeof entries[0] == size_t(Str::count), "one entry per key");

Lang current = Lang::en, fallback = Lang::en;

}  // namespace

const char* text_in(Str key, Lang lang) { return entries[size_t(key)].text[size_t(lang)]; }
const char* tr(Str key) { return text_in(key, current); }
const char* key_name(Str key) { return entries[size_t(key)].key; }

std::string format(Str key, ...) {
  va_list args, again;
  va_start(args, key);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, tr(key), args);
  va_end(args);
  std::string out(size_t(std::max(n, 0)), '\0');
  std::vsnprintf(out.data(), out.size() + 1, tr(key), again);
  va_end(again);
  return out;
}

void set_language(Lang lang) { current = lang; }
Lang language() { return current; }
void set_default_language(Lang lang) { fallback = lang; }
Lang default_language() { return fallback; }

const char* lang_code(Lang lang) { return lang == Lang::ko ? "ko" : "en"; }

Lang parse_lang(const std::string& code) {
  if (code == "en") return Lang::en;
  if (code == "ko") return Lang::ko;
  throw InputError("lang must be 'en' or 'ko' (got '" + code + "')");
}

Lang lang_for_locale(const std::string& tag) {
  return tag.size() >= 2 && (tag[0] == 'k' || tag[0] == 'K') && (tag[1] == 'o' || tag[1] == 'O') &&
                 (tag.size() == 2 || tag[2] == '-' || tag[2] == '_' || tag[2] == '.')
             ? Lang::ko
             : Lang::en;
}

std::optional<TaskTexts> task_texts(const std::string& task) {
  static const struct {
    const char* name;
    TaskTexts texts;
  } all[] = {{"duplicate", {Str::task_duplicate, Str::look_duplicate}},
             {"brackets", {Str::task_brackets, Str::look_brackets}},
             {"places", {Str::task_places, Str::look_places}},
             {"asked", {Str::task_asked, Str::look_asked}},
             {"induction", {Str::task_induction, Str::look_induction}},
             {"halves", {Str::task_halves, Str::look_halves}},
             {"copy", {Str::task_copy, Str::look_copy}},
             {"reverse", {Str::task_reverse, Str::look_reverse}},
             {"korean", {Str::task_korean, Str::look_korean}},
             {"text", {Str::task_text, Str::look_text}}};
  for (const auto& t : all)
    if (task == t.name) return t.texts;
  return std::nullopt;
}

namespace {

// The words of `text` as english_only_words reads them, lower case.
std::vector<std::string> plain_words(const std::string& text) {
  std::vector<std::string> out;
  const auto is_letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto in_name = [&](char c) { return is_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.'; };
  for (size_t i = 0; i < text.size();) {
    if (!in_name(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && in_name(text[end])) ++end;
    while (end > i && text[end - 1] == '.') --end;  // a sentence's full stop
    // A function or a tensor is a name too: `dropout(x)`, `vocab[word]`, a stage's `query [4, 4, 6]`.
    const size_t after = end + (end + 1 < text.size() && text[end] == ' ' && text[end + 1] == '[');
    const bool called = after < text.size() && (text[after] == '(' || text[after] == '[') &&
                        (after == end || (after + 1 < text.size() && text[after + 1] >= '0' && text[after + 1] <= '9'));
    bool plain = end - i >= 3 && !called;
    for (size_t k = i; k < end; ++k) plain = plain && is_letter(text[k]);
    if (plain) {
      std::string word = text.substr(i, end - i);
      for (char& c : word) c = char(c | 0x20);
      out.push_back(std::move(word));
    }
    i = std::max(end, i + 1);
  }
  return out;
}

}  // namespace

std::vector<std::string> english_only_words(const std::string& text) {
  static const std::set<std::string> english = [] {
    std::set<std::string> en, ko;
    for (const Entry& e : entries) {
      for (auto& w : plain_words(e.text[size_t(Lang::en)])) en.insert(std::move(w));
      for (auto& w : plain_words(e.text[size_t(Lang::ko)])) ko.insert(std::move(w));
    }
    for (const std::string& w : ko) en.erase(w);
    return en;
  }();
  std::vector<std::string> out;
  for (auto& w : plain_words(text))
    if (english.count(w)) out.push_back(std::move(w));
  return out;
}

Json page_strings(Lang lang) {
  Json out = Json::object();
  for (size_t i = 0; i < size_t(Str::count); ++i)
    if (std::strncmp(entries[i].key, "page_", 5) == 0) out[entries[i].key] = entries[i].text[size_t(lang)];
  return out;
}

}  // namespace attn::ui
