// The UI's texts in both languages, the language and tour step in the URL hash, and the guided tour's
// steps: each shows a stage the trace has, for both tutorials and for the user's own sentences; the
// check that finds English words left in the Korean UI.
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "core/base/error.hpp"
#include "core/train/train_data.hpp"
#include "tests/fixtures.hpp"
#include "ui/playground.hpp"
#include "ui/strings.hpp"
#include "ui/tour.hpp"

using namespace attn;
using namespace attn::ui;

namespace {

// The printf conversions of a format ("%zu", "%.1f", "%%"), in order.
std::string conversions(const char* format) {
  std::string out;
  for (const char* p = std::strchr(format, '%'); p; p = std::strchr(p + 1, '%')) {
    const char* end = p + 1;
    while (*end && !std::strchr("%sdfgzucxe", *end)) ++end;
    if (*end == 'z') ++end;
    out.append(p, end + (*end ? 1 : 0));
    p = *end ? end : end - 1;
  }
  return out;
}

}  // namespace

TEST_CASE("ui strings exist in English and Korean with the same conversions", "[ui]") {
  for (size_t k = 0; k < size_t(Str::count); ++k) {
    INFO(key_name(Str(k)));
    const char* en = text_in(Str(k), Lang::en);
    const char* ko = text_in(Str(k), Lang::ko);
    CHECK(std::strlen(en) > 0);
    CHECK(std::strlen(ko) > 0);
    CHECK(conversions(en) == conversions(ko));
  }
  set_language(Lang::ko);
  CHECK(std::string(tr(Str::tab_tour)) == "둘러보기");
  set_language(Lang::en);
  CHECK(std::string(tr(Str::tab_tour)) == "Tour");
  CHECK(page_strings(Lang::ko).at("page_sentences") == "문장");
}

TEST_CASE("ui english_only_words finds English UI words and leaves names alone", "[ui]") {
  CHECK(english_only_words("Stopped: no sentence") == std::vector<std::string>{"stopped", "sentence"});
  CHECK(english_only_words(text_in(Str::look_asked, Lang::en)).size() > 5);
  CHECK(english_only_words(text_in(Str::look_asked, Lang::ko)).empty());
  // Names: stage names, a stage with its shape, functions and tensors in formulas, words Korean uses too.
  CHECK(english_only_words("layers.0.self_attn.query d_model").empty());
  CHECK(english_only_words("query [4, 4, 6]").empty());
  CHECK(english_only_words("linear2(dropout(relu(linear1(x))))").empty());
  CHECK(english_only_words("vocab[단어]   ([PAD] = 0)").empty());
  CHECK(english_only_words("query 4") == std::vector<std::string>{"query"});
}

TEST_CASE("ui texts the same in both languages are names and formulas", "[ui]") {
  // english_only_words takes their words for names: an English sentence copied here would hide.
  const std::set<std::string> same = {"english", "korean", "d_ff_label", "tour_qkv_title", "tour_scores_title",
                                       "tour_scale_title"};
  for (size_t k = 0; k < size_t(Str::count); ++k) {
    const std::string key = key_name(Str(k));
    INFO(key);
    if (std::strcmp(text_in(Str(k), Lang::en), text_in(Str(k), Lang::ko)) == 0)
      CHECK((same.count(key) || (key.size() > 8 && key.compare(key.size() - 8, 8, "_formula") == 0)));
  }
}

TEST_CASE("ui every built-in task has its texts in both languages", "[ui]") {
  for (const train::TaskSpec& task : train::tasks()) {
    INFO(task.name);
    const auto texts = task_texts(task.name);
    REQUIRE(texts.has_value());
    CHECK(english_only_words(text_in(texts->description, Lang::ko)).empty());
    CHECK(english_only_words(text_in(texts->pattern, Lang::ko)).empty());
  }
  CHECK_FALSE(task_texts("bogus").has_value());
}

TEST_CASE("ui language from the locale, the hash and the settings", "[ui]") {
  CHECK(lang_for_locale("ko") == Lang::ko);
  CHECK(lang_for_locale("ko-KR") == Lang::ko);
  CHECK(lang_for_locale("ko_KR.UTF-8") == Lang::ko);
  CHECK(lang_for_locale("kok") == Lang::en);
  CHECK(lang_for_locale("en-US") == Lang::en);
  CHECK(lang_for_locale("") == Lang::en);

  PlaygroundConfig c;
  c.lang = "ko";
  c.tour = 3;
  CHECK(to_hash(c) == "lang=ko&tour=3");
  CHECK(from_hash("#lang=ko&tour=3") == c);
  CHECK(apply_settings(PlaygroundConfig(), Json{{"lang", "ko"}}).lang == "ko");
  CHECK(settings_json(c).at("lang") == "ko");
  CHECK_THROWS_AS(from_hash("lang=fr"), InputError);
  CHECK_THROWS_AS(from_hash("tour=16"), InputError);
  CHECK_THROWS_AS(from_hash("tour=-1"), InputError);
  CHECK_THROWS_AS(apply_settings(PlaygroundConfig(), Json{{"lang", 1}}), InputError);

  const Lang before = default_language();
  set_default_language(Lang::ko);
  CHECK(language_of(PlaygroundConfig()) == Lang::ko);
  CHECK(language_of(c) == Lang::ko);
  c.lang = "en";
  CHECK(language_of(c) == Lang::en);
  set_default_language(before);
}

TEST_CASE("ui language and tour step recompute nothing", "[ui]") {
  Playground p;
  p.update();
  PlaygroundConfig c = p.config();
  c.lang = "ko";
  c.tour = 2;
  p.set_config(c);
  CHECK_FALSE(p.update());
  CHECK(p.compute_count() == 1);
  CHECK(p.config().lang == "ko");
}

TEST_CASE("ui tour steps show stages of both tutorials, also for the user's sentences", "[ui]") {
  PlaygroundConfig mine;
  mine.sentences = {"the cat sat on the mat", "a dog ran"};
  for (const PlaygroundConfig& start : {PlaygroundConfig(), mine, defaults_for(ModelKind::transformer, mine)}) {
    std::map<ModelKind, std::unique_ptr<Computed>> runs;  // one computation per model
    for (int step = 1; step <= tour_length; ++step) {
      INFO("step " << step << ", " << start.sentences[0]);
      const PlaygroundConfig c = tour_config(start, step);
      CHECK(c.tour == step);
      CHECK(c.sentences == start.sentences);
      CHECK(c.model == (tour_step(step).transformer ? ModelKind::transformer : ModelKind::tutorial));
      CHECK(tour_model_fits(c, step));
      CHECK(from_hash(to_hash(c)) == c);
      if (!runs[c.model]) runs[c.model] = compute(c);
      const Computed& r = *runs[c.model];
      for (size_t layer : {size_t(0), r.num_layers ? r.num_layers - 1 : 0}) {
        const std::string stage = tour_stage(step, layer);
        INFO(stage);
        CHECK_NOTHROW(r.trace.at(stage));
      }
    }
  }
  CHECK(tour_config(tour_config(PlaygroundConfig(), 12), 0).tour == 0);
  CHECK_FALSE(tour_model_fits(PlaygroundConfig(), 12));
  CHECK_FALSE(tour_model_fits(defaults_for(ModelKind::transformer), 3));
  CHECK(from_hash("tour=12").model == ModelKind::transformer);  // a link to a second-tutorial step
  CHECK(apply_settings(PlaygroundConfig(), Json{{"tour", 12}}).model == ModelKind::transformer);
  CHECK_THROWS_AS(tour_step(0), InputError);
  CHECK_THROWS_AS(tour_config(PlaygroundConfig(), tour_length + 1), InputError);
}
