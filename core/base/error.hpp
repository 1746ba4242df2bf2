// Errors a user can cause (bad sentences, flags, sizes): one exception type whose message names the
// problem; front ends show it (CLI: stderr + exit 2, GUI: a message).
#pragma once
#include <stdexcept>
#include <string>

namespace attn {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace attn
