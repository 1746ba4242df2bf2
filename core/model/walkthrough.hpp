// `attn tutorial`'s text: the first tutorial's script output, section by section, with the numbers
// formatted as PyTorch prints them (without autograd's grad_fn suffixes).
#pragma once
#include <string>

#include "core/model/tutorial.hpp"

namespace attn {

std::string tutorial_walkthrough(const TutorialRun& run);

}  // namespace attn
