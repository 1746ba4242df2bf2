// The UI's texts in English and Korean (ui/strings_table.inc) and the language they are shown in. The
// language is a process-wide setting: the App sets it each frame from the configuration (its `lang`,
// or the platform's default: the browser's first preferred language, attn-gui's --lang or LANG).
#pragma once
#include <optional>
#include <string>
#include <vector>

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
// tr(key) as a printf format with the arguments (for messages made once, not in an idle frame).
std::string format(Str key, ...);
const char* text_in(Str key, Lang lang);  // in a given one
const char* key_name(Str key);            // "tour_next"

void set_language(Lang lang);
Lang language();
// The default for a configuration without `lang` (the shells set it once, at start).
void set_default_language(Lang lang);
Lang default_language();

const char* lang_code(Lang lang);  // "en" | "ko"
Lang parse_lang(const std::string& code);  // throws InputError for another code
// A locale or language tag ("ko", "ko-KR", "ko_KR.UTF-8") → Korean; anything else → English.
Lang lang_for_locale(const std::string& tag);

// A built-in task's texts: what it asks and what its heads should show; none for another name.
struct TaskTexts {
  Str description, pattern;
};
std::optional<TaskTexts> task_texts(const std::string& task);

// The words of `text` that only the table's English side uses: English UI words, left untranslated when
// they show in a Korean frame. A word is a run of 3+ ASCII letters outside a name (one with digits,
// '_' or '.': stage names, d_model) or one that a '(' or '[' follows (dropout(x), vocab[word], a stage's
// `query [4, 4, 6]`); words a Korean text uses too (PyTorch, exact, padding, a formula's scores) are names
// (the texts the same in both languages are names and formulas only: tested).
std::vector<std::string> english_only_words(const std::string& text);

// {key: text} of the page_* strings: the web page's own labels (api.js).
Json page_strings(Lang lang);

}  // namespace attn::ui
