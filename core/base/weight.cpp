#include "core/base/weight.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace attn {

Weight::Weight(Tensor values)
    : shape_(values.shape().begin(), values.shape().end()), values_(std::make_shared<Tensor>(std::move(values))) {}

Weight::Weight(HalfType type, Shape shape, std::shared_ptr<const uint16_t> bits)
    : shape_(std::move(shape)), half_(true), type_(type), bits_(std::move(bits)) {}

size_t Weight::size() const {
  size_t n = 1;
  for (size_t d : shape_) n *= d;
  return n;
}

const Tensor& Weight::values() const {
  if (half() || !values_) throw std::logic_error("a weight's float32 values were asked for: it has none (widen it)");
  return *values_;
}

Tensor Weight::into_values() && {
  values();  // refuses a half weight
  if (values_.use_count() > 1) return *values_;
  return std::move(*values_);
}

Tensor Weight::widened() const {
  if (!half()) return values();
  Tensor out = Tensor::from_shape(shape_);
  std::transform(bits(), bits() + size(), out.data(), [this](uint16_t h) { return from_half(type_, h); });
  return out;
}

void Weight::widen_rows(size_t first, size_t count, float* out) const {
  const size_t width = shape_.empty() ? 0 : size() / shape_[0];
  if (!half()) {
    std::copy_n(values().data() + first * width, count * width, out);
    return;
  }
  const uint16_t* from = bits() + first * width;
  std::transform(from, from + count * width, out, [this](uint16_t h) { return from_half(type_, h); });
}

Weight Weight::rows(const std::vector<size_t>& rows) const {
  const size_t width = size() / shape_.at(0);
  Shape shape = shape_;
  shape[0] = rows.size();
  if (!half()) {
    Tensor out = Tensor::from_shape(shape);
    for (size_t i = 0; i < rows.size(); ++i) std::copy_n(values().data() + rows[i] * width, width, out.data() + i * width);
    return out;
  }
  auto out = std::make_shared<std::vector<uint16_t>>(rows.size() * width);
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(bits() + rows[i] * width, width, out->data() + i * width);
  return Weight(type_, shape, std::shared_ptr<const uint16_t>(out, out->data()));
}

const void* Weight::data() const { return half() ? static_cast<const void*>(bits()) : values().data(); }

size_t Weight::bytes() const { return size() * (half() ? sizeof(uint16_t) : sizeof(float)); }

}  // namespace attn
