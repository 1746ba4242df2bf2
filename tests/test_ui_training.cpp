// The Train tab's logic without a window (ui/training.hpp): settings as attn train's options, their
// URL-hash form, play / pause / step / reset (on the worker thread natively), the log in attn train's
// form, snapshots within their stated bounds, errors as messages, and the trained model's files read
// back by the playground's Model files. That the log equals `attn train --log`'s bit for bit is
// checked by the browser test (tests/browser) against the CLI's own run.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "core/base/error.hpp"
#include "core/model/generate.hpp"
#include "core/train/train_data.hpp"
#include "core/train/train_run.hpp"
#include "tests/fixtures.hpp"
#include "ui/model_files.hpp"
#include "ui/playground.hpp"
#include "core/model/circuits.hpp"
#include "ui/training.hpp"

using namespace attn;
using namespace attn::ui;

namespace {

const Json places = {{"task", "places"}, {"steps", 30}, {"eval_every", 10}};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("attn_ui_training_" + std::to_string(getpid()) + "_" + name)).string();
}

}  // namespace

TEST_CASE("ui training settings are attn train's options", "[ui][training]") {
  const auto o = training_options({{"task", "brackets"}, {"lr", 0.01}, {"steps", 5}, {"betas", {0.8, 0.9}},
                                   {"no_shuffle", true}, {"d_model", 16}, {"mask", "padding"}});
  CHECK(o.task == "brackets");
  CHECK(o.lr == "0.01");
  CHECK(o.steps == "5");
  CHECK(o.betas == "0.8,0.9");
  CHECK(o.no_shuffle);
  CHECK(o.model.d_model == "16");
  CHECK(o.model.mask == "padding");
  CHECK(training_options(Json::object()).model.mask.empty());  // the task's mask, as attn train
  CHECK_THROWS_WITH(training_options({{"learning_rate", 1}}), Catch::Contains("unknown training setting 'learning_rate'"));
  CHECK_THROWS_WITH(training_options({{"no_shuffle", 1}}), Catch::Contains("must be true or false"));
  CHECK_THROWS_WITH(training_options({{"lr", Json::array()}}), Catch::Contains("'lr' must be a number"));
  CHECK_THROWS_AS(training_options(Json::array()), InputError);
  // A language model's: its window and a text given inline (named text.txt: plain text).
  const auto lm = training_options({{"task", "text"}, {"text", "abc abc"}, {"seq_len", 8}});
  CHECK(lm.seq_len == "8");
  CHECK(lm.data_text == "abc abc");
  CHECK(lm.data == "text.txt");
  CHECK_THROWS_WITH(training_options({{"task", "text"}, {"text", 3}}), Catch::Contains("'text' must be a text"));
  CHECK_THROWS_WITH(training_options({{"task", "text"}, {"text", ""}}), Catch::Contains("'text' must be a text"));
  CHECK_THROWS_WITH(training_options({{"text", "a"}, {"data", "x.txt"}}), Catch::Contains("'text' or 'data', not both"));
}

TEST_CASE("ui training settings round trip through the URL hash", "[ui][training]") {
  PlaygroundConfig c;
  c.training = {{"task", "brackets"}, {"lr", 0.003}, {"steps", 50}, {"no_shuffle", true}, {"optimizer", "adam"},
                {"betas", {0.8, 0.95}}};
  const std::string hash = to_hash(c);
  CHECK(hash.find("train.lr=0.003") != std::string::npos);
  CHECK(hash.find("train.task=brackets") != std::string::npos);
  PlaygroundConfig back = from_hash(hash);
  back.training["betas"] = Json::array({0.8, 0.95});  // a hash carries "0.8,0.95": the same option text
  CHECK(back == c);
  CHECK(from_hash(hash).training["betas"] == "0.8,0.95");
  CHECK(training_options(from_hash(hash).training).betas == training_options(c.training).betas);
  // A data file cannot travel in a link.
  c.training = {{"data", "/tmp/x.jsonl"}, {"steps", 3}};
  CHECK(to_hash(c) == "train.steps=3");
  CHECK_THROWS_WITH(from_hash("train.bogus=1"), Catch::Contains("unknown training setting"));
  // A text travels in a link, and stays a text when it reads as a number.
  c.training = {{"task", "text"}, {"text", "12 34\n한국어"}};
  CHECK(from_hash(to_hash(c)).training == c.training);
  c.training = {{"task", "text"}, {"text", "42"}};
  CHECK(from_hash(to_hash(c)).training["text"] == "42");
  CHECK_THROWS_WITH(from_hash("train.no_shuffle=2"), Catch::Contains("true or false"));
}

TEST_CASE("ui training: steps, evaluations and the log in attn train's form", "[ui][training]") {
  Training t;
  t.configure(places);
  CHECK(t.status().step == 0);
  CHECK(t.status().steps == 30);
  CHECK(t.effective_settings()["optimizer"] == "adamw");  // the task's defaults filled in
  CHECK(t.effective_settings()["eval_every"] == 10);
  CHECK(t.replay().size() == replay_items);
  const auto first = t.run_steps(12);
  REQUIRE(first.size() == 13);  // 12 steps and the evaluation after step 10
  CHECK(first[10]["step"] == 10);
  CHECK(first[10].contains("val_loss"));
  CHECK(first[10].contains("val_accuracy"));
  for (const char* key : {"step", "loss", "accuracy", "lr", "grad_norm"}) CHECK(first[0].contains(key));
  const auto rest = t.run_steps(100);  // stops at the run's last step
  CHECK(rest.size() == 18 + 2);
  CHECK(t.status().step == 30);
  CHECK(t.log().size() == 33);
  CHECK(t.run_steps(1).empty());
  CHECK(t.status().val_accuracy.has_value());
}

TEST_CASE("ui training: playing on the worker, pausing and stepping give the same run", "[ui][training]") {
  Training straight;
  straight.configure(places);
  straight.run_steps(30);
  Training t;
  t.configure(places);
  t.run_steps(3);
  t.play();
  if (Training::has_worker()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (t.status().step < 8 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } else {
    t.pump(5);
  }
  t.pause();
  CHECK_FALSE(t.status().running);
  const size_t at = t.status().step;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(t.status().step == at);  // paused means paused
  t.run_steps(30);
  CHECK(t.log() == straight.log());
  // Reset: the same settings again start from step 0 and give the same records.
  t.configure(places);
  CHECK(t.status().step == 0);
  CHECK(t.log().empty());
  t.run_steps(30);
  CHECK(t.log() == straight.log());
}

TEST_CASE("ui training: snapshots for the replay stay within their bounds", "[ui][training]") {
  Training t;
  t.configure({{"task", "places"}, {"steps", 300}});
  t.run_steps(300);
  Training::View v;
  t.update_view(v);
  REQUIRE(v.snapshots.size() >= 2);
  CHECK(v.snapshots.size() <= max_snapshots);
  CHECK(v.snapshots.front()->step == 0);
  CHECK(v.snapshots.back()->step == 300);
  size_t bytes = 0;
  for (size_t i = 0; i < v.snapshots.size(); ++i) {
    if (i) CHECK(v.snapshots[i]->step > v.snapshots[i - 1]->step);
    for (const Tensor& w : v.snapshots[i]->weights) bytes += w.size() * sizeof(float);
  }
  CHECK(bytes <= max_snapshot_bytes);
  // Each item's attention: [layers, heads, S, S], rows summing to 1; and the trained model predicts.
  const Snapshot& last = *v.snapshots.back();
  REQUIRE(last.weights.size() == replay_items);
  const Tensor& w = last.weights[0];
  REQUIRE(w.dimension() == 4);
  CHECK(w.shape()[0] == t.num_layers());
  CHECK(w.shape()[1] == t.num_heads());
  const size_t n = w.shape()[3];
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t j = 0; j < n; ++j) sum += double(w(0, 0, i, j));
    CHECK(sum == Approx(1.0).epsilon(1e-5));
  }
  size_t right = 0;
  for (size_t i = 0; i < replay_items; ++i) right += last.predicted[i] == t.replay()[i].label;
  CHECK(right == replay_items);  // places reaches 100 % (docs/training.md)
  // An incremental view ends where a fresh copy does.
  Training::View fresh;
  t.update_view(fresh);
  CHECK(fresh.steps.size() == v.steps.size());
  CHECK(fresh.snapshots.size() == v.snapshots.size());
}

TEST_CASE("ui training: bad settings and a diverging run are messages", "[ui][training]") {
  Training t;
  t.configure(places);
  t.run_steps(2);
  CHECK_THROWS_WITH(t.configure({{"task", "places"}, {"lr", -1}}), Catch::Contains("learning rate -1"));
  CHECK_THROWS_WITH(t.configure({{"task", "sorting"}}), Catch::Contains("duplicate"));
  CHECK_THROWS_WITH(t.configure({{"task", "places"}, {"data", "x.jsonl"}}), Catch::Contains("--task NAME or --data"));
  CHECK_THROWS_WITH(t.configure({{"data", "/nonexistent/x.jsonl"}}), Catch::Contains("cannot read"));
  CHECK(t.status().step == 2);  // the old run stays
  t.configure({{"task", "places"}, {"optimizer", "sgd"}, {"lr", 1e30}, {"steps", 50}});
  t.run_steps(50);
  const TrainingStatus s = t.status();
  CHECK(s.step < 50);
  CHECK_THAT(s.error, Catch::Contains("step"));
  CHECK_FALSE(s.running);
}

TEST_CASE("ui training: the trained model's files open as Model files", "[ui][training]") {
  Training t;
  t.configure(places);
  t.run_steps(30);
  const Training::ModelFilesBytes files = t.model_files();
  const std::string w = temp_path("w.safetensors"), c = temp_path("c.json"), v = temp_path("v.json");
  std::ofstream(w, std::ios::binary) << files.weights;
  std::ofstream(c, std::ios::binary) << files.config;
  std::ofstream(v, std::ios::binary) << files.vocab;
  const auto loaded = load_model({w, c, v, {}});
  CHECK(loaded->model.config.d_model == size_t(t.effective_settings()["d_model"].get<int>()));
  REQUIRE(loaded->vocab.has_value());
  CHECK(loaded->vocab->size() == t.vocab()->size());
  const auto model = t.model_copy();
  CHECK(loaded->model.fc.weight == model->fc.weight);
  for (const auto& p : {w, c, v}) std::filesystem::remove(p);
}

TEST_CASE("ui training: the validation accuracy with a head ablated", "[ui][training][interventions]") {
  Training t;
  CHECK_FALSE(t.ablated_accuracy({{0, 0}}));  // no run yet
  t.configure({{"task", "places"}, {"steps", 30}, {"eval_every", 30}, {"num_heads", 2}, {"num_layers", 2}});
  t.run_steps(30);
  const auto r = t.ablated_accuracy({{1, 1}});
  REQUIRE(r);
  CHECK(r->step == 30);
  CHECK(r->accuracy == *t.status().val_accuracy);  // the model as it is: the last evaluation's
  CHECK((r->ablated >= 0 && r->ablated <= 1));
  CHECK_THROWS_WITH(t.ablated_accuracy({{0, 2}}), Catch::Contains("head 2 is out of range (layer 0 has 2 heads)"));
  // Zeroing a head's z is zeroing its columns of the output projection: the same evaluation.
  TransformerModel zeroed = *t.model_copy();
  const size_t dk = zeroed.config.head_dim();
  for (size_t row = 0; row < zeroed.config.d_model; ++row)
    for (size_t c = dk; c < 2 * dk; ++c) zeroed.layers[1].output.weight(row, c) = 0.0f;
  const std::vector<train::LabelledItem> items = train::task_data(train::find_task("places"), 0, 64, 7).val;
  const Hooks hooks = ablation_hooks(model_stages(zeroed.config), {{{1, 1}}, {}, AblationKind::zero}, nullptr, {});
  const train::EvalRecord hooked = train::evaluate(*t.model_copy(), items, MaskKind::padding, 16, &hooks);
  const train::EvalRecord direct = train::evaluate(zeroed, items, MaskKind::padding, 16);
  CHECK(hooked.loss == direct.loss);
  CHECK(hooked.accuracy == direct.accuracy);
}

// --- language models (GPT-2) ---

TEST_CASE("ui training: a language task trains GPT-2 as the run builder does, with head scores and samples",
          "[ui][training][train_lm]") {
  const Json settings = {{"task", "halves"}, {"steps", 20}, {"eval_every", 10}};
  Training t;
  t.configure(settings);
  CHECK(t.language_model());
  CHECK(t.task() == "halves");
  CHECK(t.effective_settings()["n_embd"] == 64);
  CHECK(t.effective_settings()["seq_len"] == 24);
  CHECK(t.num_layers() == 2);
  CHECK(t.num_heads() == 4);
  REQUIRE(t.replay().size() == replay_items);
  CHECK(t.replay()[0].tokens.size() == 24);
  CHECK(t.replay()[0].text.size() == 24);
  // The sample continues the first half and one letter; the expected rest is the item's.
  CHECK(t.sample_prompt() == t.replay()[0].text.substr(0, 13));
  CHECK(t.sample_expected() == t.replay()[0].text.substr(13));
  const auto records = t.run_steps(20);
  REQUIRE(records.size() == 22);
  for (const char* key : {"val_repeated_loss", "val_repeated_accuracy", "induction_score", "previous_token_score"})
    CHECK(records[10].contains(key));
  // The same options through core/train's run builder and trainer: the same records.
  train::TrainRun direct = train::prepare_train_run(training_options(settings));
  std::vector<Json> expected;
  for (size_t i = 0; i < 20; ++i) {
    expected.push_back(train::record_json(direct.training().step()));
    if ((i + 1) % 10 == 0) {
      train::EvalRecord e = direct.training().evaluate(direct.data.sets.val);
      e.step = i + 1;
      expected.push_back(train::record_json(e));
    }
  }
  CHECK(records == expected);
  Training::View v;
  t.update_view(v);
  REQUIRE(v.snapshots.size() >= 2);
  for (const auto& snap : v.snapshots) {
    REQUIRE(snap->weights.size() == replay_items);
    CHECK(snap->weights[0].shape()[0] == 2);
    CHECK(snap->weights[0].shape()[3] == 24);
    CHECK(snap->sample.size() == t.sample_expected().size());  // greedy, one letter per token
    for (size_t k = 0; k < head_score_kinds; ++k) {
      const Tensor& scores = snap->head_scores[k];
      REQUIRE(scores.dimension() == 2);
      const bool pairs = k >= first_composition_kind;  // [layers·heads, layers·heads]
      CHECK(scores.shape()[0] == (pairs ? 8 : 2));
      CHECK(scores.shape()[1] == (pairs ? 8 : 4));
      for (float x : scores) CHECK((x >= 0 && x <= 1));
    }
  }
  // The prefix-matching scores of the last snapshot: the log's induction_score is their best on the
  // validation items; on the replay items (8 of them) the same definition.
  const auto last = v.snapshots.back();
  CHECK(last->step == 20);
  const double best = *std::max_element(last->head_scores[3].begin(), last->head_scores[3].end());
  CHECK(std::fabs(best - records.back()["induction_score"].get<double>()) < 0.1);
  // The compositions are attn heads --composition's (core/model/circuits.hpp) of the model at that step:
  // row L0H2 read by column L1H3 through its keys.
  const PretrainedModel trained = t.language_model_copy()->model;
  CHECK(last->head_scores[first_composition_kind + 1].data()[2 * 8 + 4 + 3] ==
        Approx(composition_scores(trained.layers, 4, {true, true}, CompositionKind::k).at(0, 2, 1, 3)).epsilon(1e-6));
  CHECK(last->head_scores[first_composition_kind].data()[(4 + 1) * 8 + 2] == 0.0f);  // a later head writing: none
  // A head ablated: the next-token accuracy with and without it, and on the repeated segments theirs and
  // the induction score.
  const auto ablated = t.ablated_accuracy({{1, 0}});
  REQUIRE(ablated);
  CHECK(ablated->accuracy == Approx(records.back()["val_accuracy"].get<double>()));
  REQUIRE(ablated->repeated);
  CHECK(*ablated->repeated == Approx(records.back()["val_repeated_accuracy"].get<double>()));
  CHECK(*ablated->induction == Approx(records.back()["induction_score"].get<double>()));
  REQUIRE(ablated->induction_ablated);
  CHECK(t.model_copy() == nullptr);
  CHECK_FALSE(t.vocab());
}

TEST_CASE("ui training: the induction task's sample starts in its repeated segment, and attention-only is a setting",
          "[ui][training][train_lm]") {
  const train::LmTaskSpec& task = *train::find_lm_task("induction");
  const train::LabelledItem first = train::lm_task_data(task, train::lm_task_tokenizer(task), 0).val.front();
  Training t;
  t.configure({{"task", "induction"}, {"steps", 4}});
  CHECK(t.effective_settings()["seq_len"] == 32);
  CHECK(t.effective_settings()["attention_only"] == true);  // the induction task's own model
  CHECK(t.sample_prompt().size() == first.repeat.second + 1);  // up to the copy's first token
  CHECK(t.sample_prompt() + t.sample_expected() == t.replay()[0].text);
  t.configure({{"task", "halves"}, {"steps", 4}});
  CHECK(t.effective_settings()["attention_only"] == false);
  t.configure({{"task", "halves"}, {"steps", 4}, {"attention_only", true}});
  CHECK(t.effective_settings()["attention_only"] == true);
  const auto records = t.run_steps(4);
  CHECK(records.back().contains("previous_token_score"));
  CHECK_THROWS_WITH(t.configure({{"task", "places"}, {"attention_only", true}}), Catch::Contains("--attention-only"));
}

TEST_CASE("ui training: a text's language model, saved as a GPT-2 folder and generating", "[ui][training][train_lm]") {
  Training t;
  t.configure({{"task", "text"}, {"text", "나는 학교에 간다\n너는 집에 간다\n"}, {"steps", 3}, {"seq_len", 8}});
  CHECK(t.language_model());
  CHECK(t.effective_settings()["vocab_size"].get<size_t>() >= 11);  // the text's 11 characters and their bytes
  t.run_steps(3);
  CHECK(t.status().step == 3);
  const Training::ModelFilesBytes files = t.model_files();
  CHECK(files.merges.rfind("#version", 0) == 0);
  CHECK(Json::parse(files.config)["model_type"] == "gpt2");
  const std::string dir = temp_path("lm");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/model.safetensors", std::ios::binary) << files.weights;
  std::ofstream(dir + "/config.json", std::ios::binary) << files.config;
  std::ofstream(dir + "/vocab.json", std::ios::binary) << files.vocab;
  std::ofstream(dir + "/merges.txt", std::ios::binary) << files.merges;
  const auto loaded = load_model(sort_model_files({dir}));
  REQUIRE(loaded->pretrained);
  const auto copy = t.language_model_copy();
  REQUIRE(copy);
  CHECK(loaded->pretrained->model.word_embeddings == copy->model.word_embeddings);
  // Generation from the trained model, the one loaded and the copy: the same tokens.
  const Generation a = generate(*copy, "나는", 4, {}), b = generate(*loaded->pretrained, "나는", 4, {});
  CHECK(a.text == b.text);
  std::filesystem::remove_all(dir);
  // Errors: a text with a task that does not take one, the classifier.
  CHECK_THROWS_WITH(t.configure({{"task", "induction"}, {"text", "abc"}}), Catch::Contains("--task korean and --task text"));
  CHECK_THROWS_WITH(t.configure({{"text", "abc abc"}}), Catch::Contains("a text trains a language model"));
}
