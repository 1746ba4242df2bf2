#include "native/cli.hpp"

#include <iostream>
#include <sstream>

#include "core/base/error.hpp"
#include "core/io/safetensors.hpp"
#include "core/plot/png.hpp"
#include "core/plot/svg.hpp"
#include "core/plot/table.hpp"
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

std::vector<int64_t> parse_id_list(const std::string& text, size_t row) {
  std::istringstream in(text);
  std::vector<int64_t> ids;
  std::string word;
  while (in >> word) ids.push_back(int64_t(parse_size("--ids (sequence " + std::to_string(row) + ")", word, 0)));
  if (ids.empty()) throw InputError("--ids sequence " + std::to_string(row) + " is empty");
  return ids;
}

void add_plot_options(CLI::App& cmd, PlotOptions& o) {
  cmd.add_option("--plot", o.stage, "a stage to draw as a heatmap (with --svg, --png, --csv or --tex)");
  cmd.add_option("--plot-index", o.index, "the leading indices of --plot's slice, e.g. \"0,3\" (item 0, head 3; default 0s)");
  cmd.add_option("--svg", o.svg, "write --plot's heatmap as an SVG file: vector cells, the tokens as text");
  cmd.add_option("--png", o.png, "write --plot's heatmap as a PNG picture (cells only; --scale)");
  cmd.add_option("--scale", o.scale, "--png's scale: each cell N times as many pixels a side (1 to 16; default 1)");
  cmd.add_option("--csv", o.csv, "write --plot's numbers as CSV (the labels as its first row and column)");
  cmd.add_option("--tex", o.tex, "write --plot's numbers as a LaTeX table in the heatmap's colours");
}

void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](std::ostream& out) { out.write(text.data(), std::streamsize(text.size())); });
}

namespace {

// The slice --plot-index picks of --plot's stage, with its colours and labels.
HeatmapFigure plot_figure(const PlotOptions& o, const Trace& trace, const std::vector<std::vector<std::string>>& tokens) {
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
  return stage_figure(*stage, index, tokens);
}

}  // namespace

void save_plot(const PlotOptions& o, const Trace& trace, const std::vector<std::vector<std::string>>& tokens) {
  const bool output = !o.svg.empty() || !o.png.empty() || !o.csv.empty() || !o.tex.empty();
  if (o.stage.empty() != !output) throw InputError("--plot STAGE goes with --svg, --png, --csv or --tex FILE");
  if (o.scale < 1 || o.scale > max_png_scale) throw InputError("--scale must be 1 to " + std::to_string(max_png_scale));
  if (o.scale != 1 && o.png.empty()) throw InputError("--scale applies to --png");
  if (o.stage.empty()) {
    if (!o.index.empty()) throw InputError("--plot-index applies to --plot");
    return;
  }
  const HeatmapFigure figure = plot_figure(o, trace, tokens);
  if (!o.svg.empty()) write_text(o.svg, heatmap_svg(figure));
  if (!o.csv.empty()) write_text(o.csv, figure_csv(figure));
  if (!o.tex.empty()) write_text(o.tex, figure_latex(figure));
  if (!o.png.empty()) {
    const auto png = png_bytes(slice_pixels(figure.slice, figure.map, figure.range), figure.slice.cols, figure.slice.rows,
                               png_cell(figure.slice.rows, figure.slice.cols) * o.scale);
    write_file_atomically(o.png, [&](std::ostream& out) { out.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size())); });
  }
}

void print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  if (!std::cout) throw InputError("could not write the output");
}

}  // namespace attn::cli
