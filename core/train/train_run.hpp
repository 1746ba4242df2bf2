// attn train's options turned into a run: the data, the training settings, the seeded (or loaded)
// model and its trainer. No output files here: `attn train` (native/train_command.cpp) adds the log,
// checkpoints and saved files, and the playground's Train tab (ui/training.hpp) builds its run with
// the same function, so the same options give the same run, the same numbers and the same errors.
#pragma once
#include <memory>
#include <string>

#include "core/base/json.hpp"
#include "core/model/model_options.hpp"
#include "core/text/tokenizer.hpp"
#include "core/train/train.hpp"
#include "core/train/train_data.hpp"
#include "core/train/train_lm.hpp"

namespace attn::train {

// The options as the user gave them (attn train's flags; empty = not given).
struct TrainOptions {
  ModelOptions model;
  std::string task, data, val_data, val_fraction, save_data, save_val_data;
  std::string steps, epochs, batch_size, optimizer, lr, weight_decay, momentum, dampening, betas, eps,
      clip_grad_norm, schedule, warmup, label_smoothing = "0", eval_every, threads = "1",  // empty: the task's
      backend;  // backend empty: the exact path
  bool nesterov = false, no_shuffle = false, resume = false, quiet = false;
  bool attention_only = false;  // a language task's model from scratch without MLPs (GPT-2 with n_inner 0)
  std::string log, save_weights, save_config, save_vocab, save_grads, checkpoint, checkpoint_every = "100";
  // Language models (GPT-2): tokens per training window; the merges beside --save-vocab; a checkpoint folder.
  std::string seq_len, save_merges, save_model_dir;
  // A language model's training text given inline (the playground's pasted text) instead of read from
  // `data`, which then only names it (its extension says its format).
  std::string data_text;
};

// What the run trains on: items, vocabulary, and the model config they imply.
struct RunData {
  Datasets sets;
  Vocab vocab;
  const TaskSpec* task = nullptr;
  TransformerConfig config;
  // A language model's run (GPT-2; --task induction … or a transformers config or --model-dir): its
  // tokenizer (GPT-2's BPE or a character vocabulary), and the built-in task when one.
  std::shared_ptr<const BytePairTokenizer> tokenizer;
  const LmTaskSpec* lm_task = nullptr;
};

struct TrainRun {
  RunData data;
  TrainSettings settings;
  size_t eval_every = 0;  // 0: evaluate at the end only
  // Everything a checkpoint must agree with to be continued (--resume names the first key that differs).
  Json identity;
  std::unique_ptr<Trainer> trainer;       // the classifier's, or
  std::unique_ptr<LmTrainer> lm_trainer;  // a language model's
  Training& training() const { return trainer ? static_cast<Training&>(*trainer) : *lm_trainer; }
};

// Whether the options train a language model (GPT-2) rather than the tutorial's classifier: a language
// task, --model-dir, or --config holding a transformers config.
bool trains_language_model(const TrainOptions& o);
// Checks the options' combination, reads the data, builds the model (seeded with --seed, or --weights;
// a language model from its config seeded, or from --model-dir) and its trainer; throws InputError
// naming what is wrong.
TrainRun prepare_train_run(const TrainOptions& o);

}  // namespace attn::train
