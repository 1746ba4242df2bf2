// attn train's options turned into a run: the data, the training settings, the seeded (or loaded)
// model and its trainer. No output files here: `attn train` (train_command.cpp) adds the log,
// checkpoints and saved files, and the playground's Train tab (ui/training.hpp) builds its run with
// the same function, so the same options give the same run, the same numbers and the same errors.
#pragma once
#include <memory>
#include <string>

#include "core/base/json.hpp"
#include "core/text/tokenizer.hpp"
#include "core/train/train.hpp"
#include "native/commands.hpp"

namespace attn::cli {

// What the run trains on: items, vocabulary, and the model config they imply.
struct RunData {
  train::Datasets sets;
  Vocab vocab;
  const train::TaskSpec* task = nullptr;
  TransformerConfig config;
};

struct TrainRun {
  RunData data;
  train::TrainSettings settings;
  size_t eval_every = 0;  // 0: evaluate at the end only
  // Everything a checkpoint must agree with to be continued (--resume names the first key that differs).
  Json identity;
  std::unique_ptr<train::Trainer> trainer;
};

// Checks the options' combination, reads the data, builds the model (seeded with --seed, or --weights)
// and its trainer; throws InputError naming what is wrong.
TrainRun prepare_train_run(const TrainOptions& o);

std::string read_file(const std::string& path, const std::string& what);

}  // namespace attn::cli
