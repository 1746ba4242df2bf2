// An attn batch manifest (OUTPUT.manifest.json), which attn merge and --resume read to tell which
// run made an output.
#include "native/batch_io.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string suffix = ".manifest.json";
  const std::string path = attn::fuzz::as_file(data, size, ".out.jsonl" + suffix);
  return attn::fuzz::guarded([&] { attn::cli::batch_io::read_manifest(path.substr(0, path.size() - suffix.size())); });
}
