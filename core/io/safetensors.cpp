#include "core/io/safetensors.hpp"

#include <fcntl.h>
#include <unistd.h>  // getpid, close
#if !defined(__EMSCRIPTEN__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "core/base/error.hpp"
#include "core/base/half.hpp"
#include "core/base/json.hpp"
#include "core/base/memory.hpp"
#include "core/text/tokenizer.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the format is little-endian; so must the host be");

namespace attn {
namespace {

using nlohmann::json;

constexpr uint64_t max_header_bytes = 100'000'000;  // the reference implementation's limit
constexpr const char* metadata_key = "__metadata__";

[[noreturn]] void fail(const std::string& path, const std::string& rule) {
  throw InputError("safetensors file '" + path + "': " + rule);
}

// The prefix of a message about one header entry.
std::string entry(const std::string& key) {
  return key == metadata_key ? std::string(metadata_key) + ": " : "tensor '" + key + "': ";
}

// Conversions to float32, bit for bit as PyTorch's `.float()` does them (core/base/half.hpp).
float from_f32(float f) { return f; }
float from_f64(double d) { return static_cast<float>(d); }  // round to nearest even, overflow to inf

// Converts `count` little-endian values (memcpy: the data need not be aligned).
template <class Raw, float (*convert)(Raw)>
void decode(const char* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    Raw raw;
    std::memcpy(&raw, src + i * sizeof raw, sizeof raw);
    dst[i] = convert(raw);
  }
}

struct Dtype {
  const char* name;
  uint64_t size;
  void (*decode)(const char*, float*, size_t);
};

constexpr Dtype supported_dtypes[] = {{"F32", 4, decode<float, from_f32>},
                                      {"F16", 2, decode<uint16_t, from_f16>},
                                      {"BF16", 2, decode<uint16_t, from_bf16>},
                                      {"F64", 8, decode<double, from_f64>}};
// The format's other dtypes: integers, booleans and 8-bit floats, of no use to the engine's weights
// (no decoder); checkpoints carry some as buffers (BERT's position_ids), which a reader may skip.
constexpr Dtype other_dtypes[] = {{"I64", 8, nullptr}, {"I32", 4, nullptr},  {"I16", 2, nullptr},
                                  {"I8", 1, nullptr},  {"U64", 8, nullptr},  {"U32", 4, nullptr},
                                  {"U16", 2, nullptr}, {"U8", 1, nullptr},   {"BOOL", 1, nullptr},
                                  {"F8_E5M2", 1, nullptr}, {"F8_E4M3", 1, nullptr}};

// One tensor of the header, checked on its own (its neighbours are checked by check_layout).
struct Entry {
  std::string name;
  const Dtype* dtype;
  std::vector<uint64_t> shape;  // not yet size_t, which has 32 bits in WebAssembly
  uint64_t begin, end;
};

// Parses the header JSON, refusing duplicate keys at any level: nlohmann would keep only one.
json parse_header(const std::string& path, const std::string& text) {
  std::vector<std::set<std::string>> open_objects;
  std::string top_key;  // the entry being parsed, to name it
  const json::parser_callback_t refuse_duplicates = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event != json::parse_event_t::key) return true;
    const auto& key = parsed.get_ref<const std::string&>();
    if (open_objects.size() == 1) top_key = key;
    if (!open_objects.back().insert(key).second)
      fail(path, open_objects.size() == 1 ? "duplicate tensor name '" + key + "'"
                                          : entry(top_key) + "duplicate key '" + key + "'");
    return true;
  };
  try {
    return json::parse(text, refuse_duplicates);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond a double's range
    fail(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
}

const Dtype& parse_dtype(const std::string& path, const std::string& name, const json& value, bool skip_others) {
  if (!value.is_string()) fail(path, entry(name) + "dtype must be a string");
  const auto& dtype = value.get_ref<const std::string&>();
  for (const auto& d : supported_dtypes)
    if (dtype == d.name) return d;
  for (const auto& d : other_dtypes)
    if (dtype == d.name) {
      if (skip_others) return d;
      fail(path, entry(name) + "dtype " + dtype + " is not supported for this engine (it reads F32, F16, BF16, F64)");
    }
  fail(path, entry(name) + "unknown dtype '" + dtype + "'");
}

// nlohmann parses integers in [0, 2^64) as unsigned and nothing else.
bool is_count(const json& value) { return value.is_number_unsigned(); }

std::vector<uint64_t> parse_shape(const std::string& path, const std::string& name, const json& value) {
  if (!value.is_array() || !std::all_of(value.begin(), value.end(), is_count))
    fail(path, entry(name) + "shape must be a list of non-negative integers, not " + value.dump());
  std::vector<uint64_t> shape;
  for (const json& dim : value) shape.push_back(json_integer<uint64_t>(dim, entry(name) + "shape"));
  return shape;
}

Entry parse_entry(const std::string& path, const std::string& name, const json& value, uint64_t data_size,
                  bool skip_others) {
  static const std::set<std::string> keys = {"dtype", "shape", "data_offsets"};
  if (!value.is_object()) fail(path, entry(name) + "entry is not an object");
  for (const auto& item : value.items())
    if (!keys.count(item.key())) fail(path, entry(name) + "unexpected key '" + item.key() + "'");
  for (const auto& key : keys)
    if (!value.contains(key)) fail(path, entry(name) + "missing key '" + key + "'");

  const Dtype& dtype = parse_dtype(path, name, value.at("dtype"), skip_others);
  Entry e{name, &dtype, parse_shape(path, name, value.at("shape")), 0, 0};
  const json& offsets = value.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !is_count(offsets[0]) || !is_count(offsets[1]))
    fail(path,
         entry(name) + "data_offsets must be two non-negative integers [begin, end], not " + offsets.dump());
  e.begin = json_integer<uint64_t>(offsets[0], entry(name) + "data_offsets");
  e.end = json_integer<uint64_t>(offsets[1], entry(name) + "data_offsets");
  if (e.begin > e.end) fail(path, entry(name) + "data_offsets " + offsets.dump() + ": begin is past end");
  uint64_t bytes = e.dtype->size;
  for (uint64_t dim : e.shape)
    if (__builtin_mul_overflow(bytes, dim, &bytes))
      fail(path, entry(name) + "shape " + value.at("shape").dump() +
                     " is too large: its byte size overflows 64 bits");
  if (bytes != e.end - e.begin)
    fail(path, entry(name) + "byte size " + std::to_string(bytes) + " of shape " + value.at("shape").dump() +
                   " " + e.dtype->name + " differs from data_offsets " + offsets.dump());
  if (e.end > data_size)
    fail(path, entry(name) + "data_offsets " + offsets.dump() + " are out of bounds: the data buffer has " +
                   std::to_string(data_size) + " bytes");
  if (!strides_fit(e.shape))
    fail(path, entry(name) + "shape " + value.at("shape").dump() + " is too large to index: the product of its " +
                   "non-zero dimensions overflows");
  return e;
}

void check_metadata(const std::string& path, const json& value) {
  if (!value.is_object() ||
      !std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); }))
    fail(path, std::string(metadata_key) + " must be an object of strings");
}

// Sorted by offset, the tensors must tile the data buffer: from byte 0, no overlaps, no holes, no
// trailing bytes. Zero-byte tensors sort before a tensor at their offset; ties keep name order.
void check_layout(const std::string& path, std::vector<Entry>& entries, uint64_t data_size) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  for (const auto& e : entries) {
    const std::string offsets =
        "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin < covered)
      fail(path, entry(e.name) + offsets + " overlap the data before them, which ends at byte " +
                     std::to_string(covered));
    if (e.begin > covered)
      fail(path, entry(e.name) + offsets + " leave a hole after byte " + std::to_string(covered) +
                     " (the tensors' data must be contiguous from byte 0)");
    covered = e.end;
  }
  if (covered != data_size)
    fail(path, "trailing bytes: the data buffer is " + std::to_string(data_size) +
                   " bytes, the tensors cover " + std::to_string(covered));
}

// The shape as size_t. Only in WebAssembly and only next to a zero can a dimension that passed the
// bounds and memory checks be past 32 bits.
Shape platform_shape(const std::string& path, const Entry& e) {
  Shape shape;
  for (uint64_t dim : e.shape) {
    if (static_cast<size_t>(dim) != dim)
      fail(path, entry(e.name) + "dimension " + std::to_string(dim) + " is too large for this platform");
    shape.push_back(static_cast<size_t>(dim));
  }
  return shape;
}

// Reads n bytes in pieces of at most 8 MiB, telling `progress` after each.
void read_in_pieces(const std::string& path, const Entry& e, std::ifstream& in, char* out, uint64_t n,
                    uint64_t& done, uint64_t total, const ReadProgress& progress) {
  constexpr uint64_t piece = uint64_t(8) << 20;
  for (uint64_t at = 0; at < n; at += piece) {
    const uint64_t size = std::min(piece, n - at);
    if (!in.read(out + at, static_cast<std::streamsize>(size)))
      fail(path, entry(e.name) + "could not read its data (was the file changed while reading?)");
    done += size;
    if (progress) progress(done, total);
  }
}

// F32 data is read straight into its tensor (the format is little-endian, as are the hosts this builds
// for); the other dtypes through a buffer, then converted.
bool read_directly(const Entry& e) { return e.dtype == &supported_dtypes[0]; }
bool is_half(const Entry& e) { return e.dtype == &supported_dtypes[1] || e.dtype == &supported_dtypes[2]; }
HalfType half_type(const Entry& e) { return e.dtype == &supported_dtypes[1] ? HalfType::f16 : HalfType::bf16; }

// The file's bytes mapped read-only (natively), for half-precision tensors to be used where they lie.
std::shared_ptr<const char> map_file(const std::string& path, uint64_t size) {
#if defined(__EMSCRIPTEN__)
  (void)path, (void)size;
  return nullptr;  // MEMFS would copy the file: the tensors are read into buffers instead
#else
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open it");
  void* at = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (at == MAP_FAILED) return nullptr;  // read into buffers instead
  return std::shared_ptr<const char>(static_cast<const char*>(at),
                                     [size](const char* p) { munmap(const_cast<char*>(p), static_cast<size_t>(size)); });
#endif
}

// A half-precision tensor's bits where they lie in the mapping (2-byte aligned there), else read.
Weight half_weight(const std::string& path, const Entry& e, std::ifstream& in, uint64_t data_start,
                   const std::shared_ptr<const char>& mapping, uint64_t& done, uint64_t total,
                   const ReadProgress& progress) {
  const uint64_t at = data_start + e.begin, n = e.end - e.begin;
  if (mapping && at % alignof(uint16_t) == 0) {
    in.seekg(static_cast<std::streamoff>(data_start + e.end));
    done += n;
    if (progress) progress(done, total);
    return Weight(half_type(e), platform_shape(path, e),
                  std::shared_ptr<const uint16_t>(mapping, reinterpret_cast<const uint16_t*>(mapping.get() + at)));
  }
  auto buffer = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n / 2));
  read_in_pieces(path, e, in, reinterpret_cast<char*>(buffer->data()), n, done, total, progress);
  return Weight(half_type(e), platform_shape(path, e), std::shared_ptr<const uint16_t>(buffer, buffer->data()));
}

// Reads the tensors, which follow one another from `data_start` once check_layout has passed; with
// `mapping`, F16 and BF16 ones stay half precision (half_weight).
std::vector<NamedWeight> read_data(const std::string& path, std::ifstream& in, uint64_t data_start,
                                   const std::vector<Entry>& entries, std::vector<std::string>* skipped,
                                   const ReadProgress& progress, bool keep_half, const std::shared_ptr<const char>& mapping) {
  // The float32 tensors (half-precision ones kept at two bytes a value) plus the buffer for the largest
  // one to convert (each tensor's size, checked here, also stays below 4 GiB in WebAssembly, so its
  // size_t below cannot wrap).
  double bytes = 0, largest_raw = 0;
  uint64_t total = 0, done = 0;
  for (const auto& e : entries) {
    if (!e.dtype->decode) continue;  // skipped
    const double raw = double(e.end - e.begin);
    total += e.end - e.begin;
    if (keep_half && is_half(e)) {
      bytes += raw;
      continue;
    }
    bytes += 4.0 * raw / double(e.dtype->size);
    if (!read_directly(e)) largest_raw = std::max(largest_raw, raw);
  }
  check_fits_in_memory(bytes + largest_raw, "reading '" + path + "'");
  if (progress) progress(0, total);
  in.seekg(static_cast<std::streamoff>(data_start));
  std::vector<NamedWeight> tensors;
  std::vector<char> raw;
  for (const auto& e : entries) {
    if (!e.dtype->decode) {
      skipped->push_back(e.name);
      in.seekg(static_cast<std::streamoff>(data_start + e.end));
      continue;
    }
    if (keep_half && is_half(e)) {
      tensors.push_back({e.name, half_weight(path, e, in, data_start, mapping, done, total, progress)});
      continue;
    }
    Tensor value = Tensor::from_shape(platform_shape(path, e));
    if (read_directly(e)) {
      read_in_pieces(path, e, in, reinterpret_cast<char*>(value.data()), e.end - e.begin, done, total, progress);
    } else {
      raw.resize(static_cast<size_t>(e.end - e.begin));
      read_in_pieces(path, e, in, raw.data(), e.end - e.begin, done, total, progress);
      e.dtype->decode(raw.data(), value.data(), value.size());
    }
    tensors.push_back({e.name, std::move(value)});
  }
  return tensors;
}

uint64_t read_header_length(const std::string& path, std::ifstream& in, uint64_t file_size) {
  if (file_size < 8) fail(path, "the file is " + std::to_string(file_size) + " bytes, shorter than 8 bytes");
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);
  if (!in) fail(path, "could not read the header length");
  if (length == 0) fail(path, "header length is 0");
  if (length > max_header_bytes)
    fail(path, "header length " + std::to_string(length) + " exceeds the limit of " +
                   std::to_string(max_header_bytes) + " bytes");
  if (length > file_size - 8)
    fail(path, "header length " + std::to_string(length) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)");
  return length;
}

}  // namespace

namespace {

std::vector<NamedWeight> read_file(const std::string& path, std::map<std::string, std::string>* metadata,
                                   std::vector<std::string>* skipped, const ReadProgress& progress, bool keep_half) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open it");
  const auto file_size = static_cast<uint64_t>(std::streamoff(in.tellg()));
  in.seekg(0);
  const uint64_t header_length = read_header_length(path, in, file_size);
  std::string text(static_cast<size_t>(header_length), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size())))
    fail(path, "could not read the header");
  if (!is_valid_utf8(text)) fail(path, "header is not valid UTF-8");
  const json header = parse_header(path, text);
  if (!header.is_object()) fail(path, "header is not a JSON object");

  const uint64_t data_start = 8 + header_length, data_size = file_size - data_start;
  std::vector<Entry> entries;
  for (const auto& item : header.items()) {
    if (item.key() == metadata_key) {
      check_metadata(path, item.value());
      if (metadata) *metadata = item.value().get<std::map<std::string, std::string>>();
    } else
      entries.push_back(parse_entry(path, item.key(), item.value(), data_size, skipped != nullptr));
  }
  check_layout(path, entries, data_size);
  const bool any_half = keep_half && std::any_of(entries.begin(), entries.end(), is_half);
  return read_data(path, in, data_start, entries, skipped, progress, keep_half,
                   any_half ? map_file(path, file_size) : nullptr);
}

}  // namespace

std::vector<NamedTensor> read_safetensors(const std::string& path, std::map<std::string, std::string>* metadata,
                                          std::vector<std::string>* skipped, const ReadProgress& progress) {
  std::vector<NamedTensor> out;
  for (NamedWeight& w : read_file(path, metadata, skipped, progress, false))
    out.push_back({std::move(w.name), std::move(w.value).into_values()});
  return out;
}

std::vector<NamedWeight> read_safetensors_weights(const std::string& path, std::vector<std::string>* skipped,
                                                  const ReadProgress& progress) {
  return read_file(path, nullptr, skipped, progress, true);
}

namespace {

// A tensor to write: its name, dtype, shape and bytes.
struct Blob {
  const std::string& name;
  const char* dtype;
  Shape shape;
  const void* data;
  uint64_t bytes;
};

std::vector<Blob> blobs(const std::vector<NamedTensor>& tensors) {
  std::vector<Blob> out;
  for (const auto& [name, value] : tensors)
    out.push_back({name, "F32", Shape(value.shape().begin(), value.shape().end()), value.data(), value.size() * sizeof(float)});
  return out;
}

std::vector<Blob> blobs(const std::vector<NamedWeight>& weights) {
  std::vector<Blob> out;
  for (const auto& [name, w] : weights)
    out.push_back({name, !w.half() ? "F32" : w.half_type() == HalfType::bf16 ? "BF16" : "F16", w.shape(), w.data(), w.bytes()});
  return out;
}

// The header, padded with spaces so that the data starts 8-byte aligned; `name` is the file in messages.
std::string safetensors_header(const std::string& name, const std::vector<Blob>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  const auto refuse = [&](const std::string& why) {
    throw InputError("cannot write '" + name + "': " + why);
  };
  json header = json::object();
  if (!metadata.empty()) header[metadata_key] = metadata;
  uint64_t offset = 0;
  for (const Blob& t : tensors) {
    if (t.name == metadata_key) refuse("the tensor name __metadata__ is reserved");
    if (header.contains(t.name)) refuse("duplicate tensor name '" + t.name + "'");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error&) {
    refuse("tensor names and metadata must be valid UTF-8");
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return text;
}

void write_safetensors_body(std::ostream& out, const std::string& header, const std::vector<Blob>& tensors) {
  const uint64_t length = header.size();
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const Blob& t : tensors) out.write(static_cast<const char*>(t.data), static_cast<std::streamsize>(t.bytes));
}

template <class Named>
void write_file(const std::string& path, const std::vector<Named>& tensors, const std::map<std::string, std::string>& metadata) {
  const std::vector<Blob> b = blobs(tensors);
  const std::string header = safetensors_header(path, b, metadata);
  write_file_atomically(path, [&](std::ostream& out) { write_safetensors_body(out, header, b); });
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file(path, tensors, metadata);
}

void write_safetensors_weights(const std::string& path, const std::vector<NamedWeight>& weights,
                               const std::map<std::string, std::string>& metadata) {
  write_file(path, weights, metadata);
}

std::string safetensors_bytes(const std::string& name, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::ostringstream out;
  const std::vector<Blob> b = blobs(tensors);
  write_safetensors_body(out, safetensors_header(name, b, metadata), b);
  return std::move(out).str();
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  // The pid keeps concurrent processes apart, the random number concurrent threads of one process.
  const std::string temp =
      path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}());
  bool written = false;
  errno = 0;
  try {
    std::ofstream out(temp, std::ios::binary);
    if (out) write(out);
    out.close();
    written = out && std::rename(temp.c_str(), path.c_str()) == 0;
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (written) return;
  const int error = errno;  // before remove() can change it
  std::remove(temp.c_str());
  throw InputError("cannot write '" + path + "'" + (error ? std::string(": ") + std::strerror(error) : ""));
}

}  // namespace attn
