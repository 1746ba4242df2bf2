// Whatever reads as safetensors writes back (as F32) and reads again to the same names, shapes, bits
// and metadata.
#include <cstring>

#include "core/io/safetensors.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

bool same(const std::vector<attn::NamedTensor>& a, const std::vector<attn::NamedTensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const attn::Tensor &x = a[i].value, &y = b[i].value;
    if (a[i].name != b[i].name || x.shape() != y.shape()) return false;
    if (x.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    std::map<std::string, std::string> metadata, again_metadata;
    const auto tensors = attn::read_safetensors(path, &metadata);
    const std::string copy = path + ".copy.safetensors";
    attn::write_safetensors(copy, tensors, metadata);
    const auto again = attn::read_safetensors(copy, &again_metadata);
    if (!same(tensors, again) || metadata != again_metadata) attn::fuzz::finding("the round trip changed the file");
  });
}
