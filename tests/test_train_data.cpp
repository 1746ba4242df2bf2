// The data side of `attn train` (core/train/train_data.*): data files and their errors, vocabulary, the
// validation split, randperm and the batch order against PyTorch (tests/torchgen/train_data.py),
// padding, and the built-in tasks checked by independent recounts.
#include "core/train/train_data.hpp"

#include <optional>
#include <set>

#include "core/base/error.hpp"
#include "tests/fixtures.hpp"

using namespace attn;
using namespace attn::train;

namespace {

const nlohmann::json& fixture() { return test::cached_fixture("train_data.json"); }

// The message parse_data throws for `content`, or "" if it parses.
std::string parse_error(const std::string& path, const std::string& content) {
  try {
    parse_data(path, content);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<LabelledItem> items_of(const std::string& path, const std::string& content, Vocab& vocab) {
  const auto lines = parse_data(path, content);
  add_words(vocab, lines);
  return make_items(path, lines, {&vocab, vocab.size(), 64});
}

std::string make_error(const std::string& content, const batch::ItemRules& rules) {
  try {
    make_items("d.jsonl", parse_data("d.jsonl", content), rules);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<size_t> sizes(const nlohmann::json& j) { return j.get<std::vector<size_t>>(); }

bool balanced(const std::vector<std::string>& tokens) {
  int depth = 0;
  for (const auto& t : tokens) {
    depth += t == "(" ? 1 : -1;
    if (depth < 0) return false;
  }
  return depth == 0;
}

}  // namespace

TEST_CASE("train_data JSON Lines give line id tokens ids and label", "[train_data]") {
  const std::string content =
      "\xEF\xBB\xBF{\"id\": \"a\", \"text\": \"나는 학교에 간다\", \"label\": 2}\r\n"
      "\n"
      "{\"ids\": [3, 1], \"label\": 0, \"extra\": true}\r\n"
      "  \t\n"
      "{\"id\": 9, \"text\": \"나는 집에\", \"label\": 1}";
  Vocab vocab;
  const auto items = items_of("d.jsonl", content, vocab);
  REQUIRE(items.size() == 3);
  CHECK(items[0].line == 1);
  CHECK(items[0].id == "a");
  CHECK(items[0].tokens == std::vector<std::string>{"나는", "학교에", "간다"});
  CHECK(items[0].ids == std::vector<int64_t>{1, 2, 3});
  CHECK(items[0].label == 2);
  CHECK(items[1].line == 3);
  CHECK(items[1].id.is_null());
  CHECK(items[1].tokens.empty());
  CHECK(items[1].ids == std::vector<int64_t>{3, 1});
  CHECK(items[2].line == 5);
  CHECK(items[2].id == 9);
  CHECK(items[2].ids == std::vector<int64_t>{1, 4});
  CHECK(vocab.tokens() == std::vector<std::string>{"[PAD]", "나는", "학교에", "간다", "집에"});
}

TEST_CASE("train_data TSV lines are label tab sentence", "[train_data]") {
  Vocab vocab;
  const auto items = items_of("d.tsv", "\xEF\xBB\xBF" "1\tb a\r\n0\ta  c\td\n", vocab);
  REQUIRE(items.size() == 2);
  CHECK(items[0].label == 1);
  CHECK(items[0].tokens == std::vector<std::string>{"b", "a"});
  CHECK(items[1].line == 2);
  CHECK(items[1].tokens == std::vector<std::string>{"a", "c", "d"});  // a later tab is whitespace
  CHECK(items[1].ids == std::vector<int64_t>{2, 3, 4});
}

TEST_CASE("train_data the format follows the file name and else the first line", "[train_data]") {
  CHECK(data_format("x.tsv", "{") == DataFormat::tsv);
  for (const char* name : {"x.jsonl", "x.ndjson", "x.json"}) CHECK(data_format(name, "1\ta") == DataFormat::jsonl);
  CHECK(data_format("x.txt", "  {\"text\"") == DataFormat::jsonl);
  CHECK(data_format("-", "1\ta") == DataFormat::tsv);
  CHECK(parse_data("data", "\n{\"text\": \"a\", \"label\": 0}\n").size() == 1);  // first line not blank
  CHECK(parse_data("data", "\xEF\xBB\xBF{\"text\": \"a\", \"label\": 0}").size() == 1);
}

TEST_CASE("train_data every bad line is named with its reason", "[train_data]") {
  const std::vector<std::pair<std::string, std::string>> jsonl = {
      {"{\"text\": \"a \xff\", \"label\": 0}", "invalid UTF-8"},
      {"{\"text\": \"a\", \"label\": ", "malformed JSON"},
      {"[1, 2]", "malformed JSON"},
      {"{\"text\": \"a\"}", "missing \"label\""},
      {"{\"text\": \"a\", \"label\": 1.5}", "\"label\" must be an integer from 0 to 2^63 - 1, got 1.5"},
      {"{\"text\": \"a\", \"label\": \"1\"}", "\"label\" must be an integer from 0 to 2^63 - 1, got \"1\""},
      {"{\"text\": \"a\", \"label\": -1}", "\"label\" must be an integer from 0 to 2^63 - 1, got -1"},
      {"{\"text\": \"a\", \"label\": 18446744073709551615}", "\"label\" must be an integer from 0 to 2^63 - 1, got 18446744073709551615"},
      {"{\"text\": \"a\", \"label\": 3e32}", "\"label\" must be an integer from 0 to 2^63 - 1, got 3e+32"},
      {"{\"text\": \" \", \"label\": 0}", "empty text"},
      {"{\"ids\": [], \"label\": 0}", "empty \"ids\""},
      {"{\"ids\": [1, -2], \"label\": 0}", "an id in \"ids\" must be an integer from 0 to 2^63 - 1, got -2"},
      {"{\"text\": \"a\", \"ids\": [1], \"label\": 0}", "exactly one of \"text\" and \"ids\""},
      {"{\"id\": 1.5, \"text\": \"a\", \"label\": 0}", "\"id\" must be a string or an integer"},
  };
  for (const auto& [line, reason] : jsonl) {
    INFO(line);
    const std::string message = parse_error("d.jsonl", "{\"text\": \"ok\", \"label\": 0}\n" + line + "\n");
    CHECK(message.rfind("'d.jsonl': 1 bad line:\n  line 2: ", 0) == 0);
    CHECK(message.find(reason) != std::string::npos);
  }
  CHECK_THAT(parse_error("d.jsonl", "{\"id\": \"a\", \"text\": \"x\", \"label\": 0}\n{\"id\": 7, \"text\": \"y\", \"label\": 1}\n"
                                    "{\"id\": \"7\", \"text\": \"y\", \"label\": 1}\n{\"id\": \"a\", \"text\": \"z\", \"label\": 0}\n"),
             Catch::Equals("'d.jsonl': 1 bad line:\n  line 4: id \"a\" repeats line 1's"));
  const std::vector<std::pair<std::string, std::string>> tsv = {
      {"1 a", "no tab (a TSV line is label<TAB>sentence)"},
      {"x\ta", "the label must be a non-negative integer of at most 18 digits, got 'x'"},
      {"-1\ta", "got '-1'"},
      {"\ta", "got ''"},
      {"1234567890123456789\ta", "got '1234567890123456789'"},
      {"1\t ", "empty text"},
      {"1\ta \xff", "invalid UTF-8"},
  };
  for (const auto& [line, reason] : tsv) {
    INFO(line);
    const std::string message = parse_error("d.tsv", "0\tok\n" + line + "\n");
    CHECK(message.rfind("'d.tsv': 1 bad line:\n  line 2: ", 0) == 0);
    CHECK(message.find(reason) != std::string::npos);
  }
}

TEST_CASE("train_data the first 10 bad lines are listed in one message", "[train_data]") {
  std::string content;
  for (int i = 0; i < 13; ++i) content += i % 2 ? "0\tok\n" : "bad\n";  // lines 1, 3, …, 13 bad
  const std::string message = parse_error("d.tsv", content);
  CHECK(message.rfind("'d.tsv': 7 bad lines:\n  line 1: no tab", 0) == 0);
  CHECK(message.find("line 13") != std::string::npos);
  std::string many;
  for (int i = 0; i < 12; ++i) many += "x\n";
  const std::string capped = parse_error("d.tsv", many);
  CHECK(capped.find("line 10: ") != std::string::npos);
  CHECK(capped.find("line 11: ") == std::string::npos);
  CHECK(capped.find("... and 2 more") != std::string::npos);
}

TEST_CASE("train_data an empty file or one of blank lines is refused", "[train_data]") {
  CHECK(parse_error("d.jsonl", "") == "'d.jsonl': the file is empty");
  CHECK(parse_error("d.jsonl", "\xEF\xBB\xBF\n \r\n") == "'d.jsonl': no items, only blank lines");
}

TEST_CASE("train_data tokenizing with a given vocabulary", "[train_data]") {
  Vocab with_unk({"[PAD]", "[UNK]", "a", "b"});
  const auto items = make_items("d.tsv", parse_data("d.tsv", "0\ta z b\n"), {&with_unk, 4, 8});
  CHECK(items[0].tokens == std::vector<std::string>{"a", "[UNK]", "b"});
  CHECK(items[0].ids == std::vector<int64_t>{2, 1, 3});
  Vocab plain({"[PAD]", "a"});
  CHECK(make_error("{\"text\": \"a\", \"label\": 0}\n{\"text\": \"a zz\", \"label\": 0}", {&plain, 2, 8}) ==
        "'d.jsonl': 1 bad line:\n  line 2: unknown token 'zz' (the vocabulary has no [UNK])");
  CHECK(make_error("{\"ids\": [1, 5], \"label\": 0}", {&plain, 2, 8}).find("line 1: token id 5 is outside") !=
        std::string::npos);
  CHECK(make_error("{\"ids\": [1, 1, 1], \"label\": 0}", {&plain, 2, 2}).find("line 1: 3 tokens, more than max_len 2") !=
        std::string::npos);
}

TEST_CASE("train_data the vocabulary grows over training then validation words", "[train_data]") {
  Vocab vocab;
  add_words(vocab, parse_data("t.tsv", "0\tb a b\n1\tc\n"));
  add_words(vocab, parse_data("v.jsonl", "{\"text\": \"d a\", \"label\": 0}\n{\"ids\": [9], \"label\": 1}\n"));
  CHECK(vocab.tokens() == std::vector<std::string>{"[PAD]", "b", "a", "c", "d"});
}

TEST_CASE("train_data labels are checked against num_classes", "[train_data]") {
  Vocab vocab;
  const auto items = items_of("d.tsv", "0\ta\n2\tb\n3\tc\n", vocab);
  CHECK(class_count(items) == 4);
  CHECK_NOTHROW(check_labels(items, 4));
  try {
    check_labels(items, 3);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "line 3: label 3 is not below num_classes 3");
  }
}

TEST_CASE("train_data randperm is torch.randperm bit for bit", "[train_data]") {
  for (const auto& c : fixture().at("randperm")) {
    INFO("seed " << c.at("seed") << " n " << c.at("n"));
    TorchGenerator g(c.at("seed").get<uint64_t>());
    const std::vector<size_t> perm = randperm(g, c.at("n").get<size_t>());
    if (c.contains("perm")) {
      CHECK(perm == sizes(c.at("perm")));
    } else {
      batch::Fnv1a h;
      for (size_t v : perm) {
        const auto v64 = static_cast<int64_t>(v);
        h.update(&v64, sizeof v64);  // little-endian, as the fixture hashes it
      }
      CHECK(h.hex() == c.at("fnv1a64").get<std::string>());
      CHECK(std::vector<size_t>(perm.begin(), perm.begin() + 8) == sizes(c.at("head")));
      CHECK(std::vector<size_t>(perm.end() - 8, perm.end()) == sizes(c.at("tail")));
    }
    std::vector<int64_t> next(3);
    g.randint(next.data(), 3, 0, 1000);  // the generator moved exactly as torch's did
    CHECK(next == c.at("next").get<std::vector<int64_t>>());
  }
}

TEST_CASE("train_data the validation count rounds halves up and keeps both sides", "[train_data]") {
  CHECK(validation_count(10, 0.25) == 3);
  CHECK(validation_count(10, 0.24) == 2);
  CHECK(validation_count(5, 0.01) == 1);
  CHECK(validation_count(5, 0.99) == 4);
  CHECK_THROWS_WITH(validation_count(10, 0.0), Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(validation_count(10, 1.0), Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(validation_count(10, std::nan("")), Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(validation_count(1, 0.5), "a validation split needs at least 2 items, the data has 1");
}

TEST_CASE("train_data the validation split is the PyTorch one", "[train_data]") {
  for (const auto& c : fixture().at("split")) {
    const auto n = c.at("n").get<size_t>();
    INFO("n " << n << " fraction " << c.at("fraction") << " seed " << c.at("seed"));
    std::vector<LabelledItem> items(n);
    for (size_t i = 0; i < n; ++i) items[i].line = i;
    const Datasets d = split_validation(items, c.at("fraction").get<double>(), c.at("seed").get<uint64_t>());
    std::vector<size_t> train, val;
    for (const auto& item : d.train) train.push_back(item.line);
    for (const auto& item : d.val) val.push_back(item.line);
    CHECK(val == sizes(c.at("val")));
    CHECK(train == sizes(c.at("train")));
  }
}

TEST_CASE("train_data the batch order is the PyTorch stream across epochs", "[train_data]") {
  for (const auto& c : fixture().at("order")) {
    const auto n = c.at("n").get<size_t>(), b = c.at("batch_size").get<size_t>();
    const bool shuffle = c.at("shuffle").get<bool>();
    const auto seed = c.at("seed").get<uint64_t>();
    const auto& batches = c.at("batches");
    INFO("n " << n << " batch " << b << " seed " << seed << " shuffle " << shuffle);
    BatchOrder forward(n, b, shuffle, seed), backward(n, b, shuffle, seed);
    for (size_t k = 0; k < batches.size(); ++k) CHECK(forward.batch(k) == sizes(batches[k]));
    for (size_t k = batches.size(); k-- > 0;) CHECK(backward.batch(k) == sizes(batches[k]));
    const size_t last = batches.size() - 1;  // a resumed run: the first batch it asks for is a late one
    CHECK(BatchOrder(n, b, shuffle, seed).batch(last) == sizes(batches[last]));
  }
  CHECK_THROWS_AS(BatchOrder(0, 4, true, 0), InputError);
  CHECK_THROWS_AS(BatchOrder(4, 0, true, 0), InputError);
}

TEST_CASE("train_data epochs become steps rounded up", "[train_data]") {
  CHECK(steps_for_epochs(1, 100, 32) == 4);
  CHECK(steps_for_epochs(3, 100, 25) == 12);
  CHECK(steps_for_epochs(2, 5, 8) == 2);
}

TEST_CASE("train_data a batch is padded with PAD to its longest item", "[train_data]") {
  Vocab vocab;
  const auto items = items_of("d.tsv", "0\ta b c\n1\td\n2\te f\n", vocab);
  const TrainBatch b = make_batch(items, {2, 0, 1});
  CHECK(b.batch == 3);
  CHECK(b.seq == 3);
  CHECK(b.ids == std::vector<int64_t>{5, 6, 0, 1, 2, 3, 4, 0, 0});
  CHECK(b.labels == std::vector<int64_t>{2, 0, 1});
  CHECK(b.items == std::vector<size_t>{2, 0, 1});
}

TEST_CASE("train_data tasks are the items of their PyTorch definition", "[train_data]") {
  for (const auto& c : fixture().at("tasks")) {
    INFO(c.at("task").get<std::string>() << " seed " << c.at("seed"));
    const auto& expected = c.at("items");
    const auto items = generate_task(find_task(c.at("task").get<std::string>()), expected.size(), c.at("seed").get<uint64_t>());
    for (size_t i = 0; i < items.size(); ++i) {
      CHECK(items[i].tokens == expected[i].at("tokens").get<std::vector<std::string>>());
      CHECK(items[i].label == expected[i].at("label"));
      CHECK(items[i].line == i + 1);
    }
  }
  CHECK_THROWS_WITH(find_task("sorting"), "unknown task 'sorting' (tasks: duplicate, brackets, places, asked; language models: induction, halves, copy, reverse, korean, text)");
}

TEST_CASE("train_data tasks are deterministic balanced and fit their model", "[train_data]") {
  for (const TaskSpec& task : tasks()) {
    INFO(task.name);
    const auto items = generate_task(task, 600, 3);
    CHECK(data_jsonl(items) == data_jsonl(generate_task(task, 600, 3)));
    CHECK(data_jsonl(items) != data_jsonl(generate_task(task, 600, 4)));
    std::vector<size_t> per_class(task.model.num_classes, 0);
    for (const auto& item : items) {
      ++per_class[size_t(item.label)];
      CHECK(item.ids.size() <= task.model.max_len);
      for (size_t t = 0; t < item.ids.size(); ++t) CHECK(task.tokens[size_t(item.ids[t])] == item.tokens[t]);
    }
    for (size_t count : per_class) CHECK(count == 600 / task.model.num_classes);
    CHECK(task.model.vocab_size == task.tokens.size());
    CHECK(task.model.dropout == 0.0);
    CHECK(task.optimizer == "adamw");
    CHECK_NOTHROW(validate(task.model));
    CHECK(task.train_size > 0);
    CHECK(task.val_size > 0);
  }
}

TEST_CASE("train_data duplicate labels and twins by recount", "[train_data]") {
  for (const auto& item : generate_task(find_task("duplicate"), 400, 11)) {
    const std::set<std::string> distinct(item.tokens.begin(), item.tokens.end());
    CHECK(item.tokens.size() >= 4);
    CHECK(item.tokens.size() <= 10);
    CHECK(distinct.size() == item.tokens.size() - size_t(item.label));  // one symbol twice, or none
    const auto twins = twin_positions(item);
    CHECK(twins.has_value() == (item.label == 1));
    if (twins) CHECK(item.tokens[twins->first] == item.tokens[twins->second]);
  }
}

TEST_CASE("train_data brackets labels by recount and both kinds of negatives", "[train_data]") {
  size_t unequal = 0, bad_prefix = 0;
  for (const auto& item : generate_task(find_task("brackets"), 400, 11)) {
    CHECK(item.tokens.size() >= 2);
    CHECK(item.tokens.size() <= 16);
    CHECK(item.label == (balanced(item.tokens) ? 1 : 0));
    if (item.label == 1) continue;
    const auto opens = std::count(item.tokens.begin(), item.tokens.end(), "(");
    ++(opens * 2 == std::ptrdiff_t(item.tokens.size()) ? bad_prefix : unequal);
  }
  CHECK(unequal == 100);
  CHECK(bad_prefix == 100);
}

TEST_CASE("train_data places label is the place word", "[train_data]") {
  const std::vector<std::vector<std::string>> places = {{"학교에", "학교에서"}, {"도서관에", "도서관에서"}, {"집에", "집에서"}};
  for (const auto& item : generate_task(find_task("places"), 300, 11)) {
    std::vector<size_t> found;  // the classes whose place word the sentence has
    for (size_t p = 0; p < places.size(); ++p)
      for (const auto& w : places[p])
        if (std::count(item.tokens.begin(), item.tokens.end(), w)) found.push_back(p);
    CHECK(found == std::vector<size_t>{size_t(item.label)});
    CHECK(item.tokens.size() >= 3);
    CHECK(item.tokens.size() <= 4);
  }
}

TEST_CASE("train_data asked labels the place of the person named last", "[train_data]") {
  const std::vector<std::vector<std::string>> places = {{"학교에", "학교에서"}, {"도서관에", "도서관에서"}, {"집에", "집에서"}};
  const auto place_of = [&](const std::string& word) {
    for (size_t p = 0; p < places.size(); ++p)
      if (std::count(places[p].begin(), places[p].end(), word)) return std::optional<size_t>(p);
    return std::optional<size_t>();
  };
  for (const auto& item : generate_task(find_task("asked"), 300, 11)) {
    std::set<size_t> named;  // every item names all three places, once each
    for (const auto& w : item.tokens)
      if (const auto p = place_of(w)) named.insert(*p);
    CHECK(named.size() == 3);
    // The person asked about is the last word; their clause's place word follows their first mention.
    const auto first = std::find(item.tokens.begin(), item.tokens.end(), item.tokens.back());
    REQUIRE(first + 1 < item.tokens.end() - 1);
    CHECK(place_of(*(first + 1)) == std::optional<size_t>(size_t(item.label)));
    CHECK(std::count(item.tokens.begin(), item.tokens.end(), item.tokens.back()) == 2);
    CHECK(item.tokens.size() >= 10);
    CHECK(item.tokens.size() <= 11);
  }
}

TEST_CASE("train_data task data splits one stream and saved data reads back", "[train_data]") {
  const TaskSpec& task = find_task("places");
  const Datasets d = task_data(task, 8, 4, 5);
  const auto all = generate_task(task, 12, 5);
  REQUIRE(d.train.size() == 8);
  REQUIRE(d.val.size() == 4);
  CHECK(d.val[0].tokens == all[8].tokens);
  CHECK(d.val[0].line == 1);
  CHECK(data_jsonl(d.train) == data_jsonl({all.begin(), all.begin() + 8}));

  Vocab vocab(task.tokens);
  const auto back = make_items("s.jsonl", parse_data("s.jsonl", data_jsonl(all)), {&vocab, vocab.size(), 8});
  REQUIRE(back.size() == all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(back[i].line == all[i].line);
    CHECK(back[i].tokens == all[i].tokens);
    CHECK(back[i].ids == all[i].ids);
    CHECK(back[i].label == all[i].label);
  }
}

TEST_CASE("train_data saved data keeps ids items and ids", "[train_data]") {
  const std::string content = "{\"id\":\"x\",\"ids\":[2,1],\"label\":1}\n{\"id\":4,\"text\":\"a b\",\"label\":0}\n";
  Vocab vocab;
  CHECK(data_jsonl(items_of("d.jsonl", content, vocab)) == content);
}
