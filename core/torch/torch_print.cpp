// A transcription of torch/_tensor_str.py (PyTorch 1.13) for strided CPU tensors of the default
// dtypes, with the default print options. Names follow the Python functions they mirror.
#include "core/torch/torch_print.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace attn {
namespace {

constexpr int kPrecision = 4;
constexpr size_t kThreshold = 1000;
constexpr size_t kEdgeItems = 3;
constexpr size_t kLineWidth = 80;
constexpr char kPrefix[] = "tensor(";
constexpr size_t kIndent = sizeof kPrefix - 1;
// Marks the "..." position in a summarized dimension's list of shown indices.
constexpr size_t kEllipsis = std::numeric_limits<size_t>::max();

// "{:.Nf}" / "{:.Ne}" of a double. printf rounds the exact binary value half-to-even as Python
// does, but Python spells NaN "nan" whatever its sign bit (printf may write "-nan").
std::string format_float(const char* spec, int precision, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, precision, v);
  return buf;
}

std::string fixed(double v) { return format_float("%.*f", kPrecision, v); }
std::string sci(double v) { return format_float("%.*e", kPrecision, v); }  // 2-digit exponents, as Python
std::string fixed0(double v) { return format_float("%.*f", 0, v); }

std::string int_str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// _Formatter: picks int/sci/fixed mode and the common element width from the values shown.
class Formatter {
 public:
  Formatter(const std::vector<double>& shown, PrintDtype dtype) : dtype_(dtype) {
    if (dtype_ == PrintDtype::float32) {
      init_float(shown);
    } else {
      for (double v : shown) max_width_ = std::max(max_width_, plain(v).size());
    }
  }

  size_t width() const { return max_width_; }

  std::string format(double v) const {
    if (dtype_ != PrintDtype::float32) return pad_left(plain(v), max_width_);
    if (sci_mode_) return pad_left(sci(v), max_width_);
    if (!int_mode_) return pad_left(fixed(v), max_width_);
    // int mode marks floats with a trailing '.', but not nan/inf.
    std::string s = fixed0(v);
    if (std::isfinite(v)) s += '.';
    return pad_left(s, max_width_);
  }

 private:
  std::string plain(double v) const {
    if (dtype_ == PrintDtype::boolean) return v != 0 ? "True" : "False";
    return int_str(v);
  }

  // Only nonzero finite values decide the mode and width; zeros and nan/inf are padded to it
  // (or overflow it, e.g. "-0.0000e+00" among positive sci values).
  void init_float(const std::vector<double>& shown) {
    std::vector<double> vals;
    for (double v : shown) {
      if (std::isfinite(v) && v != 0) vals.push_back(v);
    }
    if (vals.empty()) return;
    double lo = std::abs(vals[0]), hi = lo;
    for (double v : vals) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      int_mode_ = int_mode_ && v == std::ceil(v);
    }
    // int mode ignores tiny minima: its nonzero values are at least 1.
    sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || (!int_mode_ && lo < 1.0e-4);
    for (double v : vals) max_width_ = std::max(max_width_, float_width(v));
  }

  size_t float_width(double v) const {
    if (sci_mode_) return sci(v).size();
    if (int_mode_) return fixed0(v).size() + 1;  // + 1 for the trailing '.'
    return fixed(v).size();
  }

  PrintDtype dtype_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t max_width_ = 1;
};

// Row-major tensor; `shown` lists the indices printed along one dimension, as _tensor_str's
// slicing and get_summarized_data pick them.
struct TensorView {
  const std::vector<size_t>& shape;
  const std::vector<double>& values;
  std::vector<size_t> strides;
  bool summarize;

  std::vector<size_t> shown(size_t dim) const {
    const size_t n = shape[dim];
    std::vector<size_t> idx;
    if (summarize && n > 2 * kEdgeItems) {
      for (size_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      idx.push_back(kEllipsis);
      for (size_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    } else {
      for (size_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }
};

std::vector<size_t> row_major_strides(const std::vector<size_t>& shape) {
  std::vector<size_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// get_summarized_data, flattened: the values the formatter may see.
void gather_shown(const TensorView& t, size_t dim, size_t offset, std::vector<double>& out) {
  if (dim == t.shape.size()) {
    out.push_back(t.values[offset]);
    return;
  }
  for (size_t i : t.shown(dim)) {
    if (i != kEllipsis) gather_shown(t, dim + 1, offset + i * t.strides[dim], out);
  }
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

// _vector_str: elements wrap at floor((linewidth - indent) / (width + 2)) per line.
std::string vector_str(const TensorView& t, size_t offset, size_t indent, const Formatter& f) {
  const size_t dim = t.shape.size() - 1;
  std::vector<std::string> data;
  for (size_t i : t.shown(dim)) {
    data.push_back(i == kEllipsis ? " ..." : f.format(t.values[offset + i]));
  }
  const size_t room = indent < kLineWidth ? kLineWidth - indent : 0;
  const size_t per_line = std::max<size_t>(1, room / (f.width() + 2));
  std::vector<std::string> lines;
  for (size_t i = 0; i < data.size(); i += per_line) {
    const size_t end = std::min(data.size(), i + per_line);
    lines.push_back(join(std::vector<std::string>(data.begin() + i, data.begin() + end), ", "));
  }
  return "[" + join(lines, ",\n" + std::string(indent + 1, ' ')) + "]";
}

// _tensor_str_with_formatter for dims >= 1: blocks of rank r are separated by r - 1 blank lines.
std::string tensor_str(const TensorView& t, size_t dim, size_t offset, size_t indent, const Formatter& f) {
  if (dim + 1 == t.shape.size()) return vector_str(t, offset, indent, f);
  std::vector<std::string> slices;
  for (size_t i : t.shown(dim)) {
    if (i == kEllipsis) {
      slices.push_back("...");
    } else {
      slices.push_back(tensor_str(t, dim + 1, offset + i * t.strides[dim], indent + 1, f));
    }
  }
  const size_t rank = t.shape.size() - dim;
  return "[" + join(slices, "," + std::string(rank - 1, '\n') + std::string(indent + 1, ' ')) + "]";
}

std::string join_dims(const std::vector<size_t>& shape) {
  std::vector<std::string> dims;
  for (size_t d : shape) dims.push_back(std::to_string(d));
  return join(dims, ", ");
}

std::string dtype_name(PrintDtype dtype) {
  switch (dtype) {
    case PrintDtype::float32: return "torch.float32";
    case PrintDtype::int64: return "torch.int64";
    case PrintDtype::boolean: return "torch.bool";
  }
  return "";
}

// _add_suffixes; its "last line length" is len - rfind('\n') + 1, which is len + 2 on one line.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, size_t indent) {
  const size_t nl = s.rfind('\n');
  size_t last_line_len = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line_len + suffix.size() + 2 > kLineWidth) {
      s += ",\n" + std::string(indent, ' ') + suffix;
      last_line_len = indent + suffix.size();
    } else {
      s += ", " + suffix;
      last_line_len += suffix.size() + 2;
    }
  }
  return s + ")";
}

// Empty tensors print "[]", plus the shape unless 1-D and the dtype unless float32.
std::string empty_repr(const std::vector<size_t>& shape, PrintDtype dtype) {
  std::vector<std::string> suffixes;
  if (shape.size() != 1) suffixes.push_back("size=(" + join_dims(shape) + ")");
  if (dtype != PrintDtype::float32) suffixes.push_back("dtype=" + dtype_name(dtype));
  return add_suffixes(std::string(kPrefix) + "[]", suffixes, kIndent);
}

// Appends code point `cp` to `out` as UTF-8.
void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the UTF-8 sequence at s[i], advancing i. A malformed byte decodes as itself (Latin-1),
// so nothing is dropped; tokenizer output is valid UTF-8 anyway.
uint32_t next_code_point(const std::string& s, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[k])); };
  const uint32_t b0 = byte(i);
  const size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  bool ok = len != 0 && i + len <= s.size();
  for (size_t k = 1; ok && k < len; ++k) ok = (byte(i + k) & 0xC0) == 0x80;
  if (!ok) {
    ++i;
    return b0;
  }
  uint32_t cp = len == 1 ? b0 : b0 & (0x7Fu >> len);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  i += len;
  return cp;
}

// Assigned code points Python's str.isprintable() rejects above U+007F (categories Cc, Cf, Cs,
// Co, Zl, Zp, Zs; Unicode 14 as in Python 3.11). Unassigned code points (Cn) are left as is.
bool is_printable(uint32_t cp) {
  static constexpr uint32_t kNonPrintable[][2] = {
      {0x80, 0xA0},       {0xAD, 0xAD},       {0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},
      {0x70F, 0x70F},     {0x890, 0x891},     {0x8E2, 0x8E2},     {0x1680, 0x1680},   {0x180E, 0x180E},
      {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x2064},   {0x2066, 0x206F},   {0x3000, 0x3000},
      {0xD800, 0xF8FF},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
      {0x13430, 0x13438}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
      {0xF0000, 0xFFFFD}, {0x100000, 0x10FFFD},
  };
  if (cp < 0x80) return cp >= 0x20 && cp != 0x7F;
  for (const auto& r : kNonPrintable) {
    if (cp >= r[0] && cp <= r[1]) return false;
  }
  return true;
}

// unicode_repr's escapes for one character.
std::string escape(uint32_t cp, char quote) {
  switch (cp) {
    case '\\': return "\\\\";
    case '\t': return "\\t";
    case '\n': return "\\n";
    case '\r': return "\\r";
    default: break;
  }
  std::string out;
  if (cp == static_cast<uint32_t>(quote)) {
    out = std::string("\\") + quote;
  } else if (is_printable(cp)) {
    append_utf8(cp, out);
  } else {
    char buf[16];
    const char* spec = cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x";
    std::snprintf(buf, sizeof buf, spec, static_cast<unsigned>(cp));
    out = buf;
  }
  return out;
}

// repr(str): single quotes unless the text has a ' and no ".
std::string python_str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) out += escape(next_code_point(s, i), quote);
  return out + quote;
}

}  // namespace

std::string torch_repr(const std::vector<size_t>& shape, const std::vector<double>& values, PrintDtype dtype) {
  if (values.empty()) return empty_repr(shape, dtype);
  const TensorView t{shape, values, row_major_strides(shape), values.size() > kThreshold};
  std::vector<double> shown;
  gather_shown(t, 0, 0, shown);
  const Formatter f(shown, dtype);
  const std::string body = shape.empty() ? f.format(values[0]) : tensor_str(t, 0, 0, kIndent, f);
  return std::string(kPrefix) + body + ")";
}

std::string torch_size_repr(const std::vector<size_t>& shape) { return "torch.Size([" + join_dims(shape) + "])"; }

std::string python_list_repr(const std::vector<std::string>& items) {
  std::vector<std::string> reprs;
  for (const std::string& s : items) reprs.push_back(python_str_repr(s));
  return "[" + join(reprs, ", ") + "]";
}

}  // namespace attn
