// Pieces shared by the `attn` subcommands: the sentence options and checked printing (strict number
// parsing is core/base/parse.hpp, which every front end uses).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/parse.hpp"
#include "core/model/trace.hpp"
#include "core/torch/rng.hpp"

namespace attn::cli {

struct SentenceOptions {
  std::vector<std::string> sentences;
  std::string sentences_file;
  // The sentences given, or `fallback` when neither option was used.
  std::vector<std::string> resolve(const std::vector<std::string>& fallback) const;
};
void add_sentence_options(CLI::App& cmd, SentenceOptions& o, const std::string& default_note);
// One --ids sequence ("12 7 3", the `row`-th given): its token ids; InputError for a non-id or none.
std::vector<int64_t> parse_id_list(const std::string& text, size_t row);

// --plot STAGE [--plot-index I,J] with --svg, --png [--scale N], --csv and/or --tex FILE: one slice of a
// stage as an SVG figure, a PNG picture, CSV numbers or a LaTeX table (core/plot), each file written whole
// or not at all; `tokens` label the sequence axes.
struct PlotOptions {
  std::string stage, index, svg, png, csv, tex;
  size_t scale = 1;
};
void add_plot_options(CLI::App& cmd, PlotOptions& o);
void save_plot(const PlotOptions& o, const Trace& trace, const std::vector<std::vector<std::string>>& tokens);

// Writes `text` as the file `path`, whole or not at all (write_file_atomically).
void write_text(const std::string& path, const std::string& text);

// Writes `text` to stdout and fails loudly if it could not be written (a closed pipe, a full disk).
void print(const std::string& text);

}  // namespace attn::cli
