// `attn batch`: the model over a file of any size, streaming, on a thread pool, records in input
// order; `attn merge`: shard outputs joined into the single run's output. README.md "attn batch" is
// the user's side: formats, memory bound, exit status, resume and sharding.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/batch.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "native/commands.hpp"
#include "native/model_options.hpp"

namespace attn::cli {
namespace {

using batch::Item;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --- the model and what each record keeps ---

struct Job {
  TransformerModel model;
  std::optional<Vocab> vocab;
  MaskKind mask = MaskKind::padding;
  batch::StageSelection selection;
  batch::ItemRules rules;
};

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::istringstream in(v);
    for (std::string part; std::getline(in, part, ',');)
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

Job load_job(const BatchOptions& o) {
  if (o.model.train)
    throw InputError("--train is not meaningful for attn batch: dropout would make each item depend on the batching");
  Job job;
  job.vocab = model_vocab(o.model);
  TransformerConfig config = model_config(o.model);
  // The embedding size must be known before the first line: a stream cannot be read twice.
  if (!job.vocab && config.vocab_size == 0)
    throw InputError("attn batch needs the vocabulary up front: --vocab (sentences), or --vocab-size or "
                     "vocab_size in --config (token ids only)");
  TorchGenerator gen(parse_seed(o.model.seed.empty() ? "0" : o.model.seed));
  job.model = build_model(o.model, config, job.vocab ? job.vocab->size() : 0, gen);
  job.mask = parse_mask_kind(o.model.mask);
  const Trace sample = batch::compute(job.model, {Item{1, nullptr, {}, {0}}}, job.mask);
  job.selection = batch::select_stages(sample, job.model.config, split_list(o.stages), o.layers, o.heads);
  job.rules = {job.vocab ? &*job.vocab : nullptr, job.model.config.vocab_size, job.model.config.max_len};
  return job;
}

// What decides the output bytes (not --threads, --batch-size, --quiet): a resumed run must match it.
std::string fingerprint(const BatchOptions& o) {
  const ModelOptions& m = o.model;
  return Json{{"input", o.input},          {"input_format", o.input_format}, {"format", o.format},
              {"stages", o.stages},        {"layers", o.layers},             {"heads", o.heads},
              {"shard", o.shard},          {"config", m.config_file},        {"seed", m.seed},
              {"weights", m.weights},      {"vocab", m.vocab},               {"mask", m.mask},
              {"sizes", {m.vocab_size, m.d_model, m.num_heads, m.num_layers, m.d_ff, m.max_len, m.num_classes,
                         m.activation, m.pooling, m.layer_style}},
              {"flags", {m.norm_first, m.post_norm, m.encoder_only}}}
      .dump();
}

// --- files: append-only, fsync'd at checkpoints ---

class File {
 public:
  // Opens `path` for appending after its first `keep` bytes (0: a new, empty file).
  File(const std::string& path, uint64_t keep) : path_(path), bytes_(keep) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | (keep ? 0 : O_TRUNC), 0644);
    if (fd_ < 0) throw InputError("cannot write '" + path + "'");
    // Resuming from a file shorter than its checkpoint would fill the gap with zeros.
    if (::lseek(fd_, 0, SEEK_END) < off_t(keep))
      throw InputError("'" + path + "' is shorter than its .progress file says; run without --resume");
    if (::ftruncate(fd_, off_t(keep)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0)
      throw InputError("cannot write '" + path + "'");
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0) throw InputError("could not write '" + path_ + "' (disk full?)");
      done += size_t(n);
    }
    bytes_ += text.size();
  }
  void sync() {
    if (::fsync(fd_) != 0) throw InputError("could not write '" + path_ + "' (disk full?)");
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string path_;
  uint64_t bytes_;
  int fd_ = -1;
};

// Where a run has got to, saved at each checkpoint (OUTPUT.progress): every line before next_line is
// in the .part files, which hold exactly output_bytes and errors_bytes of complete records.
struct Progress {
  size_t next_line = 1, items = 0, failed = 0;
  uint64_t output_bytes = 0, errors_bytes = 0;
};

// The records of a run: OUTPUT (and OUTPUT.errors.jsonl) through .part files renamed at the end, or
// standard output (errors on standard error) for `-o -`.
class Sink {
 public:
  Sink(const BatchOptions& o, const Progress& start) : path_(o.output), fingerprint_(fingerprint(o)) {
    if (path_ == "-") return;
    out_.emplace(path_ + ".part", start.output_bytes);
    errors_.emplace(errors_path() + ".part", start.errors_bytes);
  }
  static std::optional<Progress> saved(const BatchOptions& o) {
    std::ifstream in(o.output + ".progress");
    if (!in) return std::nullopt;
    Json j;
    try {
      j = Json::parse(in);
    } catch (const Json::exception&) {
      throw InputError("'" + o.output + ".progress' is damaged; run without --resume to start over");
    }
    if (j.value("fingerprint", "") != fingerprint(o))
      throw InputError("'" + o.output + ".progress' was written with other options or input; run without --resume");
    try {
      return Progress{j.at("next_line").get<size_t>(), j.at("items").get<size_t>(), j.at("failed").get<size_t>(),
                      j.at("output_bytes").get<uint64_t>(), j.at("errors_bytes").get<uint64_t>()};
    } catch (const Json::exception&) {
      throw InputError("'" + o.output + ".progress' is damaged; run without --resume to start over");
    }
  }
  void item(const std::string& record) {
    if (out_)
      out_->write(record);
    else
      std::cout << record;
  }
  void error(const std::string& record) {
    if (errors_)
      errors_->write(record);
    else
      std::cerr << record;
  }
  // Makes what is written durable, then records how far it goes.
  void checkpoint(Progress p) {
    if (!out_) return;
    out_->sync();
    errors_->sync();
    p.output_bytes = out_->bytes();
    p.errors_bytes = errors_->bytes();
    const Json j = {{"fingerprint", fingerprint_}, {"next_line", p.next_line},        {"items", p.items},
                    {"failed", p.failed},          {"output_bytes", p.output_bytes}, {"errors_bytes", p.errors_bytes}};
    write_file_atomically(path_ + ".progress", [&](std::ostream& s) { s << j.dump() << "\n"; });
  }
  // The output appears only now, whole; the errors file first, so a complete output always has it.
  void finish() {
    if (!out_) {
      std::cout.flush();
      if (!std::cout) throw InputError("could not write the output");
      return;
    }
    out_->sync();
    errors_->sync();
    rename(errors_path() + ".part", errors_path());
    rename(path_ + ".part", path_);
    std::remove((path_ + ".progress").c_str());
  }
  std::string errors_path() const { return path_ + ".errors.jsonl"; }

 private:
  static void rename(const std::string& from, const std::string& to) {
    if (std::rename(from.c_str(), to.c_str()) != 0) throw InputError("cannot rename '" + from + "' to '" + to + "'");
  }
  std::string path_, fingerprint_;
  std::optional<File> out_, errors_;
};

// --- input ---

class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    if (path == "-") return;
    file_.open(path, std::ios::binary);
    if (!file_) throw InputError("cannot read input '" + path + "'");
    file_.seekg(0, std::ios::end);
    size_ = double(file_.tellg());
    file_.seekg(0);
  }
  bool next(std::string& text) {
    if (!std::getline(stream(), text)) {
      if (stream().bad()) throw InputError("error while reading '" + path_ + "'");
      return false;
    }
    batch::strip_line(text, ++line_);
    return true;
  }
  size_t line() const { return line_; }
  // How much of the input has been read, in [0, 1]; 0 when unknown (standard input).
  double fraction() {
    return size_ > 0 ? double(file_.tellg()) / size_ : 0.0;
  }

 private:
  std::istream& stream() { return path_ == "-" ? std::cin : file_; }
  std::string path_;
  std::ifstream file_;
  double size_ = 0;
  size_t line_ = 0;
};

// --- computing: batches on worker threads, records collected by line ---

class Pool {
 public:
  Pool(const Job& job, size_t threads) : job_(job) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    jobs_ready_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void submit(std::vector<Item> items) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(items));
    }
    jobs_ready_.notify_one();
  }
  void done(size_t line, std::string record, bool failed) {
    std::lock_guard<std::mutex> lock(mutex_);
    results_[line] = {std::move(record), failed};
  }
  // The record of `line`, once computed (waiting for it if `wait`); rethrows a worker's failure.
  std::optional<std::pair<std::string, bool>> take(size_t line, bool wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wait) results_ready_.wait(lock, [&] { return failure_ || results_.count(line); });
    if (failure_) std::rethrow_exception(failure_);
    auto it = results_.find(line);
    if (it == results_.end()) return std::nullopt;
    auto result = std::move(it->second);
    results_.erase(it);
    return result;
  }

 private:
  void work() {
    for (;;) {
      std::vector<Item> items;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        jobs_ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        items = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::vector<std::string> records;
      std::exception_ptr failure;
      try {
        const Trace trace = batch::compute(job_.model, items, job_.mask);
        for (size_t row = 0; row < items.size(); ++row)
          records.push_back(batch::item_record(items[row], trace, row, job_.selection));
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure && !failure_) failure_ = failure;
        for (size_t row = 0; row < records.size(); ++row) results_[items[row].line] = {std::move(records[row]), false};
      }
      results_ready_.notify_all();
    }
  }

  const Job& job_;
  std::mutex mutex_;
  std::condition_variable jobs_ready_, results_ready_;
  std::deque<std::vector<Item>> jobs_;
  std::map<size_t, std::pair<std::string, bool>> results_;
  std::exception_ptr failure_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// --- the run ---

class Run {
 public:
  Run(const BatchOptions& o, const Job& job, Progress start)
      : o_(o), job_(job), shard_(o.shard.empty() ? batch::Shard{} : batch::parse_shard(o.shard)),
        threads_(o.threads.empty() ? std::max(1u, std::thread::hardware_concurrency())
                                   : parse_size("--threads", o.threads, 1)),
        batch_size_(parse_size("--batch-size", o.batch_size, 1)),
        window_(std::max<size_t>(256, 4 * batch_size_ * threads_)), progress_(start), reader_(o.input),
        show_progress_(!o.quiet && ::isatty(2)) {}

  // Returns the exit status: 0, or 3 when some items failed.
  int operator()() {
    std::string text;
    const bool any = reader_.next(text);
    const batch::InputFormat format = input_format(text, any);
    Sink sink(o_, progress_);
    sink_ = &sink;
    Pool pool(job_, threads_);
    pool_ = &pool;
    for (bool more = any; more; more = reader_.next(text)) {
      read_line(text, format);
      write_ready(window_);
    }
    dispatch();
    write_ready(0);
    progress_.next_line = reader_.line() + 1;
    sink.checkpoint(progress_);
    sink.finish();
    summary();
    return progress_.failed ? 3 : 0;
  }

 private:
  batch::InputFormat input_format(const std::string& first_line, bool any) const {
    batch::InputFormat format = o_.input_format == "text"    ? batch::InputFormat::text
                                : o_.input_format == "jsonl" ? batch::InputFormat::jsonl
                                                             : batch::format_from_name(o_.input).value_or(
                                                                   batch::format_from_first_line(first_line));
    if (any && format == batch::InputFormat::text && !job_.vocab)
      throw InputError("a text input needs --vocab (JSON Lines with \"ids\" work without)");
    return format;
  }

  void read_line(const std::string& text, batch::InputFormat format) {
    const size_t line = reader_.line();
    const bool mine = shard_.owns(line) && line >= progress_.next_line;
    // Every shard reads every id, so a duplicate is found whichever shard holds the first one.
    if (!mine && format == batch::InputFormat::text) return;
    batch::RawItem raw = batch::parse_line(text, format);
    const auto first = ids_.claim(raw.id, line);
    if (!mine) return;
    order_.push_back(line);
    if (raw.error.empty() && first) raw.error = "duplicate id (first on line " + std::to_string(*first) + ")";
    const Json id = raw.id;
    try {
      if (raw.error.empty()) pending_.push_back(batch::make_item(std::move(raw), line, job_.rules));
    } catch (const InputError& e) {
      raw.error = e.what();
    }
    if (!raw.error.empty()) pool_->done(line, batch::error_record(line, id, raw.error), true);
    if (pending_.size() >= window_) dispatch();
  }

  void dispatch() {
    for (auto& items : batch::group_by_length(std::move(pending_), batch_size_)) pool_->submit(std::move(items));
    pending_.clear();
  }

  // Writes the records that are next in line order; waits while more than `keep` lines are unwritten
  // (the memory bound), dispatching what is pending first so the wait can end.
  void write_ready(size_t keep) {
    while (!order_.empty()) {
      const bool wait = order_.size() > keep;
      if (wait && !pending_.empty()) dispatch();
      auto result = pool_->take(order_.front(), wait);
      if (!result) break;
      if (result->second) {
        sink_->error(result->first);
        ++progress_.failed;
      } else {
        sink_->item(result->first);
        ++progress_.items;
      }
      progress_.next_line = order_.front() + 1;
      order_.pop_front();
      tick();
    }
  }

  void tick() {
    if (seconds_since(last_checkpoint_) >= 1.0) {
      sink_->checkpoint(progress_);
      last_checkpoint_ = Clock::now();
    }
    if (show_progress_ && seconds_since(last_display_) >= 0.5) {
      last_display_ = Clock::now();
      const double rate = double(progress_.items + progress_.failed) / std::max(seconds_since(start_), 1e-9);
      std::fprintf(stderr, "\rattn batch: %zu items, %zu failed, %.0f items/s", progress_.items, progress_.failed, rate);
      const double fraction = reader_.fraction();
      if (fraction > 0) std::fprintf(stderr, ", ETA %.0f s   ", seconds_since(start_) * (1 - fraction) / fraction);
      std::fflush(stderr);
    }
  }

  void summary() const {
    if (o_.quiet) return;
    const double elapsed = seconds_since(start_);
    // On a terminal the summary replaces the progress line ("\033[K" clears what it leaves).
    std::fprintf(stderr, "%sattn batch: %zu items, %zu failed%s, %.2f s, %.0f items/s\n", show_progress_ ? "\r\033[K" : "",
                 progress_.items, progress_.failed,
                 progress_.failed && o_.output != "-" ? (" (see " + sink_->errors_path() + ")").c_str() : "",
                 elapsed, double(progress_.items) / std::max(elapsed, 1e-9));
  }

  const BatchOptions& o_;
  const Job& job_;
  const batch::Shard shard_;
  const size_t threads_, batch_size_, window_;
  Progress progress_;
  LineReader reader_;
  const bool show_progress_;
  batch::IdRegistry ids_;
  std::vector<Item> pending_;  // read, not yet given to the pool
  std::deque<size_t> order_;   // lines read and not yet written, in order
  Sink* sink_ = nullptr;
  Pool* pool_ = nullptr;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_checkpoint_ = Clock::now(), last_display_ = Clock::now();
};

void run_batch(BatchOptions& o) {
  if (o.format != "jsonl") throw InputError("--format " + o.format + " is not supported yet (jsonl only)");
  if (o.resume && o.output == "-") throw InputError("--resume needs an output file (-o FILE)");
  const Job job = load_job(o);
  const std::optional<Progress> saved = o.resume ? Sink::saved(o) : std::nullopt;
  o.exit_status = Run(o, job, saved.value_or(Progress{}))();
}

// --- attn merge ---

// A shard's records, one at a time, with the line each starts with.
struct RecordStream {
  std::ifstream in;
  std::string path, record;
  size_t line = 0;
  bool next() {
    if (!std::getline(in, record)) return false;
    try {
      line = batch::record_line(record);
    } catch (const InputError& e) {
      throw InputError("'" + path + "': " + e.what());
    }
    record += '\n';
    return true;
  }
};

// Joins record files each in line order into one in line order; a line twice means overlapping shards.
void merge_records(const std::vector<std::string>& paths, std::ostream& out) {
  std::vector<RecordStream> streams(paths.size());
  std::multimap<size_t, size_t> heads;  // next line -> stream
  for (size_t i = 0; i < paths.size(); ++i) {
    streams[i].path = paths[i];
    streams[i].in.open(paths[i], std::ios::binary);
    if (!streams[i].in) throw InputError("cannot read '" + paths[i] + "'");
    if (streams[i].next()) heads.emplace(streams[i].line, i);
  }
  size_t last = 0;
  while (!heads.empty()) {
    auto [line, i] = *heads.begin();
    heads.erase(heads.begin());
    if (line <= last)
      throw InputError("line " + std::to_string(line) + " comes twice or out of order in '" + paths[i] +
                       "': not the shards of one run");
    last = line;
    out << streams[i].record;
    if (streams[i].next()) heads.emplace(streams[i].line, i);
  }
  for (auto& s : streams)
    if (s.in.bad()) throw InputError("error while reading '" + s.path + "'");
}

void run_merge(const MergeOptions& o) {
  std::vector<std::string> errors;
  for (const auto& p : o.inputs) errors.push_back(p + ".errors.jsonl");
  if (o.output == "-") {
    merge_records(o.inputs, std::cout);
    merge_records(errors, std::cerr);
    return print("");
  }
  write_file_atomically(o.output + ".errors.jsonl", [&](std::ostream& s) { merge_records(errors, s); });
  write_file_atomically(o.output, [&](std::ostream& s) { merge_records(o.inputs, s); });
}

}  // namespace

void add_batch_command(CLI::App& app, BatchOptions& o) {
  auto* cmd = app.add_subcommand("batch", "Run the model over a file of any size (one sentence per line, or "
                                          "JSON Lines), streaming, one JSON record per item in input order");
  cmd->add_option("INPUT", o.input, "text (one sentence per line) or JSON Lines ({\"id\", \"text\" or \"ids\"}); "
                                    "- for standard input")
      ->required();
  cmd->add_option("-o,--output", o.output, "output file (- for standard output); bad items go to "
                                           "OUTPUT.errors.jsonl")
      ->capture_default_str();
  add_model_options(*cmd, o.model);
  cmd->add_option("--input-format", o.input_format, "auto | text | jsonl (auto: by extension, else by the first "
                                                    "line)")
      ->capture_default_str();
  cmd->add_option("--format", o.format, "output format: jsonl")->capture_default_str();
  cmd->add_option("--stages", o.stages, "stages to keep, comma-separated: tokens, trace names, or per-layer names "
                                        "(default: tokens, logits, the last layer's attention_weights)")
      ->delimiter(',');
  cmd->add_option("--layers", o.layers, "layers for per-layer stage names (default: all)")->delimiter(',');
  cmd->add_option("--heads", o.heads, "heads kept of per-head stages (default: all)")->delimiter(',');
  cmd->add_option("--threads", o.threads, "worker threads (default: the number of cores)");
  cmd->add_option("--batch-size", o.batch_size, "items of equal length per mini-batch")->capture_default_str();
  cmd->add_option("--shard", o.shard, "K/N: only lines n with (n - 1) mod N = K - 1");
  cmd->add_flag("--resume", o.resume, "continue an interrupted run from OUTPUT.progress");
  cmd->add_flag("--quiet", o.quiet, "no progress and no summary on standard error");
  cmd->callback([&o] { run_batch(o); });
}

void add_merge_command(CLI::App& app, MergeOptions& o) {
  auto* cmd = app.add_subcommand("merge", "Join the outputs of `attn batch --shard K/N` (and their "
                                          ".errors.jsonl) into the output of a single run");
  cmd->add_option("SHARD_OUTPUTS", o.inputs, "the shards' output files")->required();
  cmd->add_option("-o,--output", o.output, "merged output (- for standard output)")->capture_default_str();
  cmd->callback([&o] { run_merge(o); });
}

}  // namespace attn::cli
