#include "core/error.hpp"
#include "core/tutorial.hpp"
#include "core/walkthrough.hpp"
#include "native/commands.hpp"

namespace attn::cli {
namespace {

TutorialConfig tutorial_config(const TutorialOptions& o) {
  TutorialConfig c;
  c.seed = parse_seed(o.seed);
  c.d_model = parse_size("--d-model", o.d_model, 1);
  c.max_len = parse_size("--max-len", o.max_len, 1);
  c.mask = parse_mask_kind(o.mask);
  c.sentences = o.sentences.resolve(tutorial_sentences());
  return c;
}

void run(const TutorialOptions& o) {
  if (o.part != "1") throw InputError("--part expects 1 (the first tutorial), got '" + o.part + "'");
  const TutorialRun result = run_tutorial(tutorial_config(o));
  print(o.json ? tutorial_json(result).dump() + "\n" : tutorial_walkthrough(result));
}

}  // namespace

void add_tutorial_command(CLI::App& app, TutorialOptions& o) {
  auto* cmd = app.add_subcommand("tutorial", "Walk through the first tutorial's attention, stage by stage, "
                                             "with the numbers PyTorch prints");
  cmd->add_option("--seed", o.seed, "torch.manual_seed value, in [-2^63, 2^64)")->capture_default_str();
  cmd->add_option("--d-model", o.d_model, "model width (even; d_k = d_v = d_model)")->capture_default_str();
  cmd->add_option("--max-len", o.max_len, "rows of the positional-encoding table")->capture_default_str();
  add_sentence_options(*cmd, o.sentences, "default: the tutorial's four");
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal")->capture_default_str();
  cmd->add_option("--part", o.part, "which tutorial")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the trace as one JSON document instead of the walkthrough");
  cmd->callback([&o] { run(o); });
}

}  // namespace attn::cli
