// The `attn` subcommands: their options and how they register with CLI11.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "native/cli.hpp"

namespace attn::cli {

struct TutorialOptions {
  std::string seed = "0", d_model = "6", max_len = "100", mask = "padding", part = "1";
  SentenceOptions sentences;
  bool json = false;
};
void add_tutorial_command(CLI::App& app, TutorialOptions& o);

struct EncodeOptions {
  std::string config_file, seed, weights, vocab, mask = "padding", save_weights, save_npy;
  std::vector<std::string> ids;
  SentenceOptions sentences;
  // Model sizes as flags (override --config); empty = not given.
  std::string vocab_size, d_model, num_heads, num_layers, d_ff, max_len, num_classes, dropout, activation,
      pooling, layer_style;
  bool norm_first = false, post_norm = false, encoder_only = false, train = false, json = false;
};
void add_encode_command(CLI::App& app, EncodeOptions& o);

}  // namespace attn::cli
