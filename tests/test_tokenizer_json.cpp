// tokenizer.json (core/text/tokenizer_json.*) on its own: the pipeline's pieces on small inline files,
// the family fixtures at their edges, and the errors a malformed or unsupported file gets
// (tests/tokenizers/check.mjs compares the families with tokenizers.js on several hundred sentences).
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/text/tokenizer_json.hpp"
#include "tests/fixtures.hpp"

using namespace attn;

namespace {

const std::string data = attn::test::fixtures_dir() + "/../data/tokenizers/";

// A tokenizer.json around `model` (its "vocab" and "merges") with the pipeline's other parts.
std::string file(const std::string& model, const std::string& rest = "") {
  return R"({"version": "1.0", "added_tokens": [], )" + rest + (rest.empty() ? "" : ", ") + R"("model": {"type": "BPE", )" +
         model + "}}";
}

std::vector<std::string> tokens(const JsonTokenizer& t, const std::string& text) { return t.encode(text).tokens; }

const std::string letters = R"("vocab": {"a": 0, "b": 1, "c": 2, " ": 3, "1": 4, "2": 5, "3": 6, "4": 7, "123": 8, "▁": 9, "▁a": 10}, )";

}  // namespace

TEST_CASE("tokenizer.json: Llama 2's pipeline on the decoder fixture", "[tokenizer_json]") {
  const JsonTokenizer t = JsonTokenizer::from_file(test::fixtures_dir() + "/pretrained/llama_tiny/tokenizer.json");
  const Encoding e = t.encode("the cat sat");
  CHECK(e.tokens == std::vector<std::string>{"<s>", "▁the", "▁cat", "▁sat"});
  CHECK(e.ids.front() == 1);
  CHECK(t.decode(e.ids) == "<s> the cat sat");
  CHECK(t.decode(t.encode("the cat", false).ids) == "the cat");
  // No byte tokens: characters outside the vocabulary become <unk>, a run of them one (fuse_unk).
  CHECK(tokens(t, "ÀÉ cat") == std::vector<std::string>{"<s>", "▁", "<unk>", "▁cat"});
  CHECK(t.encode("the", false).ids.size() == 1);
}

TEST_CASE("tokenizer.json: the families' fixtures at their edges", "[tokenizer_json]") {
  const JsonTokenizer llama3 = JsonTokenizer::from_file(data + "llama3.json");
  const Encoding e = llama3.encode("Hello tokenization");
  CHECK(e.tokens.front() == "<|begin_of_text|>");
  CHECK(e.tokens.back() == "Ġtokenization");  // ignore_merges: a word the vocabulary has is one token
  CHECK(llama3.label(e.ids.back()) == "\xC2\xB7tokenization");
  for (const std::string text : {"나는 오늘 학교에 간다 👋", "x  \n\n y", "12345"})
    CHECK(llama3.decode(llama3.encode(text, false).ids) == text);
  const JsonTokenizer gemma = JsonTokenizer::from_file(data + "gemma.json");
  const Encoding g = gemma.encode("👋<start_of_turn>");
  CHECK(g.tokens == std::vector<std::string>{"<bos>", "<0xF0>", "<0x9F>", "<0x91>", "<0x8B>", "<start_of_turn>"});
  CHECK(gemma.decode(g.ids) == "<bos>👋<start_of_turn>");
  CHECK_THROWS_WITH(gemma.encode("ok \xff"), Catch::Contains("invalid UTF-8 at byte 3"));
  CHECK_THROWS_WITH(gemma.decode({1, 100000}), Catch::Contains("token id 100000 is outside the vocabulary"));
}

TEST_CASE("tokenizer.json: Split's patterns and behaviours", "[tokenizer_json]") {
  // Llama 3's digits: groups of at most three, each then merged (ignore_merges takes "123" whole).
  const std::string digits = R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated"})";
  const JsonTokenizer t = JsonTokenizer::from_text(file(letters + R"("merges": [], "ignore_merges": true)", digits), "t.json");
  CHECK(tokens(t, "12341") == std::vector<std::string>{"123", "4", "1"});
  const std::string removed = R"("pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"})";
  CHECK(tokens(JsonTokenizer::from_text(file(letters + R"("merges": [])", removed), "t.json"), "a  b") ==
        std::vector<std::string>{"a", "b"});
  const std::string contractions =
      R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(?i:'s)|\\s+(?!\\S)|\\s+|[^\\s']+"}, "behavior": "Isolated"})";
  const std::string vocab = R"("vocab": {"'": 0, "s": 1, "S": 2, " ": 3, "a": 4, "'s": 5, "'S": 6}, "merges": [["'", "s"], ["'", "S"]])";
  CHECK(tokens(JsonTokenizer::from_text(file(vocab, contractions), "t.json"), "a'S  a") ==
        std::vector<std::string>{"a", "'S", " ", " ", "a"});
}

TEST_CASE("tokenizer.json: merges as pairs with spaces, byte fallback, normalizers, Metaspace", "[tokenizer_json]") {
  const std::string pairs = R"("vocab": {"a": 0, " ": 1, "b": 2, "c": 3, "a ": 4, "a b": 5, "a bc": 6},
                               "merges": [["a", " "], ["a ", "b"], ["a b", "c"]])";
  CHECK(tokens(JsonTokenizer::from_text(file(pairs), "t.json"), "a bc") == std::vector<std::string>{"a bc"});
  const std::string normalizers =
      R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]})";
  CHECK(tokens(JsonTokenizer::from_text(file(letters + R"("merges": [])", normalizers), "t.json"), "ＡB") ==
        std::vector<std::string>{"a", "b"});
  const std::string metaspace = R"("pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"})";
  CHECK(tokens(JsonTokenizer::from_text(file(letters + R"("merges": [["▁", "a"]])", metaspace), "t.json"), "a b") ==
        std::vector<std::string>{"▁a", "▁", "b"});
  const std::string fallback = R"("vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3}, "merges": [],
                                  "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true)";
  CHECK(tokens(JsonTokenizer::from_text(file(fallback), "t.json"), "aéa€€") ==
        std::vector<std::string>{"a", "<0xC3>", "<0xA9>", "a", "<unk>"});
}

TEST_CASE("tokenizer.json: added tokens are cut out first, their lstrip and rstrip take the spaces", "[tokenizer_json]") {
  const std::string added = R"("added_tokens": [{"id": 11, "content": "<x>", "special": true, "lstrip": true, "rstrip": true}],)";
  std::string json = file(letters + R"("merges": [])");
  json.replace(json.find(R"("added_tokens": [],)"), std::string(R"("added_tokens": [],)").size(), added);
  const JsonTokenizer t = JsonTokenizer::from_text(json, "t.json");
  CHECK(tokens(t, "a  <x>  b") == std::vector<std::string>{"a", "<x>", "b"});
  CHECK(t.size() == 12);
  CHECK(t.find("<x>") == 11);
}

TEST_CASE("tokenizer.json: a malformed or unsupported file is an InputError naming it and the field", "[tokenizer_json]") {
  const auto fails = [](const std::string& json, const std::string& message) {
    CHECK_THROWS_WITH(JsonTokenizer::from_text(json, "tok.json"), Catch::Contains(message));
  };
  fails("{", "tokenizer 'tok.json' is not valid JSON");
  fails(R"({"model": {"type": "Unigram", "vocab": []}})",
        R"(tok.json: "model" has type 'Unigram', which attnlab does not read (it reads BPE))");
  fails(R"({"model": {"type": "WordLevel", "vocab": {}}})", "type 'WordLevel'");
  fails(file(letters + R"("merges": [])", R"("normalizer": {"type": "Precompiled"})"),
        R"("normalizer" has type 'Precompiled', which attnlab does not read (it reads NFC, NFD, NFKC, NFKD, Lowercase)");
  fails(file(letters + R"("merges": [])", R"("pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}]})"),
        R"("pre_tokenizer.pretokenizers[0]" has type 'Whitespace')");
  fails(file(letters + R"("merges": [])", R"("decoder": {"type": "WordPiece"})"), R"("decoder" has type 'WordPiece')");
  fails(file(letters + R"("merges": [])", R"("post_processor": {"type": "RobertaProcessing"})"), "'RobertaProcessing'");
  fails(file(letters + R"("merges": ["a"])"), R"("model.merges[0]" must be "a b")");
  fails(file(R"("vocab": {"a": 1}, "merges": [])"), "the id of 'a' must be an integer from 0 to 0");
  fails(file(letters + R"("merges": [])", R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("}})"),
        R"("pre_tokenizer.pattern.Regex": cannot compile the pattern (()");
  fails(file(letters + R"("merges": [], "end_of_word_suffix": "</w>")"), R"("model.end_of_word_suffix" is not read by attnlab)");
  fails(file(letters + R"("merges": [])", R"("post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}]})"),
        "names '<s>', which is neither in special_tokens nor a token");
}
