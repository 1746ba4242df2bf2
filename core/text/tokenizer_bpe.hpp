// GPT-2's byte-level BPE as OpenAI's encoder.py and transformers' GPT2Tokenizer compute it: the
// text's UTF-8 bytes mapped to 256 printable symbols, split by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (\s as JavaScript's, the reference tests/tokenizers/bpe_check.js compares with), each piece merged by
// the ranks of merges.txt and looked up in vocab.json.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.hpp"

namespace attn {

class BytePairTokenizer {
 public:
  // vocab.json ({token: id}, ids 0 … n−1 each once) and merges.txt (an optional "#version" line, then
  // one "a b" pair per line, in rank order). Throws InputError naming the file and the problem.
  static BytePairTokenizer from_files(const std::string& vocab_json, const std::string& merges_txt);
  BytePairTokenizer(std::vector<std::string> tokens, std::vector<std::pair<std::string, std::string>> merges);

  // Throws InputError on invalid UTF-8 or a piece the vocabulary lacks.
  Encoding encode(const std::string& text) const;
  size_t size() const { return tokens_.size(); }
  const std::string& token(int64_t id) const;
  std::optional<int64_t> find(const std::string& token) const;  // its id, if the vocabulary has it
  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }
  // The files from_files reads: vocab.json ({token: id}) and merges.txt ("#version: 0.2", then a pair a line).
  std::string vocab_json() const;
  std::string merges_txt() const;

 private:
  std::vector<std::string> merge(const std::string& piece) const;
  void encode_part(const std::string& text, Encoding& e) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  std::unordered_map<std::string, size_t> ranks_;  // "a b" → rank
  std::vector<std::pair<std::string, std::string>> merges_;  // by rank
  std::vector<std::string> specials_;              // "<|endoftext|>" and its kind: kept whole
};

// A character vocabulary as a byte-level BPE (what GPT-2's tokenizer files hold): one token per distinct
// character of `text` (valid UTF-8), ids 0 … in code point order; then the byte sequences the merges
// pass through (a character's first 2, 3 bytes), which no text encodes to; then <|endoftext|>. Each
// merge joins a character's bytes left to right, so every character of `text` encodes to its own token.
// InputError for text without a character.
BytePairTokenizer character_tokenizer(const std::string& text);

// The printable symbol byte-level BPE writes byte `b` as (bytes_to_unicode).
const std::string& byte_symbol(unsigned char b);
// GPT-2's pre-tokenizer on its own: the pieces of `text` (UTF-8), in order.
std::vector<std::string> gpt2_pieces(const std::string& text);
// A byte-level token as a label: its bytes as text, a space shown as "·", "\n" and "\t" escaped, and
// each byte that is not part of a whole UTF-8 character (a syllable split across tokens) as "<EC>".
std::string readable_token(const std::string& token);
// The text byte-level tokens spell (GPT-2's decode): their bytes in order, each maximal ill-formed part
// replaced by one U+FFFD as Python's bytes.decode("utf-8", "replace") does; a token that is not
// byte-level (<|endoftext|>) as it is.
std::string byte_level_text(const std::vector<std::string>& tokens);

}  // namespace attn
