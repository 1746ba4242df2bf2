// The UI's texts in English and Korean (ui/strings_table.inc) and the language they are shown in. The
// language is a process-wide setting: the App sets it each frame from the configuration (its `lang`,
// or the platform's default: the browser's first preferred language, attn-gui's --lang or LANG).
#pragma once
#include <string>

#include "core/base/json.hpp"

namespace attn::ui {

enum class Lang { en, ko };

enum class Str {
#define ATTN_STRING(key, en, ko) key,
#include "ui/strings_table.inc"
#undef ATTN_STRING
  count
};

const char* tr(Str key);                  // in the current language
const char* text_in(Str key, Lang lang);  // in a given one
const char* key_name(Str key);            // "tour_next"

void set_language(Lang lang);
// The default for a configuration without `lang` (the shells set it once, at start).
void set_default_language(Lang lang);
Lang default_language();

const char* lang_code(Lang lang);  // "en" | "ko"
Lang parse_lang(const std::string& code);  // throws InputError for another code
// A locale or language tag ("ko", "ko-KR", "ko_KR.UTF-8") → Korean; anything else → English.
Lang lang_for_locale(const std::string& tag);

// {key: text} of the page_* strings: the web page's own labels (api.js).
Json page_strings(Lang lang);

}  // namespace attn::ui
