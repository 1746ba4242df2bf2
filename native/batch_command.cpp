// `attn batch`: the model over a file of any size, streaming, on a thread pool, records in input
// order; `attn merge`: shard outputs joined into the single run's output. docs/batch.md is
// the user's side: formats, vocabulary, memory bound, exit status, resume and sharding. The files
// (formats, manifest, putting outputs in place, merging) are in native/batch_io.{hpp,cpp}.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>

#include "core/batch/batch.hpp"
#include "core/backend/device_model.hpp"
#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"
#include "native/backends.hpp"
#include "native/batch_io.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"
#include "core/model/model_options.hpp"

namespace attn::cli {
namespace {

using batch::Item;
using batch_io::Manifest;
using batch_io::Progress;
using batch_io::Result;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --- input ---

class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    if (path == "-") return;
    if (batch_io::is_directory(path)) throw InputError("cannot read input '" + path + "': it is a folder");
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
    hash_.update(text);
    hash_.update("\n", 1);
    bytes_ += text.size() + 1;
    batch::strip_line(text, ++line_);
    return true;
  }
  size_t line() const { return line_; }
  // The identity of the lines read so far (each with a '\n'; the run's manifest and --resume check it).
  const batch::Fnv1a& hash() const { return hash_; }
  uint64_t bytes() const { return bytes_; }  // the bytes hashed
  // How much of the input has been read, in [0, 1]; 0 when unknown (standard input).
  double fraction() { return size_ > 0 ? double(file_.tellg()) / size_ : 0.0; }

 private:
  std::istream& stream() { return path_ == "-" ? std::cin : file_; }
  std::string path_;
  std::ifstream file_;
  double size_ = 0;
  size_t line_ = 0;
  uint64_t bytes_ = 0;
  batch::Fnv1a hash_;
};

batch::InputFormat input_format(const BatchOptions& o, const std::string& first_line) {
  if (o.input_format == "text") return batch::InputFormat::text;
  if (o.input_format == "jsonl") return batch::InputFormat::jsonl;
  return batch::format_from_name(o.input).value_or(batch::format_from_first_line(first_line));
}

const char* format_name(batch::InputFormat f) { return f == batch::InputFormat::text ? "text" : "jsonl"; }

// The vocabulary of a run without --vocab: a first pass over the whole input (every shard reads it
// all, so every shard builds the same one).
struct FirstPass {
  Vocab vocab;
  std::string input_hash;
};
FirstPass first_pass(const BatchOptions& o) {
  LineReader reader(o.input);
  FirstPass out;
  std::string text;
  const bool any = reader.next(text);
  const batch::InputFormat format = input_format(o, any ? text : "");
  for (bool more = any; more; more = reader.next(text))
    batch::add_sentence_words(out.vocab, batch::parse_line(text, format));
  out.input_hash = reader.hash().hex();
  return out;
}

// --- the model and what each record keeps ---

struct Job {
  TransformerModel model;
  std::shared_ptr<const LoadedModel> checkpoint;  // BERT, GPT-2 or a Llama-family decoder instead of the classifier
  Json model_identity;
  std::optional<Vocab> vocab;
  std::optional<std::string> first_pass_hash;  // the input's identity as the vocabulary pass read it
  MaskKind mask = MaskKind::padding;
  batch::StageSelection selection;
  std::vector<batch::StageLayout> layouts;
  size_t embedding_rows = 0, max_len = 0;
  // How items are tokenised and checked; built on use, as it points into this Job (which moves).
  batch::ItemRules rules() const { return {vocab ? &*vocab : nullptr, embedding_rows, max_len, checkpoint.get()}; }
  bool arrays = false;  // workers make arrays (safetensors, npy-dir) instead of JSON records
  std::string backend;  // --backend: the fast path on it (one per worker); empty: the exact path
};

// --backend: the fast path computes every stage but the scores (attention weights only when kept).
void check_backend(const BatchOptions& o, const Job& job) {
  if (o.backend.empty()) return;
  for (const std::string& name : job.selection.names)
    if (name.find(".scores") != std::string::npos)
      throw InputError("stage '" + name + "' is not computed with --backend (fused attention never stores the "
                       "scores); drop --backend for the exact path");
  std::string note;
  make_backend(o.backend, 1, note);  // fails here, before any output, when it cannot run
  if (!o.quiet) std::cerr << "attn batch: backend " << note << " (one per worker thread)\n";
}

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::istringstream in(v);
    for (std::string part; std::getline(in, part, ',');)
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

void check_options(const BatchOptions& o) {
  if (o.format != "jsonl" && o.format != "safetensors" && o.format != "npy-dir")
    throw InputError("--format expects jsonl, safetensors or npy-dir, got '" + o.format + "'");
  if (o.input_format != "auto" && o.input_format != "text" && o.input_format != "jsonl")
    throw InputError("--input-format expects auto, text or jsonl, got '" + o.input_format + "'");
  if (o.output == "-" && o.format != "jsonl")
    throw InputError("--format " + o.format + " needs an output " + (o.format == "npy-dir" ? "folder" : "file") +
                     " (-o PATH): only jsonl streams to standard output");
  if (o.resume && o.output == "-") throw InputError("--resume needs an output file (-o FILE)");
  if (o.model.train)
    throw InputError("--train is not meaningful for attn batch: dropout would make each item depend on the batching");
  if (!o.shard.empty()) batch::parse_shard(o.shard);
  if (o.output != "-") batch_io::check_output_target(o.output, o.format);
}

// A checkpoint (--model-dir): its own tokenizer and mask, the exact path.
Job load_checkpoint_job(const BatchOptions& o, const PretrainedFiles& files) {
  if (!o.backend.empty()) throw InputError("--backend computes the tutorial's classifier; a checkpoint runs the exact path");
  if (!o.save_vocab.empty()) throw InputError("--save-vocab writes the classifier's vocabulary; a checkpoint has its own");
  Job job;
  job.checkpoint = std::make_shared<const LoadedModel>(load_checkpoint(files));
  const LoadedModel& m = *job.checkpoint;
  job.model_identity = batch::model_identity(m);
  const Trace sample = batch::compute(m, {Item{1, nullptr, {}, {0}, {}}});
  job.selection = batch::select_stages(sample, batch::outline(m), split_list(o.stages), o.layers, o.heads);
  job.arrays = o.format != "jsonl";
  if (job.arrays) job.layouts = batch::stage_layouts(m, job.selection);
  job.embedding_rows = m.vocab_size();
  job.max_len = m.max_positions();
  return job;
}

Job load_job(const BatchOptions& o) {
  if (const auto files = pretrained_files(o.model)) return load_checkpoint_job(o, *files);
  Job job;
  job.vocab = model_vocab(o.model);
  TransformerConfig config = model_config(o.model);
  if (!job.vocab && o.input == "-") {
    if (config.vocab_size == 0)
      throw InputError("standard input needs --vocab (sentences) or --vocab-size or vocab_size in --config (token "
                       "ids): without --vocab the vocabulary is built in a first pass over INPUT, and standard "
                       "input cannot be read twice");
    if (o.input_format == "text")
      throw InputError("a text input on standard input needs --vocab (the vocabulary cannot be built in a first "
                       "pass over a stream); give the file's name instead of -");
  } else if (!job.vocab) {
    FirstPass pass = first_pass(o);
    if (pass.vocab.size() == 1 && config.vocab_size == 0)
      throw InputError("'" + o.input + "' has no sentence to build a vocabulary from: token ids need --vocab-size "
                       "or vocab_size in --config (or give --vocab)");
    job.vocab = std::move(pass.vocab);
    job.first_pass_hash = pass.input_hash;
  }
  TorchGenerator gen(parse_seed(o.model.seed.empty() ? "0" : o.model.seed));
  job.model = build_model(o.model, config, job.vocab ? job.vocab->size() : 0, gen);
  job.model_identity = batch::model_identity(job.model);
  job.mask = parse_mask_kind(o.model.mask);
  const Trace sample = batch::compute(job.model, {Item{1, nullptr, {}, {0}, {}}}, job.mask);
  job.selection = batch::select_stages(sample, job.model.config, split_list(o.stages), o.layers, o.heads);
  job.arrays = o.format != "jsonl";
  if (job.arrays) job.layouts = batch::stage_layouts(job.model, job.mask, job.selection);
  job.embedding_rows = job.model.config.vocab_size;
  job.max_len = job.model.config.max_len;
  job.backend = o.backend;
  check_backend(o, job);
  return job;
}

// What decides the output bytes (not --threads, --batch-size, --quiet): a resumed run must match it.
// The input's content is checked separately (Progress::input_hash).
std::string fingerprint(const BatchOptions& o) {
  const ModelOptions& m = o.model;
  return Json{{"input", o.input},          {"input_format", o.input_format}, {"format", o.format},
              {"stages", o.stages},        {"layers", o.layers},             {"heads", o.heads},
              {"shard", o.shard},          {"config", m.config_file},        {"seed", m.seed},
              {"weights", m.weights},      {"vocab", m.vocab},               {"mask", m.mask},
              {"model_dir", m.model_dir},  {"merges", m.merges},
              {"sizes", {m.vocab_size, m.d_model, m.num_heads, m.num_layers, m.d_ff, m.max_len, m.num_classes,
                         m.activation, m.pooling, m.layer_style}},
              {"flags", {m.norm_first, m.post_norm, m.encoder_only}},
              {"backend", o.backend}}
      .dump();
}

// --- checkpoints ---

// The model and vocabulary a checkpoint was taken with: files behind --weights, --vocab or --config may
// change between runs, and without --vocab the vocabulary comes from the input.
Json job_identity(const Job& job) {
  return {{"model", job.model_identity},
          {"vocab", batch::vocab_identity(job.vocab ? &*job.vocab : nullptr)},
          {"backend", job.backend}};
}

std::optional<Progress> saved_progress(const BatchOptions& o, const Job& job) {
  return batch_io::read_progress(o.output, fingerprint(o), job_identity(job));
}

// Makes what is written durable, then records how far it goes.
void checkpoint(const BatchOptions& o, const Job& job, batch_io::Sink& sink, Progress& p) {
  if (o.output == "-") return;
  p.files = sink.sync();
  batch_io::write_progress(o.output, fingerprint(o), job_identity(job), p);
}

// --- computing: batches on worker threads, results collected by line ---

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
  void done(size_t line, Result result) {
    std::lock_guard<std::mutex> lock(mutex_);
    results_[line] = std::move(result);
  }
  // The result of `line`, once computed (waiting for it if `wait`); rethrows a worker's failure.
  std::optional<Result> take(size_t line, bool wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wait) results_ready_.wait(lock, [&] { return failure_ || results_.count(line); });
    if (failure_) std::rethrow_exception(failure_);
    auto it = results_.find(line);
    if (it == results_.end()) return std::nullopt;
    Result result = std::move(it->second);
    results_.erase(it);
    return result;
  }

 private:
  void work() {
    std::unique_ptr<Backend> backend;  // --backend: this worker's own (a GL context belongs to one thread)
    std::unique_ptr<DeviceModel> device;
    for (;;) {
      std::vector<Item> items;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        jobs_ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        items = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::vector<std::pair<size_t, Result>> results;  // by line
      std::exception_ptr failure;
      try {
        if (!job_.backend.empty() && !device) {
          std::string note;
          backend = make_backend(job_.backend, 1, note);
          device = std::make_unique<DeviceModel>(*backend, job_.model);
          device->record_only(job_.selection.names);
        }
        auto add = [&](const Item& item, const Trace& trace, size_t row) {
          batch::ItemArrays arrays = batch::item_arrays(item, trace, row, job_.selection);
          Result r;
          if (job_.arrays)
            r.arrays = std::move(arrays);
          else
            r.record = batch::item_record(arrays, job_.selection);
          results.emplace_back(item.line, std::move(r));
        };
        if (device && device->backend().packs_sequences()) {
          const std::vector<Trace> traces = batch::compute_packed(items, job_.mask, *device);
          for (size_t i = 0; i < items.size(); ++i) add(items[i], traces[i], 0);
        } else {  // items of one length (dispatch)
          const Trace trace = job_.checkpoint ? batch::compute(*job_.checkpoint, items)
                                              : batch::compute(job_.model, items, job_.mask, device.get());
          for (size_t row = 0; row < items.size(); ++row) add(items[row], trace, row);
        }
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure && !failure_) failure_ = failure;
        for (auto& [line, result] : results) results_[line] = std::move(result);
      }
      results_ready_.notify_all();
    }
  }

  const Job& job_;
  std::mutex mutex_;
  std::condition_variable jobs_ready_, results_ready_;
  std::deque<std::vector<Item>> jobs_;
  std::map<size_t, Result> results_;
  std::exception_ptr failure_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// --- the run ---

class Run {
 public:
  // `resuming`: `start` is a saved checkpoint (else a new run).
  Run(const BatchOptions& o, const Job& job, Progress start, bool resuming)
      : o_(o), job_(job), resuming_(resuming), shard_(o.shard.empty() ? batch::Shard{} : batch::parse_shard(o.shard)),
        threads_(o.threads.empty() ? std::max(1u, std::thread::hardware_concurrency())
                                   : parse_size("--threads", o.threads, 1)),
        batch_size_(parse_size("--batch-size", o.batch_size, 1)),
        window_(std::max<size_t>(256, 4 * batch_size_ * threads_)), resume_from_(start.next_line),
        resume_hash_(start.input_hash), progress_(std::move(start)), reader_(o.input),
        show_progress_(!o.quiet && ::isatty(2)) {}

  // Returns the exit status: 0, or 3 when some items failed.
  int operator()() {
    std::string text;
    const bool any = reader_.next(text);
    const batch::InputFormat format = input_format(o_, any ? text : "");
    if (any && format == batch::InputFormat::text && !job_.vocab && !job_.checkpoint)
      throw InputError("a text input needs --vocab (JSON Lines with \"ids\" work without); on standard input the "
                       "vocabulary cannot be built in a first pass");
    if (o_.output != "-") batch_io::prepare_output(o_.output, o_.format, resuming_, progress_.finishing);
    progress_.finishing = false;
    const std::unique_ptr<batch_io::Sink> sink = batch_io::make_sink(
        {o_.output, o_.format, &job_.selection, job_.layouts}, resuming_ ? progress_.files : Json::object());
    sink_ = sink.get();
    batch_io::crash_point("after-start");
    if (!o_.save_vocab.empty())
      write_file_atomically(o_.save_vocab, [&](std::ostream& s) { s << batch::vocab_json(*job_.vocab); });
    Pool pool(job_, threads_);
    pool_ = &pool;
    for (bool more = any; more; more = reader_.next(text)) {
      check_resumed_input();
      read_line(text, format);
      write_ready(window_);
    }
    if (reader_.line() + 1 < resume_from_)
      throw InputError("'" + o_.input + "' has " + std::to_string(reader_.line()) +
                       " lines, fewer than the interrupted run had done; run without --resume");
    if (job_.first_pass_hash && *job_.first_pass_hash != reader_.hash().hex())
      throw InputError("'" + o_.input + "' changed while attn batch was reading it");
    dispatch();
    write_ready(0);
    progress_.next_line = reader_.line() + 1;
    progress_.input_hash = reader_.hash().hex();
    progress_.finishing = true;
    checkpoint(o_, job_, *sink_, progress_);
    batch_io::crash_point("before-commit");
    Manifest manifest;
    manifest.format = o_.format;
    manifest.shard = shard_;
    manifest.items = progress_.items;
    manifest.failed = progress_.failed;
    manifest.run = run_identity(format);
    sink_->finish(manifest);
    if (o_.output != "-") {
      batch_io::remove_path(batch_io::progress_path(o_.output));
      sink_->cleanup();
    }
    summary();
    return progress_.failed ? 3 : 0;
  }

 private:
  // What makes the records what they are; equal for every shard of one run (attn merge checks it).
  Json run_identity(batch::InputFormat format) const {
    return {{"format", o_.format},
            {"input", {{"lines", reader_.line()}, {"bytes", reader_.bytes()}, {"fnv1a64", reader_.hash().hex()}}},
            {"input_format", format_name(format)},
            {"model", job_.model_identity},
            {"vocab", batch::vocab_identity(job_.vocab ? &*job_.vocab : nullptr)},
            {"mask", o_.model.mask},
            {"stages", job_.selection.names},
            {"tokens", job_.selection.tokens},
            {"heads", job_.selection.heads},
            {"backend", job_.backend}};
  }

  // A resumed run continues only on the input it was interrupted on.
  void check_resumed_input() const {
    if (reader_.line() + 1 == resume_from_ && reader_.hash().hex() != resume_hash_)
      throw InputError("'" + o_.input + "' is not the input of the interrupted run (its first " +
                       std::to_string(reader_.line()) + " lines differ); run without --resume");
  }

  void read_line(const std::string& text, batch::InputFormat format) {
    const size_t line = reader_.line();
    const bool mine = shard_.owns(line) && line >= resume_from_;
    // Every shard reads every id, so a duplicate is found whichever shard holds the first one.
    if (!mine && format == batch::InputFormat::text) return;
    batch::RawItem raw = batch::parse_line(text, format);
    const auto first = ids_.claim(raw.id, line);
    if (!mine) return;
    order_.emplace_back(line, reader_.hash().hex());
    if (raw.error.empty() && first) raw.error = "duplicate id (first on line " + std::to_string(*first) + ")";
    const Json id = raw.id;
    try {
      if (raw.error.empty()) pending_.push_back(batch::make_item(std::move(raw), line, job_.rules()));
    } catch (const InputError& e) {
      raw.error = e.what();
    }
    if (!raw.error.empty()) pool_->done(line, Result{true, batch::error_record(line, id, raw.error), std::nullopt});
    if (pending_.size() >= window_) dispatch();
  }

  void dispatch() {
    // The CPU backend packs items of any lengths; others take one length per batch (a worker whose
    // `auto` backend turned out to be the CPU computes those packed as well).
    auto batches = job_.backend == "cpu" ? batch::group_by_size(std::move(pending_), batch_size_)
                                         : batch::group_by_length(std::move(pending_), batch_size_);
    for (auto& items : batches) pool_->submit(std::move(items));
    pending_.clear();
  }

  // Writes the results that are next in line order; waits while more than `keep` lines are unwritten
  // (the memory bound), dispatching what is pending first so the wait can end.
  void write_ready(size_t keep) {
    while (!order_.empty()) {
      const bool wait = order_.size() > keep;
      if (wait && !pending_.empty()) dispatch();
      auto result = pool_->take(order_.front().first, wait);
      if (!result) break;
      if (result->failed) {
        sink_->error(result->record);
        ++progress_.failed;
      } else {
        sink_->item(*result);
        ++progress_.items;
      }
      progress_.next_line = order_.front().first + 1;
      progress_.input_hash = std::move(order_.front().second);
      order_.pop_front();
      tick();
    }
  }

  void tick() {
    if (seconds_since(last_checkpoint_) >= checkpoint_seconds_) {
      checkpoint(o_, job_, *sink_, progress_);
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
                 progress_.failed && o_.output != "-" ? (" (see " + o_.output + ".errors.jsonl)").c_str() : "",
                 elapsed, double(progress_.items) / std::max(elapsed, 1e-9));
  }

  const BatchOptions& o_;
  const Job& job_;
  const bool resuming_;
  const batch::Shard shard_;
  const size_t threads_, batch_size_, window_;
  const size_t resume_from_;        // lines before it are in the working files already
  const std::string resume_hash_;  // and their identity
  Progress progress_;
  LineReader reader_;
  const bool show_progress_;
  batch::IdRegistry ids_;
  std::vector<Item> pending_;                          // read, not yet given to the pool
  std::deque<std::pair<size_t, std::string>> order_;  // lines read and not yet written (with the input's
                                                       // identity up to each), in order
  batch_io::Sink* sink_ = nullptr;
  Pool* pool_ = nullptr;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_checkpoint_ = Clock::now(), last_display_ = Clock::now();
  const double checkpoint_seconds_ = batch_io::checkpoint_seconds();
};

void run_batch(BatchOptions& o) {
  check_options(o);
  if (!o.save_vocab.empty() && !o.model.vocab.empty() && o.model.vocab == o.save_vocab)
    throw InputError("--save-vocab would overwrite --vocab '" + o.model.vocab + "'");
  const Job job = load_job(o);
  const std::optional<Progress> saved = o.resume ? saved_progress(o, job) : std::nullopt;
  if (!o.save_vocab.empty() && !job.vocab)
    throw InputError("--save-vocab: this run has no vocabulary (token ids on standard input without --vocab)");
  o.exit_status = Run(o, job, saved.value_or(Progress{}), saved.has_value())();
}

// --- attn merge ---

// The first key of two runs' identities that differs, in words.
std::string difference(const Json& a, const Json& b) {
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b.at(key) != value) {
      static const std::map<std::string, std::string> words = {
          {"input", "their inputs differ"},
          {"model", "their models differ (config, seed or weights)"},
          {"vocab", "their vocabularies differ"},
          {"format", "their output formats differ"},
          {"input_format", "their input formats differ"},
          {"mask", "their masks differ"},
          {"tokens", "their stages differ (tokens)"}};
      const auto it = words.find(key);
      return it != words.end() ? it->second : "their " + key + " differ";
    }
  return "their runs differ";
}

// Reads every shard's manifest and checks that together they are the whole of one run, each complete.
std::vector<batch_io::ShardOutput> check_shards(const std::vector<std::string>& paths, const std::string& output) {
  std::vector<batch_io::ShardOutput> shards;
  for (const auto& path : paths) {
    if (!batch_io::exists(path) && batch_io::exists(path + ".progress"))
      throw InputError("cannot read '" + path + "': its run is unfinished (there is '" + path +
                       ".progress'; complete it with attn batch --resume)");
    if (!batch_io::exists(path)) throw InputError("cannot read '" + path + "': no such file or folder");
    shards.push_back({path, batch_io::read_manifest(path)});
  }
  const Manifest& first = shards.front().manifest;
  const size_t count = first.shard.count;
  std::map<size_t, std::string> by_index;
  for (const auto& s : shards) {
    const Manifest& m = s.manifest;
    if (m.run != first.run)
      throw InputError("'" + s.path + "' is not from the same run as '" + shards.front().path + "': " +
                       difference(first.run, m.run));
    if (m.shard.count != count)
      throw InputError("'" + s.path + "' is shard " + std::to_string(m.shard.index) + "/" +
                       std::to_string(m.shard.count) + " but '" + shards.front().path + "' is of " +
                       std::to_string(count) + " shards");
    const auto [it, inserted] = by_index.emplace(m.shard.index, s.path);
    if (!inserted)
      throw InputError("'" + it->second + "' and '" + s.path + "' are both shard " + std::to_string(m.shard.index) +
                       "/" + std::to_string(count));
  }
  std::string missing;
  for (size_t k = 1; k <= count; ++k)
    if (!by_index.count(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k) + "/" + std::to_string(count);
  if (!missing.empty())
    throw InputError("shard" + std::string(missing.find(',') == std::string::npos ? " " : "s ") + missing +
                     " of the run " + (missing.find(',') == std::string::npos ? "is" : "are") +
                     " missing: attn merge needs all " + std::to_string(count));
  // Complete: each file as large as its manifest says.
  for (const auto& s : shards) {
    const Manifest& m = s.manifest;
    auto check_size = [&](const std::string& file, const char* key) {
      if (!m.files.contains(key))
        throw InputError("'" + batch_io::manifest_path(s.path) + "' is damaged (no size of " + key + ")");
      const uint64_t want =
          json_integer<uint64_t>(m.files.at(key), "'" + batch_io::manifest_path(s.path) + "': the size of " + key, 0);
      if (!batch_io::exists(file)) throw InputError("cannot read '" + file + "': '" + s.path + "' is incomplete");
      const uint64_t got = batch_io::size_of(file);
      if (got != want)
        throw InputError("'" + file + "' has " + std::to_string(got) + " bytes, its manifest says " +
                         std::to_string(want) + ": incomplete or changed since its run");
    };
    check_size(s.path + ".errors.jsonl", "errors");
    if (batch_io::is_npy_dir(m.format)) {
      if (!batch_io::is_directory(s.path)) throw InputError("'" + s.path + "' is not a folder (an npy-dir output)");
      check_size(s.path + "/index.jsonl", "index.jsonl");
    } else {
      if (batch_io::is_directory(s.path)) throw InputError("'" + s.path + "' is a folder, not a " + m.format + " file");
      check_size(s.path, "output");
    }
  }
  if (output != "-") {
    std::error_code ec;
    for (const auto& s : shards)
      for (const std::string& mine : {output, output + ".errors.jsonl", output + ".manifest.json"})
        if (std::filesystem::equivalent(s.path, mine, ec) ||
            std::filesystem::equivalent(s.path + ".errors.jsonl", mine, ec))
          throw InputError("the merged output '" + output + "' would overwrite the shard '" + s.path + "'");
  }
  return shards;
}

// Each index line's arrays come from the shard the line comes from: hard links where the file
// system allows, copies otherwise.
void merge_npy_dirs(const std::vector<batch_io::ShardOutput>& shards, const std::string& into) {
  batch_io::make_directory(into);
  std::vector<std::string> indexes;
  for (const auto& s : shards) indexes.push_back(s.path + "/index.jsonl");
  const Json& stages = shards.front().manifest.run.at("stages");
  batch_io::File index(into + "/index.jsonl", 0);
  batch_io::merge_records(indexes, [&](const std::string& record, size_t shard) {
    const std::string line = std::to_string(batch::record_line(record));
    for (const auto& stage : stages) {
      const std::string name = line + "." + stage.get<std::string>() + ".npy";
      const std::string source = shards[shard].path + "/" + name, target = into + "/" + name;
      if (!batch_io::exists(source))
        throw InputError("'" + source + "' is missing: '" + shards[shard].path + "' is incomplete");
      std::error_code ec;
      std::filesystem::create_hard_link(source, target, ec);
      if (ec) {
        ec.clear();
        std::filesystem::copy_file(source, target, std::filesystem::copy_options::overwrite_existing, ec);
      }
      if (ec) throw InputError("cannot write '" + target + "': " + ec.message());
    }
    index.write(record);
  });
  index.sync();
  batch_io::sync_folder(into);
}

void merge_into(const std::vector<batch_io::ShardOutput>& shards, const std::vector<std::string>& paths,
                const std::vector<std::string>& errors, const std::string& main_ready, const std::string& errors_ready,
                Manifest& merged);

// The shard outputs given, without the errors files a pattern such as out.*.jsonl also matches.
std::vector<std::string> shard_paths(const std::vector<std::string>& inputs) {
  static const std::string suffix = ".errors.jsonl";
  std::vector<std::string> out;
  for (const auto& p : inputs) {
    const bool errors_file = p.size() > suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                             std::count(inputs.begin(), inputs.end(), p.substr(0, p.size() - suffix.size())) != 0;
    if (!errors_file) out.push_back(p);
  }
  return out;
}

void run_merge(const MergeOptions& o) {
  const std::vector<batch_io::ShardOutput> shards = check_shards(shard_paths(o.inputs), o.output);
  std::vector<std::string> paths, errors;
  Manifest merged = shards.front().manifest;
  merged.shard = batch::Shard{};
  merged.items = merged.failed = 0;
  for (const auto& s : shards) {
    paths.push_back(s.path);
    errors.push_back(s.path + ".errors.jsonl");
    merged.items += s.manifest.items;
    merged.failed += s.manifest.failed;
  }
  const std::string& format = merged.format;
  if (o.output == "-") {
    if (format != "jsonl")
      throw InputError("merging " + format + " outputs needs an output path (-o PATH): only jsonl streams");
    batch_io::merge_records(paths, [](const std::string& r, size_t) { std::cout << r; });
    batch_io::merge_records(errors, [](const std::string& r, size_t) { std::cerr << r; });
    return print("");
  }
  batch_io::check_output_target(o.output, format);
  const std::string main_ready = o.output + ".merging", errors_ready = o.output + ".errors.jsonl.merging";
  batch_io::remove_path(main_ready);
  try {
    merge_into(shards, paths, errors, main_ready, errors_ready, merged);
    batch_io::commit(o.output, format, main_ready, errors_ready, merged);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(main_ready, ec);
    std::filesystem::remove(errors_ready, ec);
    throw;
  }
}

// Writes the merged output and errors to their temporary names.
void merge_into(const std::vector<batch_io::ShardOutput>& shards, const std::vector<std::string>& paths,
                const std::vector<std::string>& errors, const std::string& main_ready, const std::string& errors_ready,
                Manifest& merged) {
  const std::string& format = merged.format;
  batch_io::File errors_out(errors_ready, 0);
  batch_io::merge_records(errors, [&](const std::string& r, size_t) { errors_out.write(r); });
  errors_out.sync();
  if (format == "jsonl") {
    batch_io::File out(main_ready, 0);
    batch_io::merge_records(paths, [&](const std::string& r, size_t) { out.write(r); });
    out.sync();
    merged.files = {{"output", out.bytes()}, {"errors", errors_out.bytes()}};
  } else if (format == "safetensors") {
    batch_io::File out(main_ready, 0);
    batch_io::SafetensorsMerge(shards).write(out, merged);
    out.sync();
    merged.files = {{"output", out.bytes()}, {"errors", errors_out.bytes()}};
  } else {
    merge_npy_dirs(shards, main_ready);
    merged.files = {{"index.jsonl", batch_io::size_of(main_ready + "/index.jsonl")}, {"errors", errors_out.bytes()}};
  }
}

// Every failure as a message and exit 2 (main() reports InputError): never a crash.
template <class F>
void reported(const char* command, F&& f) {
  try {
    f();
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(std::string(command) + ": " + e.what());
  }
}

}  // namespace

void add_batch_command(CLI::App& app, BatchOptions& o) {
  auto* cmd = app.add_subcommand("batch", "Run the model over a file of any size (one sentence per line, or "
                                          "JSON Lines), streaming, one record per item in input order");
  cmd->add_option("INPUT", o.input, "text (one sentence per line) or JSON Lines ({\"id\", \"text\" or \"ids\"}); "
                                    "- for standard input")
      ->required();
  cmd->add_option("-o,--output", o.output, "output file (npy-dir: folder; - for standard output); bad items go to "
                                           "OUTPUT.errors.jsonl, the run's identity to OUTPUT.manifest.json")
      ->capture_default_str();
  add_model_options(*cmd, o.model);
  add_pretrained_options(*cmd, o.model);
  cmd->add_option("--input-format", o.input_format, "auto | text | jsonl (auto: by extension, else by the first "
                                                    "line)")
      ->capture_default_str();
  cmd->add_option("--format", o.format, "output format: jsonl | safetensors (one file of arrays) | npy-dir (a folder "
                                        "of .npy files)")
      ->capture_default_str();
  cmd->add_option("--save-vocab", o.save_vocab, "write the vocabulary used (built from INPUT without "
                                                       "--vocab) as JSON {token: id}");
  cmd->add_option("--stages", o.stages, "stages to keep, comma-separated: tokens, trace names, or per-layer names "
                                        "(default: tokens, logits, the last layer's attention_weights)")
      ->delimiter(',');
  cmd->add_option("--layers", o.layers, "layers for per-layer stage names (default: all)")->delimiter(',');
  cmd->add_option("--heads", o.heads, "heads kept of per-head stages (default: all)")->delimiter(',');
  cmd->add_option("--threads", o.threads, "worker threads (default: the number of cores)");
  cmd->add_option("--backend", o.backend,
                  "compute with the fast path on cpu, gl, cuda or auto (one per worker) instead of the exact "
                  "PyTorch-order path; results then match PyTorch within 1e-4, and scores are not available");
  cmd->add_option("--batch-size", o.batch_size, "items of equal length per mini-batch")->capture_default_str();
  cmd->add_option("--shard", o.shard, "K/N: only lines n with (n - 1) mod N = K - 1");
  cmd->add_flag("--resume", o.resume, "continue an interrupted run from OUTPUT.progress");
  cmd->add_flag("--quiet", o.quiet, "no progress and no summary on standard error");
  cmd->callback([&o] {
    reported("attn batch", [&] {
      resolve_model(o.model, o.quiet);
      run_batch(o);
    });
  });
}

void add_merge_command(CLI::App& app, MergeOptions& o) {
  auto* cmd = app.add_subcommand("merge", "Join the outputs of `attn batch --shard K/N` (all N of one run, any "
                                          "format, with their .errors.jsonl) into the output of a single run");
  cmd->add_option("SHARD_OUTPUTS", o.inputs, "the shards' outputs (files, or folders for npy-dir)")->required();
  cmd->add_option("-o,--output", o.output, "merged output (- for standard output, jsonl only)")->capture_default_str();
  cmd->callback([&o] { reported("attn merge", [&] { run_merge(o); }); });
}

}  // namespace attn::cli
