// A .npy array (attn encode --save-npy's format, read back by the tests and by users' tools).
#include "core/io/npy.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".npy");
  return attn::fuzz::guarded([&] { attn::read_npy(path); });
}
