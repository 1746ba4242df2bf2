// The files of `attn batch` and `attn merge` (batch_command.cpp): append-only files made durable at
// checkpoints, the three output formats (jsonl, safetensors, npy-dir) each written through working
// files and put in place whole at the end, the manifest that says which run made an output, and the
// merge of shard outputs in each format. docs/batch.md is the user's side.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/batch/batch.hpp"

namespace attn::cli::batch_io {

// Fault injection for tests/batch_check.py: ATTN_BATCH_TEST_CRASH=<point> ends the process at once
// (as a kill would) at that point of putting an output in place.
void crash_point(const char* point);
// Seconds between checkpoints: 1, or ATTN_BATCH_TEST_CHECKPOINT_SECONDS (tests kill a run just after
// one, well before it ends).
double checkpoint_seconds();

// --- files ---

// Appends to `path` after its first `keep` bytes (0: a new, empty file), buffered; sync() makes what
// was written durable.
class File {
 public:
  File(const std::string& path, uint64_t keep);
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();  // unsynced bytes are past every checkpoint: losing them is harmless

  void write(const void* data, size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  void write_i64(int64_t value) { write(&value, sizeof value); }  // little-endian hosts only
  void flush();
  void sync();
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, buffer_;
  uint64_t bytes_;
  int fd_ = -1;
};

bool exists(const std::string& path);
bool is_directory(const std::string& path);
uint64_t size_of(const std::string& path);
// A file or a whole directory; nothing when absent.
void remove_path(const std::string& path);
void make_directory(const std::string& path);
// Makes every file written in a folder durable: one syncfs for the folder's file system.
void sync_folder(const std::string& path);

// --- progress: OUTPUT.progress, where a run has got to ---

// Saved at each checkpoint: every line before next_line is in the working files, which hold exactly
// `files` bytes of complete records (file -> bytes); input_hash is the identity of the input's lines
// before next_line. `finishing`: the last checkpoint, taken just before the output is put in place.
struct Progress {
  size_t next_line = 1, items = 0, failed = 0;
  std::string input_hash = batch::Fnv1a().hex();
  bool finishing = false;
  Json files = Json::object();
};

std::string progress_path(const std::string& output);
// The progress of a run with this fingerprint (its options and input) and job (its model and
// vocabulary); nothing when there is none. Throws InputError when it is damaged or from another run.
std::optional<Progress> read_progress(const std::string& output, const std::string& fingerprint, const Json& job);
void write_progress(const std::string& output, const std::string& fingerprint, const Json& job, const Progress& p);

// --- outputs ---

bool is_npy_dir(const std::string& format);

// What may be replaced at OUTPUT: nothing, a file for jsonl and safetensors, and for npy-dir a folder
// holding an index.jsonl (an earlier output). attn never deletes a folder it did not write.
void check_output_target(const std::string& output, const std::string& format);

// Which run made an output (OUTPUT.manifest.json, and for safetensors also in the file's metadata).
struct Manifest {
  std::string format;
  batch::Shard shard;
  size_t items = 0, failed = 0;
  Json files = Json::object();  // file -> bytes, to tell a complete output from a damaged one
  Json run = Json::object();    // what decides the records: input, model, vocabulary, options

  Json head() const;
  std::string text() const;
};

std::string manifest_path(const std::string& output);

Manifest read_manifest(const std::string& output);

// Puts a finished output in place: the old OUTPUT goes first and the new one comes last, so a
// complete-looking OUTPUT always has its own errors file and manifest beside it. `main_ready` and
// `errors_ready` are renamed; nothing is copied.
void commit(const std::string& output, const std::string& format, const std::string& main_ready,
            const std::string& errors_ready, const Manifest& manifest);

// A worker's product for one line: its record (jsonl) or arrays (safetensors, npy-dir), or the error
// record of a bad line.
struct Result {
  bool failed = false;
  std::string record;
  std::optional<batch::ItemArrays> arrays;
};

struct SinkSpec {
  std::string output, format;
  const batch::StageSelection* selection = nullptr;
  std::vector<batch::StageLayout> layouts;
};

// Where the records of a run go.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void item(const Result& result) = 0;
  virtual void error(const std::string& record) = 0;
  // Makes everything written so far durable; returns each working file's size (a resume cuts the
  // files back to them).
  virtual Json sync() { return Json::object(); }
  // After the final checkpoint: puts the output in place (fills m.files).
  virtual void finish(Manifest& m) = 0;
  // After the progress file is gone: removes what is left of the working files.
  virtual void cleanup() {}
};

// Before a run opens its working files. A new run starts from nothing; a resumed run whose last
// attempt was putting its output in place (`finishing`) takes back what that attempt had renamed.
void prepare_output(const std::string& output, const std::string& format, bool resume, bool finishing);

// -o -: records to standard output, errors to standard error (jsonl only); else the working files of
// spec.format, cut back to the sizes in `keep` (a resumed run's last checkpoint; empty: new files).
std::unique_ptr<Sink> make_sink(const SinkSpec& spec, const Json& keep);

// --- attn merge ---

// Joins files of records (each in line order) into one in line order, through `emit`; a line twice
// means overlapping shards. Records of jsonl outputs, errors files and npy-dir indexes all start
// with {"line":N.
// `emit` gets each record and the index of the file it comes from.
void merge_records(const std::vector<std::string>& paths,
                   const std::function<void(const std::string&, size_t)>& emit);

struct ShardOutput {
  std::string path;
  Manifest manifest;
};

class Reader;  // sequential reads of part of a file (batch_io.cpp)

// The k-way merge of safetensors shards, one output tensor at a time: each shard's rows in line order
// (its "line" tensor), the merged rows in line order.
class SafetensorsMerge {
 public:
  // Reads the shards' headers; InputError unless they hold the same tensors (the shards of one run).
  explicit SafetensorsMerge(const std::vector<ShardOutput>& shards);
  // The merged file: the header (as a single run writes it) and every tensor.
  void write(File& out, const Manifest& merged);

 private:
  struct Cursor;  // one shard's rows of one tensor
  const batch::StoredTensor& find(size_t shard, const std::string& name) const;
  Reader reader(size_t shard, const std::string& name) const;
  void write_tensor(File& out, const std::string& name);

  std::vector<batch::SafetensorsHeader> headers_;
  std::vector<std::string> paths_;
};

}  // namespace attn::cli::batch_io
