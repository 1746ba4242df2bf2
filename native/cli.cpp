#include "native/cli.hpp"

#include <iostream>

#include "core/base/error.hpp"
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

void print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  if (!std::cout) throw InputError("could not write the output");
}

}  // namespace attn::cli
