#include "core/text/tokenizer_json.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/text/regex.hpp"
#include "core/text/utf8.hpp"

namespace attn {
namespace {

// nlohmann's std::map JSON, not attn::Json: Llama 3's vocabulary has 128,000 keys (see tokenizer_bpe.cpp).
using J = nlohmann::json;

// --- fields, each error naming the file and the field ---

struct Where {
  std::string file, path;  // path: the field, e.g. "pre_tokenizer.pretokenizers[0]"
  Where at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  Where item(size_t i) const { return {file, path + "[" + std::to_string(i) + "]"}; }
  std::string name() const { return file + ": \"" + path + "\""; }
};

[[noreturn]] void fail(const Where& w, const std::string& problem) { throw InputError(w.name() + " " + problem); }

const J* optional_field(const J& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

const J& field(const J& object, const char* key, const Where& w) {
  const J* value = optional_field(object, key);
  if (!value) fail(w.at(key), "is missing");
  return *value;
}

bool flag(const J& object, const char* key, const Where& w, bool otherwise) {
  const J* value = optional_field(object, key);
  if (!value) return otherwise;
  if (!value->is_boolean()) fail(w.at(key), "must be true or false, got " + value->dump());
  return value->get<bool>();
}

std::string text(const J& value, const Where& w) {
  if (!value.is_string()) fail(w, "must be a string, got " + value.dump());
  return value.get<std::string>();  // valid UTF-8: nlohmann's parser checks every string
}

std::string text_field(const J& object, const char* key, const Where& w, const std::string& otherwise) {
  const J* value = optional_field(object, key);
  return value ? text(*value, w.at(key)) : otherwise;
}

const J& array(const J& value, const Where& w) {
  if (!value.is_array()) fail(w, "must be a list, got " + value.dump());
  return value;
}

std::string type_of(const J& object, const Where& w) {
  if (!object.is_object()) fail(w, "must be an object, got " + object.dump());
  return text(field(object, "type", w), w.at("type"));
}

[[noreturn]] void unsupported(const Where& w, const std::string& type, const char* supported) {
  fail(w, "has type '" + type + "', which attnlab does not read (it reads " + supported + ")");
}

// A Split / Replace pattern: {"Regex": "..."} or {"String": "..."} (matched literally).
struct Pattern {
  std::optional<Regex> regex;
  std::string literal;

  std::vector<std::pair<size_t, size_t>> matches(const std::string& s) const {
    if (regex) return regex->matches(s);
    std::vector<std::pair<size_t, size_t>> out;
    if (literal.empty()) return out;
    for (size_t at = s.find(literal); at != std::string::npos; at = s.find(literal, at + literal.size()))
      out.emplace_back(at, at + literal.size());
    return out;
  }
  std::string replace(const std::string& s, const std::string& content) const {
    std::string out;
    size_t from = 0;
    for (const auto& [begin, end] : matches(s)) out += s.substr(from, begin - from) + content, from = end;
    return out + s.substr(from);
  }
};

Pattern read_pattern(const J& object, const Where& w) {
  const J& p = field(object, "pattern", w);
  Pattern out;
  if (const J* regex = p.is_object() ? optional_field(p, "Regex") : nullptr)
    out.regex.emplace(text(*regex, w.at("pattern.Regex")), w.at("pattern.Regex").name());
  else if (const J* literal = p.is_object() ? optional_field(p, "String") : nullptr)
    out.literal = text(*literal, w.at("pattern.String"));
  else
    fail(w.at("pattern"), "must be {\"Regex\": …} or {\"String\": …}, got " + p.dump());
  return out;
}

// --- normalizers ---

std::string strip(const std::string& s, bool left, bool right) {
  const std::u32string t = utf8::decode(s, "the text");
  size_t begin = 0, end = t.size();
  while (left && begin < end && utf8::is_js_space(t[begin])) ++begin;
  while (right && end > begin && utf8::is_js_space(t[end - 1])) --end;
  return utf8::encode(t.substr(begin, end - begin));
}

JsonTokenizer::Normalizer read_normalizer(const J& n, const Where& w) {
  const std::string type = type_of(n, w);
  if (type == "NFC") return utf8::nfc;
  if (type == "NFD") return utf8::nfd;
  if (type == "NFKC") return utf8::nfkc;
  if (type == "NFKD") return utf8::nfkd;
  if (type == "Lowercase") return [](const std::string& s) { return utf8::encode(utf8::lower(utf8::decode(s, "the text"))); };
  if (type == "Prepend") {
    const std::string prepend = text(field(n, "prepend", w), w.at("prepend"));
    return [prepend](const std::string& s) { return s.empty() ? s : prepend + s; };
  }
  if (type == "Replace") {
    auto pattern = std::make_shared<const Pattern>(read_pattern(n, w));
    const std::string content = text_field(n, "content", w, "");
    return [pattern, content](const std::string& s) { return pattern->replace(s, content); };
  }
  if (type == "Strip") {
    const bool left = flag(n, "strip_left", w, false), right = flag(n, "strip_right", w, false);
    return [left, right](const std::string& s) { return strip(s, left, right); };
  }
  if (type == "Sequence") {
    std::vector<JsonTokenizer::Normalizer> steps;
    const J& list = array(field(n, "normalizers", w), w.at("normalizers"));
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(read_normalizer(list[i], w.at("normalizers").item(i)));
    return [steps](const std::string& s) {
      std::string out = s;
      for (const auto& step : steps) out = step(out);
      return out;
    };
  }
  unsupported(w, type, "NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip and Sequence");
}

// --- pre-tokenizers: each piece split further ---

// Split's behaviours, on spans marked matched or not (Hugging Face's SplitDelimiterBehavior).
std::vector<std::string> split_spans(const std::string& s, const std::vector<std::pair<size_t, size_t>>& matches,
                                     const std::string& behavior, bool invert) {
  std::vector<std::pair<std::string, bool>> spans;  // (text, is a delimiter)
  size_t from = 0;
  for (const auto& [begin, end] : matches) {
    if (begin > from) spans.emplace_back(s.substr(from, begin - from), invert);
    spans.emplace_back(s.substr(begin, end - begin), !invert);
    from = end;
  }
  if (from < s.size()) spans.emplace_back(s.substr(from), invert);
  std::vector<std::string> out;
  bool glue_next = false;  // MergedWithNext: the last delimiter waits for the next span
  for (size_t i = 0; i < spans.size(); ++i) {
    const auto& [piece, delimiter] = spans[i];
    if (behavior == "Removed" && delimiter) continue;
    const bool join = !out.empty() && (glue_next || (delimiter && behavior == "MergedWithPrevious") ||
                                       (delimiter && behavior == "Contiguous" && i > 0 && spans[i - 1].second));
    if (join) out.back() += piece;
    else out.push_back(piece);
    glue_next = delimiter && behavior == "MergedWithNext";
  }
  return out;
}

JsonTokenizer::PreTokenizer each_piece(std::function<std::vector<std::string>(const std::string&, bool)> split) {
  return [split](const std::vector<std::string>& pieces, bool first) {
    std::vector<std::string> out;
    for (const std::string& piece : pieces) {
      std::vector<std::string> parts = split(piece, first);
      std::move(parts.begin(), parts.end(), std::back_inserter(out));
    }
    return out;
  };
}

std::string byte_symbols_of(const std::string& piece) {
  std::string out;
  for (unsigned char b : piece) out += byte_symbol(b);
  return out;
}

JsonTokenizer::PreTokenizer byte_level(const J& p, const Where& w) {
  const bool prefix = flag(p, "add_prefix_space", w, true), regex = flag(p, "use_regex", w, true);
  return each_piece([prefix, regex](const std::string& piece, bool) {
    const std::string text = prefix && piece.rfind(' ', 0) != 0 ? " " + piece : piece;
    std::vector<std::string> out;
    for (const std::string& part : regex ? gpt2_pieces(text) : std::vector<std::string>{text})
      out.push_back(byte_symbols_of(part));
    return out;
  });
}

JsonTokenizer::PreTokenizer split(const J& p, const Where& w) {
  auto pattern = std::make_shared<const Pattern>(read_pattern(p, w));
  const std::string behavior = text_field(p, "behavior", w, "Isolated");
  static const char* const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
  if (std::find(std::begin(behaviors), std::end(behaviors), behavior) == std::end(behaviors))
    fail(w.at("behavior"), "must be Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got '" + behavior + "'");
  const bool invert = flag(p, "invert", w, false);
  return each_piece([pattern, behavior, invert](const std::string& piece, bool) {
    return split_spans(piece, pattern->matches(piece), behavior, invert);
  });
}

// Metaspace: spaces become the replacement (▁), one is prepended as prepend_scheme says, and with
// `split` each ▁ starts a new piece.
JsonTokenizer::PreTokenizer metaspace(const J& p, const Where& w) {
  const std::string replacement = text_field(p, "replacement", w, "\xE2\x96\x81");
  const std::string scheme = text_field(p, "prepend_scheme", w, flag(p, "add_prefix_space", w, true) ? "always" : "never");
  if (scheme != "always" && scheme != "first" && scheme != "never")
    fail(w.at("prepend_scheme"), "must be always, first or never, got '" + scheme + "'");
  const bool split_words = flag(p, "split", w, true);
  const Pattern space{std::nullopt, " "};
  return each_piece([=](const std::string& piece, bool first) {
    std::string s = space.replace(piece, replacement);
    if ((scheme == "always" || (scheme == "first" && first)) && s.rfind(replacement, 0) != 0) s = replacement + s;
    if (!split_words) return std::vector<std::string>{s};
    const Pattern mark{std::nullopt, replacement};
    return split_spans(s, mark.matches(s), "MergedWithNext", false);
  });
}

JsonTokenizer::PreTokenizer digits(const J& p, const Where& w) {
  const bool individual = flag(p, "individual_digits", w, false);
  return each_piece([individual](const std::string& piece, bool) {
    std::vector<std::pair<size_t, size_t>> runs;  // digits (Unicode's N*, as Rust's char::is_numeric)
    const std::u32string t = utf8::decode(piece, "the text");
    size_t byte = 0;
    for (char32_t c : t) {
      const size_t len = utf8::encode(std::u32string(1, c)).size();
      if (utf8::category(c) == utf8::Category::number) {
        if (!individual && !runs.empty() && runs.back().second == byte) runs.back().second += len;
        else runs.emplace_back(byte, byte + len);
      }
      byte += len;
    }
    return split_spans(piece, runs, "Isolated", false);
  });
}

void read_pre_tokenizer(const J& p, const Where& w, std::vector<JsonTokenizer::PreTokenizer>& out, bool& byte_symbols) {
  const std::string type = type_of(p, w);
  if (type == "Sequence") {
    const J& list = array(field(p, "pretokenizers", w), w.at("pretokenizers"));
    for (size_t i = 0; i < list.size(); ++i) read_pre_tokenizer(list[i], w.at("pretokenizers").item(i), out, byte_symbols);
  } else if (type == "ByteLevel") {
    out.push_back(byte_level(p, w));
    byte_symbols = true;
  } else if (type == "Split") {
    out.push_back(split(p, w));
  } else if (type == "Metaspace") {
    out.push_back(metaspace(p, w));
  } else if (type == "Digits") {
    out.push_back(digits(p, w));
  } else {
    unsupported(w, type, "ByteLevel, Split, Metaspace, Digits and Sequence");
  }
}

// --- the model ---

std::vector<std::pair<std::string, std::string>> read_merges(const J& list, const Where& w) {
  std::vector<std::pair<std::string, std::string>> merges;
  for (size_t i = 0; i < array(list, w).size(); ++i) {
    const J& m = list[i];
    if (m.is_array() && m.size() == 2) {  // ["a", "b"]: tokens may hold spaces
      merges.emplace_back(text(m[0], w.item(i)), text(m[1], w.item(i)));
      continue;
    }
    const std::string line = text(m, w.item(i));  // "a b"
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
      fail(w.item(i), "must be \"a b\" (two symbols, one space) or [\"a\", \"b\"], got " + m.dump());
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

BytePairTokenizer read_model(const J& m, const Where& w) {
  const std::string type = m.is_object() && !m.contains("type") && m.contains("merges") ? "BPE" : type_of(m, w);
  if (type != "BPE") unsupported(w, type, "BPE");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
    if (const J* value = optional_field(m, key); value && !(value->is_string() && value->get<std::string>().empty()))
      fail(w.at(key), "is not read by attnlab (a BPE without it is), got " + value->dump());
  BpeOptions options;
  options.byte_fallback = flag(m, "byte_fallback", w, false);
  options.ignore_merges = flag(m, "ignore_merges", w, false);
  options.fuse_unk = flag(m, "fuse_unk", w, false);
  options.unk = text_field(m, "unk_token", w, "");
  const J& vocab = field(m, "vocab", w);
  const Where vw = w.at("vocab");
  return BytePairTokenizer(tokens_by_id(vocab, vw.name()), read_merges(field(m, "merges", w), w.at("merges")), options);
}

// --- the post-processor: the special tokens around a single text ---

void read_post_processor(const J& p, const Where& w, const std::unordered_map<std::string, int64_t>& ids,
                         std::vector<int64_t>& prefix, std::vector<int64_t>& suffix) {
  const std::string type = type_of(p, w);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const J& list = array(field(p, "processors", w), w.at("processors"));
    for (size_t i = 0; i < list.size(); ++i) read_post_processor(list[i], w.at("processors").item(i), ids, prefix, suffix);
    return;
  }
  if (type != "TemplateProcessing") unsupported(w, type, "TemplateProcessing, ByteLevel and Sequence");
  const J& single = array(field(p, "single", w), w.at("single"));
  bool seen_text = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const Where iw = w.at("single").item(i);
    if (single[i].is_object() && single[i].contains("Sequence")) {
      seen_text = true;
      continue;
    }
    const J& special = single[i].is_object() ? field(single[i], "SpecialToken", iw) : single[i];
    const std::string id = text(field(special, "id", iw.at("SpecialToken")), iw.at("SpecialToken.id"));
    // special_tokens[id].ids when given, else the token of that name.
    std::vector<int64_t> these;
    const J* specials = optional_field(p, "special_tokens");
    const J* entry = specials && specials->is_object() ? optional_field(*specials, id.c_str()) : nullptr;
    if (entry) {
      const J& list = array(field(*entry, "ids", w.at("special_tokens." + id)), w.at("special_tokens." + id + ".ids"));
      for (size_t k = 0; k < list.size(); ++k)
        these.push_back(json_integer<int64_t>(list[k], w.at("special_tokens." + id + ".ids").item(k).name(), 0));
    } else if (const auto it = ids.find(id); it != ids.end()) {
      these.push_back(it->second);
    } else {
      fail(iw, "names '" + id + "', which is neither in special_tokens nor a token");
    }
    (seen_text ? suffix : prefix).insert((seen_text ? suffix : prefix).end(), these.begin(), these.end());
  }
}

// --- decoders: tokens to text pieces, the last step's pieces joined ---

JsonTokenizer::Decoder read_one_decoder(const J& d, const Where& w) {
  const std::string type = type_of(d, w);
  using Tokens = std::vector<std::string>;
  if (type == "ByteLevel") return [](Tokens t) { return Tokens{byte_level_text(t)}; };
  if (type == "Fuse") return [](Tokens t) {
    std::string joined;
    for (const std::string& s : t) joined += s;
    return Tokens{joined};
  };
  if (type == "ByteFallback") return [](Tokens t) {
    Tokens out;
    std::string bytes;  // a run of <0xNN> tokens, decoded together
    auto flush = [&] {
      if (!bytes.empty()) out.push_back(replace_ill_formed(bytes)), bytes.clear();
    };
    for (std::string& s : t) {
      unsigned byte = 0;
      char end = 0;
      if (s.size() == 6 && std::sscanf(s.c_str(), "<0x%2X%c", &byte, &end) == 2 && end == '>') {
        bytes.push_back(char(byte));
        continue;
      }
      flush();
      out.push_back(std::move(s));
    }
    flush();
    return out;
  };
  if (type == "Replace") {
    auto pattern = std::make_shared<const Pattern>(read_pattern(d, w));
    const std::string content = text_field(d, "content", w, "");
    return [pattern, content](Tokens t) {
      for (std::string& s : t) s = pattern->replace(s, content);
      return t;
    };
  }
  if (type == "Strip") {
    const std::string content = text_field(d, "content", w, " ");
    const size_t start = json_integer<size_t>(field(d, "start", w), w.at("start").name());
    const size_t stop = json_integer<size_t>(field(d, "stop", w), w.at("stop").name());
    return [content, start, stop](Tokens t) {
      for (std::string& s : t) {
        size_t begin = 0, end = s.size();
        for (size_t i = 0; i < start && s.compare(begin, content.size(), content) == 0 && begin < end; ++i) begin += content.size();
        for (size_t i = 0; i < stop && end >= begin + content.size() && s.compare(end - content.size(), content.size(), content) == 0; ++i)
          end -= content.size();
        s = s.substr(begin, end - begin);
      }
      return t;
    };
  }
  if (type == "Metaspace") {
    const std::string replacement = text_field(d, "replacement", w, "\xE2\x96\x81");
    const bool strip_first = text_field(d, "prepend_scheme", w, "always") != "never";
    return [replacement, strip_first](Tokens t) {
      const Pattern mark{std::nullopt, replacement};
      for (size_t i = 0; i < t.size(); ++i) {
        t[i] = mark.replace(t[i], " ");
        if (i == 0 && strip_first && !t[i].empty() && t[i][0] == ' ') t[i].erase(0, 1);
      }
      return t;
    };
  }
  unsupported(w, type, "ByteLevel, ByteFallback, Metaspace, Replace, Fuse, Strip and Sequence");
}

void read_decoder(const J& d, const Where& w, std::vector<JsonTokenizer::Decoder>& out) {
  if (type_of(d, w) != "Sequence") {
    out.push_back(read_one_decoder(d, w));
    return;
  }
  const J& list = array(field(d, "decoders", w), w.at("decoders"));
  for (size_t i = 0; i < list.size(); ++i) read_decoder(list[i], w.at("decoders").item(i), out);
}

// Ids below the model's vocabulary size plus the list's length: no gap an id could not fill.
std::vector<AddedToken> read_added(const J& list, const Where& w, size_t model_size) {
  std::vector<AddedToken> out;
  const auto max_id = int64_t(model_size + array(list, w).size()) - 1;
  for (size_t i = 0; i < array(list, w).size(); ++i) {
    const Where iw = w.item(i);
    AddedToken t;
    t.content = text(field(list[i], "content", iw), iw.at("content"));
    if (t.content.empty()) fail(iw.at("content"), "is empty");
    t.id = json_integer<int64_t>(field(list[i], "id", iw), iw.at("id").name(), 0, max_id);
    t.special = flag(list[i], "special", iw, false);
    t.normalized = flag(list[i], "normalized", iw, !t.special);
    t.lstrip = flag(list[i], "lstrip", iw, false);
    t.rstrip = flag(list[i], "rstrip", iw, false);
    out.push_back(t);
  }
  return out;
}

}  // namespace

JsonTokenizer JsonTokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read tokenizer '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return from_text(text.str(), path);
}

JsonTokenizer JsonTokenizer::from_text(const std::string& json, const std::string& file) {
  J j;
  try {
    j = J::parse(json);
  } catch (const J::exception& e) {
    throw InputError("tokenizer '" + file + "' is not valid JSON: " + std::string(e.what()));
  }
  const Where w{file, ""};
  if (!j.is_object()) throw InputError("tokenizer '" + file + "' must be a JSON object");
  JsonTokenizer t;
  t.model_.emplace(read_model(field(j, "model", w), w.at("model")));
  t.tokens_ = t.model_->tokens();
  if (const J* n = optional_field(j, "normalizer")) t.normalizer_ = read_normalizer(*n, w.at("normalizer"));
  if (const J* p = optional_field(j, "pre_tokenizer")) read_pre_tokenizer(*p, w.at("pre_tokenizer"), t.pre_tokenizers_, t.byte_level_);
  if (const J* a = optional_field(j, "added_tokens")) t.added_ = read_added(*a, w.at("added_tokens"), t.tokens_.size());
  std::vector<bool> has_token(t.tokens_.size(), true);  // added tokens may leave a gap after the model's
  for (const AddedToken& a : t.added_) {
    if (size_t(a.id) >= t.tokens_.size()) t.tokens_.resize(size_t(a.id) + 1), has_token.resize(size_t(a.id) + 1, false);
    t.tokens_[size_t(a.id)] = a.content;
    has_token[size_t(a.id)] = true;
    t.added_ids_[a.content] = a.id;
    if (!a.normalized || !t.normalizer_) {
      t.raw_contents_.push_back(a.content);
      continue;
    }
    const std::string normalized = t.normalizer_(a.content);
    t.normalized_contents_.push_back(normalized);
    t.added_ids_[normalized] = a.id;
  }
  for (size_t id = 0; id < t.tokens_.size(); ++id)
    if (!has_token[id]) fail(w.at("added_tokens"), "leave id " + std::to_string(id) + " without a token");
  std::unordered_map<std::string, int64_t> ids = t.added_ids_;
  for (size_t id = 0; id < t.model_->size(); ++id) ids.emplace(t.model_->tokens()[id], int64_t(id));
  if (const J* p = optional_field(j, "post_processor")) read_post_processor(*p, w.at("post_processor"), ids, t.prefix_, t.suffix_);
  for (int64_t id : t.prefix_) t.token(id);  // ids within the vocabulary
  for (int64_t id : t.suffix_) t.token(id);
  if (const J* d = optional_field(j, "decoder")) read_decoder(*d, w.at("decoder"), t.decoders_);
  return t;
}

const std::string& JsonTokenizer::token(int64_t id) const {
  if (id < 0 || size_t(id) >= tokens_.size())
    throw InputError("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(tokens_.size()) +
                     " tokens)");
  return tokens_[size_t(id)];
}

std::optional<int64_t> JsonTokenizer::find(const std::string& token) const {
  if (const auto it = added_ids_.find(token); it != added_ids_.end()) return it->second;
  return model_->find(token);
}

std::string JsonTokenizer::label(int64_t id) const {
  return byte_level_ && !added_ids_.count(token(id)) ? readable_token(token(id)) : token(id);
}

// `text` cut at the added tokens among `contents` (longest first at a place), and the whitespace an
// lstrip / rstrip token takes from its neighbours removed, as tokenizers.js does.
std::vector<std::pair<std::string, bool>> JsonTokenizer::split_added(const std::string& text,
                                                                     const std::vector<std::string>& contents) const {
  std::vector<std::pair<std::string, bool>> parts = split_specials(text, contents);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].second) continue;
    const AddedToken& a = *std::find_if(added_.begin(), added_.end(), [&](const AddedToken& t) { return added_ids_.at(parts[i].first) == t.id; });
    if (a.lstrip && i > 0 && !parts[i - 1].second) parts[i - 1].first = strip(parts[i - 1].first, false, true);
    if (a.rstrip && i + 1 < parts.size() && !parts[i + 1].second) parts[i + 1].first = strip(parts[i + 1].first, true, false);
  }
  return parts;
}

void JsonTokenizer::encode_section(const std::string& section, bool first, Encoding& e) const {
  const std::string normalized = normalizer_ ? normalizer_(section) : section;
  for (const auto& [part, added] : split_added(normalized, normalized_contents_)) {
    if (added) {
      e.ids.push_back(added_ids_.at(part));
      e.tokens.push_back(token(e.ids.back()));
      continue;
    }
    if (part.empty()) continue;
    std::vector<std::string> pieces{part};
    for (const PreTokenizer& p : pre_tokenizers_) pieces = p(pieces, first);
    Encoding words;  // unknown tokens fuse within a section only
    for (const std::string& piece : pieces) model_->encode_word(piece, words);
    e.ids.insert(e.ids.end(), words.ids.begin(), words.ids.end());
    e.tokens.insert(e.tokens.end(), words.tokens.begin(), words.tokens.end());
  }
}

Encoding JsonTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  utf8::decode(text, "the text");
  Encoding e;
  const auto append = [&](const std::vector<int64_t>& ids) {
    if (!add_special_tokens) return;
    for (int64_t id : ids) e.ids.push_back(id), e.tokens.push_back(token(id));
  };
  append(prefix_);
  const auto sections = split_added(text, raw_contents_);
  for (size_t i = 0; i < sections.size(); ++i) {
    const auto& [section, added] = sections[i];
    if (!added) {
      if (!section.empty()) encode_section(section, i == 0, e);
      continue;
    }
    e.ids.push_back(added_ids_.at(section));
    e.tokens.push_back(section);
  }
  append(suffix_);
  return e;
}

std::string JsonTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> pieces;
  for (int64_t id : ids) pieces.push_back(token(id));
  if (decoders_.empty()) {
    std::string out;
    for (size_t i = 0; i < pieces.size(); ++i) out += (i ? " " : "") + pieces[i];
    return out;
  }
  for (const Decoder& d : decoders_) pieces = d(std::move(pieces));
  std::string out;
  for (const std::string& p : pieces) out += p;
  return out;
}

}  // namespace attn
