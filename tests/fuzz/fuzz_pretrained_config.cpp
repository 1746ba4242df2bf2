// A Hugging Face config.json (attn encode --model-dir, the playground's Model files…): JSON, the family,
// sizes and options, then the weights' names and shapes it implies, checked against an empty file.
#include "core/model/pretrained_files.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".json");
  return attn::fuzz::guarded([&] {
    const attn::PretrainedConfig config = attn::read_pretrained_config(path);
    // Sizes beyond what a file could hold are only listed as missing: nothing is allocated for them.
    attn::load_pretrained(config, {}, "model.safetensors");
  });
}
