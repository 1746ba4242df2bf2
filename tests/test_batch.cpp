// The engine side of `attn batch` (core/batch/batch.*): input lines, bad items, grouping by length, stage
// selection, records, and the property the command's guarantees rest on: an item's record does not
// depend on the batch it was computed in. The CLI's side (files, threads, resume, shards) is in
// tests/batch_check.py.
#include "core/batch/batch.hpp"
#include "core/base/error.hpp"
#include "tests/fixtures.hpp"

using namespace attn;
using namespace attn::batch;

namespace {

TransformerModel small_model(bool classifier = true) {
  TransformerConfig c;
  c.vocab_size = 12;
  c.d_model = 16;
  c.num_heads = 2;
  c.num_layers = 2;
  c.num_classes = 3;
  c.max_len = 32;
  c.classifier_head = classifier;
  TorchGenerator gen(0);
  return init_transformer(c, gen);
}

Item ids_item(size_t line, std::vector<int64_t> ids) { return Item{line, nullptr, {}, std::move(ids), {}}; }

std::string reason(const std::string& text, InputFormat format) { return parse_line(text, format).error; }

}  // namespace

TEST_CASE("batch text lines are sentences and JSON lines carry an id with text or ids", "[batch]") {
  RawItem t = parse_line("hello world", InputFormat::text);
  CHECK(t.error.empty());
  CHECK(*t.text == "hello world");
  CHECK(t.id.is_null());
  RawItem j = parse_line(R"({"id": "a", "text": "hello", "label": 3})", InputFormat::jsonl);
  CHECK(j.error.empty());
  CHECK(j.id == "a");
  CHECK(*j.text == "hello");
  RawItem i = parse_line(R"({"id": 7, "ids": [1, 2, 3]})", InputFormat::jsonl);
  CHECK(i.error.empty());
  CHECK(i.id == 7);
  CHECK(i.ids == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("batch bad lines give a reason and keep a valid id", "[batch]") {
  CHECK(reason("bad \xff byte", InputFormat::text) == "invalid UTF-8");
  CHECK(reason(" \t", InputFormat::text) == "empty line");
  CHECK(reason("{\"id\": 1, \"text\": ", InputFormat::jsonl).rfind("malformed JSON", 0) == 0);
  CHECK(reason("[1, 2]", InputFormat::jsonl).rfind("malformed JSON", 0) == 0);
  CHECK(reason(R"({"id": 1.5, "text": "a"})", InputFormat::jsonl) == "\"id\" must be a string or an integer");
  CHECK(reason(R"({"id": 1, "ids": [1, -2]})", InputFormat::jsonl) == "an id in \"ids\" must be an integer from 0 to 2^63 - 1, got -2");
  const RawItem both = parse_line(R"({"id": "x", "text": "a", "ids": [1]})", InputFormat::jsonl);
  CHECK(both.error == "a line needs exactly one of \"text\" and \"ids\"");
  CHECK(both.id == "x");
}

TEST_CASE("batch a byte-order mark is dropped from line 1 only and CRLF ends a line", "[batch]") {
  std::string first = "\xEF\xBB\xBFhello\r", second = "\xEF\xBB\xBFhello";
  strip_line(first, 1);
  strip_line(second, 2);
  CHECK(first == "hello");
  CHECK(second == "\xEF\xBB\xBFhello");
}

TEST_CASE("batch the input format comes from the name or else the first line", "[batch]") {
  CHECK(format_from_name("a.jsonl") == InputFormat::jsonl);
  CHECK(format_from_name("a.json") == InputFormat::jsonl);
  CHECK(format_from_name("a.txt") == InputFormat::text);
  CHECK(!format_from_name("-"));
  CHECK(format_from_first_line("  {\"id\": 1}") == InputFormat::jsonl);
  CHECK(format_from_first_line("hello {") == InputFormat::text);
}

TEST_CASE("batch the first line with an id owns it and string and integer ids differ", "[batch]") {
  IdRegistry ids;
  CHECK(!ids.claim("a", 1));
  CHECK(!ids.claim(1, 2));
  CHECK(!ids.claim("1", 3));
  CHECK(!ids.claim(nullptr, 4));
  CHECK(!ids.claim(nullptr, 5));
  CHECK(ids.claim("a", 6) == size_t(1));
}

TEST_CASE("batch items are tokenized with UNK and checked against the model", "[batch]") {
  Vocab plain({"[PAD]", "hello", "world"}), with_unk({"[PAD]", "[UNK]", "hello"});
  const ItemRules rules{&plain, 3, 2};
  RawItem raw;
  raw.text = "hello world";
  const Item item = make_item(raw, 4, rules);
  CHECK(item.line == 4);
  CHECK(item.ids == std::vector<int64_t>{1, 2});
  raw.text = "hello zebra";
  CHECK_THROWS_WITH(make_item(raw, 1, rules), "unknown token 'zebra' (the vocabulary has no [UNK])");
  const Item unk = make_item(raw, 1, ItemRules{&with_unk, 3, 2});
  CHECK(unk.tokens == std::vector<std::string>{"hello", "[UNK]"});
  CHECK(unk.ids == std::vector<int64_t>{2, 1});
  raw.text = "hello hello hello";
  CHECK_THROWS_WITH(make_item(raw, 1, rules), "3 tokens, more than max_len 2");
  CHECK_THROWS_WITH(make_item(raw, 1, ItemRules{nullptr, 3, 8}), Catch::Contains("needs a vocabulary"));
  RawItem ids;
  ids.ids = {1, 3};
  CHECK_THROWS_WITH(make_item(ids, 1, rules), "token id 3 is outside the embedding table (3 rows)");
}

TEST_CASE("batch grouping makes batches of one length in input order", "[batch]") {
  std::vector<Item> items;
  const std::vector<size_t> lengths = {3, 1, 3, 2, 3, 3, 1};
  for (size_t i = 0; i < lengths.size(); ++i) items.push_back(ids_item(i + 1, std::vector<int64_t>(lengths[i], 1)));
  const auto batches = group_by_length(items, 2);
  std::vector<std::vector<size_t>> lines;
  for (const auto& b : batches) {
    lines.emplace_back();
    for (const auto& item : b) lines.back().push_back(item.line);
  }
  CHECK(lines == std::vector<std::vector<size_t>>{{2, 7}, {4}, {1, 3}, {5, 6}});
  lines.clear();
  for (const auto& b : group_by_size(items, 3)) {  // packed: lengths mix, in input order
    lines.emplace_back();
    for (const auto& item : b) lines.back().push_back(item.line);
  }
  CHECK(lines == std::vector<std::vector<size_t>>{{1, 2, 3}, {4, 5, 6}, {7}});
}

TEST_CASE("batch an item's record is the same alone or in any batch", "[batch]") {
  const TransformerModel model = small_model();
  const std::vector<Item> items = {ids_item(1, {1, 5, 7, 2, 0}), ids_item(2, {3, 3, 11, 0, 0}),
                                   ids_item(3, {4, 9, 10, 8, 6})};
  const Trace together = compute(model, items, MaskKind::padding);
  const StageSelection all = select_stages(together, model.config, {"tokens", "embedding", "positional_encoding",
                                                                      "attention_weights", "logits"}, {}, {});
  for (size_t row = 0; row < items.size(); ++row) {
    const Trace alone = compute(model, {items[row]}, MaskKind::padding);
    CHECK(item_record(items[row], together, row, all) == item_record(items[row], alone, 0, all));
  }
}

TEST_CASE("batch records hold PyTorch's logits for each item", "[batch]") {
  const auto& fixture = test::cached_fixture("transformer_small.json");
  const TransformerModel model = small_model();
  const StageSelection logits = select_stages(compute(model, {ids_item(1, {1})}, MaskKind::padding), model.config,
                                              {"logits"}, {}, {});
  const auto& ids = fixture.at("ids");
  nlohmann::json expected;
  for (const auto& s : fixture.at("stages"))
    if (s.at("name") == "logits") expected = s;
  for (size_t row = 0; row < ids.size(); ++row) {
    const Item item = ids_item(row + 1, ids[row].get<std::vector<int64_t>>());
    const auto record = nlohmann::json::parse(item_record(item, compute(model, {item}, MaskKind::padding), 0, logits));
    const auto& data = record["stages"]["logits"]["data"];
    REQUIRE(data.size() == 3);
    for (size_t c = 0; c < 3; ++c)
      CHECK(data[c].get<double>() == Approx(expected["data"][row * 3 + c].get<double>()).epsilon(1e-5).margin(1e-5));
  }
}

TEST_CASE("batch a record starts with its line and id and keeps the selected stages", "[batch]") {
  const TransformerModel model = small_model();
  Item item{9, "s1", {"a", "b"}, {1, 2}, {}};
  const Trace trace = compute(model, {item}, MaskKind::padding);
  const StageSelection selection = select_stages(trace, model.config, {}, {}, {});
  CHECK(selection.tokens);
  CHECK(selection.names == std::vector<std::string>{"layers.1.self_attn.attention_weights", "logits"});
  const std::string record = item_record(item, trace, 0, selection);
  CHECK(record.rfind(R"({"line":9,"id":"s1","tokens":["a","b"],"ids":[1,2],"stages":{"layers.1.self_attn.attention_weights":{"shape":[2,2,2],"data":[)", 0) == 0);
  CHECK(record.back() == '\n');
  CHECK(record_line(record) == 9);
  CHECK(error_record(3, nullptr, "empty line") == "{\"line\":3,\"id\":null,\"reason\":\"empty line\"}\n");
  CHECK_THROWS_AS(record_line("{\"id\":1}"), InputError);
}

TEST_CASE("batch per-layer names expand over the selected layers and heads are sliced", "[batch]") {
  const TransformerModel model = small_model();
  const Item item = ids_item(1, {1, 2, 3});
  const Trace trace = compute(model, {item}, MaskKind::padding);
  const StageSelection s = select_stages(trace, model.config, {"attention_weights", "norm1"}, {0}, {1});
  CHECK(s.names == std::vector<std::string>{"layers.0.self_attn.attention_weights", "layers.0.norm1"});
  const auto record = nlohmann::json::parse(item_record(item, trace, 0, s));
  const auto& w = record["stages"]["layers.0.self_attn.attention_weights"];
  CHECK(w["shape"] == nlohmann::json::array({1, 3, 3}));
  const Tensor& full = trace.at("layers.0.self_attn.attention_weights");
  for (size_t k = 0; k < 9; ++k) CHECK(w["data"][k].get<float>() == full.data()[9 + k]);
  CHECK_THROWS_WITH(select_stages(trace, model.config, {"bogus"}, {}, {}), Catch::Contains("unknown stage 'bogus'"));
  CHECK_THROWS_WITH(select_stages(trace, model.config, {}, {2}, {}), Catch::Contains("layer 2 does not exist"));
  CHECK_THROWS_WITH(select_stages(trace, model.config, {}, {}, {2}), Catch::Contains("head 2 does not exist"));
}

TEST_CASE("batch an encoder without a head keeps its output by default", "[batch]") {
  const TransformerModel model = small_model(false);
  const Trace trace = compute(model, {ids_item(1, {1, 2})}, MaskKind::padding);
  CHECK(select_stages(trace, model.config, {}, {}, {}).names ==
        std::vector<std::string>{"layers.1.self_attn.attention_weights", "encoder_output"});
}

TEST_CASE("batch shards split lines by number", "[batch]") {
  const Shard s = parse_shard("2/3");
  CHECK(!s.owns(1));
  CHECK(s.owns(2));
  CHECK(s.owns(5));
  CHECK(!s.owns(6));
  CHECK_THROWS_AS(parse_shard("0/3"), InputError);
  CHECK_THROWS_AS(parse_shard("4/3"), InputError);
  CHECK_THROWS_AS(parse_shard("1-3"), InputError);
}

TEST_CASE("batch arrays hold the numbers of the record", "[batch]") {
  const TransformerModel model = small_model();
  const Item item{4, "x", {"a", "b", "c"}, {1, 2, 3}, {}};
  const Trace trace = compute(model, {item}, MaskKind::padding);
  const StageSelection s = select_stages(trace, model.config, {"tokens", "token_ids", "attention_weights", "logits"},
                                         {1}, {0});
  const ItemArrays a = item_arrays(item, trace, 0, s);
  REQUIRE(a.stages.size() == s.names.size());
  const auto record = nlohmann::json::parse(item_record(a, s));
  CHECK(item_record(a, s) == item_record(item, trace, 0, s));
  for (size_t k = 0; k < s.names.size(); ++k) {
    const auto& stage = record["stages"][s.names[k]];
    CHECK(stage["shape"].get<Shape>() == Shape(a.stages[k].shape().begin(), a.stages[k].shape().end()));
    REQUIRE(stage["data"].size() == a.stages[k].size());
    for (size_t i = 0; i < a.stages[k].size(); ++i) CHECK(stage["data"][i].get<float>() == a.stages[k].data()[i]);
  }
  CHECK(record["stages"]["token_ids"]["data"].dump() == "[1,2,3]");  // ids as integers in JSON
  CHECK(index_record(a, s, true) == R"({"line":4,"id":"x","length":3,"tokens":["a","b","c"],"ids":[1,2,3]})" "\n");
  CHECK(index_record(a, s, false) == R"({"line":4,"id":"x","length":3,"tokens":["a","b","c"]})" "\n");
  const StageSelection plain = select_stages(trace, model.config, {"logits"}, {}, {});
  CHECK(index_record(item_arrays(item, trace, 0, plain), plain, true) == R"({"line":4,"id":"x","length":3})" "\n");
}

TEST_CASE("batch stage layouts tell fixed shapes from length-dependent ones", "[batch]") {
  const TransformerModel model = small_model();
  const Trace trace = compute(model, {ids_item(1, {1})}, MaskKind::padding);
  const StageSelection s = select_stages(trace, model.config, {"embedding", "attention_weights", "logits"}, {0}, {1});
  const auto layouts = stage_layouts(model, MaskKind::padding, s);
  REQUIRE(layouts.size() == 3);
  CHECK(layouts[0].name == "embedding");
  CHECK(!layouts[0].fixed);
  CHECK(layouts[0].shape.size() == 2);
  CHECK(layouts[1].name == "layers.0.self_attn.attention_weights");
  CHECK(!layouts[1].fixed);
  CHECK(layouts[1].shape == Shape{1, 1, 1});  // one head kept, length 1
  CHECK(layouts[2].name == "logits");
  CHECK(layouts[2].fixed);
  CHECK(layouts[2].shape == Shape{3});
}

TEST_CASE("batch safetensors headers are aligned contiguous and checked when read", "[batch]") {
  const std::string bytes = safetensors_header({{"line", "I64", {3}}, {"w", "F32", {3, 2}}, {"index", "U8", {5}}},
                                               {{"attn_batch", "{}"}});
  REQUIRE(bytes.size() % 8 == 0);
  uint64_t length = 0;
  for (size_t i = 0; i < 8; ++i) length |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  CHECK(length == bytes.size() - 8);
  const std::string json = bytes.substr(8);
  CHECK(json.rfind(R"({"__metadata__":{"attn_batch":"{}"},"line":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},)", 0) == 0);
  const uint64_t data = 24 + 24 + 5;
  const SafetensorsHeader h = parse_safetensors_header("x", json, bytes.size() + data);
  REQUIRE(h.tensors.size() == 3);
  CHECK(h.tensors[1].entry.name == "w");
  CHECK(h.tensors[1].begin == 24);
  CHECK(h.tensors[1].end == 48);
  CHECK(h.metadata.at("attn_batch") == "{}");
  CHECK(h.data_start == bytes.size());
  CHECK_THROWS_WITH(parse_safetensors_header("x", json, bytes.size() + data - 1), Catch::Contains("truncated or changed"));
  const auto parse = [](const std::string& text, uint64_t data_bytes) {
    return parse_safetensors_header("x", text, 8 + text.size() + data_bytes);
  };
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8).tensors.size() == 1);
  CHECK_THROWS_WITH(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4), Catch::Contains("do not match"));
  CHECK_THROWS_WITH(parse(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), Catch::Contains("gap"));
  CHECK_THROWS_WITH(parse(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})", 2),
                    "'x': tensor 'a': dtype 'F16' is not one attn batch writes (F32, I64, U8)");
  CHECK_THROWS_WITH(parse(R"({"a":{"dtype":"F32","shape":[1]}})", 4), Catch::Contains("malformed safetensors header"));
  CHECK_THROWS_WITH(parse("{\"a\":", 16), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse_safetensors_header("x", "{}", 9), Catch::Contains("truncated safetensors header"));
}

TEST_CASE("batch FNV-1a is the standard 64-bit hash", "[batch]") {
  CHECK(Fnv1a().hex() == "cbf29ce484222325");
  Fnv1a a, foobar;
  a.update("a");
  foobar.update("foo");
  foobar.update("bar");
  CHECK(a.hex() == "af63dc4c8601ec8c");
  CHECK(foobar.hex() == "85944171f73967e8");
}

TEST_CASE("batch the first pass vocabulary is PAD then words by first appearance", "[batch]") {
  Vocab vocab;
  add_sentence_words(vocab, parse_line("b a b", InputFormat::text));
  add_sentence_words(vocab, parse_line("bad \xff c", InputFormat::text));
  add_sentence_words(vocab, parse_line(R"({"id": 1, "text": "c a d"})", InputFormat::jsonl));
  add_sentence_words(vocab, parse_line(R"({"id": 1.5, "text": "e"})", InputFormat::jsonl));
  add_sentence_words(vocab, parse_line(R"({"ids": [7, 8]})", InputFormat::jsonl));
  CHECK(vocab.tokens() == std::vector<std::string>{"[PAD]", "b", "a", "c", "d"});
  CHECK(vocab_json(vocab) == "{\"[PAD]\": 0, \"b\": 1, \"a\": 2, \"c\": 3, \"d\": 4}\n");
  CHECK(vocab_identity(&vocab) != vocab_identity(nullptr));
  Vocab other({"[PAD]", "b", "a", "d", "c"});
  CHECK(vocab_identity(&vocab)["fnv1a64"] != vocab_identity(&other)["fnv1a64"]);
}

TEST_CASE("batch a model's identity follows its parameters", "[batch]") {
  const TransformerModel a = small_model(), b = small_model();
  CHECK(model_identity(a) == model_identity(b));
  TransformerModel c = small_model();
  c.fc.bias.data()[0] += 1e-6f;
  CHECK(model_identity(a)["fnv1a64"] != model_identity(c)["fnv1a64"]);
  CHECK(model_identity(a)["config"] == model_identity(c)["config"]);
}
