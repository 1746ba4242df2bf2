// attn generate: text from a GPT-2 checkpoint, token by token with a key/value cache, greedy or sampled
// (core/model/generate.hpp), with where each predicting position looked.
#include <cstdio>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"
#include "core/base/threads.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/generate.hpp"
#include "core/torch/rng.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"

namespace attn::cli {
namespace {

SamplingOptions sampling_of(const GenerateOptions& o) {
  SamplingOptions s;
  s.temperature = parse_number("--temperature", o.temperature);
  s.top_k = parse_size("--top-k", o.top_k, 0);
  s.top_p = parse_number("--top-p", o.top_p);
  s.seed = parse_seed(o.seed);
  check_sampling(s);
  return s;
}

// The text, then one line per new token: its id, probability and label.
std::string text_report(const Generation& g) {
  std::string out = g.text + "\n\n  step      id  probability  token\n";
  char line[64];
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    std::snprintf(line, sizeof line, "%6zu  %6lld  %11.6f  ", i + 1, static_cast<long long>(g.tokens[i].id),
                  g.tokens[i].probability);
    out += line + g.tokens[i].token + "\n";
  }
  return out;
}

void run(const GenerateOptions& o) {
  const auto files = pretrained_files(o.model);
  if (!files)
    throw InputError("attn generate needs a GPT-2 checkpoint: --model NAME, --model-dir DIR, or --config, --weights, --vocab and "
                     "--merges");
  const size_t max_new = parse_size("--max-new-tokens", o.max_new_tokens, 1);
  const SamplingOptions sampling = sampling_of(o);
  ThreadPool pool(parse_threads(o.threads));
  const ProductMode products(Rounding::exact, &pool);
  const Pretrained p = load_pretrained_files(*files);
  const Generation g = generate(p, o.prompt, max_new, sampling);
  print(o.json ? generation_json(p, g, max_new, sampling).dump() + "\n" : text_report(g));
}

}  // namespace

void add_generate_command(CLI::App& app, GenerateOptions& o) {
  auto* cmd = app.add_subcommand("generate", "Continue a prompt with a GPT-2 checkpoint, token by token, and show "
                                             "where each new token's predictor looked");
  add_pretrained_options(*cmd, o.model);
  cmd->add_option("--config", o.model.config_file, "GPT-2's config.json (with --weights, --vocab and --merges)");
  cmd->add_option("--weights", o.model.weights, "its model.safetensors");
  cmd->add_option("--vocab", o.model.vocab, "its vocab.json");
  cmd->add_option("--prompt", o.prompt, "the text to continue")->required();
  cmd->add_option("--max-new-tokens", o.max_new_tokens, "how many tokens to add (fewer when <|endoftext|> comes)")
      ->capture_default_str();
  cmd->add_option("--temperature", o.temperature, "softmax(logits / T); 0: greedy, the likeliest token")
      ->capture_default_str();
  cmd->add_option("--top-k", o.top_k, "draw among the k likeliest tokens only (0: all)")->capture_default_str();
  cmd->add_option("--top-p", o.top_p, "draw among the likeliest tokens whose probabilities reach p (1: all)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "torch.manual_seed value of the draws, in [-2^63, 2^64)")->capture_default_str();
  cmd->add_option("--threads", o.threads, "threads the products run on, or auto: every core (the tokens and their "
                                          "bits do not depend on it)")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the prompt, each new token with its probability and attention [layer][head]"
                                  "[key], and the text as one JSON document");
  add_download_quiet_flag(*cmd, o.quiet);
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run(o);
  });
}

}  // namespace attn::cli
