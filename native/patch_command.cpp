// attn patch: activation patching from a clean into a corrupted input (core/model/patching.hpp), by
// head, by layer × position of the residual stream, and by layer for the attention and MLP outputs.
#include <cstdio>

#include "core/base/error.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/patching.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"

namespace attn::cli {
namespace {

std::string cell(double v) {
  char out[32];
  std::snprintf(out, sizeof out, " %8.4f", v + 0.0);  // + 0.0: no "-0.0000" for an exact zero
  return out;
}

// A sweep's normalised recovery as a table: layers down, heads or positions across.
std::string sweep_table(const PatchSweep& s, const std::vector<std::string>& tokens) {
  const size_t columns = s.shape.size() > 1 ? s.shape[1] : 1;
  std::string out = patch_kind_name(s.kind) + " (recovery, " + s.axes[0] + (columns > 1 ? " × " + s.axes[1] : "") + "):\n        ";
  char head[48];
  for (size_t c = 0; c < columns; ++c) {
    const std::string label = s.shape.size() == 1 ? "all" : s.axes[1] == "head" ? "head " + std::to_string(c) : tokens[c];
    std::snprintf(head, sizeof head, " %8.8s", label.c_str());
    out += head;
  }
  for (size_t layer = 0; layer < s.shape[0]; ++layer) {
    std::snprintf(head, sizeof head, "\nlayer %-2zu", layer);
    out += head;
    for (size_t c = 0; c < columns; ++c) out += cell(s.recovery[layer * columns + c]);
  }
  return out + "\n";
}

// `flag` TEXT through the model's tokenizer, or `flag`-ids (a decoder without tokenizer.json).
ModelInput input_of(const LoadedModel& m, const std::string& flag, const std::string& text, const std::string& ids) {
  if (text.empty() == ids.empty()) throw InputError("give " + flag + " TEXT or " + flag + "-ids \"1 2 3\"");
  return ids.empty() ? m.tokenize({text}) : m.from_ids({parse_id_list(ids, 1)});
}

void run(const PatchOptionsCli& o) {
  if (o.model.train) throw InputError("attn patch runs the model in evaluation mode: drop --train");
  std::vector<std::string> sentences;  // the classifier's vocabulary comes from them
  for (const std::string& s : {o.clean, o.corrupted})
    if (!s.empty()) sentences.push_back(s);
  const LoadedModel m = load_model(o.model, sentences);
  const ModelInput clean = input_of(m, "--clean", o.clean, o.clean_ids);
  const ModelInput corrupted = input_of(m, "--corrupted", o.corrupted, o.corrupted_ids);
  const std::vector<PatchKind> kinds = parse_patch_kinds(o.sweep);
  const PatchMetricChoice metric = patch_metric(m, clean, o.metric);
  const Patching p = activation_patching(m, clean, corrupted, metric.function, kinds);
  if (!o.json) {
    std::string out = m.description() + "\nclean:     " + python_list_repr(clean.tokens[0]) +
                      "\ncorrupted: " + python_list_repr(corrupted.tokens[0]) + "\nmetric: " + metric.text +
                      "\n  clean    " + cell(p.clean_metric) + "\n  corrupted" + cell(p.corrupted_metric) + "\n" +
                      std::to_string(p.runs) + " patched runs, " + std::to_string(p.layers_run) + " layers computed (" +
                      std::to_string(p.layers_full) + " without resuming at the patched layer)\n";
    for (const PatchSweep& s : p.sweeps) out += "\n" + sweep_table(s, clean.tokens[0]);
    return print(out);
  }
  print(Json{{"model", m.description()},
             {"clean", {{"text", o.clean}, {"ids", clean.ids}, {"tokens", clean.tokens[0]}, {"metric", p.clean_metric}}},
             {"corrupted",
              {{"text", o.corrupted}, {"ids", corrupted.ids}, {"tokens", corrupted.tokens[0]}, {"metric", p.corrupted_metric}}},
             {"metric", metric.about},
             {"runs", p.runs},
             {"layers_run", p.layers_run},
             {"layers_full", p.layers_full},
             {"patches", patches_json(p)}}
            .dump() + "\n");
}

}  // namespace

void add_patch_command(CLI::App& app, PatchOptionsCli& o) {
  auto* cmd = app.add_subcommand("patch", "Activation patching: how much of a clean input's metric each head, "
                                          "position and block restores in a corrupted one (TransformerLens's patching)");
  add_model_options(*cmd, o.model);
  add_pretrained_options(*cmd, o.model);
  cmd->add_option("--clean", o.clean, "the clean input");
  cmd->add_option("--corrupted", o.corrupted, "the corrupted input (the same number of tokens)");
  cmd->add_option("--clean-ids", o.clean_ids, "or the clean input's token ids, \"1 2 3\"");
  cmd->add_option("--corrupted-ids", o.corrupted_ids, "or the corrupted input's token ids");
  cmd->add_option("--answer", o.metric.answer, "GPT-2: the token the clean input predicts (one token, e.g. ' Paris')");
  cmd->add_option("--answer-id", o.metric.answer_id, "GPT-2: --answer as a token id");
  cmd->add_option("--wrong", o.metric.wrong, "GPT-2: the token the corrupted input predicts instead");
  cmd->add_option("--wrong-id", o.metric.wrong_id, "GPT-2: --wrong as a token id");
  cmd->add_option("--label", o.metric.label, "a classifier: the class whose logit margin is measured");
  cmd->add_option("--sweep", o.sweep, "what to patch, separated by commas")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the results as arrays with named axes in one JSON document");
  add_download_quiet_flag(*cmd, o.quiet);
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run(o);
  });
}

}  // namespace attn::cli
