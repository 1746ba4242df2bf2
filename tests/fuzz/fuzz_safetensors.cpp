// A weights file (attn encode/batch/train --weights, the playground's Model files…, checkpoints).
#include "core/io/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    std::map<std::string, std::string> metadata;
    attn::read_safetensors(path, &metadata);
  });
}
