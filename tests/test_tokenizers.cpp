// The checkpoint tokenizers on their own: the fixtures' sentences as tests/torchgen/pretrained.py
// tokenised them, GPT-2's pattern at its edges, labels of byte-level pieces, and bad tokenizer files
// (tests/tokenizers/check.mjs compares both with independent implementations on many more sentences).
#include <filesystem>
#include <fstream>

#include "core/base/error.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/text/tokenizer_wordpiece.hpp"
#include "tests/fixtures.hpp"

using namespace attn;

namespace {

const std::string dir = attn::test::fixtures_dir() + "/pretrained/";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / ("attn-tokenizers-" + name)).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("the fixtures' sentences tokenise as the reference script did", "[tokenizers]") {
  const std::string config = dir + "bert_tiny/tokenizer_config.json";
  const WordPieceTokenizer bert = WordPieceTokenizer::from_files(dir + "bert_tiny/vocab.txt", &config);
  const BytePairTokenizer gpt2 = BytePairTokenizer::from_files(dir + "gpt2_tiny/vocab.json", dir + "gpt2_tiny/merges.txt");
  for (const auto& c : test::cached_fixture("pretrained/pretrained_stages.json")) {
    INFO(c.at("case"));
    const auto& texts = c.at("text");
    for (size_t row = 0; row < texts.size(); ++row) {
      Encoding e;
      if (texts[row].is_array()) {
        const auto first = texts[row][0].get<std::string>();
        const auto second = texts[row][1].is_null() ? "" : texts[row][1].get<std::string>();
        e = bert.encode(first, texts[row][1].is_null() ? nullptr : &second);
        const auto types = c.at("token_type_ids")[row].get<std::vector<int64_t>>();
        CHECK(std::vector<int64_t>(types.begin(), types.begin() + long(e.type_ids.size())) == e.type_ids);
      } else {
        e = gpt2.encode(texts[row].get<std::string>());
      }
      CHECK(e.tokens == c.at("tokens")[row].get<std::vector<std::string>>());
      const auto ids = c.at("input_ids")[row].get<std::vector<int64_t>>();
      CHECK(std::vector<int64_t>(ids.begin(), ids.begin() + long(e.ids.size())) == e.ids);
    }
  }
}

TEST_CASE("GPT-2's pattern splits as the regular expression does", "[tokenizers]") {
  using V = std::vector<std::string>;
  CHECK(gpt2_pieces("Hello world") == V{"Hello", " world"});
  CHECK(gpt2_pieces("I'm") == V{"I", "'m"});
  CHECK(gpt2_pieces("a  b") == V{"a", " ", " b"});      // \s+(?!\S) leaves the last space to the word
  CHECK(gpt2_pieces("a   ") == V{"a", "   "});          // trailing spaces stay together
  CHECK(gpt2_pieces("x\n\ny") == V{"x", "\n", "\n", "y"});  // only ' ' joins the next word
  CHECK(gpt2_pieces("3.14") == V{"3", ".", "14"});
  CHECK(gpt2_pieces(" !!") == V{" !!"});
  CHECK(gpt2_pieces("나는 간다") == V{"나는", " 간다"});
  CHECK_THROWS_AS(gpt2_pieces("bad \xff"), InputError);
}

TEST_CASE("byte-level pieces are readable labels", "[tokenizers]") {
  CHECK(readable_token("\xC4\xA0the") == "\xC2\xB7the");  // Ġthe: a leading space
  CHECK(readable_token("\xC4\x8A") == "\\n");             // Ċ
  CHECK(readable_token("hello") == "hello");
  // 고 (EA B3 A0) split after its first two bytes: ê³ then ł.
  CHECK(readable_token("\xC3\xAA\xC2\xB3") == "<EA><B3>");
  CHECK(readable_token("\xC3\xAA\xC2\xB3\xC5\x82") == "\xEA\xB3\xA0");
  CHECK(readable_token("##ing") == "##ing");
}

TEST_CASE("byte-level tokens decode as GPT2Tokenizer.decode does, errors replaced", "[tokenizers]") {
  const auto bytes = [](const std::string& b) {
    std::vector<std::string> tokens;
    for (unsigned char c : b) tokens.push_back(byte_symbol(c));
    return tokens;
  };
  CHECK(byte_level_text(bytes("the \xEA\xB3\xA0")) == "the \xEA\xB3\xA0");
  // Python's errors="replace": one U+FFFD per maximal ill-formed part.
  CHECK(byte_level_text(bytes("a\xEA\xB3" "b")) == "a\xEF\xBF\xBD" "b");              // a truncated syllable
  CHECK(byte_level_text(bytes("\xEB\xEB")) == "\xEF\xBF\xBD\xEF\xBF\xBD");          // two lead bytes
  CHECK(byte_level_text(bytes("\xE0\x80\x80")) == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  CHECK(byte_level_text({"<|endoftext|>", byte_symbol('x')}) == "<|endoftext|>x");
}

TEST_CASE("WordPiece follows BertTokenizer's rules", "[tokenizers]") {
  const WordPieceTokenizer t({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "play", "##ing", "un", "##aff", "##able", "cafe", "!",
                              "中", "σοφος", "ς"},
                             WordPieceOptions(), "vocab.txt");
  using V = std::vector<std::string>;
  CHECK(t.tokenize("Playing unaffable!") == V{"play", "##ing", "un", "##aff", "##able", "!"});
  CHECK(t.tokenize("Café") == V{"cafe"});
  CHECK(t.tokenize("x中y") == V{"[UNK]", "中", "[UNK]"});
  CHECK(t.tokenize("ΣΟΦΟΣ") == V{"σοφος"});  // final sigma, then accents stripped
  CHECK(t.tokenize(std::string(101, 'a')) == V{"[UNK]"});
  CHECK(t.tokenize("[CLS] play") == V{"[CLS]", "play"});
  CHECK(t.tokenize("play[SEP]!") == V{"play", "[SEP]", "!"});  // cut out of words too, as transformers does
  CHECK(t.tokenize("[MASK]") == V{"[UNK]", "[UNK]", "[UNK]"});  // not in this vocabulary: "[", "mask", "]"
  const std::string second = "play";
  const Encoding e = t.encode("cafe", &second);
  CHECK(e.tokens == V{"[CLS]", "cafe", "[SEP]", "play", "[SEP]"});
  CHECK(e.type_ids == std::vector<int64_t>{0, 0, 0, 1, 1});
  WordPieceOptions cased;
  cased.lower_case = false;
  CHECK(WordPieceTokenizer({"[UNK]", "[CLS]", "[SEP]", "Café"}, cased, "v").tokenize("Café") == V{"Café"});
}

TEST_CASE("bad tokenizer files name the file and the problem", "[tokenizers]") {
  CHECK_THROWS_WITH(WordPieceTokenizer({"[UNK]", "[SEP]"}, WordPieceOptions(), "vocab.txt"),
                    "vocab.txt has no [CLS] token, which BERT's input needs");
  CHECK_THROWS_WITH(WordPieceTokenizer::from_files("/nonexistent/vocab.txt", nullptr), Catch::Contains("cannot read"));
  const std::string bad_utf8 = write_temp("vocab.txt", "[UNK]\n[CLS]\n\xff\n");
  CHECK_THROWS_WITH(WordPieceTokenizer::from_files(bad_utf8, nullptr), Catch::EndsWith("vocab.txt:3: invalid UTF-8"));
  const std::string config = write_temp("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  const std::string vocab = dir + "bert_tiny/vocab.txt";
  CHECK_THROWS_WITH(WordPieceTokenizer::from_files(vocab, &config), Catch::Contains("'do_lower_case' must be true or false"));
  const std::string merges = dir + "gpt2_tiny/merges.txt";
  const std::string not_json = write_temp("vocab.json", "{\"a\": ");
  CHECK_THROWS_WITH(BytePairTokenizer::from_files(not_json, merges), Catch::Contains("is not valid JSON"));
  const std::string twice = write_temp("vocab2.json", R"({"a": 0, "b": 0})");
  CHECK_THROWS_WITH(BytePairTokenizer::from_files(twice, merges), Catch::Contains("id 0 is given to two tokens"));
  const std::string gap = write_temp("vocab3.json", R"({"a": 0, "b": 5})");
  CHECK_THROWS_WITH(BytePairTokenizer::from_files(gap, merges), Catch::Contains("the id of 'b' must be an integer from 0 to 1, got 5"));
  const std::string bad_merges = write_temp("merges.txt", "#version: 0.2\na b\nabc\n");
  CHECK_THROWS_WITH(BytePairTokenizer::from_files(dir + "gpt2_tiny/vocab.json", bad_merges),
                    Catch::EndsWith("merges.txt:3: a merge is two symbols separated by one space"));
  const BytePairTokenizer gpt2 = BytePairTokenizer::from_files(dir + "gpt2_tiny/vocab.json", dir + "gpt2_tiny/merges.txt");
  CHECK(gpt2.encode("dog<|endoftext|>").tokens.back() == "<|endoftext|>");
  const BytePairTokenizer small({"a"}, {});
  CHECK_THROWS_WITH(small.encode("ab"), Catch::Contains("the vocabulary has no token 'b'"));
}
