// The playground's Model files…: files a user picks, sorted into their roles by name and content,
// then read and checked. The input holds several files, each "NAME\n" then its bytes, separated by
// "\n--8<--\n"; they are written into a folder of their own (names reduced to safe letters).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "tests/fuzz/fuzz_target.hpp"
#include "ui/model_files.hpp"

namespace {

namespace fs = std::filesystem;

std::string safe_name(const std::string& name, size_t index) {
  std::string safe;
  for (char c : name.substr(0, 40))
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') safe += c;
  if (safe.empty() || safe == "." || safe == "..") safe = "file";
  return std::to_string(index) + "-" + safe;  // two files of one name stay two
}

std::vector<std::string> write_files(const std::string& input) {
  const fs::path folder = fs::temp_directory_path() / ("attn-fuzz-model-files-" + std::to_string(::getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  static const std::string separator = "\n--8<--\n";
  std::vector<std::string> paths;
  for (size_t start = 0; start <= input.size() && paths.size() < 8;) {
    size_t end = input.find(separator, start);
    if (end == std::string::npos) end = input.size();
    const std::string part = input.substr(start, end - start);
    const size_t newline = std::min(part.find('\n'), part.size());
    const fs::path path = folder / safe_name(part.substr(0, newline), paths.size());
    std::ofstream(path, std::ios::binary) << part.substr(std::min(newline + 1, part.size()));
    paths.push_back(path.string());
    start = end + separator.size();
  }
  return paths;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> paths = write_files(std::string(reinterpret_cast<const char*>(data), size));
  return attn::fuzz::guarded([&] { attn::ui::load_model(attn::ui::sort_model_files(paths)); });
}
