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
  // From tokens listed by id (tokens[0] is id 0); throws InputError for duplicates.
  explicit Vocab(std::vector<std::string> tokens);
  bool contains(const std::string& token) const { return ids_.count(token) != 0; }
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
  std::vector<size_t> lengths;                   // each sentence's tokens before the padding
  size_t batch = 0, seq = 0;
};

inline constexpr const char* unknown_token = "[UNK]";

// `text` cut at every occurrence of the `specials` (the earliest first, the longest at one place):
// {piece, is_special} in order, as transformers splits its added tokens out before tokenizing the rest.
std::vector<std::pair<std::string, bool>> split_specials(const std::string& text, const std::vector<std::string>& specials);

// A checkpoint tokenizer's output for one text (core/text/tokenizer_wordpiece.hpp, core/text/tokenizer_bpe.hpp).
struct Encoding {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;  // the vocabulary's own strings
  std::vector<int64_t> type_ids;    // BERT's segments (0, then 1 for a second text); empty for GPT-2
};

// Tokenizes every sentence and pads to the longest one. With `grow`, new words join `vocab`;
// otherwise an unknown word becomes [UNK] if the vocabulary has it, else an InputError names it.
// Throws InputError for an empty list, an empty sentence or invalid UTF-8 (naming the sentence).
TokenBatch tokenize_batch(const std::vector<std::string>& sentences, Vocab& vocab, bool grow = true);

// Reads a vocabulary JSON file {"token": id, ...}: ids must be 0..n-1, each once, [PAD] (if present) 0.
Vocab read_vocab_file(const std::string& path);

// Reads one sentence per line (UTF-8, optional BOM, LF or CRLF). Throws InputError naming the line
// of a problem (unreadable file, invalid UTF-8, blank line).
std::vector<std::string> read_sentences_file(const std::string& path);

}  // namespace attn
