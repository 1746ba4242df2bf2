// The checkpoint tokenizers as a filter for tests/tokenizers/check.mjs: one JSON string per input line,
// one JSON array of token ids per output line (or {"error": message}); for a tokenizer.json, an object
// {"ids": [...], "text": the ids decoded} per line.
//   attn_tokenize bpe VOCAB.json MERGES.txt | attn_tokenize wordpiece VOCAB.txt [TOKENIZER_CONFIG.json]
//   attn_tokenize json TOKENIZER.json
#include <iostream>
#include <optional>
#include <string>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/text/tokenizer_json.hpp"
#include "core/text/tokenizer_wordpiece.hpp"

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  if (argc < 4 && !((kind == "wordpiece" || kind == "json") && argc == 3)) {
    std::cerr << "usage: attn_tokenize bpe VOCAB MERGES | wordpiece VOCAB [CONFIG] | json TOKENIZER\n";
    return 2;
  }
  std::optional<attn::BytePairTokenizer> bpe;
  std::optional<attn::WordPieceTokenizer> wordpiece;
  std::optional<attn::JsonTokenizer> json;
  try {
    if (kind == "bpe") bpe = attn::BytePairTokenizer::from_files(argv[2], argv[3]);
    else if (kind == "json") json = attn::JsonTokenizer::from_file(argv[2]);
    else {
      const std::string config = argc > 3 ? argv[3] : "";
      wordpiece = attn::WordPieceTokenizer::from_files(argv[2], argc > 3 ? &config : nullptr);
    }
  } catch (const attn::InputError& e) {
    std::cerr << "attn_tokenize: " << e.what() << "\n";
    return 2;
  }
  for (std::string line; std::getline(std::cin, line);) {
    attn::Json out;
    try {
      const std::string text = attn::Json::parse(line).get<std::string>();
      if (json) {
        const std::vector<int64_t> ids = json->encode(text).ids;
        out = {{"ids", ids}, {"text", json->decode(ids)}};
      } else {
        out = bpe ? bpe->encode(text).ids : wordpiece->encode(text).ids;
      }
    } catch (const attn::InputError& e) {
      out = {{"error", e.what()}};
    }
    std::cout << out.dump() << "\n";
  }
  return 0;
}
