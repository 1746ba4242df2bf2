// A trace document (attn diff's input: --json output, the playground's attnlab.trace()): read as a file,
// its stages taken or refused with a message; a document compared with itself is equal everywhere.
#include "core/model/trace_diff.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".json");
  return attn::fuzz::guarded([&] {
    const auto stages = attn::stages_from_json(attn::read_json_file(path, "trace document"), "the document");
    const attn::TraceDiff diff = attn::diff_traces(stages, stages, {});
    if (!diff.passed() || diff.first_differing || diff.compared != stages.size()) __builtin_trap();
  });
}
