// BERT's tokenizer as transformers' BertTokenizer computes it: the basic tokenizer (drop control
// characters, spaces around CJK ideographs, NFC, whitespace split, lower-casing and accent stripping,
// punctuation split), then WordPiece (greedy longest match first, "##" continuations, [UNK] for a
// word without a match or longer than 100 characters). docs/pretrained.md says where it differs.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.hpp"

namespace attn {

struct WordPieceOptions {
  bool lower_case = true;             // do_lower_case
  std::optional<bool> strip_accents;  // null: follow lower_case
  bool split_cjk = true;              // tokenize_chinese_chars
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]", mask = "[MASK]";
};

class WordPieceTokenizer {
 public:
  // `vocab`: vocab.txt's lines, by id (a token listed twice keeps its later id, as transformers does).
  // Throws InputError naming `file` when [UNK], [CLS] or [SEP] is missing.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options, const std::string& file);
  // vocab.txt (UTF-8, one token per line, LF or CRLF) and, when given, tokenizer_config.json's
  // do_lower_case, strip_accents, tokenize_chinese_chars and special tokens.
  static WordPieceTokenizer from_files(const std::string& vocab_txt, const std::string* tokenizer_config);

  std::vector<std::string> tokenize(const std::string& text) const;  // no special tokens
  // [CLS] first [SEP] (second [SEP]), token types 0 then 1. Throws InputError on invalid UTF-8.
  Encoding encode(const std::string& first, const std::string* second = nullptr) const;
  size_t size() const { return tokens_.size(); }
  const std::string& token(int64_t id) const;
  std::optional<int64_t> find(const std::string& token) const;  // its id, if the vocabulary has it
  std::vector<std::string> specials() const;  // [UNK], [CLS], [SEP], [PAD], [MASK]: those the vocabulary has

 private:
  std::vector<std::string> basic_tokens(const std::string& text) const;
  void word_pieces(const std::string& word, std::vector<std::string>& out) const;
  int64_t id_of(const std::string& token) const { return ids_.at(token); }

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  WordPieceOptions options_;
};

}  // namespace attn
