// A sentences file (--sentences-file): UTF-8, BOM, CRLF, blank lines; then tokenized, growing a vocabulary.
#include "core/text/tokenizer.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".txt");
  return attn::fuzz::guarded([&] {
    attn::Vocab vocab;
    attn::tokenize_batch(attn::read_sentences_file(path), vocab, true);
  });
}
