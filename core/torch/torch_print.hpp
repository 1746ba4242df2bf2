// PyTorch 1.13's `print(tensor)` text (torch/_tensor_str.py with the default print options:
// precision 4, threshold 1000, edgeitems 3, linewidth 80), so the walkthrough prints what PyTorch
// prints. No grad_fn suffix: the engine has no autograd.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace attn {

enum class PrintDtype { float32, int64, boolean };

// "tensor([[...]])" for a row-major tensor; `values` holds the elements exactly (float32 widened to
// double, int64 ids, 0/1 for bool).
std::string torch_repr(const std::vector<size_t>& shape, const std::vector<double>& values, PrintDtype dtype);
// "torch.Size([4, 4, 6])"
std::string torch_size_repr(const std::vector<size_t>& shape);
// Python's repr of a list of str, e.g. ['나는', '오늘'].
std::string python_list_repr(const std::vector<std::string>& items);

}  // namespace attn
