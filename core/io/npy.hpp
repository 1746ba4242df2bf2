// NumPy .npy arrays, for exchanging tensors with Python (numpy.load / numpy.save).
#pragma once
#include <string>

#include "core/base/tensor.hpp"

namespace attn {

// Writes `t` as '<f4', C order, format 1.0: byte for byte what numpy.save writes for the same
// float32 array. Atomic: `path` is either replaced whole or left untouched.
void write_npy(const std::string& path, const Tensor& t);

// Reads a C-order '<f4' array, or '<f8' rounded to float32, or integers and bools as floats ('<i8',
// '<i4', '|u1', '|b1'; exact up to 2^24). Anything else is an InputError naming
// the file and the problem.
Tensor read_npy(const std::string& path);

}  // namespace attn
