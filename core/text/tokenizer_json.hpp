// A Hugging Face tokenizer.json (the one file Llama, Mistral, Qwen2, Gemma and GPT-NeoX checkpoints
// ship): its normalizer, pre-tokenizer, BPE model (core/text/tokenizer_bpe.hpp: byte-level, or
// SentencePiece-style with byte fallback), added tokens, post-processor and decoder, read into the
// pipeline Hugging Face's tokenizers runs. docs/tokenizers.md lists what is read and where it differs.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_bpe.hpp"

namespace attn {

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool special = false, normalized = false, lstrip = false, rstrip = false;
};

class JsonTokenizer {
 public:
  // The file's JSON; InputError naming `file` and the field for a malformed one, and for a kind not
  // supported (a WordPiece, WordLevel or Unigram model, an unknown normalizer, …), listing those that are.
  static JsonTokenizer from_file(const std::string& path);
  static JsonTokenizer from_text(const std::string& json, const std::string& file);

  // The ids Hugging Face's Tokenizer.encode gives; the post-processor's BOS (and EOS) with
  // `add_special_tokens`. InputError on invalid UTF-8, naming its byte.
  Encoding encode(const std::string& text, bool add_special_tokens = true) const;
  // The decoder's text for `ids` (special tokens kept); InputError for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids) const;

  size_t size() const { return tokens_.size(); }  // ids 0 … size() − 1, added tokens included
  const std::string& token(int64_t id) const;
  std::optional<int64_t> find(const std::string& token) const;
  // The token as a label: a byte-level one's bytes as text (readable_token), others as they are.
  std::string label(int64_t id) const;

  using Normalizer = std::function<std::string(const std::string&)>;
  // Pieces in, pieces out; `first`: the text's first section (Metaspace's prepend_scheme "first").
  using PreTokenizer = std::function<std::vector<std::string>(const std::vector<std::string>&, bool first)>;
  using Decoder = std::function<std::vector<std::string>(std::vector<std::string>)>;

 private:
  JsonTokenizer() = default;
  void encode_section(const std::string& section, bool first, Encoding& e) const;
  std::vector<std::pair<std::string, bool>> split_added(const std::string& text, const std::vector<std::string>& contents) const;

  std::optional<BytePairTokenizer> model_;
  Normalizer normalizer_;                 // empty: none
  std::vector<PreTokenizer> pre_tokenizers_;
  std::vector<AddedToken> added_;
  std::vector<std::string> raw_contents_, normalized_contents_;  // added tokens matched before / after normalizing
  std::unordered_map<std::string, int64_t> added_ids_;           // both contents → id
  std::vector<int64_t> prefix_, suffix_;  // the post-processor's special tokens around the text
  std::vector<Decoder> decoders_;         // empty: tokens joined by spaces
  std::vector<std::string> tokens_;       // by id, the model's and the added ones
  bool byte_level_ = false;               // a ByteLevel pre-tokenizer: tokens are byte symbols
};

}  // namespace attn
