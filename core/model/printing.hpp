// What the tutorial walkthroughs share to print like their scripts: a line buffer with PyTorch's
// tensor format, rules, and tensor slicing along the first axis.
#pragma once
#include <algorithm>
#include <sstream>
#include <string>

#include "core/model/trace.hpp"

namespace attn {

inline std::string rule(char c, size_t width = 70) { return std::string(width, c); }

inline Shape shape_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end()); }

// x[index] for the first axis of a [B, ...] tensor.
inline Tensor select(const Tensor& x, size_t index) {
  Shape shape = shape_of(x);
  shape.erase(shape.begin());
  Tensor out = Tensor::from_shape(shape);
  std::copy_n(x.data() + index * out.size(), out.size(), out.data());
  return out;
}

class Printer {
 public:
  void line(const std::string& text = "") { out_ << text << '\n'; }
  void tensor(const std::string& label, const Tensor& t, PrintDtype dtype = PrintDtype::float32) {
    line(label);
    line(torch_repr(t, dtype));
  }
  // print("\n<label> shape:"); print(t.shape)
  void shape(const std::string& label, const Tensor& t) {
    line("\n" + label);
    line(torch_size_repr(shape_of(t)));
  }
  void header(char c, const std::string& title, bool leading_newline = true) {
    line((leading_newline ? "\n" : "") + rule(c));
    line(title);
    line(rule(c));
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

}  // namespace attn
