// Training GPT-2 against PyTorch (tests/torchgen/gpt2_train.py, the model restated under transformers'
// names): initialisation from torch.manual_seed(seed) bit for bit; the first step's gradient of every
// tensor within 1e-5 normalised error (max|Δ| / max|reference|; the count of bit-identical ones is
// printed); 20 AdamW steps' losses within 1e-5 relative, dropout drawn in PyTorch's order. Then the
// data rules, the language tasks and a checkpoint restored mid-run continuing to the same bits.
#include <cmath>
#include <cstring>
#include <set>

#include "core/base/error.hpp"
#include "core/train/train_lm.hpp"
#include "tests/fixtures.hpp"

using namespace attn;
using nlohmann::json;

namespace {

PretrainedConfig config_of(const json& c) { return pretrained_config_from_json(c, "fixture config"); }

std::vector<train::LabelledItem> items_of(const json& items) {
  std::vector<train::LabelledItem> out;
  for (const auto& ids : items) {
    train::LabelledItem item;
    item.line = out.size() + 1;
    item.ids = ids.get<std::vector<int64_t>>();
    out.push_back(std::move(item));
  }
  return out;
}

train::TrainSettings settings_of(const json& c) {
  train::TrainSettings s;
  s.optimizer.kind = OptimizerKind::adamw;
  s.optimizer.lr = c.at("lr").get<double>();
  s.steps = 20;
  s.batch_size = c.at("items").size();
  s.shuffle = false;
  return s;
}

const json& expected(const json& list, const std::string& name) {
  for (const json& t : list)
    if (t.at("name") == name) return t;
  FAIL("no tensor " << name << " in the fixture");
  return list[0];
}

bool bit_identical(const Tensor& got, const json& e) {
  const auto& data = e.at("data");
  for (size_t i = 0; i < got.size(); ++i)
    if (got.data()[i] != data[i].get<float>()) return false;
  return true;
}

}  // namespace

TEST_CASE("GPT-2 initialisation draws transformers' weights from the seed", "[train_lm]") {
  for (const auto& [name, c] : test::cached_fixture("gpt2_train.json").items()) {
    INFO(name);
    TorchGenerator g(c.at("seed").get<uint64_t>());
    const PretrainedModel m = gpt2_init(config_of(c.at("config")), g);
    const auto tensors = gpt2_state_dict(m);
    REQUIRE(tensors.size() == c.at("init").size());
    for (const NamedTensor& t : tensors) {
      INFO(t.name);
      CHECK(bit_identical(t.value, expected(c.at("init"), t.name)));
    }
  }
}

TEST_CASE("GPT-2 training: gradients and 20 AdamW steps as PyTorch's", "[train_lm]") {
  for (const auto& [name, c] : test::cached_fixture("gpt2_train.json").items()) {
    INFO(name);
    TorchGenerator g(c.at("seed").get<uint64_t>());
    const PretrainedModel init = gpt2_init(config_of(c.at("config")), g);
    train::LmTrainer trainer(init, items_of(c.at("items")), settings_of(c), g);
    const auto& losses = c.at("losses");
    for (size_t step = 0; step < losses.size(); ++step) {
      const train::StepRecord r = trainer.step();
      INFO("step " << r.step);
      CHECK(std::fabs(r.loss - losses[step].get<double>()) <= 1e-5 * std::fabs(losses[step].get<double>()));
      if (step > 0) continue;
      size_t identical = 0;
      double worst = 0;
      const auto grads = gpt2_state_dict(trainer.gradients());
      for (const NamedTensor& t : grads) {
        INFO(t.name);
        const json& e = expected(c.at("grads"), t.name);
        double max_ref = 0;
        for (const auto& v : e.at("data")) max_ref = std::max(max_ref, std::fabs(v.get<double>()));
        const test::Deviation d = test::compare(t.value, e, 0, 1e30);
        CHECK(d.max_abs / std::max(max_ref, 1e-30) <= 1e-5);
        worst = std::max(worst, d.max_abs / std::max(max_ref, 1e-30));
        identical += bit_identical(t.value, e);
      }
      WARN(name << ": " << identical << " of " << grads.size() << " gradient tensors bit-identical to PyTorch's, "
                << "largest normalised error " << worst);
    }
  }
}

// The fixture's dropout config, initialised from seed 0, `batch_size` items a step (0: all three).
train::LmTrainer fixture_trainer(const json& c, size_t batch_size = 0) {
  TorchGenerator g(0);
  PretrainedModel m = gpt2_init(config_of(c.at("config")), g);
  train::TrainSettings s = settings_of(c);
  if (batch_size) s.batch_size = batch_size;
  return train::LmTrainer(std::move(m), items_of(c.at("items")), s, g);
}

TEST_CASE("A language-model checkpoint taken mid-run continues to the same bits", "[train_lm]") {
  const json& c = test::cached_fixture("gpt2_train.json").at("dropout");
  train::LmTrainer straight = fixture_trainer(c), resumed = fixture_trainer(c);
  for (int i = 0; i < 3; ++i) straight.step();
  const auto tensors = straight.checkpoint_tensors();
  const Json meta = straight.checkpoint_meta();
  resumed.restore(tensors, meta);
  for (int i = 0; i < 3; ++i) CHECK(straight.step().loss == resumed.step().loss);
}

// What a page without threads spreads over frames: a step begun (forward pass and loss) and finished
// later, an evaluation a batch at a time; the same bits as whole ones.
TEST_CASE("A language-model step in two parts and an evaluation in batches are the whole ones", "[train_lm]") {
  const json& c = test::cached_fixture("gpt2_train.json").at("dropout");
  train::LmTrainer whole = fixture_trainer(c, 2), parts = fixture_trainer(c, 2);
  for (int i = 0; i < 4; ++i) {
    parts.begin_step();
    parts.begin_step();  // begun already: nothing more until step()
    const train::StepRecord a = whole.step(), b = parts.step();
    CHECK((a.step == b.step && a.loss == b.loss && a.accuracy == b.accuracy && a.grad_norm == b.grad_norm));
  }
  const std::vector<train::LabelledItem> items = items_of(c.at("items"));
  const train::EvalRecord e = whole.evaluate(items);
  const auto evaluation = parts.begin_evaluation(items);
  size_t batches = 0;
  for (; !evaluation->done(); ++batches) evaluation->next();
  CHECK(batches == 2);  // three items, two a batch
  const train::EvalRecord r = evaluation->result();
  CHECK((r.loss == e.loss && r.accuracy == e.accuracy));
  CHECK(std::isfinite(r.loss));
}

TEST_CASE("Language-model data: JSON Lines or text, windows, clear errors", "[train_lm]") {
  const BytePairTokenizer chars = character_tokenizer("abc 가나\n");
  CHECK(chars.encode("가나 abc").ids.size() == 6);
  CHECK(chars.find("<|endoftext|>"));
  CHECK(BytePairTokenizer(chars.tokens(), chars.merges()).encode("나가").ids == chars.encode("나가").ids);

  const auto text = train::parse_lm_data("t.txt", "abcabcab");
  const auto windows = train::lm_items("t.txt", text, chars, 3, chars.size());
  REQUIRE(windows.size() == 3);
  CHECK(windows[2].ids.size() == 2);
  CHECK(train::lm_items("t.txt", train::parse_lm_data("t.txt", "abcabca"), chars, 3, chars.size()).size() == 2);

  const auto lines = train::parse_lm_data("d.jsonl", "{\"text\": \"ab\"}\n\n{\"ids\": [1, 2, 0]}\n");
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].line == 3);
  CHECK_THROWS_WITH(train::parse_lm_data("d.jsonl", "{\"label\": 1}\n{\"text\": 3}\n"),
                    Catch::Contains("2 bad lines") && Catch::Contains("line 1: no \"text\" or \"ids\""));
  CHECK_THROWS_WITH(train::parse_lm_data("d.txt", " \n\n"), Catch::Contains("no usable token"));
  CHECK_THROWS_WITH(train::lm_items("d.jsonl", train::parse_lm_data("d.jsonl", "{\"ids\": [1]}"), chars, 8, chars.size()),
                    Catch::Contains("no usable token"));
  CHECK_THROWS_WITH(train::lm_items("d.jsonl", train::parse_lm_data("d.jsonl", "{\"ids\": [1, 99]}"), chars, 8, chars.size()),
                    Catch::Contains("line 1: token id 99 is outside"));
  CHECK_THROWS_WITH(train::lm_items("d.txt", train::parse_lm_data("d.txt", "xyz"), chars, 8, chars.size()),
                    Catch::Contains("d.txt"));
}

TEST_CASE("The language tasks: their items, vocabulary and the repeated segments", "[train_lm]") {
  for (const train::LmTaskSpec& task : train::lm_tasks()) {
    INFO(task.name);
    if (!task.sample) {  // text: --data's windows only
      CHECK(task.characters.empty());  // its vocabulary is the data's
      CHECK(train::lm_task_data(task, character_tokenizer("ab"), 0).train.empty());
      continue;
    }
    const BytePairTokenizer tokenizer = train::lm_task_tokenizer(task);
    const train::Datasets d = train::lm_task_data(task, tokenizer, 0);
    CHECK(!d.train.empty());
    CHECK(!d.val.empty());
    for (const auto& item : d.train) CHECK(item.ids.size() <= task.seq_len);
  }
  const train::LmTaskSpec& induction = *train::find_lm_task("induction");
  const BytePairTokenizer tokenizer = train::lm_task_tokenizer(induction);
  const train::Datasets d = train::lm_task_data(induction, tokenizer, 0);
  CHECK(tokenizer.size() == 62 + 1);  // a … z A … Z 0 … 9 and <|endoftext|>
  // Each item: 32 tokens whose segment of 4 to 12 repeats at a later place; lengths and places vary.
  std::set<size_t> lengths, distances;
  for (const auto& item : d.train) {
    const train::RepeatedSegment& r = item.repeat;
    REQUIRE(item.ids.size() == 32);
    REQUIRE((r.length >= 4 && r.length <= 12 && r.first + r.length <= r.second && r.second + r.length <= 32));
    CHECK(std::equal(item.ids.begin() + std::ptrdiff_t(r.first), item.ids.begin() + std::ptrdiff_t(r.first + r.length),
                     item.ids.begin() + std::ptrdiff_t(r.second)));
    lengths.insert(r.length), distances.insert(r.second - r.first);
  }
  CHECK(lengths.size() == 9);
  CHECK(distances.size() == 25);  // 4 … 28
  CHECK(train::has_repeats(d.val));
  TorchGenerator g(0);
  const PretrainedModel m = gpt2_init(train::lm_task_config(induction, tokenizer.size()), g);
  const auto fit = train::repeated_fit(m, {d.val.begin(), d.val.begin() + 8});
  REQUIRE(fit);
  CHECK(std::fabs(fit->loss - std::log(double(tokenizer.size()))) < 0.5);  // untrained (at 0.1): near uniform
  CHECK(fit->accuracy < 0.2);
  CHECK_FALSE(train::repeated_fit(m, {d.train[0], {}}));
  const train::CircuitScores untrained = train::circuit_scores(m, d.val);
  CHECK(untrained.induction < 0.2);
  CHECK(untrained.previous_token < 0.2);
  // The halves: a segment of 12 at 0 and 12.
  const train::LmTaskSpec& halves = *train::find_lm_task("halves");
  const train::Datasets h = train::lm_task_data(halves, train::lm_task_tokenizer(halves), 0);
  CHECK((h.val[0].repeat.first == 0 && h.val[0].repeat.second == 12 && h.val[0].repeat.length == 12));
  const train::LmTaskSpec& copy = *train::find_lm_task("copy");
  CHECK_FALSE(train::has_repeats(train::lm_task_data(copy, train::lm_task_tokenizer(copy), 0).val));
  CHECK(train::find_lm_task("places") == nullptr);
}

TEST_CASE("Language tasks: the prefix-matching score reads each item's own segment", "[train_lm]") {
  // Attention weights made by hand: layer 0 none; layer 1 head 0 on itself, head 1 on the induction places.
  const train::LmTaskSpec& task = *train::find_lm_task("induction");
  const BytePairTokenizer tokenizer = train::lm_task_tokenizer(task);
  const train::Datasets d = train::lm_task_data(task, tokenizer, 3);
  const std::vector<train::LabelledItem> items(d.val.begin(), d.val.begin() + 4);
  TorchGenerator g(0);
  const PretrainedModel m = gpt2_init(train::lm_task_config(task, tokenizer.size()), g);
  const PretrainedInput in = train::lm_batch(items, {0, 1, 2, 3});
  const size_t H = m.config.num_heads, S = in.seq;
  Tensor w = Tensor::from_shape({4, H, S, S});
  w.fill(0.0f);
  Trace trace;
  trace.record("h.0.attn.attn_weights", w);
  for (size_t b = 0; b < 4; ++b) {
    const train::RepeatedSegment& r = items[b].repeat;
    for (size_t h = 0; h < H; ++h)
      for (size_t i = 0; i < S; ++i) w.data()[((b * H + h) * S + i) * S + i] = 1.0f;
    for (size_t i = r.second; i < r.second + r.length; ++i)
      w.data()[((b * H + 1) * S + i) * S + i] = 0, w.data()[((b * H + 1) * S + i) * S + i - (r.second - r.first) + 1] = 1;
  }
  trace.record("h.1.attn.attn_weights", w);
  const std::vector<double> scores = train::prefix_matching_scores(m, trace, in, items);
  REQUIRE(scores.size() == 4);
  CHECK(scores[3] == 1.0);
  CHECK(scores[2] == 0.0);
}
