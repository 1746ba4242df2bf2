// attn patch: activation patching from a clean into a corrupted input (core/model/patching.hpp), by
// head, by layer × position of the residual stream, and by layer for the attention and MLP outputs.
#include <cstdio>

#include "core/base/error.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/patching.hpp"
#include "native/commands.hpp"

namespace attn::cli {
namespace {

struct Answer {
  int64_t id = -1;
  std::string token;
};

// --answer TEXT or --answer-id N (likewise --wrong): one token of the language model's vocabulary.
Answer answer_token(const LoadedModel& m, const std::string& flag, const std::string& text, const std::string& id) {
  if (text.empty() == id.empty()) throw InputError("give one of " + flag + " TEXT and " + flag + "-id N");
  if (!id.empty()) {
    const size_t n = parse_size(flag + "-id", id, 0);
    if (n >= m.vocab_size())
      throw InputError(flag + "-id " + id + " is outside the vocabulary (" + std::to_string(m.vocab_size()) + " ids)");
    return {int64_t(n), m.token(int64_t(n))};
  }
  const ModelInput in = m.tokenize({text});
  if (in.lengths[0] != 1) {
    std::string tokens;
    for (size_t i = 0; i < in.lengths[0]; ++i) tokens += (i ? ", '" : "'") + in.tokens[0][i] + "'";
    throw InputError(flag + " '" + text + "' is " + std::to_string(in.lengths[0]) + " tokens (" + tokens +
                     "); the metric needs one (GPT-2's words usually start with a space: ' Paris')");
  }
  return {in.ids[0], in.tokens[0][0]};
}

struct Metric {
  PatchMetric function;
  Json about;
  std::string text;
};

Metric metric_of(const PatchOptionsCli& o, const LoadedModel& m, const ModelInput& clean) {
  const bool lm_flags = !o.answer.empty() || !o.answer_id.empty() || !o.wrong.empty() || !o.wrong_id.empty();
  if (m.pretrained && m.pretrained->model.config.family == ModelFamily::bert)
    throw InputError("attn patch measures GPT-2's logits or a classifier's; BERT's base model has no output head");
  if (m.classifier) {
    if (lm_flags) throw InputError("--answer and --wrong measure a language model; a classifier's metric is --label K");
    if (o.label.empty()) throw InputError("the classifier's metric needs --label K (the class whose margin is measured)");
    const size_t classes = m.classifier->config.num_classes;
    if (!m.classifier->config.classifier_head || classes < 2)
      throw InputError("--label needs a classifier head with at least 2 classes");
    const size_t label = parse_size("--label", o.label, 0);
    if (label >= classes)
      throw InputError("--label " + o.label + " is out of range (the classifier has " + std::to_string(classes) +
                       " classes)");
    return {label_margin(int64_t(label)), {{"kind", "label_margin"}, {"label", label}},
            "logit of class " + o.label + " minus the best other class's"};
  }
  if (!o.label.empty()) throw InputError("--label is a classifier's metric; a language model's is --answer and --wrong");
  const Answer answer = answer_token(m, "--answer", o.answer, o.answer_id);
  const Answer wrong = answer_token(m, "--wrong", o.wrong, o.wrong_id);
  if (answer.id == wrong.id) throw InputError("--answer and --wrong are the same token ('" + answer.token + "')");
  const size_t last = clean.lengths[0] - 1;
  return {logit_difference(last, answer.id, wrong.id),
          {{"kind", "logit_difference"}, {"position", last},
           {"answer", {{"id", answer.id}, {"token", answer.token}}}, {"wrong", {{"id", wrong.id}, {"token", wrong.token}}}},
          "logit('" + answer.token + "') - logit('" + wrong.token + "') at the last position"};
}

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

Json sweep_json(const PatchSweep& s) {
  Json recovery = Json::array(), metric = Json::array();
  const size_t columns = s.shape.size() > 1 ? s.shape[1] : 0;
  if (columns == 0) return {{"axes", s.axes}, {"recovery", s.recovery}, {"metric", s.metric}};
  for (size_t layer = 0; layer < s.shape[0]; ++layer) {
    recovery.push_back(std::vector<double>(s.recovery.begin() + layer * columns, s.recovery.begin() + (layer + 1) * columns));
    metric.push_back(std::vector<double>(s.metric.begin() + layer * columns, s.metric.begin() + (layer + 1) * columns));
  }
  return {{"axes", s.axes}, {"recovery", recovery}, {"metric", metric}};
}

void run(const PatchOptionsCli& o) {
  if (o.model.train) throw InputError("attn patch runs the model in evaluation mode: drop --train");
  const LoadedModel m = load_model(o.model, {o.clean, o.corrupted});
  const ModelInput clean = m.tokenize({o.clean}), corrupted = m.tokenize({o.corrupted});
  const std::vector<PatchKind> kinds = parse_patch_kinds(o.sweep);
  const Metric metric = metric_of(o, m, clean);
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
  Json sweeps = Json::object();
  for (const PatchSweep& s : p.sweeps) sweeps[patch_kind_name(s.kind)] = sweep_json(s);
  print(Json{{"model", m.description()},
             {"clean", {{"text", o.clean}, {"ids", clean.ids}, {"tokens", clean.tokens[0]}, {"metric", p.clean_metric}}},
             {"corrupted",
              {{"text", o.corrupted}, {"ids", corrupted.ids}, {"tokens", corrupted.tokens[0]}, {"metric", p.corrupted_metric}}},
             {"metric", metric.about},
             {"runs", p.runs},
             {"layers_run", p.layers_run},
             {"layers_full", p.layers_full},
             {"patches", sweeps}}
            .dump() + "\n");
}

}  // namespace

void add_patch_command(CLI::App& app, PatchOptionsCli& o) {
  auto* cmd = app.add_subcommand("patch", "Activation patching: how much of a clean input's metric each head, "
                                          "position and block restores in a corrupted one (TransformerLens's patching)");
  add_model_options(*cmd, o.model);
  add_pretrained_options(*cmd, o.model);
  cmd->add_option("--clean", o.clean, "the clean input")->required();
  cmd->add_option("--corrupted", o.corrupted, "the corrupted input (the same number of tokens)")->required();
  cmd->add_option("--answer", o.answer, "GPT-2: the token the clean input predicts (one token, e.g. ' Paris')");
  cmd->add_option("--answer-id", o.answer_id, "GPT-2: --answer as a token id");
  cmd->add_option("--wrong", o.wrong, "GPT-2: the token the corrupted input predicts instead");
  cmd->add_option("--wrong-id", o.wrong_id, "GPT-2: --wrong as a token id");
  cmd->add_option("--label", o.label, "a classifier: the class whose logit margin is measured");
  cmd->add_option("--sweep", o.sweep, "what to patch, separated by commas")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the results as arrays with named axes in one JSON document");
  cmd->callback([&o] { run(o); });
}

}  // namespace attn::cli
