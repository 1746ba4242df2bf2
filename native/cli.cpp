#include "native/cli.hpp"

#include <iostream>

#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"
#include "core/plot/svg.hpp"
#include "core/text/tokenizer.hpp"

namespace attn::cli {

std::vector<std::string> SentenceOptions::resolve(const std::vector<std::string>& fallback) const {
  if (!sentences_file.empty()) return read_sentences_file(sentences_file);
  return sentences.empty() ? fallback : sentences;
}

void add_sentence_options(CLI::App& cmd, SentenceOptions& o, const std::string& default_note) {
  auto* sentence = cmd.add_option("--sentence", o.sentences, "a sentence (repeatable); " + default_note);
  cmd.add_option("--sentences-file", o.sentences_file, "UTF-8 file, one sentence per line")->excludes(sentence);
}

void add_plot_options(CLI::App& cmd, PlotOptions& o) {
  cmd.add_option("--plot", o.stage, "a stage to draw as a heatmap figure (with --svg)");
  cmd.add_option("--plot-index", o.index, "the leading indices of --plot's slice, e.g. \"0,3\" (item 0, head 3; default 0s)");
  cmd.add_option("--svg", o.svg, "write --plot's heatmap as an SVG file: vector cells, the tokens as text");
}

void save_plot(const PlotOptions& o, const Trace& trace, const std::vector<std::vector<std::string>>& tokens) {
  if (o.stage.empty() != o.svg.empty()) throw InputError("--plot STAGE and --svg FILE go together");
  if (o.stage.empty()) {
    if (!o.index.empty()) throw InputError("--plot-index applies to --plot");
    return;
  }
  const Stage* stage = nullptr;
  std::vector<std::string> names;
  for (const Stage& s : trace.stages()) {
    names.push_back(s.name);
    if (s.name == o.stage) stage = &s;
  }
  if (!stage) throw InputError("--plot: no stage '" + o.stage + "' (nearest: " + near_names(o.stage, names) + ")");
  std::vector<size_t> index;
  const auto& shape = stage->value.shape();
  if (!o.index.empty())
    for (const std::string& item : split_commas(o.index)) {
      const size_t axis = index.size(), i = parse_size("--plot-index", item, 0);
      if (axis + 2 >= shape.size())
        throw InputError("--plot-index " + o.index + ": '" + o.stage + "' has " + std::to_string(shape.size() < 2 ? 0 : shape.size() - 2) +
                         " leading axes");
      if (i >= shape[axis])
        throw InputError("--plot-index " + o.index + ": index " + item + " on an axis of " + std::to_string(shape[axis]));
      index.push_back(i);
    }
  if (stage->value.size() == 0) throw InputError("--plot: '" + o.stage + "' is empty: nothing to draw");
  const std::string svg = heatmap_svg(stage_figure(*stage, index, tokens));
  write_file_atomically(o.svg, [&](std::ostream& out) { out.write(svg.data(), std::streamsize(svg.size())); });
}

void print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  if (!std::cout) throw InputError("could not write the output");
}

}  // namespace attn::cli
