#include "core/model/trace_diff.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "core/base/bits.hpp"
#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/memory.hpp"

namespace attn {
namespace {

// The float's place on one line of every float32 (-0 and +0 one apart).
uint32_t ordered(float x) {
  const uint32_t u = bits_of(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

uint64_t ulps_between(float a, float b) {
  const uint32_t x = ordered(a), y = ordered(b);
  return x > y ? x - y : y - x;
}

Shape shape_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end()); }

void compare_values(const Tensor& a, const Tensor& b, Tolerance tol, StageDiff& d) {
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a.data()[i], y = b.data()[i];
    double abs = 0, rel = 0;
    uint64_t ulps = 0;
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) abs = rel = inf, ulps = uint64_t(1) << 32;
    } else if (x != y) {
      abs = std::fabs(double(x) - double(y)), rel = y == 0 ? inf : abs / std::fabs(double(y));
      ulps = ulps_between(x, y);
      if (std::isinf(x) || std::isinf(y)) abs = rel = inf;  // inf − inf of one sign is equal, above
    }
    if (i == 0 || abs > d.max_abs) d.max_abs = abs, d.worst = i, d.worst_a = x, d.worst_b = y;
    d.max_rel = std::max(d.max_rel, rel), d.max_ulps = std::max(d.max_ulps, ulps);
    if (abs > 0 && !(std::isfinite(abs) && abs <= tol.atol + tol.rtol * std::fabs(double(y)))) ++d.beyond;
  }
  d.status = d.beyond ? StageDiff::Status::beyond : d.max_ulps ? StageDiff::Status::within : StageDiff::Status::equal;
}

StageDiff compare_stage(const Stage& a, const Stage* b, Tolerance tol) {
  StageDiff d;
  d.name = a.name, d.shape_a = shape_of(a.value);
  if (!b) {
    d.status = StageDiff::Status::only_in_a;
    return d;
  }
  d.shape_b = shape_of(b->value);
  if (d.shape_a != d.shape_b)
    d.status = StageDiff::Status::shape_differs;
  else
    compare_values(a.value, b->value, tol, d);
  return d;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

Stage stage_from_json(const Json& s, const std::string& where) {
  if (!s.is_object() || !s.contains("name") || !s["name"].is_string() || !s.contains("shape") || !s["shape"].is_array() ||
      !s.contains("data") || !s["data"].is_array())
    throw InputError(where + ": a stage needs \"name\" (a string), \"shape\" and \"data\" (arrays)");
  Stage stage;
  stage.name = s["name"].get<std::string>();
  const std::string at = where + ", stage '" + stage.name + "'";
  std::vector<uint64_t> dims;
  for (const Json& dim : s["shape"]) dims.push_back(json_integer<uint64_t>(dim, at + ": \"shape\"", 0));
  if (!strides_fit(dims)) throw InputError(at + ": \"shape\" is too large");
  Shape shape;
  size_t count = 1;  // strides_fit bounds the product of the non-zero dimensions; a zero empties it
  for (uint64_t dim : dims) shape.push_back(size_t(dim)), count *= size_t(dim);
  if (count != s["data"].size())
    throw InputError(at + ": \"shape\" " + shape_text(shape) + " holds " + std::to_string(count) + " values, \"data\" " +
                     std::to_string(s["data"].size()));
  stage.value = Tensor::from_shape(shape);
  for (size_t i = 0; i < count; ++i) {
    const Json& v = s["data"][i];
    if (!v.is_number()) throw InputError(at + ": value " + std::to_string(i) + " is not a number");
    stage.value.data()[i] = v.get<float>();
  }
  return stage;
}

void add_stages(const Json& list, const std::string& prefix, const std::string& what, std::vector<Stage>& out) {
  if (!list.is_array()) throw InputError(what + ": \"stages\" must be an array");
  for (const Json& s : list) {
    out.push_back(stage_from_json(s, what));
    out.back().name = prefix + out.back().name;
  }
}

}  // namespace

bool TraceDiff::passed() const {
  for (const StageDiff& d : stages)
    if (d.status == StageDiff::Status::beyond || d.status == StageDiff::Status::shape_differs) return false;
  return true;
}

TraceDiff diff_traces(const std::vector<Stage>& a, const std::vector<Stage>& b, Tolerance tolerance) {
  std::map<std::string, const Stage*> in_b;
  for (const Stage& s : b) in_b.emplace(s.name, &s);
  TraceDiff diff;
  for (const Stage& s : a) {
    const auto it = in_b.find(s.name);
    diff.stages.push_back(compare_stage(s, it == in_b.end() ? nullptr : it->second, tolerance));
    if (it == in_b.end()) continue;
    in_b.erase(it);
    ++diff.compared;
    const StageDiff& d = diff.stages.back();
    if (!diff.first_differing && d.status != StageDiff::Status::equal) diff.first_differing = diff.stages.size() - 1;
  }
  for (const Stage& s : b) {
    if (!in_b.count(s.name)) continue;
    StageDiff d;
    d.name = s.name, d.status = StageDiff::Status::only_in_b, d.shape_b = shape_of(s.value);
    diff.stages.push_back(std::move(d));
  }
  return diff;
}

std::vector<Stage> stages_from_json(const Json& doc, const std::string& what) {
  if (!doc.is_object() || !(doc.contains("stages") || doc.contains("sections")))
    throw InputError(what + ": not a trace document (an object with \"stages\", or \"sections\")");
  std::vector<Stage> stages;
  if (doc.contains("stages")) add_stages(doc["stages"], "", what, stages);
  if (doc.contains("sections")) {
    if (!doc["sections"].is_array()) throw InputError(what + ": \"sections\" must be an array");
    for (size_t i = 0; i < doc["sections"].size(); ++i) {
      const Json& section = doc["sections"][i];
      if (!section.is_object() || !section.contains("stages"))
        throw InputError(what + ": section " + std::to_string(i + 1) + " has no \"stages\"");
      add_stages(section["stages"], std::to_string(i + 1) + "/", what, stages);
    }
  }
  std::map<std::string, int> seen;
  for (const Stage& s : stages)
    if (seen[s.name]++) throw InputError(what + ": stage '" + s.name + "' appears twice");
  return stages;
}

const char* status_name(StageDiff::Status status) {
  switch (status) {
    case StageDiff::Status::equal: return "equal";
    case StageDiff::Status::within: return "within";
    case StageDiff::Status::beyond: return "beyond";
    case StageDiff::Status::shape_differs: return "shape_differs";
    case StageDiff::Status::only_in_a: return "only_in_a";
    case StageDiff::Status::only_in_b: return "only_in_b";
  }
  return "";
}

std::string diff_report(const TraceDiff& diff, Tolerance tolerance) {
  std::string out;
  for (const StageDiff& d : diff.stages) {
    out += d.name + "  " + status_name(d.status);
    switch (d.status) {
      case StageDiff::Status::only_in_a: out += "  " + shape_text(d.shape_a); break;
      case StageDiff::Status::only_in_b: out += "  " + shape_text(d.shape_b); break;
      case StageDiff::Status::shape_differs: out += "  A " + shape_text(d.shape_a) + ", B " + shape_text(d.shape_b); break;
      default:
        out += "  " + shape_text(d.shape_a) + "  max |Δ| " + number(d.max_abs) + "  max rel " + number(d.max_rel) +
               "  max ULPs " + std::to_string(d.max_ulps);
        if (d.beyond)
          out += "  " + std::to_string(d.beyond) + " beyond; worst at " + std::to_string(d.worst) + ": A " +
                 number(d.worst_a) + ", B " + number(d.worst_b);
    }
    out += "\n";
  }
  out += std::to_string(diff.compared) + " stages compared (rtol " + number(tolerance.rtol) + ", atol " +
         number(tolerance.atol) + "): ";
  out += diff.first_differing ? "the first to differ is " + diff.stages[*diff.first_differing].name : "all bit-identical";
  return out + (diff.passed() ? "; within the tolerance\n" : "; NOT within the tolerance\n");
}

Json diff_json(const TraceDiff& diff, Tolerance tolerance) {
  Json stages = Json::array();
  const auto finite_or_null = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  for (const StageDiff& d : diff.stages) {
    Json s = {{"name", d.name}, {"status", status_name(d.status)}};
    if (d.status != StageDiff::Status::only_in_b) s["shape_a"] = d.shape_a;
    if (d.status != StageDiff::Status::only_in_a) s["shape_b"] = d.shape_b;
    if (d.status == StageDiff::Status::equal || d.status == StageDiff::Status::within || d.status == StageDiff::Status::beyond) {
      s["max_abs"] = finite_or_null(d.max_abs), s["max_rel"] = finite_or_null(d.max_rel), s["max_ulps"] = d.max_ulps;
      s["beyond"] = d.beyond, s["worst_index"] = d.worst, s["worst_a"] = d.worst_a, s["worst_b"] = d.worst_b;
    }
    stages.push_back(std::move(s));
  }
  return {{"rtol", tolerance.rtol},
          {"atol", tolerance.atol},
          {"compared", diff.compared},
          {"first_differing", diff.first_differing ? Json(diff.stages[*diff.first_differing].name) : Json(nullptr)},
          {"passed", diff.passed()},
          {"stages", std::move(stages)}};
}

}  // namespace attn
