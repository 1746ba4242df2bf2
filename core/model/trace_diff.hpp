// Two traces compared stage by stage, by name: `attn diff` (two runs, or a run against PyTorch's .npy
// dumps) and the playground's compare view. docs/compare.md describes the measures.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/trace.hpp"

namespace attn {

// numpy.allclose's test, B the reference: |a − b| <= atol + rtol·|b| for every element.
struct Tolerance {
  double rtol = 1e-5, atol = 1e-8;
};

struct StageDiff {
  enum class Status { equal, within, beyond, shape_differs, only_in_a, only_in_b };
  std::string name;
  Status status = Status::equal;
  Shape shape_a, shape_b;  // the side a stage is missing from has none
  // Over the elements (when the shapes agree). A NaN against a number, or an infinity against another
  // value, is an infinite difference beyond any tolerance; two NaNs are equal; the relative error of
  // b = 0 ≠ a is infinite.
  double max_abs = 0, max_rel = 0;
  uint64_t max_ulps = 0;        // float32 steps between a and b (ordered bit patterns)
  size_t beyond = 0;            // how many elements fail the tolerance
  size_t worst = 0;             // the flat index of the largest |a − b|
  float worst_a = 0, worst_b = 0;
};

struct TraceDiff {
  std::vector<StageDiff> stages;  // A's order, then the stages only B has
  // The first stage (in A's order) whose values are not bit-identical or whose shapes differ.
  std::optional<size_t> first_differing;
  size_t compared = 0;
  bool passed() const;  // every common stage within the tolerance, shapes equal
};

TraceDiff diff_traces(const std::vector<Stage>& a, const std::vector<Stage>& b, Tolerance tolerance);

// The stages of a trace document (docs/trace-json.md): its "stages", or for one with "sections"
// (attn tutorial --part 2) each section's stages named "SECTION/NAME", SECTION counted from 1. `what`
// names the document in the InputError for a malformed one.
std::vector<Stage> stages_from_json(const Json& doc, const std::string& what);

const char* status_name(StageDiff::Status status);
// One line per stage and a summary, for the terminal.
std::string diff_report(const TraceDiff& diff, Tolerance tolerance);
Json diff_json(const TraceDiff& diff, Tolerance tolerance);

}  // namespace attn
