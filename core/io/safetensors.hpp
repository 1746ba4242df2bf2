// Weights in the safetensors format (PyTorch / Hugging Face): an 8-byte little-endian header length
// N, N bytes of UTF-8 JSON {name: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}},
// then the tensors' bytes. Every rule of the format is checked before anything is allocated; a
// broken file gives an InputError naming the file, the tensor and the rule.
#pragma once
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/base/tensor.hpp"
#include "core/base/weight.hpp"

namespace attn {

struct NamedTensor {
  std::string name;
  Tensor value;
};

// Told while tensor data is read: bytes read so far, and in all (called from the reading thread, at least
// every 8 MiB and once at the end). It may throw to cancel the read.
using ReadProgress = std::function<void(uint64_t read, uint64_t total)>;

// Reads F32, F16, BF16 and F64 tensors as float32 (the conversions PyTorch's `.float()` does), in
// the order of their data in the file. Other dtypes are refused, unless `skipped` is given: then
// their tensors (integer buffers such as BERT's position_ids) are checked but not read, and named
// there. `metadata`, when given, receives the header's __metadata__ strings.
std::vector<NamedTensor> read_safetensors(const std::string& path,
                                          std::map<std::string, std::string>* metadata = nullptr,
                                          std::vector<std::string>* skipped = nullptr,
                                          const ReadProgress& progress = nullptr);

struct NamedWeight {
  std::string name;
  Weight value;
};

// The same tensors, F16 and BF16 ones kept in half precision: natively in a read-only memory map of the
// file (its pages read by the OS when a product first touches them; the file must not change while the
// model is open), in WebAssembly in a buffer read from it. F32 and F64 ones are float32 Tensors.
std::vector<NamedWeight> read_safetensors_weights(const std::string& path, std::vector<std::string>* skipped = nullptr,
                                                  const ReadProgress& progress = nullptr);

// Writes F32 tensors, data in the given order, the header padded with spaces to a multiple of 8
// bytes. Atomic: `path` is either replaced whole or left untouched.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The same with weights as stored: float32 ones as F32, half-precision ones as BF16 or F16.
void write_safetensors_weights(const std::string& path, const std::vector<NamedWeight>& weights,
                               const std::map<std::string, std::string>& metadata = {});
// The same file's bytes (a browser download); `name` names it in messages.
std::string safetensors_bytes(const std::string& name, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// Runs `write` on a temporary file next to `path`, then renames it over `path`; on any failure the
// temporary file is removed and an InputError names `path`. (Shared with the .npy writer.)
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace attn
