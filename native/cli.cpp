#include "native/cli.hpp"

#include <cmath>
#include <cstdlib>

#include <iostream>

#include "core/base/error.hpp"
#include "core/torch/rng.hpp"
#include "core/text/tokenizer.hpp"

namespace attn::cli {

size_t parse_size(const std::string& flag, const std::string& text, size_t min) {
  bool ok = !text.empty() && text.size() <= 18;
  for (char c : text) ok = ok && c >= '0' && c <= '9';
  const size_t value = ok ? std::stoull(text) : 0;
  if (!ok || value < min)
    throw InputError(flag + " expects an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

uint64_t parse_seed(const std::string& text) {
  auto seed = parse_torch_seed(text);
  if (!seed) throw InputError("--seed expects an integer in [-2^63, 2^64) as torch.manual_seed accepts, got '" + text + "'");
  return *seed;
}

double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw InputError(flag + " expects a finite number, got '" + text + "'");
  return v;
}

std::vector<std::string> SentenceOptions::resolve(const std::vector<std::string>& fallback) const {
  if (!sentences_file.empty()) return read_sentences_file(sentences_file);
  return sentences.empty() ? fallback : sentences;
}

void add_sentence_options(CLI::App& cmd, SentenceOptions& o, const std::string& default_note) {
  auto* sentence = cmd.add_option("--sentence", o.sentences, "a sentence (repeatable); " + default_note);
  cmd.add_option("--sentences-file", o.sentences_file, "UTF-8 file, one sentence per line")->excludes(sentence);
}

void print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  if (!std::cout) throw InputError("could not write the output");
}

}  // namespace attn::cli
