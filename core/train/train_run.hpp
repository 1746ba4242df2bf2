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

namespace attn::train {

// The options as the user gave them (attn train's flags; empty = not given).
struct TrainOptions {
  ModelOptions model;
  std::string task, data, val_data, val_fraction, save_data, save_val_data;
  std::string steps, epochs, batch_size, optimizer, lr, weight_decay, momentum, dampening, betas, eps,
      clip_grad_norm, schedule = "constant", warmup = "0", label_smoothing = "0", eval_every, threads = "1",
      backend;  // backend empty: the exact path
  bool nesterov = false, no_shuffle = false, resume = false, quiet = false;
  std::string log, save_weights, save_config, save_vocab, save_grads, checkpoint, checkpoint_every = "100";
};

// What the run trains on: items, vocabulary, and the model config they imply.
struct RunData {
  Datasets sets;
  Vocab vocab;
  const TaskSpec* task = nullptr;
  TransformerConfig config;
};

struct TrainRun {
  RunData data;
  TrainSettings settings;
  size_t eval_every = 0;  // 0: evaluate at the end only
  // Everything a checkpoint must agree with to be continued (--resume names the first key that differs).
  Json identity;
  std::unique_ptr<Trainer> trainer;
};

// Checks the options' combination, reads the data, builds the model (seeded with --seed, or --weights)
// and its trainer; throws InputError naming what is wrong.
TrainRun prepare_train_run(const TrainOptions& o);

}  // namespace attn::train
