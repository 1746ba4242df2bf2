// One attn batch input line, as text and as JSON Lines, made into an item against a small vocabulary
// and embedding table. A bad line carries its reason in RawItem::error or throws InputError.
#include "core/batch/batch.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const attn::Vocab vocab({"[PAD]", "[UNK]", "나는", "학교에", "간다"});
  for (attn::batch::InputFormat format : {attn::batch::InputFormat::text, attn::batch::InputFormat::jsonl})
    attn::fuzz::guarded([&] {
      std::string line = text;
      attn::batch::strip_line(line, 1);
      attn::batch::RawItem raw = attn::batch::parse_line(line, format);
      if (raw.error.empty()) attn::batch::make_item(std::move(raw), 1, {&vocab, 8, 16});
    });
  return 0;
}
