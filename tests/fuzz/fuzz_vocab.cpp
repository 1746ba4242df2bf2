// A vocabulary file (--vocab, the playground's Model files…), then a sentence tokenized with it.
#include "core/text/tokenizer.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".json");
  return attn::fuzz::guarded([&] {
    attn::Vocab vocab = attn::read_vocab_file(path);
    attn::tokenize_batch({"나는 학교에 간다", "[PAD] a b"}, vocab, false);
  });
}
