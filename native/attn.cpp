// attn: the command-line front end. `attn tutorial` walks through the first tutorial.
// Exit status: 0 success, 2 bad usage or input (with a message naming the problem).
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>
#include <new>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/tutorial.hpp"
#include "core/walkthrough.hpp"

namespace {

using attn::InputError;

size_t parse_size(const std::string& flag, const std::string& text, size_t min) {
  size_t value = 0;
  bool ok = !text.empty() && text.size() <= 19;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  if (ok) value = std::stoull(text);
  if (!ok || value < min)
    throw InputError(flag + " expects an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

struct TutorialOptions {
  std::string seed = "0", d_model = "6", max_len = "100", mask = "padding", sentences_file;
  std::vector<std::string> sentences;
  bool json = false;
};

attn::TutorialConfig tutorial_config(const TutorialOptions& o) {
  attn::TutorialConfig c;
  auto seed = attn::parse_torch_seed(o.seed);
  if (!seed) throw InputError("--seed expects an integer in [-2^63, 2^64) as torch.manual_seed accepts, got '" + o.seed + "'");
  c.seed = *seed;
  c.d_model = parse_size("--d-model", o.d_model, 1);
  c.max_len = parse_size("--max-len", o.max_len, 1);
  c.mask = attn::parse_mask_kind(o.mask);
  if (!o.sentences.empty()) c.sentences = o.sentences;
  if (!o.sentences_file.empty()) c.sentences = attn::read_sentences_file(o.sentences_file);
  return c;
}

void run_tutorial_command(const TutorialOptions& o) {
  const attn::TutorialRun run = attn::run_tutorial(tutorial_config(o));
  if (o.json)
    std::cout << attn::tutorial_json(run).dump() << '\n';
  else
    std::cout << attn::tutorial_walkthrough(run);
  std::cout.flush();
  if (!std::cout) throw InputError("could not write the output");
}

void add_tutorial_command(CLI::App& app, TutorialOptions& o) {
  auto* cmd = app.add_subcommand("tutorial", "Walk through the first tutorial's attention, stage by stage, "
                                             "with the numbers PyTorch prints");
  cmd->add_option("--seed", o.seed, "torch.manual_seed value, in [-2^63, 2^64)")->capture_default_str();
  cmd->add_option("--d-model", o.d_model, "model width (even; d_k = d_v = d_model)")->capture_default_str();
  cmd->add_option("--max-len", o.max_len, "rows of the positional-encoding table")->capture_default_str();
  auto* sentence = cmd->add_option("--sentence", o.sentences, "a sentence (repeatable); default: the tutorial's four");
  cmd->add_option("--sentences-file", o.sentences_file, "UTF-8 file, one sentence per line")->excludes(sentence);
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the trace as one JSON document instead of the walkthrough");
  cmd->callback([&o] { run_tutorial_command(o); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnlab: transformer attention computed step by step", "attn"};
  app.require_subcommand(0, 1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  TutorialOptions tutorial;
  add_tutorial_command(app, tutorial);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) throw InputError("a subcommand is required: attn tutorial ...; see 'attn --help'");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attn: " << e.what() << "\nRun 'attn --help' for usage.\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "attn: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "attn: out of memory: the requested sizes do not fit\n";
    return 2;
  }
  return 0;
}
