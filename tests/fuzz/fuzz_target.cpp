#include "tests/fuzz/fuzz_target.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

}  // namespace attn::fuzz
