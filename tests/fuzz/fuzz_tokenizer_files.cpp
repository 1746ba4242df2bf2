// A checkpoint's tokenizer files and sentences (attn encode --model-dir, the playground's Model
// files…). The first byte picks what the rest is: 0 BERT's vocab.txt, 1 GPT-2's vocab.json, 2 its
// merges.txt, 3 a sentence for both (and its bytes decoded as byte-level tokens); the other files are small ones made here. Each tokenizer then
// encodes sentences with it.
#include "core/base/json.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/text/tokenizer_wordpiece.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

const char* const sentences[] = {"The cat's toys, 3.14 — 고양이가 잔다 中文 👋", "  \t\n", "Ünïcödé ΣΟΦΟΣ"};

std::vector<std::string> byte_tokens() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(attn::byte_symbol(static_cast<unsigned char>(b)));
  tokens.push_back(attn::byte_symbol('t') + attn::byte_symbol('h'));
  return tokens;
}

std::string byte_vocab() {
  attn::Json vocab = attn::Json::object();
  const std::vector<std::string> tokens = byte_tokens();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  return vocab.dump();
}

std::string written(const std::string& text, const std::string& suffix) {
  return attn::fuzz::as_file(reinterpret_cast<const uint8_t*>(text.data()), text.size(), suffix);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  return attn::fuzz::guarded([&] {
    switch (data[0] % 4) {
      case 0: {
        const auto t = attn::WordPieceTokenizer::from_files(written(rest, ".txt"), nullptr);
        for (const char* s : sentences) t.encode(s, &rest);
        break;
      }
      case 1: {
        const std::string merges = written("#version: 0.2\nt h\n", "-merges.txt");
        const auto t = attn::BytePairTokenizer::from_files(written(rest, ".json"), merges);
        for (const char* s : sentences) t.encode(s);
        break;
      }
      case 2: {
        const auto t = attn::BytePairTokenizer::from_files(written(byte_vocab(), ".json"),
                                                           written(rest, "-merges.txt"));
        for (const char* s : sentences) t.encode(s);
        break;
      }
      default: {
        attn::WordPieceTokenizer({"[UNK]", "[CLS]", "[SEP]", "the", "##s", "!"}, attn::WordPieceOptions(), "vocab.txt")
            .encode(rest, &rest);
        attn::BytePairTokenizer(byte_tokens(), {{attn::byte_symbol('t'), attn::byte_symbol('h')}}).encode(rest);
        // The bytes as byte-level tokens (attn generate's text): decoded, valid UTF-8, and the bytes
        // themselves when they were.
        std::vector<std::string> tokens;
        for (unsigned char c : rest) tokens.push_back(attn::byte_symbol(c));
        const std::string text = attn::byte_level_text(tokens);
        if (!attn::is_valid_utf8(text)) attn::fuzz::finding("byte_level_text gave invalid UTF-8");
        if (attn::is_valid_utf8(rest) && text != rest) attn::fuzz::finding("byte_level_text changed valid UTF-8");
      }
    }
  });
}
