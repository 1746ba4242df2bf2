// tokenizer.json (the Llama family's tokenizer, attn encode --model-dir): an input starting with '{'
// is the file itself, read and then used on fixed sentences; any other input is a sentence for two
// small files made here (Llama 3's byte-level Split, Llama 2's ▁ with byte fallback). Every id encode
// gives must decode, and a byte-level tokenizer must give valid UTF-8 back.
#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_json.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

const char* const sentences[] = {"The cat's toys, 3.14 — 고양이가 잔다 中文 👋", "  \t\n\n 12345", "<s>x</s>"};

const char* const llama3 = R"({"added_tokens": [{"id": 4, "content": "<|begin_of_text|>", "special": true}],
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>"}}, {"Sequence": {"id": "A"}}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "ignore_merges": true, "byte_fallback": true, "unk_token": "Ġ",
            "vocab": {"t": 0, "h": 1, "th": 2, "Ġ": 3}, "merges": [["t", "h"]]}})";

const char* const llama2 = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Prepend", "prepend": "▁"},
                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
              {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>",
            "vocab": {"<unk>": 0, "<s>": 1, "▁": 2, "a": 3, "▁a": 4, "<0xC3>": 5}, "merges": ["▁ a"]}})";

void use(const attn::JsonTokenizer& t, const std::string& text, bool byte_level) {
  const std::vector<int64_t> ids = t.encode(text).ids;
  const std::string decoded = t.decode(ids);  // an id outside the vocabulary would throw
  if (byte_level && !attn::is_valid_utf8(decoded)) attn::fuzz::finding("decode gave invalid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  return attn::fuzz::guarded([&] {
    if (!input.empty() && input[0] == '{') {
      const auto t = attn::JsonTokenizer::from_text(input, "tokenizer.json");
      for (const char* s : sentences) use(t, s, false);
      return;
    }
    use(attn::JsonTokenizer::from_text(llama3, "llama3.json"), input, true);
    use(attn::JsonTokenizer::from_text(llama2, "llama2.json"), input, false);
  });
}
