// Whatever reads as safetensors writes back (as F32) and reads again to the same names, shapes, bits
// and metadata.
#include "core/io/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    std::map<std::string, std::string> metadata, again_metadata;
    const auto tensors = attn::read_safetensors(path, &metadata);
    const std::string copy = path + ".copy.safetensors";
    attn::write_safetensors(copy, tensors, metadata);
    const auto again = attn::read_safetensors(copy, &again_metadata);
    if (!attn::fuzz::same_tensors(tensors, again) || metadata != again_metadata) attn::fuzz::finding("the round trip changed the file");
  });
}
