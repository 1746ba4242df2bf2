// The `attn` subcommands: their options and how they register with CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "core/model/model_options.hpp"
#include "core/model/patching.hpp"
#include "core/train/train_run.hpp"
#include "native/cli.hpp"

namespace attn::cli {

// What `attn tutorial` and `attn encode` computed, handed to a caller in the same process (the Python
// module, python/) instead of printed: the trace, its tokens, and the --json document and the text
// report, each formatted only when asked (formatting every stage costs more than computing them).
struct CommandResult {
  std::shared_ptr<const Trace> trace;
  std::vector<std::vector<std::string>> tokens;
  std::function<std::string()> json, text;  // json: the --json document without its final newline
};
// Hands `r` to `sink` when there is one, else prints the document or the report.
void emit(CommandResult r, bool json, CommandResult* sink);

struct TutorialOptions {
  std::string seed = "0", d_model = "6", max_len = "100", mask = "padding", part = "1";
  std::string ablate, ablation = "zero";  // its single head (core/model/interventions.hpp)
  SentenceOptions sentences;
  PlotOptions plot;
  bool json = false;
  CommandResult* result = nullptr;  // set: the run is handed here, not printed (emit)
};
void add_tutorial_command(CLI::App& app, TutorialOptions& o);

// The model options `attn encode`, `attn batch` and `attn train` share (core/model/model_options.hpp).
using attn::ModelOptions;
// With `seed_with_weights`, --seed may join --weights (it seeds what else draws: attn train's dropout and order).
void add_model_options(CLI::App& cmd, ModelOptions& o, bool seed_with_weights = false);
// --model-dir, --model and --merges: a BERT or GPT-2 checkpoint instead of the tutorial's classifier.
// A command resolves --model (native/hub.hpp: resolve_model) before it runs.
void add_pretrained_options(CLI::App& cmd, ModelOptions& o);
// --quiet, for the commands that print no progress but --model's downloads.
void add_download_quiet_flag(CLI::App& cmd, bool& quiet);

struct EncodeOptions {
  ModelOptions model;
  std::string save_weights, save_npy, backend;  // backend empty: the exact reference path
  std::string save_gradients;  // a Llama-family decoder's weights' gradients of the next-token loss
  std::string top_k = "10", temperature = "1";   // GPT-2's next-token list
  std::string ablate, ablate_mlp, ablation = "zero", mean_data;  // interventions (core/model/interventions.hpp)
  bool logit_lens = false;                                         // core/model/logit_lens.hpp
  std::string rotary;  // "QUERY,KEY": a decoder's rotary split of that score (core/model/decoder_views.hpp)
  PlotOptions plot;
  std::vector<std::string> ids;
  SentenceOptions sentences;
  bool json = false, quiet = false;
  CommandResult* result = nullptr;  // set: the run is handed here, not printed (emit)
  // Set: the checkpoint is loaded once and kept here for the next runs (the Python module's models).
  std::shared_ptr<const Pretrained>* checkpoint_cache = nullptr;
};
void add_encode_command(CLI::App& app, EncodeOptions& o);

struct HeadsOptions {
  ModelOptions model;  // its --seed also seeds the random tokens (a generator of their own)
  std::string detect = "previous_token,duplicate_token,induction", seq_len, batch, token_range,
              error_measure = "mul";
  SentenceOptions sentences;
  bool exclude_bos = false, exclude_current_token = false, composition = false, json = false, quiet = false;
};
void add_heads_command(CLI::App& app, HeadsOptions& o);

struct PatchOptionsCli {
  ModelOptions model;
  PatchMetricOptions metric;  // core/model/patching.hpp
  std::string clean, corrupted, clean_ids, corrupted_ids, sweep = "heads,resid_pre,attn_out,mlp_out";
  bool json = false, quiet = false;
};
void add_patch_command(CLI::App& app, PatchOptionsCli& o);

struct AttributeOptions {
  ModelOptions model;
  std::string sentence, ids, method, target_id, baseline_id, steps = "50", threads = "auto";
  bool json = false, quiet = false;
};
void add_attribute_command(CLI::App& app, AttributeOptions& o);

struct GenerateOptions {
  ModelOptions model;  // a GPT-2 checkpoint's files, or a Llama-family decoder's
  std::string prompt, prompt_ids, max_new_tokens = "20", temperature = "1", top_k = "0", top_p = "1", seed = "0", threads = "auto";
  bool json = false, quiet = false;
};
void add_generate_command(CLI::App& app, GenerateOptions& o);

struct BatchOptions {
  ModelOptions model;
  std::string input, output = "-", format = "jsonl", input_format = "auto", threads, batch_size = "32", shard,
      save_vocab, backend;
  std::vector<std::string> stages;
  std::vector<size_t> layers, heads;
  bool resume = false, quiet = false;
  int exit_status = 0;  // 3 when some items failed (0 and 2 as every command)
};
void add_batch_command(CLI::App& app, BatchOptions& o);

struct TrainOptions : train::TrainOptions {  // core/train/train_run.hpp
  int exit_status = 0;                       // 130 when interrupted (after its checkpoint)
  // Set: called with each log record (a step's, an evaluation's); false stops the run as Ctrl-C does.
  // The command then leaves SIGINT alone (the Python module's caller handles it).
  std::function<bool(const Json& record)> on_record;
};
void add_train_command(CLI::App& app, TrainOptions& o);

struct DiffOptions {
  std::string a, b, rtol = "1e-05", atol = "1e-08";
  bool json = false;
  int exit_status = 0;  // 1 when a stage is beyond the tolerance or its shapes differ
};
void add_diff_command(CLI::App& app, DiffOptions& o);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output = "-";
};
void add_merge_command(CLI::App& app, MergeOptions& o);

// Every subcommand on one CLI11 app: attn's main and the Python module parse the same options. bench
// is added by attn's main alone (it needs the benchmark's own code).
struct CommandLine {
  CLI::App app{"attnlab: transformer attention computed step by step", "attn"};
  TutorialOptions tutorial;
  EncodeOptions encode;
  BatchOptions batch;
  MergeOptions merge;
  TrainOptions train;
  HeadsOptions heads;
  PatchOptionsCli patch;
  AttributeOptions attribute;
  GenerateOptions generate;
  DiffOptions diff;
  CommandLine();
  CommandLine(const CommandLine&) = delete;  // the commands' callbacks hold the options' addresses
  // Parses and runs; CLI11's ParseError and InputError reach the caller. Returns the exit status of a
  // command that completed (1 for a difference, 3 for bad batch items, 130 for an interrupted run).
  int run(std::vector<std::string> args);
};

}  // namespace attn::cli
