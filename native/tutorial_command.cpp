#include "core/base/error.hpp"
#include "core/model/interventions.hpp"
#include "core/model/tutorial.hpp"
#include "core/model/walkthrough.hpp"
#include "core/model/walkthrough2.hpp"
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

// The second tutorial's script fixes its own sizes and inputs: only --seed (and --json) apply.
void run_part2(const TutorialOptions& o, const CLI::App& cmd) {
  for (const char* flag : {"--d-model", "--max-len", "--sentence", "--sentences-file", "--mask", "--ablate", "--ablation",
                           "--plot", "--plot-index", "--svg"})
    if (cmd.count(flag) > 0)
      throw InputError(std::string(flag) + " applies to the first tutorial only; --part 2 runs the second "
                                           "tutorial's script as written (only --seed and --json apply)");
  const uint64_t seed = parse_seed(o.seed);
  print(o.json ? tutorial2_json(seed).dump() + "\n" : tutorial2_walkthrough(seed));
}

Ablation ablation_of(const TutorialOptions& o, const TutorialConfig& c) {
  Ablation a;
  a.kind = parse_ablation_kind(o.ablation);
  if (!o.ablate.empty()) a.heads = parse_heads(o.ablate, model_stages(c));
  if (a.empty() && o.ablation != "zero") throw InputError("--ablation applies to --ablate: name the head (0.0)");
  return a;
}

// The run with its head ablated: zeros, or its output's mean over the real tokens of a clean run of the
// same sentences (another text would build another vocabulary, and so draw other parameters).
TutorialRun ablated_run(const TutorialConfig& c, const Ablation& a) {
  TutorialRun run = run_tutorial(c);
  if (!a.empty())
    run.trace = ablated_trace(a, model_stages(c), run.batch.lengths,
                              [&](const Hooks* h) { return h ? run_tutorial(c, h).trace : run.trace; });
  return run;
}

void run(const TutorialOptions& o, const CLI::App& cmd) {
  if (o.part == "2") return run_part2(o, cmd);
  if (o.part != "1") throw InputError("--part expects 1 or 2 (the first or second tutorial), got '" + o.part + "'");
  const TutorialConfig config = tutorial_config(o);
  const Ablation ablation = ablation_of(o, config);
  const auto result = std::make_shared<const TutorialRun>(ablated_run(config, ablation));
  save_plot(o.plot, result->trace, result->batch.tokens);
  CommandResult r{std::shared_ptr<const Trace>(result, &result->trace), result->batch.tokens,
                  [result, ablation] {
                    Json doc = tutorial_json(*result);
                    if (!ablation.empty()) doc["ablation"] = ablation_json(ablation);
                    return doc.dump();
                  },
                  [result, ablation] { return ablation_text(ablation) + tutorial_walkthrough(*result); }};
  emit(std::move(r), o.json, o.result);
}

}  // namespace

void add_tutorial_command(CLI::App& app, TutorialOptions& o) {
  auto* cmd = app.add_subcommand("tutorial", "Walk through a tutorial's attention, stage by stage, with the "
                                             "numbers PyTorch prints");
  cmd->add_option("--seed", o.seed, "torch.manual_seed value, in [-2^63, 2^64)")->capture_default_str();
  cmd->add_option("--d-model", o.d_model, "model width (even; d_k = d_v = d_model; part 1)")->capture_default_str();
  cmd->add_option("--max-len", o.max_len, "rows of the positional-encoding table (part 1)")->capture_default_str();
  add_sentence_options(*cmd, o.sentences, "default: the tutorial's four (part 1)");
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal (part 1)")->capture_default_str();
  cmd->add_option("--part", o.part, "1: the first tutorial (attention on sentences); 2: the second "
                                    "(multi-head attention, encoder, classifier, nn.TransformerEncoder)")
      ->capture_default_str();
  cmd->add_option("--ablate", o.ablate, "0.0: ablate the single head (its output, the last stage; part 1)");
  cmd->add_option("--ablation", o.ablation, "zero | mean: what replaces the ablated output (mean: its average over "
                                            "the real tokens of the sentences)")
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "print the trace as one JSON document instead of the walkthrough");
  add_plot_options(*cmd, o.plot);
  cmd->callback([&o, cmd] { run(o, *cmd); });
}

}  // namespace attn::cli
