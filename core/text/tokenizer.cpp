#include "core/text/tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/base/json.hpp"

namespace attn {

Vocab::Vocab() { add(pad_token); }

Vocab::Vocab(std::vector<std::string> tokens) {
  for (auto& t : tokens) {
    if (contains(t)) throw InputError("token '" + t + "' appears twice in the vocabulary");
    add(t);
  }
}

int64_t Vocab::add(const std::string& token) {
  auto [it, inserted] = ids_.emplace(token, static_cast<int64_t>(tokens_.size()));
  if (inserted) tokens_.push_back(token);
  return it->second;
}

int64_t Vocab::id(const std::string& token) const {
  auto it = ids_.find(token);
  if (it == ids_.end()) throw InputError("unknown token '" + token + "' (not in the vocabulary)");
  return it->second;
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size())
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                     std::to_string(tokens_.size()) + ")");
  return tokens_[static_cast<size_t>(id)];
}

std::vector<std::pair<std::string, bool>> split_specials(const std::string& text, const std::vector<std::string>& specials) {
  std::vector<std::pair<std::string, bool>> out;
  size_t from = 0;
  for (;;) {
    size_t at = std::string::npos, length = 0;
    for (const std::string& s : specials) {
      const size_t found = s.empty() ? std::string::npos : text.find(s, from);
      if (found < at || (found == at && found != std::string::npos && s.size() > length)) at = found, length = s.size();
    }
    if (at == std::string::npos) break;
    if (at > from) out.emplace_back(text.substr(from, at - from), false);
    out.emplace_back(text.substr(at, length), true);
    from = at + length;
  }
  if (from < text.size()) out.emplace_back(text.substr(from), false);
  return out;
}

bool is_valid_utf8(const std::string& text) {
  for (size_t i = 0, n = 0; i < text.size(); i += n)
    if ((n = utf8_sequence_length(text, i)) == 0) return false;
  return true;
}

std::vector<std::string> split_words(const std::string& sentence) {
  if (!is_valid_utf8(sentence)) throw InputError("invalid UTF-8");
  static const std::string ideographic_space = "\xE3\x80\x80";
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < sentence.size(); ++i) {
    char c = sentence[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      flush();
    } else if (sentence.compare(i, 3, ideographic_space) == 0) {
      flush();
      i += 2;
    } else {
      word += c;
    }
  }
  flush();
  return words;
}

TokenBatch tokenize_batch(const std::vector<std::string>& sentences, Vocab& vocab, bool grow) {
  if (sentences.empty()) throw InputError("no sentences given");
  TokenBatch batch;
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::vector<std::string> words;
    try {
      words = split_words(sentences[i]);
    } catch (const InputError& e) {
      throw InputError("sentence " + std::to_string(i + 1) + ": " + e.what());
    }
    if (words.empty()) throw InputError("sentence " + std::to_string(i + 1) + " is empty");
    batch.seq = std::max(batch.seq, words.size());
    batch.tokens.push_back(std::move(words));
  }
  batch.batch = batch.tokens.size();
  batch.ids.reserve(batch.batch * batch.seq);
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    auto& words = batch.tokens[i];
    for (auto& w : words) {
      if (grow || vocab.contains(w)) {
        batch.ids.push_back(vocab.add(w));
      } else if (vocab.contains(unknown_token)) {
        batch.ids.push_back(vocab.id(unknown_token));
        w = unknown_token;
      } else {
        throw InputError("sentence " + std::to_string(i + 1) + ": unknown token '" + w +
                         "' (the vocabulary has no [UNK])");
      }
    }
    batch.lengths.push_back(words.size());
    batch.ids.resize(batch.ids.size() + batch.seq - words.size(), 0);
    words.resize(batch.seq, pad_token);
  }
  return batch;
}

std::vector<std::string> read_sentences_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read sentences file '" + path + "'");
  std::vector<std::string> sentences;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string where = path + ":" + std::to_string(number) + ": ";
    if (!is_valid_utf8(line)) throw InputError(where + "invalid UTF-8");
    if (split_words(line).empty()) throw InputError(where + "blank line (one sentence per line)");
    sentences.push_back(line);
  }
  if (in.bad()) throw InputError("error while reading '" + path + "'");
  if (sentences.empty()) throw InputError("sentences file '" + path + "' has no sentences");
  return sentences;
}

}  // namespace attn

namespace attn {

Vocab read_vocab_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read vocabulary file '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("vocabulary file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!j.is_object() || j.empty())
    throw InputError("vocabulary file '" + path + "' must be a non-empty JSON object {\"token\": id}");
  std::vector<std::string> tokens(j.size());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [token, id] : j.items()) {
    const auto i = json_integer<size_t>(id, "vocabulary file '" + path + "': the id of '" + token + "'", 0, j.size() - 1);
    if (seen[i]) throw InputError("vocabulary file '" + path + "': id " + std::to_string(i) + " is given to two tokens");
    seen[i] = true;
    tokens[i] = token;
  }
  if (j.contains(pad_token) && j[pad_token] != 0)
    throw InputError("vocabulary file '" + path + "': [PAD] must have id 0");
  return Vocab(std::move(tokens));
}

}  // namespace attn
