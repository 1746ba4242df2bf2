// A weight as a checkpoint stores it: float32 values (a Tensor), or bfloat16 / float16 bits kept as they
// are (natively in the file's memory map), widened to float32 where a product packs them
// (core/kernels) or a row is read: a half-precision model takes the file's memory, not twice it. Weights
// do not change: copies share the values (a tied LM head is the embedding, not a copy of it).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/half.hpp"
#include "core/base/tensor.hpp"

namespace attn {

class Weight {
 public:
  Weight() = default;
  Weight(Tensor values);  // float32 (implicit: every Tensor is a float32 weight)
  // `bits` holds size(shape) values; the pointer's owner (a buffer, a file mapping) lives as long as it.
  Weight(HalfType type, Shape shape, std::shared_ptr<const uint16_t> bits);

  const Shape& shape() const { return shape_; }
  size_t shape(size_t i) const { return shape_.at(i); }
  size_t dimension() const { return shape_.size(); }
  size_t size() const;
  bool half() const { return half_; }
  HalfType half_type() const { return type_; }
  const uint16_t* bits() const { return bits_.get(); }
  // The float32 values; only for a float32 weight (a half one is widened: widened(), widen_rows()).
  const Tensor& values() const;
  Tensor widened() const;  // the values as float32, a copy for a half weight
  Tensor into_values() &&;  // a float32 weight's values, moved out
  // Rows first … first + count − 1 of a matrix (its first dimension indexing rows) as float32 into out.
  void widen_rows(size_t first, size_t count, float* out) const;
  // A matrix of the given rows, in that order, stored as this one is (a copy).
  Weight rows(const std::vector<size_t>& rows) const;
  // The stored bytes (a weight's identity, as batch runs hash it).
  const void* data() const;
  size_t bytes() const;

 private:
  Shape shape_;
  std::shared_ptr<Tensor> values_;
  bool half_ = false;
  HalfType type_ = HalfType::bf16;
  std::shared_ptr<const uint16_t> bits_;  // null for an empty half tensor read into an empty buffer
};

}  // namespace attn
