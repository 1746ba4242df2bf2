// diff_traces' measures on values chosen by hand (NaN, infinities, signed zeros, a zero reference),
// the tolerance test at its boundary, and stages_from_json's refusals. attn diff against PyTorch's
// own stages is tests/diff_check.py.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/base/error.hpp"
#include "core/model/trace_diff.hpp"

namespace {

using attn::Stage;
using attn::StageDiff;
using attn::Tensor;

Stage stage(const std::string& name, std::vector<float> values) {
  Tensor t = Tensor::from_shape({values.size()});
  std::copy(values.begin(), values.end(), t.begin());
  return {name, std::move(t)};
}

StageDiff one(std::vector<float> a, std::vector<float> b, attn::Tolerance tol = {}) {
  const attn::TraceDiff d = attn::diff_traces({stage("s", a)}, {stage("s", b)}, tol);
  REQUIRE(d.stages.size() == 1);
  return d.stages[0];
}

const float not_a_number = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("diff_traces: NaNs, infinities, signed zeros and a zero reference", "[diff]") {
  CHECK(one({not_a_number, inf, -inf, 0.0f}, {not_a_number, inf, -inf, -0.0f}).status == StageDiff::Status::equal);
  const StageDiff n = one({1, not_a_number}, {1, 2});
  CHECK((n.status == StageDiff::Status::beyond && std::isinf(n.max_abs) && n.worst == 1 && n.beyond == 1));
  CHECK(one({inf}, {-inf}).status == StageDiff::Status::beyond);
  const StageDiff z = one({1e-9f}, {0.0f}, {0.0, 1e-8});  // within atol, of infinite relative error
  CHECK((z.status == StageDiff::Status::within && std::isinf(z.max_rel) && z.max_ulps > 0));
  const StageDiff ulp = one({1.0f}, {std::nextafter(1.0f, 2.0f)});
  CHECK((ulp.max_ulps == 1 && ulp.status == StageDiff::Status::within));
  CHECK(one({-1e-45f}, {1e-45f}).max_ulps == 3);  // -denormal, -0, +0, +denormal
}

TEST_CASE("diff_traces: |a − b| <= atol + rtol·|b|, b the reference", "[diff]") {
  CHECK(one({1.5f}, {1.0f}, {0.5, 0.0}).status == StageDiff::Status::within);
  CHECK(one({1.0f}, {1.5f}, {0.0, 0.4}).status == StageDiff::Status::beyond);  // 0.5 > 0.4
  CHECK(one({1.0f}, {2.0f}, {0.5, 0.0}).status == StageDiff::Status::within);   // 1 <= 0.5·2
  CHECK(one({2.0f}, {1.0f}, {0.5, 0.0}).status == StageDiff::Status::beyond);   // 1 > 0.5·1
}

TEST_CASE("diff_traces: stages by name, the first to differ in A's order", "[diff]") {
  const attn::TraceDiff d = attn::diff_traces({stage("a", {1}), stage("b", {1, 2}), stage("c", {3}), stage("d", {4})},
                                              {stage("d", {5}), stage("c", {3}), stage("b", {1}), stage("e", {0})}, {});
  REQUIRE(d.stages.size() == 5);
  CHECK(d.stages[0].status == StageDiff::Status::only_in_a);
  CHECK(d.stages[1].status == StageDiff::Status::shape_differs);
  CHECK(d.stages[2].status == StageDiff::Status::equal);
  CHECK(d.stages[3].status == StageDiff::Status::beyond);
  CHECK((d.stages[4].name == "e" && d.stages[4].status == StageDiff::Status::only_in_b));
  CHECK((d.first_differing == size_t(1) && d.compared == 3 && !d.passed()));
}

TEST_CASE("stages_from_json refuses malformed documents with a message", "[diff]") {
  const auto refused = [](const char* text) {
    try {
      attn::stages_from_json(attn::Json::parse(text), "doc");
    } catch (const attn::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused("[]") == "doc: not a trace document (an object with \"stages\", or \"sections\")");
  CHECK(refused(R"({"stages": [{"name": "x", "shape": [2], "data": [1]}]})") ==
        "doc, stage 'x': \"shape\" [2] holds 2 values, \"data\" 1");
  CHECK(refused(R"({"stages": [{"name": "x", "shape": [-1], "data": []}]})") ==
        "doc, stage 'x': \"shape\" must be an integer from 0 to 2^64 - 1, got -1");
  CHECK(refused(R"({"stages": [{"name": "x", "shape": [0, 4000000000, 4000000000], "data": []}]})") ==
        "doc, stage 'x': \"shape\" is too large");
  CHECK(refused(R"({"stages": [{"name": "x", "shape": [1], "data": ["a"]}]})") == "doc, stage 'x': value 0 is not a number");
  CHECK(refused(R"({"stages": [{"name": "x", "shape": [], "data": [1]}, {"name": "x", "shape": [], "data": [1]}]})") ==
        "doc: stage 'x' appears twice");
  CHECK(refused(R"({"sections": [{"title": "t"}]})") == "doc: section 1 has no \"stages\"");
  const auto stages = attn::stages_from_json(
      attn::Json::parse(R"({"sections": [{"stages": [{"name": "x", "shape": [], "data": [1]}]},
                                         {"stages": [{"name": "x", "shape": [1, 2], "data": [2, 3]}]}]})"),
      "doc");
  REQUIRE(stages.size() == 2);
  CHECK((stages[0].name == "1/x" && stages[1].name == "2/x" && stages[1].value.shape(1) == 2));
}
