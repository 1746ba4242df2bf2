// A language model's data file (attn train --data with a GPT-2 model): JSON Lines {"text"|"ids"} or a
// text, its character vocabulary, then the windows of tokens attn train learns from, and the
// vocabulary's files read back.
#include "core/text/utf8.hpp"
#include "core/train/train_lm.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string content(reinterpret_cast<const char*>(data), size);
  for (const char* path : {"data.jsonl", "data.txt"})
    attn::fuzz::guarded([&] {
      const auto lines = attn::train::parse_lm_data(path, content);
      const std::string text = attn::train::lm_text(lines);
      const attn::BytePairTokenizer chars = attn::character_tokenizer(text.empty() ? "a" : text);
      const auto items = attn::train::lm_items(path, lines, chars, 2 + size % 30, chars.size());
      attn::train::lm_batch(items, {0, items.size() - 1});
      // Each character is one token (and "<|endoftext|>" one, GPT-2's special token), and the vocabulary's
      // tokens and merges rebuild the same tokenizer.
      const auto ids = chars.encode(text).ids;
      size_t expected = 0;
      for (const auto& [piece, special] : attn::split_specials(text, {"<|endoftext|>"}))
        expected += special ? 1 : attn::utf8::decode(piece, "text").size();
      if (ids.size() != expected) __builtin_trap();
      if (attn::BytePairTokenizer(chars.tokens(), chars.merges()).encode(text).ids != ids) __builtin_trap();
    });
  return 0;
}
