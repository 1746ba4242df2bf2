#include "core/text/tokenizer_bpe.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <queue>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/text/utf8.hpp"

namespace attn {
namespace {

// bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 for U+0100 onwards.
const std::array<std::string, 256>& byte_symbols() {
  static const std::array<std::string, 256> symbols = [] {
    std::array<std::string, 256> out;
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int next = 256;
    for (int b = 0; b < 256; ++b) utf8::append(out[size_t(b)], char32_t(printable(b) ? b : next++));
    return out;
  }();
  return symbols;
}

const std::unordered_map<std::string, unsigned char>& symbol_bytes() {
  static const std::unordered_map<std::string, unsigned char> bytes = [] {
    std::unordered_map<std::string, unsigned char> out;
    for (int b = 0; b < 256; ++b) out[byte_symbols()[size_t(b)]] = static_cast<unsigned char>(b);
    return out;
  }();
  return bytes;
}

bool is_space(char32_t c) { return utf8::is_js_space(c); }
bool is_letter(char32_t c) { return utf8::category(c) == utf8::Category::letter; }
bool is_number(char32_t c) { return utf8::category(c) == utf8::Category::number; }
bool is_other(char32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); }

// The length of the pattern's match at `at` (at least 1), alternatives tried in the pattern's order.
size_t match_at(const std::u32string& s, size_t at) {
  static const char32_t* const contractions[] = {U"'s", U"'t", U"'re", U"'ve", U"'m", U"'ll", U"'d"};
  for (const char32_t* c : contractions)
    if (s.compare(at, std::char_traits<char32_t>::length(c), c) == 0) return std::char_traits<char32_t>::length(c);
  const size_t n = s.size();
  auto run = [&](size_t from, bool (*in_class)(char32_t)) {
    size_t end = from;
    while (end < n && in_class(s[end])) ++end;
    return end - from;
  };
  for (bool (*in_class)(char32_t) : {is_letter, is_number, is_other}) {  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+"
    const size_t skip = s[at] == U' ' && at + 1 < n && in_class(s[at + 1]) ? 1 : 0;
    if (const size_t len = run(at + skip, in_class)) return skip + len;
  }
  const size_t spaces = run(at, is_space);  // at least 1: every other character matched above
  // \s+(?!\S): the run, or all but its last space when a non-space follows; else \s+.
  if (at + spaces == n || spaces == 1) return spaces;
  return spaces - 1;
}

// nlohmann's std::map JSON, not attn::Json: the ordered map's inserts are linear, and GPT-2's
// vocabulary has 50,257 keys.
std::vector<std::string> read_vocab(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read vocabulary '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("vocabulary '" + path + "' is not valid JSON: " + std::string(e.what()));
  }
  return tokens_by_id(j, "vocabulary '" + path + "'");
}

std::vector<std::pair<std::string, std::string>> read_merges(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read merges '" + path + "'");
  std::vector<std::pair<std::string, std::string>> merges;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if ((number == 1 && line.rfind("#version", 0) == 0) || line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
      throw InputError(path + ":" + std::to_string(number) + ": a merge is two symbols separated by one space");
    if (!is_valid_utf8(line)) throw InputError(path + ":" + std::to_string(number) + ": invalid UTF-8");
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

}  // namespace

std::vector<std::string> tokens_by_id(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object() || j.empty()) throw InputError(what + " must be a JSON object {token: id}");
  std::vector<std::string> tokens(j.size());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [token, id] : j.items()) {
    const auto i = json_integer<size_t>(id, what + ": the id of '" + token + "'", 0, j.size() - 1);
    if (seen[i]) throw InputError(what + ": id " + std::to_string(i) + " is given to two tokens");
    seen[i] = true;
    tokens[i] = token;
  }
  return tokens;
}

size_t BytePairTokenizer::PairHash::operator()(const std::pair<std::string, std::string>& p) const {
  const std::hash<std::string> h;
  return h(p.first) * 31 + h(p.second);
}

BytePairTokenizer::BytePairTokenizer(std::vector<std::string> tokens,
                                     std::vector<std::pair<std::string, std::string>> merges, BpeOptions options)
    : tokens_(std::move(tokens)), options_(std::move(options)) {
  for (size_t id = 0; id < tokens_.size(); ++id) {
    ids_[tokens_[id]] = int64_t(id);
    const std::string& t = tokens_[id];
    if (t.size() > 4 && t.rfind("<|", 0) == 0 && t.compare(t.size() - 2, 2, "|>") == 0) specials_.push_back(t);
  }
  for (size_t rank = 0; rank < merges.size(); ++rank)
    ranks_.emplace(merges[rank], rank);  // a repeated pair keeps its first rank
  merges_ = std::move(merges);
}

BytePairTokenizer BytePairTokenizer::from_files(const std::string& vocab_json, const std::string& merges_txt) {
  return BytePairTokenizer(read_vocab(vocab_json), read_merges(merges_txt));
}

std::string BytePairTokenizer::vocab_json() const {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();  // in id order, as GPT-2's file
  for (size_t id = 0; id < tokens_.size(); ++id) vocab[tokens_[id]] = id;
  return vocab.dump() + "\n";
}

std::string BytePairTokenizer::merges_txt() const {
  std::string out = "#version: 0.2\n";
  for (const auto& [a, b] : merges_) out += a + " " + b + "\n";
  return out;
}

BytePairTokenizer character_tokenizer(const std::string& text) {
  const std::u32string points = utf8::decode(text, "the text");
  const std::set<char32_t> characters(points.begin(), points.end());  // by code point
  if (characters.empty()) throw InputError("the text has no character to build a vocabulary from");
  std::vector<std::string> tokens, partial;
  std::vector<std::pair<std::string, std::string>> merges;
  std::set<std::string> seen_partial;
  for (const char32_t cp : characters) {
    std::string c;
    utf8::append(c, cp);
    std::string symbol = byte_symbol(static_cast<unsigned char>(c[0]));
    for (size_t i = 1; i < c.size(); ++i) {
      const std::string next = byte_symbol(static_cast<unsigned char>(c[i]));
      if (i > 1 && seen_partial.insert(symbol).second) partial.push_back(symbol);
      if (std::find(merges.begin(), merges.end(), std::pair(symbol, next)) == merges.end()) merges.emplace_back(symbol, next);
      symbol += next;
    }
    tokens.push_back(symbol);
  }
  tokens.insert(tokens.end(), partial.begin(), partial.end());
  tokens.push_back("<|endoftext|>");
  return BytePairTokenizer(std::move(tokens), std::move(merges));
}

std::optional<int64_t> BytePairTokenizer::find(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

const std::string& BytePairTokenizer::token(int64_t id) const {
  if (id < 0 || size_t(id) >= tokens_.size())
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (" +
                     std::to_string(tokens_.size()) + " tokens)");
  return tokens_[size_t(id)];
}

// encoder.py's bpe(): merge the lowest-ranked adjacent pair everywhere (left to right), until no pair
// has a rank. Done with a heap of pairs by (rank, position), one rank's occurrences per round, so a
// long word costs O(n log n) instead of the reference's O(n²) (a pasted 100,000-letter word would hang).
// Hugging Face's tokenizers merges the same way (lowest rank, then leftmost first).
std::vector<std::string> BytePairTokenizer::merge(const std::string& text) const {
  std::vector<std::string> word;
  for (char32_t c : utf8::decode(text, "a word")) word.push_back(utf8::encode(std::u32string(1, c)));
  const size_t n = word.size();
  std::vector<size_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i == 0 ? SIZE_MAX : i - 1;
  using Entry = std::pair<size_t, size_t>;  // (rank, left position)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](size_t left) {
    if (left == SIZE_MAX || next[left] >= n) return;
    const auto it = ranks_.find({word[left], word[next[left]]});
    if (it != ranks_.end()) heap.emplace(it->second, left);
  };
  for (size_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const size_t rank = heap.top().first;
    std::vector<size_t> lefts;  // ascending: the heap orders by position within a rank
    for (; !heap.empty() && heap.top().first == rank; heap.pop()) lefts.push_back(heap.top().second);
    const auto& [first, second] = merges_[rank];
    for (size_t left : lefts) {
      const size_t right = next[left];
      if (!alive[left] || right >= n || word[left] != first || word[right] != second) continue;  // stale
      word[left] += word[right];
      alive[right] = false;
      next[left] = next[right];
      if (next[left] < n) prev[next[left]] = left;
      push(prev[left]);
      push(left);
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < n; i = next[i]) out.push_back(std::move(word[i]));
  return out;
}

// Special tokens (<|endoftext|>) are cut out first, as GPT2Tokenizer does with its added tokens.
Encoding BytePairTokenizer::encode(const std::string& text) const {
  Encoding e;
  for (const auto& [part, special] : split_specials(text, specials_)) {
    if (special) {
      e.ids.push_back(ids_.at(part));
      e.tokens.push_back(part);
      continue;
    }
    encode_part(part, e);
  }
  return e;
}

void BytePairTokenizer::encode_part(const std::string& text, Encoding& e) const {
  for (const std::string& piece : gpt2_pieces(text)) {
    std::string symbols;
    for (unsigned char b : piece) symbols += byte_symbols()[b];
    encode_word(symbols, e);
  }
}

void BytePairTokenizer::encode_word(const std::string& word, Encoding& e) const {
  if (word.empty()) return;
  if (const auto whole = ids_.find(word); options_.ignore_merges && whole != ids_.end()) {
    e.ids.push_back(whole->second);
    e.tokens.push_back(word);
    return;
  }
  for (std::string& token : merge(word)) {
    const auto it = ids_.find(token);
    if (it == ids_.end()) {
      append_unknown(token, word, e);
      continue;
    }
    e.ids.push_back(it->second);
    e.tokens.push_back(std::move(token));
  }
}

// A merged piece the vocabulary lacks: its bytes as <0xNN> tokens (when all exist), else the unknown
// token (once for a run, with fuse_unk), as Hugging Face's BPE does.
void BytePairTokenizer::append_unknown(const std::string& token, const std::string& word, Encoding& e) const {
  if (options_.byte_fallback) {
    std::vector<int64_t> bytes;
    for (unsigned char b : token) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      if (const auto it = ids_.find(name); it != ids_.end()) bytes.push_back(it->second);
    }
    if (bytes.size() == token.size()) {
      for (int64_t id : bytes) e.ids.push_back(id), e.tokens.push_back(tokens_[size_t(id)]);
      return;
    }
  }
  const auto unk = ids_.find(options_.unk);
  if (options_.unk.empty() || unk == ids_.end())
    throw InputError("the vocabulary has no token '" + token + "' (a piece of '" + word + "') and no unknown token");
  if (options_.fuse_unk && !e.tokens.empty() && e.tokens.back() == options_.unk) return;
  e.ids.push_back(unk->second);
  e.tokens.push_back(options_.unk);
}

const std::string& byte_symbol(unsigned char b) { return byte_symbols()[b]; }

std::vector<std::string> gpt2_pieces(const std::string& text) {
  const std::u32string s = utf8::decode(text, "the sentence");
  std::vector<std::string> pieces;
  for (size_t at = 0; at < s.size();) {
    const size_t len = match_at(s, at);
    pieces.push_back(utf8::encode(s.substr(at, len)));
    at += len;
  }
  return pieces;
}

namespace {

// A byte-level token's bytes; nothing when it is not one (a special token such as <|endoftext|>).
std::optional<std::string> token_bytes(const std::string& token) {
  std::string bytes;
  for (char32_t c : utf8::decode(token, "token")) {
    const auto it = symbol_bytes().find(utf8::encode(std::u32string(1, c)));
    if (it == symbol_bytes().end()) return std::nullopt;
    bytes.push_back(char(it->second));
  }
  return bytes;
}

// How many bytes of the UTF-8 sequence at bytes[i] are well formed (its lead byte and the continuation
// bytes that may follow it), and whether they make a whole character.
std::pair<size_t, bool> well_formed_prefix(const std::string& bytes, size_t i) {
  const auto c = static_cast<unsigned char>(bytes[i]);
  if (c < 0x80) return {1, true};
  size_t len = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range (Unicode's table 3-7)
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, low = c == 0xE0 ? 0xA0 : 0x80, high = c == 0xED ? 0x9F : 0xBF;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, low = c == 0xF0 ? 0x90 : 0x80, high = c == 0xF4 ? 0x8F : 0xBF;
  else return {1, false};
  size_t k = 1;
  for (; k < len && i + k < bytes.size(); ++k) {
    const auto b = static_cast<unsigned char>(bytes[i + k]);
    if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) break;
  }
  return {k, k == len};
}

}  // namespace

std::string readable_token(const std::string& token) {
  const std::optional<std::string> bytes = token_bytes(token);
  if (!bytes) return token;  // not a byte-level token: shown as it is
  std::string out;
  for (size_t i = 0; i < bytes->size();) {
    const auto [len, whole] = well_formed_prefix(*bytes, i);
    if (whole) {
      const std::string ch = bytes->substr(i, len);
      out += ch == " " ? "\xC2\xB7" : ch == "\n" ? "\\n" : ch == "\t" ? "\\t" : ch;
    } else {
      for (size_t k = i; k < i + len; ++k) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<%02X>", static_cast<unsigned char>((*bytes)[k]));
        out += hex;
      }
    }
    i += len;
  }
  return out;
}

std::string byte_level_text(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) bytes += token_bytes(token).value_or(token);
  return replace_ill_formed(bytes);
}

std::string replace_ill_formed(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const auto [len, whole] = well_formed_prefix(bytes, i);
    out += whole ? bytes.substr(i, len) : "\xEF\xBF\xBD";  // U+FFFD, as Python's errors="replace"
    i += len;
  }
  return out;
}

}  // namespace attn
