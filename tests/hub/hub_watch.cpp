// tests/hub_check.py's helper for attn-gui's Hub client: native/hub.cpp's snapshot() with the Watch the
// playground's Cancel button drives (native/gui/hub_download.cpp), which here cancels once a file has
// `cancel_after` bytes.
//   attn_hub_watch NAME[@REVISION] CANCEL_AFTER        (HF_ENDPOINT, HF_HUB_CACHE, … from the environment)
// Prints "done: FOLDER" (exit 0), or "cancelled: MESSAGE" (exit 3); then "FILE BYTES" for each file watched.
#include <cstdio>
#include <map>
#include <string>

#include "core/base/error.hpp"
#include "native/hub.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attn_hub_watch NAME[@REVISION] CANCEL_AFTER\n");
    return 2;
  }
  const uint64_t cancel_after = std::stoull(argv[2]);
  std::map<std::string, uint64_t> seen;
  int status = 0;
  try {
    const auto ref = attn::hub::parse_reference(argv[1]);
    const std::string folder = attn::hub::snapshot(ref, attn::hub::settings_from_environment(), true,
                                                   [&](const std::string& file, uint64_t done, uint64_t) {
                                                     seen[file] = done;
                                                     return done < cancel_after;
                                                   });
    std::printf("done: %s\n", folder.c_str());
  } catch (const attn::InputError& e) {
    std::printf("cancelled: %s\n", e.what());
    status = 3;
  }
  for (const auto& [file, bytes] : seen) std::printf("%s %llu\n", file.c_str(), static_cast<unsigned long long>(bytes));
  return status;
}
