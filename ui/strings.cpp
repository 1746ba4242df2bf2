#include "ui/strings.hpp"

#include <cstring>

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

void set_language(Lang lang) { current = lang; }
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

Json page_strings(Lang lang) {
  Json out = Json::object();
  for (size_t i = 0; i < size_t(Str::count); ++i)
    if (std::strncmp(entries[i].key, "page_", 5) == 0) out[entries[i].key] = entries[i].text[size_t(lang)];
  return out;
}

}  // namespace attn::ui
