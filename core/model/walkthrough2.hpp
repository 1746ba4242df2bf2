// `attn tutorial --part 2`: the second tutorial's script (docs/tutorials.md) after
// torch.manual_seed(seed), sections [1]-[10] and its closing summary. It prints what the script prints
// (its Korean restored) and, after each section's shapes, the numbers behind them in PyTorch's print
// format; the pictures the script saves with matplotlib become a note, and [9]'s a text table.
#pragma once
#include <cstdint>
#include <string>

#include "core/base/json.hpp"

namespace attn {

std::string tutorial2_walkthrough(uint64_t seed);
// {"seed", "sections": [{"title", "stages": [{"name", "shape", "data"}...]}...]}: the tensors each
// section computes or shows, as in `attn tutorial --json` (docs/cli.md).
Json tutorial2_json(uint64_t seed);

}  // namespace attn
