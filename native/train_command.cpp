// attn train: the classifier trained on a built-in task or a labelled file, as a plain PyTorch loop
// would train it (core/train/train.hpp), with a log, checkpoints that --resume continues to the same bytes,
// and the weights + config + vocabulary triple that attn encode, attn batch and the playground take.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/batch/batch.hpp"
#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"
#include "core/base/threads.hpp"
#include "core/train/train.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"
#include "core/train/train_run.hpp"
#include "core/model/gpt2.hpp"

namespace attn::cli {
namespace {

volatile std::sig_atomic_t interrupted = 0;
extern "C" void on_interrupt(int) { interrupted = 1; }

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

void save_checkpoint(const std::string& dir, const train::Training& trainer, const Json& run) {
  write_safetensors(checkpoint_path(dir), trainer.checkpoint_tensors(),
                    {{"attnlab", "train checkpoint"}, {"run", run.dump()}, {"state", trainer.checkpoint_meta().dump()}});
}

// Reads the checkpoint through the same checks as any weights file, then its identity.
void resume(const std::string& dir, train::Training& trainer, const Json& run) {
  const std::string path = checkpoint_path(dir);
  std::map<std::string, std::string> meta;
  const auto tensors = read_safetensors(path, &meta);
  if (meta["attnlab"] != "train checkpoint") throw InputError("'" + path + "' is not an attn train checkpoint");
  Json saved_run, state;
  try {
    saved_run = Json::parse(meta["run"]);
    state = Json::parse(meta["state"]);
  } catch (const Json::exception&) {
    throw InputError("'" + path + "': its run description is not valid JSON");
  }
  for (const auto& [key, value] : run.items())
    if (!saved_run.contains(key) || saved_run[key] != value)
      throw InputError("'" + path + "' was written by another run: its " + key +
                       " differs from this run's; start without --resume, or with the same options and files");
  trainer.restore(tensors, state);
}

// The log so far, cut back to the records of the first `steps` steps (a resumed run rewrites the rest).
void cut_log(const std::string& path, size_t steps) {
  std::istringstream in(read_text_file(path, "log"));
  std::string kept, line;
  while (std::getline(in, line)) {
    Json r;
    try {
      r = Json::parse(line);
    } catch (const Json::exception&) {
      break;  // a line cut short when the run was killed
    }
    if (!r.contains("step") || !r["step"].is_number_unsigned() || r["step"] > steps) break;
    kept += line + '\n';
  }
  write_file_atomically(path, [&](std::ostream& s) { s << kept; });
}

std::string duration(double seconds) {
  const long s = long(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", s / 60, s % 60);
  return text;
}

class Run {
 public:
  Run(const TrainOptions& o, train::RunData data, train::Training& trainer)
      : o_(o), data_(std::move(data)), trainer_(trainer), progress_(!o.quiet && isatty(STDERR_FILENO)) {}

  // Steps until the end or an interruption; returns the exit status.
  int operator()(size_t eval_every) {
    if (!o_.log.empty()) log_.open(o_.log, std::ios::binary | std::ios::app);
    if (!o_.log.empty() && !log_) throw InputError("cannot write log '" + o_.log + "'");
    const size_t total = trainer_.settings().steps, every = parse_size("--checkpoint-every", o_.checkpoint_every, 1);
    while (trainer_.steps_done() < total) {
      last_ = trainer_.step();
      write(train::record_json(last_));
      const size_t done = trainer_.steps_done();
      if (!data_.sets.val.empty() && (done == total || (eval_every && done % eval_every == 0))) {
        val_ = trainer_.evaluate(data_.sets.val);
        val_->step = done;
        write(train::record_json(*val_));
      }
      const bool stopping = interrupted || stopped_;
      if (!o_.checkpoint.empty() && (done % every == 0 || done == total || stopping))
        save_checkpoint(o_.checkpoint, trainer_, run_);
      show(done, total);
      if (stopping) return stop(done);
    }
    if (progress_) std::cerr << '\n';
    return 0;
  }

  void set_identity(Json run) { run_ = std::move(run); }
  const train::StepRecord& last() const { return last_; }
  const std::optional<train::EvalRecord>& validation() const { return val_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;

  void write(const Json& record) {
    if (o_.on_record && !o_.on_record(record)) stopped_ = true;
    if (!log_.is_open()) return;
    log_ << record.dump() << '\n';
    log_.flush();
    if (!log_) throw InputError("cannot write log '" + o_.log + "'");
  }

  void show(size_t done, size_t total) {
    if (!progress_ || (Clock::now() - shown_ < std::chrono::milliseconds(200) && done != total)) return;
    shown_ = Clock::now();
    const double rate = double(done - first_) / std::max(seconds(), 1e-9);
    char line[160];
    std::snprintf(line, sizeof line, "\rstep %zu/%zu  loss %.4f  accuracy %5.1f%%  %.1f steps/s  ETA %s   ", done,
                  total, double(last_.loss), 100 * last_.accuracy, rate, duration(double(total - done) / rate).c_str());
    std::cerr << line << std::flush;
  }

  int stop(size_t done) {
    std::cerr << (progress_ ? "\n" : "") << "attn: interrupted after step " << done
              << (o_.checkpoint.empty() ? "; nothing written (give --checkpoint DIR to keep a run)"
                                        : "; checkpoint in '" + o_.checkpoint + "' (continue with --resume)")
              << '\n';
    return 130;
  }

  const TrainOptions& o_;
  train::RunData data_;
  train::Training& trainer_;
  const bool progress_;
  std::ofstream log_;
  Json run_;
  train::StepRecord last_;
  std::optional<train::EvalRecord> val_;
  bool stopped_ = false;  // on_record asked to stop
  const Clock::time_point start_ = Clock::now();
  Clock::time_point shown_{};
  size_t first_ = trainer_.steps_done();
};

void write_outputs(const TrainOptions& o, const train::Trainer& trainer, const Vocab& vocab) {
  if (!o.save_weights.empty()) write_safetensors(o.save_weights, state_dict(trainer.model()));
  if (!o.save_config.empty())
    write_file_atomically(o.save_config, [&](std::ostream& s) { s << config_to_json(trainer.model().config).dump(2) << '\n'; });
  if (!o.save_vocab.empty()) write_file_atomically(o.save_vocab, [&](std::ostream& s) { s << batch::vocab_json(vocab); });
  if (!o.save_grads.empty()) {
    std::vector<NamedTensor> grads;
    for (auto& t : state_dict(trainer.gradients()))
      if (t.name != "pos_encoding.pe") grads.push_back(std::move(t));  // a buffer: no gradient
    write_safetensors(o.save_grads, grads);
  }
}

// A language model's files: the checkpoint as save_pretrained writes it (config.json, model.safetensors)
// and its tokenizer's, each file written whole or not at all.
void write_lm_outputs(const TrainOptions& o, const train::LmTrainer& trainer, const BytePairTokenizer& tokenizer) {
  const std::string config = gpt2_config_json(trainer.model().config).dump(2) + "\n";
  if (!o.save_weights.empty()) write_safetensors(o.save_weights, gpt2_state_dict(trainer.model()), {{"format", "pt"}});
  if (!o.save_config.empty()) write_text(o.save_config, config);
  if (!o.save_vocab.empty()) write_text(o.save_vocab, tokenizer.vocab_json());
  if (!o.save_merges.empty()) write_text(o.save_merges, tokenizer.merges_txt());
  if (!o.save_grads.empty()) write_safetensors(o.save_grads, gpt2_state_dict(trainer.gradients()));
  if (o.save_model_dir.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(o.save_model_dir, error);
  if (error) throw InputError("cannot make model folder '" + o.save_model_dir + "': " + error.message());
  const std::string dir = o.save_model_dir + "/";
  write_safetensors(dir + "model.safetensors", gpt2_state_dict(trainer.model()), {{"format", "pt"}});
  write_text(dir + "config.json", config);
  write_text(dir + "vocab.json", tokenizer.vocab_json());
  write_text(dir + "merges.txt", tokenizer.merges_txt());
  const Json special = {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}, {"unk_token", "<|endoftext|>"}};
  Json tokenizer_config = special;
  tokenizer_config.update({{"add_prefix_space", false}, {"model_max_length", trainer.model().config.max_positions},
                           {"tokenizer_class", "GPT2Tokenizer"}});
  write_text(dir + "tokenizer_config.json", tokenizer_config.dump(2) + "\n");
  write_text(dir + "special_tokens_map.json", special.dump(2) + "\n");
}

void summarize(const Run& run, size_t steps) {
  std::printf("trained %zu steps in %.1f s: loss %.4f, accuracy %.1f%% on the last batch", steps, run.seconds(),
              double(run.last().loss), 100 * run.last().accuracy);
  if (run.validation())
    std::printf("; validation loss %.4f, accuracy %.1f%%", double(run.validation()->loss),
                100 * run.validation()->accuracy);
  std::printf("\n");
}

void run_train(TrainOptions& o) {
  train::TrainRun r = train::prepare_train_run(o);
  if (!o.save_data.empty())
    write_file_atomically(o.save_data, [&](std::ostream& s) { s << train::data_jsonl(r.data.sets.train); });
  if (!o.save_val_data.empty())
    write_file_atomically(o.save_val_data, [&](std::ostream& s) { s << train::data_jsonl(r.data.sets.val); });
  train::Training& trainer = r.training();
  if (!o.checkpoint.empty()) {
    std::error_code error;
    std::filesystem::create_directories(o.checkpoint, error);
    if (error) throw InputError("cannot make checkpoint folder '" + o.checkpoint + "': " + error.message());
  }
  if (o.resume) {
    resume(o.checkpoint, trainer, r.identity);
    if (!o.log.empty()) cut_log(o.log, trainer.steps_done());
  } else if (!o.log.empty()) {
    write_file_atomically(o.log, [](std::ostream&) {});
  }
  const Vocab vocab = r.data.vocab;
  const auto tokenizer = r.data.tokenizer;
  Run run(o, std::move(r.data), trainer);
  run.set_identity(r.identity);
  if (!o.on_record) {
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
  }
  o.exit_status = run(r.eval_every);
  if (o.exit_status != 0) return;
  if (r.lm_trainer)
    write_lm_outputs(o, *r.lm_trainer, *tokenizer);
  else
    write_outputs(o, *r.trainer, vocab);
  if (!o.quiet) summarize(run, r.settings.steps);
}

}  // namespace

void add_train_command(CLI::App& app, TrainOptions& o) {
  CLI::App* cmd = app.add_subcommand("train", "train the classifier or a GPT-2 language model on a built-in task or "
                                              "a data file, as PyTorch would (same seed, same losses)");
  o.model.mask = "";  // empty: the task's mask, else padding
  add_model_options(*cmd, o.model, true);
  add_pretrained_options(*cmd, o.model);
  std::string task_names, lm_task_names;
  for (const auto& t : train::tasks()) task_names += (task_names.empty() ? "" : ", ") + t.name;
  for (const auto& t : train::lm_tasks()) lm_task_names += (lm_task_names.empty() ? "" : ", ") + t.name;
  cmd->add_option("--task", o.task, "built-in task: the classifier's " + task_names + " (docs/training.md); a language "
                                    "model's " + lm_task_names + " (docs/training-lm.md)");
  cmd->add_option("--data", o.data, "labelled data: JSON Lines {\"text\"|\"ids\", \"label\"} or TSV label<TAB>sentence; "
                                    "a language model's: JSON Lines {\"text\"|\"ids\"} or a .txt text");
  cmd->add_flag("--attention-only", o.attention_only, "language tasks: a model without MLPs (GPT-2 with n_inner 0: each "
               "block adds attention and a bias), as Olsson et al.'s induction heads form in");
  cmd->add_option("--seq-len", o.seq_len, "language models: tokens per training window (default: the task's, else "
                                          "n_positions up to 128)");
  cmd->add_option("--val-data", o.val_data, "validation data, in the same formats");
  cmd->add_option("--val-fraction", o.val_fraction, "hold out this share of --data for validation (seeded)");
  cmd->add_option("--save-data", o.save_data, "write the training items as JSON Lines (a --task's, or what "
                                              "--val-fraction left of --data)");
  cmd->add_option("--save-val-data", o.save_val_data, "write the validation items as JSON Lines");
  auto* steps = cmd->add_option("--steps", o.steps, "optimizer steps (default: the task's, else 1000)");
  cmd->add_option("--epochs", o.epochs, "passes over the training data, as steps")->excludes(steps);
  cmd->add_option("--batch-size", o.batch_size, "items per step (default: the task's, else 32)");
  cmd->add_option("--optimizer", o.optimizer, "sgd | adam | adamw (default: the task's, else adamw)");
  cmd->add_option("--lr", o.lr, "learning rate (default: the task's, else 0.001)");
  cmd->add_option("--weight-decay", o.weight_decay, "weight decay (default: torch.optim's: 0, AdamW 0.01)");
  cmd->add_option("--momentum", o.momentum, "SGD momentum (default 0)");
  cmd->add_option("--dampening", o.dampening, "SGD dampening (default 0)");
  cmd->add_flag("--nesterov", o.nesterov, "SGD with Nesterov momentum");
  cmd->add_option("--betas", o.betas, "Adam/AdamW betas as B1,B2 (default 0.9,0.999)");
  cmd->add_option("--eps", o.eps, "Adam/AdamW eps (default 1e-8)");
  cmd->add_option("--clip-grad-norm", o.clip_grad_norm, "clip the gradients' total 2-norm to this (clip_grad_norm_)");
  cmd->add_option("--schedule", o.schedule, "constant | cosine (linear warm-up, then cosine decay to 0; default: "
                  "the task's, else constant)");
  cmd->add_option("--warmup", o.warmup, "linear warm-up steps (default: the task's, else 0)");
  cmd->add_option("--label-smoothing", o.label_smoothing, "F.cross_entropy's label_smoothing")->capture_default_str();
  cmd->add_flag("--no-shuffle", o.no_shuffle, "batch k holds items k*B ... k*B+B-1 in file order (cycling)");
  cmd->add_option("--eval-every", o.eval_every, "evaluate on the validation items every N steps (and at the end)");
  cmd->add_option("--log", o.log, "JSON Lines: one record per step and one per evaluation");
  cmd->add_option("--save-weights", o.save_weights, "write the trained state_dict (safetensors)");
  cmd->add_option("--save-config", o.save_config, "write the model config (JSON, for --config)");
  cmd->add_option("--save-vocab", o.save_vocab, "write the vocabulary (JSON, for --vocab; a language model's vocab.json)");
  cmd->add_option("--save-merges", o.save_merges, "language models: write the tokenizer's merges.txt (for --merges)");
  cmd->add_option("--save-model-dir", o.save_model_dir, "language models: write a Hugging Face GPT-2 folder (config.json, "
                                                        "model.safetensors, vocab.json, merges.txt, tokenizer files)");
  cmd->add_option("--save-grads", o.save_grads, "write the last step's gradients (safetensors, state_dict names)");
  cmd->add_option("--checkpoint", o.checkpoint, "keep a checkpoint in this folder (every --checkpoint-every steps, "
                                                "at the end and at Ctrl-C)");
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints")->capture_default_str();
  cmd->add_flag("--resume", o.resume, "continue the run in --checkpoint DIR (to the same bytes)");
  cmd->add_option("--threads", o.threads, "threads the products run on, or auto: every core (the exact path's "
                                          "bits do not depend on it)")->capture_default_str();
  cmd->add_option("--backend", o.backend, "exact: PyTorch's rounding, bit for bit (the default); cpu: the fast path "
                                          "(fused multiply-adds, within 1e-4 of it)");
  cmd->add_flag("--quiet", o.quiet, "no progress line and no summary");
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run_train(o);
  });
}

}  // namespace attn::cli
