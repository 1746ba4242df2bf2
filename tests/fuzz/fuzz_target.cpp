#include "tests/fuzz/fuzz_target.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attn::fuzz {

void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::abort();
}

std::string as_file(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("attn-fuzz-" + std::to_string(getpid()) + suffix)).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!out.flush()) finding("cannot write " + path);
  return path;
}

bool same_tensors(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor &x = a[i].value, &y = b[i].value;
    if (a[i].name != b[i].name || x.shape() != y.shape()) return false;
    if (x.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace attn::fuzz
