// Whitespace tokenizer, vocabulary and batch padding of the first tutorial: [PAD] = 0, then each
// word in order of first appearance.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace attn {

inline constexpr const char* pad_token = "[PAD]";

class Vocab {
 public:
  Vocab();  // holds [PAD] = 0
  // Adds the token if new; returns its id.
  int64_t add(const std::string& token);
  int64_t id(const std::string& token) const;  // throws InputError for an unknown token
  const std::string& token(int64_t id) const;
  size_t size() const { return tokens_.size(); }
  const std::vector<std::string>& tokens() const { return tokens_; }  // by id

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

// Splits on ASCII whitespace (and U+3000 IDEOGRAPHIC SPACE). Throws InputError on invalid UTF-8.
std::vector<std::string> split_words(const std::string& sentence);
bool is_valid_utf8(const std::string& text);

struct TokenBatch {
  std::vector<std::vector<std::string>> tokens;  // padded with [PAD] to the longest sentence
  std::vector<int64_t> ids;                      // [batch, seq], row-major
  size_t batch = 0, seq = 0;
};

// Tokenizes every sentence, grows `vocab` with new words, pads to the longest sentence.
// Throws InputError for an empty list, an empty sentence or invalid UTF-8 (naming the sentence).
TokenBatch tokenize_batch(const std::vector<std::string>& sentences, Vocab& vocab);

// Reads one sentence per line (UTF-8, optional BOM, LF or CRLF). Throws InputError naming the line
// of a problem (unreadable file, invalid UTF-8, blank line).
std::vector<std::string> read_sentences_file(const std::string& path);

}  // namespace attn
