// Pieces shared by the `attn` subcommands: strict number parsing and the sentence options.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace attn::cli {

// A decimal integer >= min, or an InputError naming the flag.
size_t parse_size(const std::string& flag, const std::string& text, size_t min);
uint64_t parse_seed(const std::string& text);
// A finite decimal number, or an InputError naming the flag.
double parse_number(const std::string& flag, const std::string& text);

struct SentenceOptions {
  std::vector<std::string> sentences;
  std::string sentences_file;
  // The sentences given, or `fallback` when neither option was used.
  std::vector<std::string> resolve(const std::vector<std::string>& fallback) const;
};
void add_sentence_options(CLI::App& cmd, SentenceOptions& o, const std::string& default_note);

// Writes `text` to stdout and fails loudly if it could not be written (a closed pipe, a full disk).
void print(const std::string& text);

}  // namespace attn::cli
