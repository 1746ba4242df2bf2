#include "native/batch_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "core/io/safetensors.hpp"

namespace attn::cli::batch_io {

namespace fs = std::filesystem;

namespace {

std::string os_error() { return errno ? std::string(": ") + std::strerror(errno) : std::string(); }

fs::file_type kind_of(const std::string& path) {
  std::error_code ec;
  return fs::symlink_status(path, ec).type();
}
void rename_path(const std::string& from, const std::string& to) {
  errno = 0;
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw InputError("cannot rename '" + from + "' to '" + to + "'" + os_error());
}
// Makes renames in the folder holding `path` durable (best effort).
void sync_parent(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  const int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void crash_point(const char* point) {
  const char* at = std::getenv("ATTN_BATCH_TEST_CRASH");
  if (at && std::strcmp(at, point) == 0) std::_Exit(99);
}

double checkpoint_seconds() {
  const char* seconds = std::getenv("ATTN_BATCH_TEST_CHECKPOINT_SECONDS");
  return seconds ? std::atof(seconds) : 1.0;
}

// --- files ---

File::File(const std::string& path, uint64_t keep) : path_(path), bytes_(keep) {
  errno = 0;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (keep ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) throw InputError("cannot write '" + path + "'" + os_error());
  // Resuming from a file shorter than its checkpoint would fill the gap with zeros.
  if (::lseek(fd_, 0, SEEK_END) < off_t(keep)) {
    ::close(fd_);
    throw InputError("'" + path + "' is missing or shorter than its .progress file says; run without --resume");
  }
  if (::ftruncate(fd_, off_t(keep)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    ::close(fd_);
    throw InputError("cannot write '" + path + "'" + os_error());
  }
}

File::~File() { ::close(fd_); }

void File::write(const void* data, size_t size) {
  buffer_.append(static_cast<const char*>(data), size);
  bytes_ += size;
  if (buffer_.size() >= (1u << 16)) flush();
}

void File::flush() {
  for (size_t done = 0; done < buffer_.size();) {
    errno = 0;
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) throw InputError("could not write '" + path_ + "'" + os_error());
    done += size_t(n);
  }
  buffer_.clear();
}

void File::sync() {
  flush();
  errno = 0;
  if (::fsync(fd_) != 0) throw InputError("could not write '" + path_ + "'" + os_error());
}

// Sequential reads of the bytes [begin, end) of a file; reading past `end` is an InputError.
class Reader {
 public:
  Reader(const std::string& path, uint64_t begin, uint64_t end, std::string what)
      : in_(path, std::ios::binary), path_(path), what_(std::move(what)), at_(begin), end_(end) {
    if (!in_) throw InputError("cannot read '" + path + "'");
    in_.seekg(std::streamoff(begin));
  }
  void read(void* out, size_t size) {
    if (size > end_ - at_) short_data();
    in_.read(static_cast<char*>(out), std::streamsize(size));
    if (!in_) short_data();
    at_ += size;
  }
  int64_t i64() {
    int64_t v = 0;
    read(&v, sizeof v);
    return v;
  }
  // Copies `size` bytes to `out`.
  void copy(File& out, uint64_t size) {
    char chunk[1 << 16];
    while (size > 0) {
      const size_t n = size_t(std::min<uint64_t>(size, sizeof chunk));
      read(chunk, n);
      out.write(chunk, n);
      size -= n;
    }
  }
  // The next line, '\n' included.
  std::string line() {
    std::string text;
    for (char c = 0; c != '\n';) {
      read(&c, 1);
      text += c;
    }
    return text;
  }
  bool at_end() const { return at_ == end_; }
  const std::string& what() const { return what_; }

 private:
  [[noreturn]] void short_data() const {
    throw InputError("'" + path_ + "': " + what_ + " ends early (the file is damaged or was changed)");
  }
  std::ifstream in_;
  std::string path_, what_;
  uint64_t at_, end_;
};

bool exists(const std::string& path) {
  const fs::file_type kind = kind_of(path);
  return kind != fs::file_type::not_found && kind != fs::file_type::none;
}
bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}
uint64_t size_of(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw InputError("cannot read '" + path + "': " + ec.message());
  return size;
}
void remove_path(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw InputError("cannot remove '" + path + "': " + ec.message());
}
void make_directory(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec || !is_directory(path)) throw InputError("cannot create folder '" + path + "'" + (ec ? ": " + ec.message() : ""));
}
void sync_folder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open folder '" + path + "'" + os_error());
#ifdef __linux__
  const int status = ::syncfs(fd);
#else
  ::sync();
  const int status = 0;
#endif
  ::close(fd);
  if (status != 0) throw InputError("could not write '" + path + "' (disk full?)");
}

namespace {

// Copies the first `size` bytes of the file `from` to `out`.
void append_file(File& out, const std::string& from, uint64_t size) {
  Reader(from, 0, size, "the data").copy(out, size);
}

}  // namespace

// --- progress ---

std::string progress_path(const std::string& output) { return output + ".progress"; }

std::optional<Progress> read_progress(const std::string& output, const std::string& fingerprint, const Json& job) {
  const std::string path = progress_path(output);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const std::string damaged = "'" + path + "' is damaged; run without --resume to start over";
  Json j;
  try {
    j = Json::parse(in);
  } catch (const Json::exception&) {
    throw InputError(damaged);
  }
  if (!j.is_object() || !j.contains("fingerprint") || j.at("fingerprint") != fingerprint)
    throw InputError("'" + path + "' was written with other options or input; run without --resume");
  if (!j.contains("job"))
    throw InputError("'" + path + "' was written by another version of attn batch; run without --resume");
  if (j.at("job") != job)
    throw InputError("'" + path + "' was written with another model or vocabulary (a --config, --weights or --vocab "
                     "file changed, or without --vocab the input's words); run without --resume");
  const auto count = [&](const Json& value, const std::string& what) {
    try {
      return json_integer<size_t>(value, what, 0);
    } catch (const InputError& e) {
      throw InputError("'" + path + "' is damaged: " + e.what() + "; run without --resume to start over");
    }
  };
  try {
    Progress p{count(j.at("next_line"), "\"next_line\""), count(j.at("items"), "\"items\""),
               count(j.at("failed"), "\"failed\""),       j.at("input_fnv1a64").get<std::string>(),
               j.at("finishing").get<bool>(),             j.at("files")};
    if (!p.files.is_object()) throw InputError(damaged);
    for (const auto& [file, bytes] : p.files.items()) count(bytes, "the size of " + file);
    return p;
  } catch (const Json::exception&) {
    throw InputError(damaged);
  }
}

void write_progress(const std::string& output, const std::string& fingerprint, const Json& job, const Progress& p) {
  const Json j = {{"fingerprint", fingerprint}, {"job", job},       {"next_line", p.next_line},
                  {"items", p.items},           {"failed", p.failed}, {"input_fnv1a64", p.input_hash},
                  {"finishing", p.finishing},   {"files", p.files}};
  write_file_atomically(progress_path(output), [&](std::ostream& s) { s << j.dump() << "\n"; });
}

// --- outputs ---

bool is_npy_dir(const std::string& format) { return format == "npy-dir"; }

void check_output_target(const std::string& output, const std::string& format) {
  if (!exists(output)) return;
  if (!is_npy_dir(format)) {
    if (is_directory(output))
      throw InputError("'" + output + "' is a folder, and a " + format + " output is a file; choose another -o");
    return;
  }
  if (!is_directory(output))
    throw InputError("'" + output + "' exists and is not a folder; --format npy-dir writes a folder (remove it or "
                     "choose another -o)");
  if (!exists(output + "/index.jsonl"))
    throw InputError("'" + output + "' is a folder but not an output of --format npy-dir (it has no index.jsonl); "
                     "attn does not replace it: remove it or choose another -o");
}

Json Manifest::head() const {
  return {{"attn_batch", 1},
          {"format", format},
          {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
          {"items", items},
          {"failed", failed},
          {"run", run}};
}

std::string Manifest::text() const {
  Json j = head();
  j["files"] = files;
  return j.dump(1) + "\n";
}

std::string manifest_path(const std::string& output) { return output + ".manifest.json"; }

Manifest read_manifest(const std::string& output) {
  const std::string path = manifest_path(output);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError("'" + path + "' is missing: '" + output + "' is not the complete output of an attn batch run "
                     "(a run still going or interrupted has only .part files; -o - writes no manifest)");
  Manifest m;
  try {
    const Json j = Json::parse(in);
    if (j.at("attn_batch") != 1) throw InputError("'" + path + "' is of another version of attn batch");
    m.format = j.at("format").get<std::string>();
    m.shard = batch::parse_shard(j.at("shard").get<std::string>());
    m.items = json_field<size_t>(j, "items", "'" + path + "'", 0);
    m.failed = json_field<size_t>(j, "failed", "'" + path + "'", 0);
    m.files = j.at("files");
    m.run = j.at("run");
    if (!m.files.is_object() || !m.run.is_object()) throw Json::other_error::create(0, "not objects", nullptr);
  } catch (const Json::exception&) {
    throw InputError("'" + path + "' is damaged (not the manifest attn batch writes)");
  } catch (const InputError& e) {
    throw InputError("'" + path + "' is damaged: " + e.what());
  }
  if (m.format != "jsonl" && m.format != "safetensors" && !is_npy_dir(m.format))
    throw InputError("'" + path + "' names an unknown format '" + m.format + "'");
  return m;
}

void commit(const std::string& output, const std::string& format, const std::string& main_ready,
            const std::string& errors_ready, const Manifest& manifest) {
  check_output_target(output, format);
  const std::string replaced = output + ".replaced";
  if (exists(output)) {
    remove_path(replaced);
    rename_path(output, replaced);
  }
  rename_path(errors_ready, output + ".errors.jsonl");
  crash_point("after-errors");
  write_file_atomically(manifest_path(output), [&](std::ostream& s) { s << manifest.text(); });
  crash_point("after-manifest");
  rename_path(main_ready, output);
  sync_parent(output);
  crash_point("after-output");
  remove_path(replaced);
}

namespace {

// -o -: records to standard output, errors to standard error (jsonl only).
class StdoutSink : public Sink {
 public:
  void item(const Result& r) override { std::cout << r.record; }
  void error(const std::string& record) override { std::cerr << record; }
  void finish(Manifest&) override {
    std::cout.flush();
    if (!std::cout) throw InputError("could not write the output");
  }
};

// The errors file every format shares, and the sizes a resumed run starts from.
class FileSink : public Sink {
 public:
  FileSink(const SinkSpec& spec, const Json& keep)
      : spec_(spec), keep_(keep), errors_(spec.output + ".errors.jsonl.part", kept("errors")) {}
  void error(const std::string& record) override { errors_.write(record); }

 protected:
  uint64_t kept(const std::string& name) const {
    return keep_.contains(name) ? json_integer<uint64_t>(keep_.at(name), "the progress file's \"" + name + "\"", 0)
                                : uint64_t(0);
  }
  const SinkSpec spec_;
  const Json keep_;
  File errors_;
};

// OUTPUT.part: the records, renamed to OUTPUT at the end.
class JsonlSink : public FileSink {
 public:
  JsonlSink(const SinkSpec& spec, const Json& keep) : FileSink(spec, keep), out_(spec.output + ".part", kept("output")) {}
  void item(const Result& r) override { out_.write(r.record); }
  Json sync() override {
    out_.sync();
    errors_.sync();
    return {{"output", out_.bytes()}, {"errors", errors_.bytes()}};
  }
  void finish(Manifest& m) override {
    m.files = sync();
    commit(spec_.output, spec_.format, out_.path(), errors_.path(), m);
  }

 private:
  File out_;
};

// OUTPUT.part/: one append-only file per tensor of the final file (its rows in line order), put
// together into OUTPUT at the end: I64 line, length[, ids][, <stage>.offsets, <stage>.shape for each
// stage whose shape depends on the length], F32 stages, U8 index.
class SafetensorsSink : public FileSink {
 public:
  SafetensorsSink(const SinkSpec& spec, const Json& keep)
      : FileSink(spec, keep), dir_(spec.output + ".part"), line_(part("line"), kept("line")),
        length_(part("length"), kept("length")), index_(part("index"), kept("index")) {
    if (spec.selection->tokens) ids_.emplace(part("ids"), kept("ids"));
    for (size_t k = 0; k < spec.layouts.size(); ++k) {
      const std::string name = "stage" + std::to_string(k);
      auto files = std::make_unique<StageFiles>(part(name), kept(name));
      files->elements = kept(name) / sizeof(float);
      if (!spec.layouts[k].fixed) {
        files->offsets.emplace(part(name + ".offsets"), kept(name + ".offsets"));
        files->shape.emplace(part(name + ".shape"), kept(name + ".shape"));
      }
      stages_.push_back(std::move(files));
    }
  }
  void item(const Result& r) override {
    const batch::ItemArrays& a = *r.arrays;
    line_.write_i64(int64_t(a.line));
    length_.write_i64(int64_t(a.ids.size()));
    if (ids_)
      for (int64_t id : a.ids) ids_->write_i64(id);
    index_.write(batch::index_record(a, *spec_.selection, false));
    for (size_t k = 0; k < stages_.size(); ++k) {
      StageFiles& s = *stages_[k];
      const Tensor& value = a.stages[k];
      const Shape shape(value.shape().begin(), value.shape().end());
      if (spec_.layouts[k].fixed && shape != spec_.layouts[k].shape)
        throw std::logic_error("batch: stage " + spec_.layouts[k].name + " changed its shape");
      s.data.write(value.data(), value.size() * sizeof(float));
      if (spec_.layouts[k].fixed) continue;
      s.elements += value.size();
      s.offsets->write_i64(int64_t(s.elements));
      for (size_t d : shape) s.shape->write_i64(int64_t(d));
    }
  }
  Json sync() override {
    Json sizes = Json::object();
    for (File* f : files()) {
      f->sync();
      sizes[fs::path(f->path()).filename().string()] = f->bytes();
    }
    errors_.sync();
    sizes["errors"] = errors_.bytes();
    return sizes;
  }
  void finish(Manifest& m) override {
    sync();
    const size_t rows = size_t(line_.bytes() / 8);
    std::vector<batch::TensorEntry> entries = {{"line", "I64", {rows}}, {"length", "I64", {rows}}};
    std::vector<std::function<void(File&)>> writers = {
        [&](File& out) { append_file(out, line_.path(), line_.bytes()); },
        [&](File& out) { append_file(out, length_.path(), length_.bytes()); }};
    if (ids_) {
      entries.push_back({"ids", "I64", {size_t(ids_->bytes() / 8)}});
      writers.push_back([&](File& out) { append_file(out, ids_->path(), ids_->bytes()); });
    }
    for (size_t k = 0; k < stages_.size(); ++k) {
      if (spec_.layouts[k].fixed) continue;
      const StageFiles& s = *stages_[k];
      const std::string& name = spec_.layouts[k].name;
      entries.push_back({name + ".offsets", "I64", {rows + 1}});
      writers.push_back([&s](File& out) {
        out.write_i64(0);
        append_file(out, s.offsets->path(), s.offsets->bytes());
      });
      entries.push_back({name + ".shape", "I64", {rows, spec_.layouts[k].shape.size()}});
      writers.push_back([&s](File& out) { append_file(out, s.shape->path(), s.shape->bytes()); });
    }
    for (size_t k = 0; k < stages_.size(); ++k) {
      const StageFiles& s = *stages_[k];
      Shape shape = {rows};
      if (spec_.layouts[k].fixed)
        shape.insert(shape.end(), spec_.layouts[k].shape.begin(), spec_.layouts[k].shape.end());
      else
        shape = {size_t(s.elements)};
      entries.push_back({spec_.layouts[k].name, "F32", shape});
      writers.push_back([&s](File& out) { append_file(out, s.data.path(), s.data.bytes()); });
    }
    entries.push_back({"index", "U8", {size_t(index_.bytes())}});
    writers.push_back([&](File& out) { append_file(out, index_.path(), index_.bytes()); });

    const std::string assembled = spec_.output + ".assembling";
    try {
      File out(assembled, 0);
      out.write(batch::safetensors_header(entries, {{"attn_batch", m.head().dump()}}));
      for (const auto& write : writers) write(out);
      out.sync();
      m.files = {{"output", out.bytes()}, {"errors", errors_.bytes()}};
    } catch (...) {
      std::remove(assembled.c_str());  // a full disk: the working files stay for --resume
      throw;
    }
    commit(spec_.output, spec_.format, assembled, errors_.path(), m);
  }
  void cleanup() override { remove_path(dir_); }

 private:
  struct StageFiles {
    StageFiles(const std::string& path, uint64_t keep) : data(path, keep) {}
    File data;
    std::optional<File> offsets, shape;
    uint64_t elements = 0;
  };
  std::string part(const std::string& name) const {
    make_directory(dir_);
    return dir_ + "/" + name;
  }
  std::vector<File*> files() {
    std::vector<File*> out = {&line_, &length_, &index_};
    if (ids_) out.push_back(&*ids_);
    for (auto& s : stages_) {
      out.push_back(&s->data);
      if (s->offsets) out.push_back(&*s->offsets);
      if (s->shape) out.push_back(&*s->shape);
    }
    return out;
  }
  std::string dir_;
  File line_, length_, index_;
  std::optional<File> ids_;
  std::vector<std::unique_ptr<StageFiles>> stages_;
};

// OUTPUT.part/: <line>.<stage>.npy for each item and stage, and index.jsonl; renamed to OUTPUT.
class NpyDirSink : public FileSink {
 public:
  NpyDirSink(const SinkSpec& spec, const Json& keep)
      : FileSink(spec, keep), dir_((make_directory(spec.output + ".part"), spec.output + ".part")),
        index_(dir_ + "/index.jsonl", kept("index.jsonl")) {}
  void item(const Result& r) override {
    const batch::ItemArrays& a = *r.arrays;
    for (size_t k = 0; k < a.stages.size(); ++k)
      write_npy(dir_ + "/" + std::to_string(a.line) + "." + spec_.selection->names[k] + ".npy", a.stages[k]);
    index_.write(batch::index_record(a, *spec_.selection, true));
  }
  Json sync() override {
    index_.sync();
    errors_.sync();
    sync_folder(dir_);
    return {{"index.jsonl", index_.bytes()}, {"errors", errors_.bytes()}};
  }
  void finish(Manifest& m) override {
    m.files = sync();
    commit(spec_.output, spec_.format, dir_, errors_.path(), m);
  }

 private:
  std::string dir_;
  File index_;
};

}  // namespace

void prepare_output(const std::string& output, const std::string& format, bool resume, bool finishing) {
  check_output_target(output, format);
  const std::string part = output + ".part", errors_part = output + ".errors.jsonl.part";
  remove_path(output + ".assembling");
  if (!resume) {
    remove_path(output + ".progress");
    remove_path(part);
    return;
  }
  if (finishing) {
    if (!exists(errors_part) && exists(output + ".errors.jsonl")) rename_path(output + ".errors.jsonl", errors_part);
    if (format != "safetensors" && !exists(part) && exists(output)) rename_path(output, part);
  }
  // An interrupted write_npy leaves its temporary file behind.
  if (is_npy_dir(format) && is_directory(part)) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(part, ec))
      if (entry.path().filename().string().find(".npy.tmp-") != std::string::npos) remove_path(entry.path().string());
    if (ec) throw InputError("cannot read folder '" + part + "': " + ec.message());
  }
}

std::unique_ptr<Sink> make_sink(const SinkSpec& spec, const Json& keep) {
  if (spec.output == "-") return std::make_unique<StdoutSink>();
  if (spec.format == "safetensors") return std::make_unique<SafetensorsSink>(spec, keep);
  if (is_npy_dir(spec.format)) return std::make_unique<NpyDirSink>(spec, keep);
  return std::make_unique<JsonlSink>(spec, keep);
}

// --- attn merge ---

void merge_records(const std::vector<std::string>& paths,
                   const std::function<void(const std::string&, size_t)>& emit) {
  struct Stream {
    std::ifstream in;
    std::string path, record;
    size_t line = 0;
    bool next() {
      if (!std::getline(in, record)) {
        if (in.bad()) throw InputError("error while reading '" + path + "'");
        return false;
      }
      try {
        line = batch::record_line(record);
      } catch (const InputError& e) {
        throw InputError("'" + path + "': " + e.what());
      }
      record += '\n';
      return true;
    }
  };
  std::vector<Stream> streams(paths.size());
  std::multimap<size_t, size_t> heads;  // next line -> stream
  for (size_t i = 0; i < paths.size(); ++i) {
    streams[i].path = paths[i];
    streams[i].in.open(paths[i], std::ios::binary);
    if (!streams[i].in) throw InputError("cannot read '" + paths[i] + "'");
    if (streams[i].next()) heads.emplace(streams[i].line, i);
  }
  size_t last = 0;
  while (!heads.empty()) {
    const auto [line, i] = *heads.begin();
    heads.erase(heads.begin());
    if (line <= last)
      throw InputError("line " + std::to_string(line) + " comes twice or out of order in '" + paths[i] +
                       "': not the shards of one run");
    last = line;
    emit(streams[i].record, i);
    if (streams[i].next()) heads.emplace(streams[i].line, i);
  }
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const batch::StoredTensor* lookup(const batch::SafetensorsHeader& h, const std::string& name) {
  for (const auto& t : h.tensors)
    if (t.entry.name == name) return &t;
  return nullptr;
}

const batch::StoredTensor& find_in(const batch::SafetensorsHeader& h, const std::string& name,
                                   const std::string& path) {
  const auto* t = lookup(h, name);
  if (!t || t->entry.shape.empty())
    throw InputError("'" + path + "' has no tensor '" + name + "' as attn batch writes it");
  return *t;
}

batch::SafetensorsHeader read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "'");
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);
  const uint64_t size = size_of(path);
  if (!in || length > size - 8 || length > (100u << 20))
    throw InputError("'" + path + "' is not a safetensors file (bad header length)");
  std::string text(size_t(length), '\0');
  in.read(text.data(), std::streamsize(length));
  if (!in) throw InputError("'" + path + "': truncated safetensors header");
  auto header = batch::parse_safetensors_header(path, text, size);
  for (const char* needed : {"line", "length", "index"})
    find_in(header, needed, path);
  return header;
}

}  // namespace

// One shard's rows of one tensor: the next row's line, and its bytes.
struct SafetensorsMerge::Cursor {
  Reader lines, data;
  std::optional<Reader> sizes;  // length (ids) or offsets (stages whose shape varies)
  size_t rows_left = 0, line = 0;
  int64_t last_offset = 0;
  bool next_row() {
    if (rows_left == 0) return false;
    line = size_t(lines.i64());
    --rows_left;
    return true;
  }
};

SafetensorsMerge::SafetensorsMerge(const std::vector<ShardOutput>& shards) {
  for (const auto& s : shards) {
    paths_.push_back(s.path);
    headers_.push_back(read_header(s.path));
  }
  const auto& first = headers_.front();
  for (size_t i = 1; i < headers_.size(); ++i) {
    bool same = headers_[i].tensors.size() == first.tensors.size();
    for (size_t t = 0; same && t < first.tensors.size(); ++t) {
      const auto &a = first.tensors[t].entry, &b = headers_[i].tensors[t].entry;
      same = a.name == b.name && a.dtype == b.dtype && a.shape.size() == b.shape.size() &&
             (a.shape.size() < 2 || Shape(a.shape.begin() + 1, a.shape.end()) == Shape(b.shape.begin() + 1, b.shape.end()));
    }
    if (!same)
      throw InputError("'" + shards[i].path + "' does not hold the tensors of '" + shards[0].path + "': not one run");
  }
}

void SafetensorsMerge::write(File& out, const Manifest& merged) {
  const auto& first = headers_.front();
  std::vector<batch::TensorEntry> entries;
  for (const auto& t : first.tensors) {
    batch::TensorEntry e = t.entry;
    e.shape[0] = 0;
    for (size_t i = 0; i < headers_.size(); ++i) e.shape[0] += find(i, t.entry.name).entry.shape[0];
    if (ends_with(e.name, ".offsets")) e.shape[0] -= headers_.size() - 1;  // each shard's leading 0
    entries.push_back(e);
  }
  out.write(batch::safetensors_header(entries, {{"attn_batch", merged.head().dump()}}));
  for (const auto& t : first.tensors) write_tensor(out, t.entry.name);
}

const batch::StoredTensor& SafetensorsMerge::find(size_t shard, const std::string& name) const {
  return find_in(headers_[shard], name, paths_[shard]);
}

Reader SafetensorsMerge::reader(size_t shard, const std::string& name) const {
  const auto& t = find(shard, name);
  const uint64_t start = headers_[shard].data_start;
  return Reader(paths_[shard], start + t.begin, start + t.end, "tensor '" + name + "'");
}

void SafetensorsMerge::write_tensor(File& out, const std::string& name) {
  const bool offsets = ends_with(name, ".offsets"), shapes = ends_with(name, ".shape");
  const std::string stage = offsets ? name.substr(0, name.size() - 8) : name;
  const auto& entry = find(0, name).entry;
  const bool varying = !offsets && !shapes && lookup(headers_.front(), name + ".offsets");
  uint64_t fixed_row = batch::dtype_size(entry.dtype);  // bytes of a row of a fixed-size tensor
  for (size_t d = 1; d < entry.shape.size(); ++d) fixed_row *= entry.shape[d];

  std::vector<Cursor> cursors;
  std::vector<bool> live;
  for (size_t i = 0; i < headers_.size(); ++i) {
    Cursor c{reader(i, "line"), reader(i, name), std::nullopt, size_t(find(i, "line").entry.shape[0]), 0, 0};
    if (name == "ids") c.sizes.emplace(reader(i, "length"));
    if (offsets) c.data.i64();  // the leading 0
    if (varying) {
      c.sizes.emplace(reader(i, name + ".offsets"));
      c.sizes->i64();
    }
    live.push_back(c.next_row());
    cursors.push_back(std::move(c));
  }
  int64_t total = 0;  // .offsets: the merged running total
  if (offsets) out.write_i64(0);
  size_t last = 0;
  for (;;) {
    size_t best = cursors.size();
    for (size_t i = 0; i < cursors.size(); ++i)
      if (live[i] && (best == cursors.size() || cursors[i].line < cursors[best].line)) best = i;
    if (best == cursors.size()) break;
    Cursor& c = cursors[best];
    if (c.line <= last)
      throw InputError("line " + std::to_string(c.line) + " comes twice or out of order in '" + paths_[best] +
                       "': not the shards of one run");
    last = c.line;
    if (offsets) {
      const int64_t end = c.data.i64();
      total += end - c.last_offset;
      c.last_offset = end;
      out.write_i64(total);
    } else if (name == "index") {
      out.write(c.data.line());
    } else if (name == "ids") {
      c.data.copy(out, uint64_t(c.sizes->i64()) * 8);
    } else if (varying) {
      const int64_t end = c.sizes->i64();
      c.data.copy(out, uint64_t(end - c.last_offset) * sizeof(float));
      c.last_offset = end;
    } else {
      c.data.copy(out, fixed_row);
    }
    live[best] = c.next_row();
  }
  for (size_t i = 0; i < cursors.size(); ++i)
    if (!cursors[i].data.at_end())
      throw InputError("'" + paths_[i] + "': tensor '" + name + "' holds more than its rows (damaged)");
}

}  // namespace attn::cli::batch_io
