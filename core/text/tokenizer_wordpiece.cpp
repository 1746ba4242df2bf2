#include "core/text/tokenizer_wordpiece.hpp"

#include <fstream>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/text/utf8.hpp"

namespace attn {
namespace {

constexpr size_t max_word_chars = 100;  // max_input_chars_per_word

bool is_whitespace(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || utf8::category(c) == utf8::Category::space_separator;
}
// Python's str.split() also splits at the line and paragraph separators the cleaning keeps.
bool splits_words(char32_t c) { return is_whitespace(c) || utf8::category(c) == utf8::Category::line_separator; }
bool is_control(char32_t c) { return c != '\t' && c != '\n' && c != '\r' && utf8::is_other(c); }
bool is_punctuation(char32_t c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126) ||
         utf8::category(c) == utf8::Category::punctuation;
}
// The CJK Unified Ideographs blocks (Hangul and kana are written with spaces and are not among them).
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::vector<std::u32string> split_words(const std::u32string& text) {
  std::vector<std::u32string> words;
  std::u32string word;
  for (char32_t c : text) {
    if (!splits_words(c)) {
      word.push_back(c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::u32string without_accents(const std::u32string& word) {
  std::u32string out;
  for (char32_t c : utf8::decode(utf8::nfd(utf8::encode(word)), "text"))
    if (utf8::category(c) != utf8::Category::mark_nonspacing) out.push_back(c);
  return out;
}

// A special token in tokenizer_config.json: a string, or an AddedToken {"content": …}.
void read_special(const Json& j, const char* key, std::string& into, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return;
  const Json& v = j[key].is_object() && j[key].contains("content") ? j[key]["content"] : j[key];
  if (!v.is_string()) throw InputError(file + ": '" + key + "' must be a string");
  into = v.get<std::string>();
}

WordPieceOptions read_options(const std::string& path) {
  const Json j = read_json_file(path, "tokenizer config");
  if (!j.is_object()) throw InputError("tokenizer config '" + path + "' must hold a JSON object");
  WordPieceOptions o;
  auto flag = [&](const char* key, bool& into) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_boolean()) throw InputError(path + ": '" + key + "' must be true or false");
    into = j[key].get<bool>();
  };
  flag("do_lower_case", o.lower_case);
  flag("tokenize_chinese_chars", o.split_cjk);
  if (j.contains("strip_accents") && !j["strip_accents"].is_null()) {
    bool strip = false;
    flag("strip_accents", strip);
    o.strip_accents = strip;
  }
  read_special(j, "unk_token", o.unk, path);
  read_special(j, "cls_token", o.cls, path);
  read_special(j, "sep_token", o.sep, path);
  read_special(j, "pad_token", o.pad, path);
  read_special(j, "mask_token", o.mask, path);
  return o;
}

std::vector<std::string> read_vocab_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read vocabulary '" + path + "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lines.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!is_valid_utf8(line)) throw InputError(path + ":" + std::to_string(lines.size() + 1) + ": invalid UTF-8");
    lines.push_back(std::move(line));
  }
  if (lines.empty()) throw InputError("vocabulary '" + path + "' is empty");
  return lines;
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options, const std::string& file)
    : tokens_(std::move(vocab)), options_(std::move(options)) {
  for (size_t id = 0; id < tokens_.size(); ++id) ids_[tokens_[id]] = int64_t(id);
  for (const std::string* special : {&options_.unk, &options_.cls, &options_.sep})
    if (!ids_.count(*special)) throw InputError(file + " has no " + *special + " token, which BERT's input needs");
}

WordPieceTokenizer WordPieceTokenizer::from_files(const std::string& vocab_txt, const std::string* tokenizer_config) {
  return WordPieceTokenizer(read_vocab_lines(vocab_txt),
                            tokenizer_config ? read_options(*tokenizer_config) : WordPieceOptions(), vocab_txt);
}

std::optional<int64_t> WordPieceTokenizer::find(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

const std::string& WordPieceTokenizer::token(int64_t id) const {
  if (id < 0 || size_t(id) >= tokens_.size())
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (" +
                     std::to_string(tokens_.size()) + " tokens)");
  return tokens_[size_t(id)];
}

// BasicTokenizer.tokenize: clean, space out CJK, NFC, split on whitespace; each word lower-cased and
// stripped of accents as the options say, then split at punctuation.
std::vector<std::string> WordPieceTokenizer::basic_tokens(const std::string& text) const {
  std::u32string cleaned;
  for (char32_t c : utf8::decode(text, "the sentence")) {
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (options_.split_cjk && is_cjk(c)) {
      cleaned += U' ';
      cleaned += c;
      cleaned += U' ';
    } else {
      cleaned += is_whitespace(c) ? U' ' : c;
    }
  }
  const bool strip = options_.strip_accents.value_or(options_.lower_case);
  std::vector<std::string> out;
  for (std::u32string word : split_words(utf8::decode(utf8::nfc(utf8::encode(cleaned)), "the sentence"))) {
    if (options_.lower_case) word = utf8::lower(word);
    if (strip) word = without_accents(word);
    std::string piece;
    for (char32_t c : word) {
      if (!is_punctuation(c)) {
        utf8::append(piece, c);
        continue;
      }
      if (!piece.empty()) out.push_back(std::move(piece));
      piece.clear();
      out.push_back(utf8::encode(std::u32string(1, c)));
    }
    if (!piece.empty()) out.push_back(std::move(piece));
  }
  return out;
}

// WordpieceTokenizer.tokenize on one word: the longest prefix in the vocabulary, then the longest
// "##" continuation, and so on; no match anywhere makes the whole word [UNK].
void WordPieceTokenizer::word_pieces(const std::string& word, std::vector<std::string>& out) const {
  const std::u32string chars = utf8::decode(word, "the sentence");
  if (chars.size() > max_word_chars) return out.push_back(options_.unk);
  std::vector<std::string> pieces;
  for (size_t start = 0; start < chars.size();) {
    size_t end = chars.size();
    std::string found;
    for (; end > start; --end) {
      const std::string piece = (start > 0 ? "##" : "") + utf8::encode(chars.substr(start, end - start));
      if (ids_.count(piece)) {
        found = piece;
        break;
      }
    }
    if (found.empty()) return out.push_back(options_.unk);
    pieces.push_back(std::move(found));
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

std::vector<std::string> WordPieceTokenizer::specials() const {
  std::vector<std::string> out;
  for (const std::string* s : {&options_.unk, &options_.cls, &options_.sep, &options_.pad, &options_.mask})
    if (ids_.count(*s)) out.push_back(*s);
  return out;
}

// Special tokens are cut out of the text first (as transformers does: "the [MASK]." keeps [MASK]).
std::vector<std::string> WordPieceTokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (const auto& [piece, special] : split_specials(text, specials())) {
    if (special) {
      out.push_back(piece);
      continue;
    }
    for (const std::string& word : basic_tokens(piece)) word_pieces(word, out);
  }
  return out;
}

Encoding WordPieceTokenizer::encode(const std::string& first, const std::string* second) const {
  Encoding e;
  auto add = [&](const std::string& token, int64_t type) {
    e.tokens.push_back(token);
    e.ids.push_back(id_of(token));
    e.type_ids.push_back(type);
  };
  add(options_.cls, 0);
  for (const std::string& t : tokenize(first)) add(t, 0);
  add(options_.sep, 0);
  if (second) {
    for (const std::string& t : tokenize(*second)) add(t, 1);
    add(options_.sep, 1);
  }
  return e;
}

}  // namespace attn
