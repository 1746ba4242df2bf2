// A labelled training file (attn train --data / --val-data): JSON Lines or TSV, then items against
// the vocabulary it grows, as attn train builds them.
#include "core/train/train_data.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string content(reinterpret_cast<const char*>(data), size);
  for (const char* path : {"data.jsonl", "data.tsv"})
    attn::fuzz::guarded([&] {
      const auto lines = attn::train::parse_data(path, content);
      attn::Vocab vocab;
      attn::train::add_words(vocab, lines);
      const auto items = attn::train::make_items(path, lines, {&vocab, vocab.size() + 4, 64});
      attn::train::check_labels(items, 1 + attn::train::class_count(items) % 7);
    });
  return 0;
}
