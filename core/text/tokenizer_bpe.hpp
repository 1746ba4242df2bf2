// Byte-pair encoding, one merge loop for every BPE checkpoint: GPT-2's byte-level BPE from vocab.json and
// merges.txt, as OpenAI's encoder.py and transformers' GPT2Tokenizer compute it (the text's UTF-8 bytes
// mapped to 256 printable symbols, split by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (\s as JavaScript's, the reference tests/tokenizers/check.mjs compares with), each piece merged by the
// ranks of merges.txt and looked up in vocab.json); and tokenizer.json's BPE model
// (core/text/tokenizer_json.hpp), byte-level or SentencePiece-style with byte fallback (BpeOptions).
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/text/tokenizer.hpp"

namespace attn {

// tokenizer.json's BPE options; GPT-2's files have none of them.
struct BpeOptions {
  bool byte_fallback = false;  // a piece the vocabulary lacks becomes its bytes' <0xNN> tokens
  bool ignore_merges = false;  // a word the vocabulary has is one token, merges or not (Llama 3)
  bool fuse_unk = false;       // consecutive unknown pieces become one `unk`
  std::string unk;             // the unknown token; empty: none, an unknown piece is an InputError
};

class BytePairTokenizer {
 public:
  // vocab.json ({token: id}, ids 0 … n−1 each once) and merges.txt (an optional "#version" line, then
  // one "a b" pair per line, in rank order). Throws InputError naming the file and the problem.
  static BytePairTokenizer from_files(const std::string& vocab_json, const std::string& merges_txt);
  BytePairTokenizer(std::vector<std::string> tokens, std::vector<std::pair<std::string, std::string>> merges,
                    BpeOptions options = {});

  // GPT-2's tokenization. Throws InputError on invalid UTF-8 or a piece the vocabulary lacks.
  Encoding encode(const std::string& text) const;
  // One pre-tokenized word in the vocabulary's alphabet (byte symbols for byte-level BPE, text with ▁
  // for SentencePiece's), each character a first symbol, merged and appended to `e`.
  void encode_word(const std::string& word, Encoding& e) const;
  size_t size() const { return tokens_.size(); }
  const std::string& token(int64_t id) const;
  std::optional<int64_t> find(const std::string& token) const;  // its id, if the vocabulary has it
  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }
  // The files from_files reads: vocab.json ({token: id}) and merges.txt ("#version: 0.2", then a pair a line).
  std::string vocab_json() const;
  std::string merges_txt() const;

 private:
  struct PairHash {
    size_t operator()(const std::pair<std::string, std::string>& p) const;
  };
  std::vector<std::string> merge(const std::string& word) const;
  void encode_part(const std::string& text, Encoding& e) const;
  void append_unknown(const std::string& token, const std::string& word, Encoding& e) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  // (a, b) → rank: a pair, not "a b", since tokenizer.json's ["a", "b"] merges may hold spaces.
  std::unordered_map<std::pair<std::string, std::string>, size_t, PairHash> ranks_;
  std::vector<std::pair<std::string, std::string>> merges_;  // by rank
  std::vector<std::string> specials_;              // "<|endoftext|>" and its kind: kept whole
  BpeOptions options_;
};

// A vocabulary object {token: id} (vocab.json, tokenizer.json's model.vocab) as its tokens by id: the
// ids 0 … n−1 each once, tokens valid UTF-8; InputError naming `what` otherwise.
std::vector<std::string> tokens_by_id(const nlohmann::json& vocab, const std::string& what);

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
// `bytes` as UTF-8 text, each maximal ill-formed part replaced by one U+FFFD (as Python's
// errors="replace" and JavaScript's TextDecoder do).
std::string replace_ill_formed(const std::string& bytes);

}  // namespace attn
