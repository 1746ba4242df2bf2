// The playground's compare view without a window: a run pinned as A beside the current one (B), their
// stage-by-stage comparison, A in the URL hash, bad links refused.
#include <cstring>

#include "core/base/error.hpp"
#include "tests/fixtures.hpp"
#include "ui/playground.hpp"

using namespace attn;
using namespace attn::ui;

namespace {

PlaygroundConfig small_transformer(uint64_t seed) {
  PlaygroundConfig c = defaults_for(ModelKind::transformer);
  c.d_model = 16;
  c.num_heads = 2;
  c.num_layers = 2;
  c.seed = seed;
  return c;
}

// The first stage (in A's order) whose bytes differ from B's stage of that name, found without trace_diff.
std::string first_differing(const Computed& a, const Computed& b) {
  for (const Stage& s : a.trace.stages())
    for (const Stage& t : b.trace.stages())
      if (s.name == t.name && (s.value.shape() != t.value.shape() ||
                               std::memcmp(s.value.data(), t.value.data(), s.value.size() * sizeof(float)) != 0))
        return s.name;
  return "";
}

}  // namespace

TEST_CASE("ui compare: the pinned run is A, the current one B, stage by stage", "[ui][compare]") {
  Playground p(small_transformer(1));
  p.update();
  CHECK(p.compare() == nullptr);
  const size_t computed = p.compute_count();
  const uint64_t generation = p.config_generation();
  p.pin();
  CHECK(p.config_generation() == generation + 1);  // the hash carries A: the page republishes it
  CHECK_FALSE(p.update());                          // B is not recomputed
  CHECK(p.compute_count() == computed);
  REQUIRE(p.compare() != nullptr);
  CHECK(p.compare()->passed());  // A is B: every stage bit-identical
  CHECK_FALSE(p.compare()->first_differing);

  p.set_config(small_transformer(2));
  p.update();
  const TraceDiff* diff = p.compare();
  REQUIRE(diff != nullptr);
  CHECK_FALSE(diff->passed());
  const auto a = compute(small_transformer(1)), b = compute(small_transformer(2));
  REQUIRE(diff->first_differing);
  CHECK(diff->stages[*diff->first_differing].name == first_differing(*a, *b));
  CHECK(diff->compared == a->trace.stages().size());
  // The measures are attn diff's on the same two runs.
  const TraceDiff expected = diff_traces(a->trace.stages(), b->trace.stages(), Tolerance());
  REQUIRE(diff->stages.size() == expected.stages.size());
  for (size_t i = 0; i < expected.stages.size(); ++i) {
    CHECK(diff->stages[i].name == expected.stages[i].name);
    CHECK(diff->stages[i].status == expected.stages[i].status);
    CHECK(diff->stages[i].max_abs == expected.stages[i].max_abs);
  }
  // A tolerance wide enough passes what differs; a negative one is refused.
  p.set_tolerance({1e9, 1e9});
  CHECK(p.compare()->passed());
  CHECK_THROWS_AS(p.set_tolerance({-1, 0}), InputError);
  CHECK(p.tolerance().rtol == 1e9);

  p.unpin();
  CHECK(p.compare() == nullptr);
  CHECK(p.hash() == to_hash(p.config()));
}

TEST_CASE("ui compare: runs of other shapes compare where the shapes match", "[ui][compare]") {
  PlaygroundConfig c = small_transformer(1);
  c.sentences = {"나는 학교에 간다"};
  Playground p(c);
  p.update();
  p.pin();
  c.sentences = {"나는 오늘 학교에 간다"};
  c.num_layers = 1;
  p.set_config(c);
  p.update();
  const TraceDiff* diff = p.compare();
  REQUIRE(diff != nullptr);
  size_t shapes = 0, only_a = 0;
  for (const StageDiff& s : diff->stages) {
    shapes += s.status == StageDiff::Status::shape_differs;
    only_a += s.status == StageDiff::Status::only_in_a;
    if (s.name.rfind("layers.1.", 0) == 0) CHECK(s.status == StageDiff::Status::only_in_a);
  }
  CHECK(shapes > 0);
  CHECK(only_a > 0);
  CHECK_FALSE(diff->passed());
}

TEST_CASE("ui compare: run A travels in the URL hash", "[ui][compare]") {
  PlaygroundConfig a = small_transformer(7);
  a.sentences = {"a b c", "d e"};
  a.mask = MaskKind::causal;
  Playground p(a);
  p.update();
  p.pin();
  PlaygroundConfig b = a;
  b.seed = 8;
  b.lang = "ko";
  p.set_config(b);
  p.update();
  const std::string hash = p.hash();
  CHECK(hash.find("&compare=1&a.model=transformer&") != std::string::npos);
  CHECK(hash.find("a.seed=7") != std::string::npos);
  CHECK(from_hash(hash) == b);  // the configuration reads past A's keys
  REQUIRE(compare_from_hash(hash));
  CHECK(*compare_from_hash(hash) == p.pinned_config());

  Playground q;
  q.set_hash("#" + hash);
  q.update();
  CHECK(q.config() == b);
  REQUIRE(q.pinned() != nullptr);
  CHECK(q.pinned_config() == p.pinned_config());
  CHECK(q.pinned()->json() == p.pinned()->json());
  CHECK(q.hash() == hash);
  // A of the defaults is compare=1 alone; a hash without A clears it.
  q.pin_config(PlaygroundConfig());
  CHECK(q.hash() == to_hash(b) + "&compare=1");
  q.set_hash(to_hash(b));
  CHECK(q.pinned() == nullptr);
}

TEST_CASE("ui compare: bad run A in a link is refused, changing nothing", "[ui][compare]") {
  CHECK_FALSE(compare_from_hash("seed=3"));
  CHECK_THROWS_AS(compare_from_hash("compare=2"), InputError);
  CHECK_THROWS_AS(compare_from_hash("a.seed=1"), InputError);  // without compare=1
  CHECK_THROWS_WITH(compare_from_hash("compare=1&a.bogus=1"), Catch::Contains("run A"));
  CHECK_THROWS_AS(compare_from_hash("compare=1&a.d_model=0"), InputError);
  Playground p(small_transformer(1));
  p.update();
  p.pin();
  const PlaygroundConfig before = p.config();
  const std::string hash = p.hash();
  CHECK_THROWS_AS(p.set_hash("seed=5&compare=1&a.mask=sideways"), InputError);
  // A run A the engine refuses (a sentence longer than max_len) is an InputError too.
  CHECK_THROWS_AS(p.set_hash("seed=5&compare=1&a.max_len=1&a.model=transformer"), InputError);
  CHECK(p.config() == before);
  CHECK(p.hash() == hash);
}
