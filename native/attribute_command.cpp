// attn attribute: which input tokens (or, for logit attribution, which heads and MLPs) account for a
// model's output, by one of the methods of core/model/attribution.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"
#include "core/base/threads.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/attribution.hpp"
#include "core/text/utf8.hpp"
#include "core/torch/torch_print.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"

namespace attn::cli {
namespace {

// A row of the report: a label, its value and a bar of up to 24 cells, the value's share of the largest
// magnitude (▒ for a negative value).
std::string bar_row(const std::string& label, double value, double largest) {
  std::u32string name = utf8::decode(label, "a token").substr(0, 14);  // by characters: tokens are UTF-8
  name.resize(14, U' ');
  char head[32];
  std::snprintf(head, sizeof head, " %10.5f", value + 0.0);
  const size_t cells = largest > 0 ? size_t(std::lround(24 * std::abs(value) / largest)) : 0;
  std::string bar = cells ? "  " : "";
  for (size_t i = 0; i < cells; ++i) bar += value < 0 ? "▒" : "█";
  return "  " + utf8::encode(name) + head + bar + "\n";
}

std::string bars(const std::vector<std::string>& labels, const std::vector<double>& values) {
  double largest = 0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += bar_row(labels[i], values[i], largest);
  return out;
}

std::string number(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.6g", v + 0.0);
  return out;
}

std::string report(const LoadedModel& m, const ModelInput& in, const Attribution& a) {
  std::string out = m.description() + "\ntokens: " + python_list_repr(in.tokens[0]) + "\nmethod: " +
                    attribution_method_name(a.method) + "\n";
  if (a.target.id >= 0)
    out += "target: '" + a.target.label + "' (id " + std::to_string(a.target.id) + "), logit " + number(a.target.logit) +
           (m.pretrained ? " at position " + std::to_string(a.target.position) : "") + "\n";
  if (!a.outputs.empty())
    out += "output positions followed: " + (a.outputs.size() == 1 ? std::to_string(a.outputs[0]) : "all (mean)") + "\n";
  if (a.method == AttributionMethod::logit_attribution) {
    double sum = 0;
    for (double v : a.contributions) sum += v;
    return out + "\ndirect contributions to the target's logit (sum " + number(sum) + "):\n" +
           bars(a.components, a.contributions);
  }
  out += "\n" + bars(in.tokens[0], a.scores);
  if (a.method == AttributionMethod::integrated_gradients)
    out += "\n" + std::to_string(a.steps) + " Gauss-Legendre steps; F(input) " + number(a.input_value) +
           (a.baseline_id ? ", F(baseline: token " + std::to_string(*a.baseline_id) + ") " : ", F(baseline) ") +
           number(a.baseline_value) + ", convergence delta " + number(a.delta) + "\n";
  return out;
}

void run(const AttributeOptions& o) {
  if (o.model.train) throw InputError("attn attribute runs the model in evaluation mode: drop --train");
  if (o.sentence.empty() == o.ids.empty()) throw InputError("give one of --sentence TEXT and --ids \"N N ...\"");
  AttributionOptions options;
  options.method = parse_attribution_method(o.method);
  options.steps = parse_size("--steps", o.steps, 1);
  if (!o.target_id.empty()) options.target = int64_t(parse_size("--target-id", o.target_id, 0));
  if (!o.baseline_id.empty()) options.baseline_id = int64_t(parse_size("--baseline-id", o.baseline_id, 0));
  const std::vector<std::string> sentences = o.sentence.empty() ? std::vector<std::string>{} : std::vector{o.sentence};
  const LoadedModel m = load_model(o.model, sentences);
  const ModelInput in = o.sentence.empty() ? m.from_ids({parse_id_list(o.ids, 1)}) : m.tokenize(sentences);
  ThreadPool pool(parse_threads(o.threads));
  const ProductMode products(Rounding::exact, &pool);
  const Attribution a = attribute(m, in, options);
  print(o.json ? attribution_json(m, in, a).dump() + "\n" : report(m, in, a));
}

}  // namespace

void add_attribute_command(CLI::App& app, AttributeOptions& o) {
  auto* cmd = app.add_subcommand("attribute", "Attribution: how much each input token (integrated gradients, "
                                              "gradient x input, attention rollout and flow) or each head and MLP "
                                              "(logit attribution) accounts for the output");
  add_model_options(*cmd, o.model);
  add_pretrained_options(*cmd, o.model);
  auto* sentence = cmd->add_option("--sentence", o.sentence, "the input");
  cmd->add_option("--ids", o.ids, "the input as token ids, e.g. \"12 7 3\"")->excludes(sentence);
  cmd->add_option("--method", o.method,
                  "integrated-gradients | gradient-x-input | rollout | flow | logit-attribution")->required();
  cmd->add_option("--target-id", o.target_id,
                  "GPT-2: the next token whose logit is attributed; a classifier: the class (default: the top one)");
  cmd->add_option("--steps", o.steps, "integrated gradients' Gauss-Legendre steps")->capture_default_str();
  cmd->add_option("--baseline-id", o.baseline_id, "integrated gradients' baseline: this token's embedding at every "
                                                  "position (default: zero embeddings)");
  cmd->add_option("--threads", o.threads, "threads the products run on, or auto: every core (the scores' bits do "
                                          "not depend on it)")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the attribution as one JSON document");
  add_download_quiet_flag(*cmd, o.quiet);
  cmd->callback([&o] {
    resolve_model(o.model, o.quiet);
    run(o);
  });
}

}  // namespace attn::cli
