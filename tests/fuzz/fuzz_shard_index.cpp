// A sharded checkpoint's model.safetensors.index.json (core/io/safetensors_index.hpp): any bytes are read
// as the index's text, which either names its shards or is an InputError.
#include "core/io/safetensors_index.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return attn::fuzz::guarded([&] {
    attn::parse_shard_index(std::string(reinterpret_cast<const char*>(data), size), "model.safetensors.index.json");
  });
}
