// attn generate: text from a GPT-2 checkpoint or a Llama-family decoder, token by token with a key/value
// cache, greedy or sampled (core/model/generate.hpp), with where each predicting position looked.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/parse.hpp"
#include "core/base/threads.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/decoder.hpp"
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

// What the model holds on to while it generates: a GPT-2 checkpoint, or a decoder and its tokenizer.
struct Generator {
  std::unique_ptr<Pretrained> gpt2;
  std::unique_ptr<DecoderModel> decoder;
  std::unique_ptr<JsonTokenizer> tokenizer;
  CausalLM lm;
};

void load(const PretrainedFiles& files, Generator& g) {
  const Json config = read_json_file(files.config, "model config");
  if (!is_decoder_config(config)) {
    g.gpt2 = std::make_unique<Pretrained>(load_pretrained_files(files));
    g.lm = causal_lm(*g.gpt2);
    return;
  }
  const std::string config_name = std::filesystem::path(files.config).filename().string();
  g.decoder = std::make_unique<DecoderModel>(read_decoder_weights(decoder_config_from_json(config, config_name),
                                                                  files.weights,
                                                                  std::filesystem::path(files.weights).filename().string()));
  if (!files.tokenizer_json.empty()) g.tokenizer = std::make_unique<JsonTokenizer>(JsonTokenizer::from_file(files.tokenizer_json));
  g.lm = causal_lm(*g.decoder, g.tokenizer.get(), g.decoder->config.eos_token_ids);
}

// --prompt through the model's tokenizer, or --prompt-ids.
std::vector<int64_t> prompt_of(const GenerateOptions& o, const Generator& g) {
  if (o.prompt.empty() == o.prompt_ids.empty()) throw InputError("give the prompt as --prompt TEXT or --prompt-ids \"1 2 3\"");
  if (!o.prompt_ids.empty()) return parse_id_list(o.prompt_ids, 1);
  if (g.gpt2) return tokenize_pretrained(*g.gpt2, {o.prompt}).input.ids;
  if (!g.tokenizer)
    throw InputError("--prompt needs the model's tokenizer.json, which its folder lacks: give token ids with --prompt-ids");
  return g.tokenizer->encode(o.prompt).ids;
}

void run(const GenerateOptions& o) {
  const auto files = pretrained_files(o.model);
  if (!files)
    throw InputError("attn generate needs a GPT-2 checkpoint or a Llama-family decoder: --model NAME, --model-dir DIR, or "
                     "--config, --weights, --vocab and --merges");
  const size_t max_new = parse_size("--max-new-tokens", o.max_new_tokens, 1);
  const SamplingOptions sampling = sampling_of(o);
  ThreadPool pool(parse_threads(o.threads));
  const ProductMode products(Rounding::exact, &pool);
  Generator g;
  load(*files, g);
  const Generation out = generate(g.lm, prompt_of(o, g), max_new, sampling);
  print(o.json ? generation_json(g.lm, out, max_new, sampling).dump() + "\n" : text_report(out));
}

}  // namespace

void add_generate_command(CLI::App& app, GenerateOptions& o) {
  auto* cmd = app.add_subcommand("generate", "Continue a prompt with a GPT-2 checkpoint or a Llama-family decoder, token "
                                             "by token, and show where each new token's predictor looked");
  add_pretrained_options(*cmd, o.model);
  cmd->add_option("--config", o.model.config_file, "GPT-2's config.json (with --weights, --vocab and --merges)");
  cmd->add_option("--weights", o.model.weights, "its model.safetensors");
  cmd->add_option("--vocab", o.model.vocab, "its vocab.json");
  cmd->add_option("--prompt", o.prompt, "the text to continue");
  cmd->add_option("--prompt-ids", o.prompt_ids, "or its token ids, \"1 2 3\" (a decoder without tokenizer.json)");
  cmd->add_option("--max-new-tokens", o.max_new_tokens, "how many tokens to add (fewer when an end token comes)")
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
