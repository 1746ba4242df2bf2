#include "core/io/npy.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "core/base/error.hpp"
#include "core/base/memory.hpp"
#include "core/io/safetensors.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "'<f4' data is little-endian; so must the host be");

namespace attn {
namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr size_t magic_size = sizeof magic - 1;
constexpr size_t array_align = 64;  // numpy aligns the data for memory mapping

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw InputError("npy file '" + path + "': " + problem);
}

// Python's repr of a shape tuple: (), (5,), (2, 3).
std::string shape_repr(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Magic, version 1.0, header length and header as numpy.lib.format writes them: the dict's keys
// sorted, spare spaces so the first axis can grow in place (21 digits), then spaces and '\n' up to
// the alignment of the data.
std::string header_bytes(const std::string& path, const Shape& shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
  if (!shape.empty()) dict.append(21 - std::to_string(shape[0]).size(), ' ');
  const size_t prefix = magic_size + 2 + 2, padding = array_align - (prefix + dict.size() + 1) % array_align;
  const size_t length = dict.size() + padding + 1;
  if (length > UINT16_MAX)
    fail(path, "cannot write: " + std::to_string(shape.size()) + " dimensions do not fit format 1.0");
  const char version_and_length[] = {1, 0, char(length & 0xFF), char(length >> 8)};
  return magic + std::string(version_and_length, 4) + dict + std::string(padding, ' ') + "\n";
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Reads the header's Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string text) : path_(path), text_(std::move(text)) {}

  Header parse() {
    Header header;
    std::set<std::string> seen;
    expect('{');
    while (!accept('}')) {
      const std::string key = string();
      if (!seen.insert(key).second) error("duplicate key '" + key + "'");
      expect(':');
      if (key == "descr")
        header.descr = string();
      else if (key == "fortran_order")
        header.fortran_order = boolean();
      else if (key == "shape")
        header.shape = tuple();
      else
        error("unexpected key '" + key + "'");
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    if (seen.size() != 3) error("the keys 'descr', 'fortran_order' and 'shape' are all required");
    skip_space();
    if (pos_ != text_.size()) error("text after the dict");
    return header;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail(path_, "malformed header: " + what + " (at header byte " + std::to_string(pos_) + ")");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ == text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "'");
  }
  // A quoted string without escapes (numpy never writes any in these keys and values).
  std::string string() {
    skip_space();
    const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    const size_t close = quote == '\'' || quote == '"' ? text_.find(quote, pos_ + 1) : std::string::npos;
    if (close == std::string::npos) error("expected a quoted string");
    std::string value = text_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const bool value : {true, false}) {
      const std::string word = value ? "True" : "False";
      if (text_.compare(pos_, word.size(), word) != 0) continue;
      pos_ += word.size();
      return value;
    }
    error("expected True or False");
  }
  size_t integer() {
    skip_space();
    const size_t start = pos_;
    size_t value = 0;
    for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_)
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, size_t(text_[pos_] - '0'), &value))
        error("dimension too large");
    if (pos_ == start) error("expected a non-negative integer");
    return value;
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (!accept(')')) {
      shape.push_back(integer());
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  const std::string& path_;
  const std::string text_;
  size_t pos_ = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open it");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Parses the header; returns it and where the data starts. Format 2.0 and 3.0 differ from 1.0 only
// in a 4-byte header length.
std::pair<Header, size_t> parse_header(const std::string& path, const std::string& bytes) {
  if (bytes.compare(0, magic_size, magic) != 0) fail(path, "bad magic: not a .npy file");
  const int major = bytes.size() > magic_size ? uint8_t(bytes[magic_size]) : 0;
  if (major < 1 || major > 3) fail(path, "format version " + std::to_string(major) + " is not supported");
  const size_t length_size = major == 1 ? 2 : 4, header_start = magic_size + 2 + length_size;
  if (bytes.size() < header_start) fail(path, "truncated header");
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + magic_size + 2, length_size);
  if (length > bytes.size() - header_start) fail(path, "truncated header");
  return {HeaderParser(path, bytes.substr(header_start, length)).parse(), header_start + length};
}

// Copies little-endian values into `t` (memcpy: the data need not be aligned).
template <class Raw>
void copy_as_float(const char* src, Tensor& t) {
  for (size_t i = 0; i < t.size(); ++i) {
    Raw raw;
    std::memcpy(&raw, src + i * sizeof raw, sizeof raw);
    t.data()[i] = static_cast<float>(raw);  // '<f8': round to nearest even, as numpy's astype does
  }
}

}  // namespace

void write_npy(const std::string& path, const Tensor& t) {
  const std::string header = header_bytes(path, Shape(t.shape().begin(), t.shape().end()));
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(t.data()),
              static_cast<std::streamsize>(t.size() * sizeof(float)));
  });
}

Tensor read_npy(const std::string& path) {
  const std::string bytes = read_file(path);
  const auto [header, data_start] = parse_header(path, bytes);
  if (header.fortran_order) fail(path, "fortran_order is True; only C-order arrays are supported");
  // Integer and bool arrays (PyTorch's token ids, masks) come as floats, exact up to 2^24.
  using Copy = void (*)(const char*, Tensor&);
  static const std::pair<const char*, std::pair<size_t, Copy>> dtypes[] = {
      {"<f4", {4, copy_as_float<float>}},  {"<f8", {8, copy_as_float<double>}}, {"<i8", {8, copy_as_float<int64_t>}},
      {"<i4", {4, copy_as_float<int32_t>}}, {"|u1", {1, copy_as_float<uint8_t>}}, {"|b1", {1, copy_as_float<uint8_t>}}};
  size_t item_size = 0;
  Copy copy = nullptr;
  for (const auto& [descr, kind] : dtypes)
    if (header.descr == descr) std::tie(item_size, copy) = kind;
  if (item_size == 0)
    fail(path, "dtype '" + header.descr + "' is not supported ('<f4', '<f8', '<i8', '<i4', '|u1' and '|b1' are)");
  size_t needed = item_size;
  for (size_t dim : header.shape)
    if (__builtin_mul_overflow(needed, dim, &needed))
      fail(path, "shape " + shape_repr(header.shape) + " is too large");
  if (!strides_fit(header.shape))
    fail(path, "shape " + shape_repr(header.shape) + " is too large to index: the product of its non-zero dimensions overflows");
  const size_t present = bytes.size() - data_start;
  if (present != needed)
    fail(path, "shape " + shape_repr(header.shape) + " needs " + std::to_string(needed) +
                   " bytes of data, the file has " + std::to_string(present) +
                   (present < needed ? " (truncated)" : " (trailing bytes)"));
  Tensor t = Tensor::from_shape(header.shape);
  copy(bytes.data() + data_start, t);
  return t;
}

}  // namespace attn
