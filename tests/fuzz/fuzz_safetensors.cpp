// A weights file (attn encode/batch/train --weights, the playground's Model files…, checkpoints), read
// widened to float32 and read keeping half precision (a decoder's, through a memory map): the same tensors.
#include "core/io/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    std::map<std::string, std::string> metadata;
    const std::vector<attn::NamedTensor> tensors = attn::read_safetensors(path, &metadata);
    std::vector<attn::NamedTensor> widened;
    for (const attn::NamedWeight& w : attn::read_safetensors_weights(path)) widened.push_back({w.name, w.value.widened()});
    if (!attn::fuzz::same_tensors(tensors, widened)) attn::fuzz::finding("the half-keeping reader disagrees");
  });
}
