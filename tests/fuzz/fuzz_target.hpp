// What every fuzz target checks, under libFuzzer (scripts/fuzz.sh) and in its replay over the committed
// corpus (ctest, any compiler): an input is taken or refused with the project's InputError and a
// message. Any other exception, an empty message, a crash or a sanitizer report is a finding: abort,
// so that libFuzzer keeps the input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"

namespace attn::fuzz {

[[noreturn]] void finding(const std::string& what);

template <class F>
int guarded(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    if (std::string(e.what()).empty()) finding("an InputError without a message");
  } catch (const std::exception& e) {
    finding(std::string("not an InputError: ") + e.what());
  }
  return 0;
}

// The input as a file of this process's own (the readers take paths, as the CLI gives them), replaced
// on each call; `suffix` picks the format where the name decides it.
std::string as_file(const uint8_t* data, size_t size, const std::string& suffix);

// Same names, shapes and bits, in the same order (the round-trip targets).
bool same_tensors(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b);

}  // namespace attn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
