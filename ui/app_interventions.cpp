// The App's Interventions tab: ablate heads and feed-forward blocks by clicking (the configuration's
// ablation, so the URL hash carries it and every view shows the ablated run), see what that changed in
// the model's outputs, and the head detectors' scores of the run shown (core/model/head_detectors.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "ui/app.hpp"
#include "ui/app_head_grid.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {
namespace {

constexpr Str detector_titles[] = {Str::detector_previous_token, Str::detector_duplicate_token, Str::detector_induction};

// Toggles `item` in `list` (kept sorted, so a link lists them in order).
template <class T>
void toggle(std::vector<T>& list, const T& item) {
  const auto at = std::find(list.begin(), list.end(), item);
  if (at != list.end()) return void(list.erase(at));
  list.push_back(item);
  std::sort(list.begin(), list.end(), [](const T& a, const T& b) {
    if constexpr (std::is_same_v<T, HeadIndex>) return a.layer != b.layer ? a.layer < b.layer : a.head < b.head;
    else return a < b;
  });
}

bool ablated(const Ablation& a, size_t layer, size_t head) {
  return std::find(a.heads.begin(), a.heads.end(), HeadIndex{layer, head}) != a.heads.end();
}

// softmax of a row of logits, in double.
std::vector<double> softmax(const float* logits, size_t n) {
  const double top = *std::max_element(logits, logits + n);
  std::vector<double> p(n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += p[i] = std::exp(double(logits[i]) - top);
  for (double& v : p) v /= sum;
  return p;
}

// A classifier's prediction before and after, per item: "item 1: class 2 (61.0%) -> class 0 (40.2%)".
std::vector<std::string> class_effect(const Tensor& clean, const Tensor& ablated) {
  std::vector<std::string> lines;
  const size_t B = clean.shape(0), C = clean.shape(1);
  for (size_t b = 0; b < B; ++b) {
    const std::vector<double> p = softmax(clean.data() + b * C, C), q = softmax(ablated.data() + b * C, C);
    const size_t i = size_t(std::max_element(p.begin(), p.end()) - p.begin());
    const size_t j = size_t(std::max_element(q.begin(), q.end()) - q.begin());
    lines.push_back(format(Str::effect_class, b + 1, i, 100 * p[i], j, 100 * q[j]));
  }
  return lines;
}

// GPT-2's five likeliest next tokens after item `b` with the ablation, each with its clean probability.
std::vector<std::string> token_effect(const Pretrained& p, const Tensor& clean, const Tensor& ablated, size_t b) {
  const size_t V = clean.shape(1);
  const float* q = ablated.data() + b * V;
  std::vector<size_t> order(V);
  for (size_t i = 0; i < V; ++i) order[i] = i;
  const size_t k = std::min<size_t>(5, V);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](size_t x, size_t y) { return q[x] > q[y]; });
  std::vector<std::string> lines = {format(Str::effect_next_after, b + 1)};
  for (size_t i = 0; i < k; ++i)
    lines.push_back(format(Str::effect_token, 100.0 * q[order[i]], 100.0 * clean.data()[b * V + order[i]],
                              token_label(p, int64_t(order[i])).c_str()));
  return lines;
}

}  // namespace

void App::draw_interventions_view(float width) {
  const Computed* r = playground_.result();
  if (!r) return;
  if (r->stages.layers == 0) {
    ImGui::TextWrapped("%s", tr(Str::interventions_tutorial));
    return;
  }
  refresh_interventions_cache(*r);
  ImGui::TextWrapped("%s", tr(Str::ablation_caption));
  draw_ablation_controls(*r);
  const float grid_w = std::min(width * 0.45f, 64.0f * float(r->stages.heads) + 48);
  ImGui::BeginChild("ablation grid", ImVec2(grid_w, 0), false);
  draw_ablation_grid(*r, ImGui::GetContentRegionAvail());
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("ablation effect", ImVec2(0, 0), false);
  draw_ablation_effect();
  draw_detectors(ImGui::GetContentRegionAvail().x);
  ImGui::EndChild();
}

void App::draw_ablation_controls(const Computed& r) {
  bool changed = false;
  int kind = int(draft_.ablation.kind);
  ImGui::TextUnformatted(tr(Str::ablation_replace_with));
  ImGui::SameLine();
  changed |= ImGui::RadioButton(tr(Str::ablation_zero), &kind, int(AblationKind::zero));
  ImGui::SameLine();
  changed |= ImGui::RadioButton(tr(Str::ablation_mean), &kind, int(AblationKind::mean));
  draft_.ablation.kind = AblationKind(kind);
  ImGui::TextUnformatted(tr(Str::ablation_mlp));
  char label[32];
  for (size_t l = 0; l < r.stages.layers; ++l) {
    bool on = std::find(draft_.ablation.mlps.begin(), draft_.ablation.mlps.end(), l) != draft_.ablation.mlps.end();
    std::snprintf(label, sizeof label, "L%zu##mlp", l);
    const float w = ImGui::CalcTextSize(label).x + ImGui::GetFrameHeight() * 2;
    if (ImGui::GetContentRegionAvail().x > w) ImGui::SameLine();
    if (ImGui::Checkbox(label, &on)) {
      toggle(draft_.ablation.mlps, l);
      changed = true;
    }
  }
  if (!draft_.ablation.empty()) {
    if (ImGui::Button(tr(Str::ablation_clear))) {
      draft_.ablation.heads.clear();
      draft_.ablation.mlps.clear();
      changed = true;
    }
    ImGui::SameLine();
    ImGui::TextColored(dim_color, tr(Str::ablated_list), ablated_text_.c_str());
  } else {
    ImGui::TextColored(dim_color, "%s", tr(Str::ablation_none));
  }
  if (changed) apply(draft_);
}

void App::draw_ablation_grid(const Computed& r, ImVec2 size) {
  const auto cell = [&](size_t l, size_t h, ViewKey& key) -> const Tensor* {
    const Stage* s = l < layer_weights_.size() ? layer_weights_[l] : nullptr;
    if (!s) return nullptr;
    key = {playground_.result_generation(), &s->value, size_t(batch_), h};
    return &s->value;
  };
  int layer = -1, head = -1;
  if (draw_head_grid(ablation_grid_, ablation_cells_, r.stages.layers, r.stages.heads, cell, size, layer, head,
                     "ablation grid", Str::ablation_grid_tip)) {
    toggle(draft_.ablation.heads, HeadIndex{size_t(layer), size_t(head)});
    apply(draft_);
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (const GridCell& c : ablation_cells_) {  // an ablated head: crossed out
    if (!ablated(playground_.config().ablation, size_t(c.layer), size_t(c.head))) continue;
    const ImVec2 a(c.x, c.y), b(c.x + c.w, c.y + c.h);
    dl->AddRectFilled(a, b, IM_COL32(0, 0, 0, 140));
    dl->AddLine(a, b, IM_COL32(255, 90, 80, 255), 3);
    dl->AddLine(ImVec2(a.x, b.y), ImVec2(b.x, a.y), IM_COL32(255, 90, 80, 255), 3);
  }
}

// What the tab shows of a result, rebuilt only when the result or the item changes (never in an idle frame).
void App::refresh_interventions_cache(const Computed& r) {
  const ViewKey key{playground_.result_generation(), &r, size_t(batch_), 0};
  if (interventions_key_ == key) return;
  interventions_key_ = key;
  const Ablation& a = playground_.config().ablation;
  ablated_text_ = head_list_text(a.heads);
  if (!a.mlps.empty()) ablated_text_ += (ablated_text_.empty() ? "MLP " : ", MLP ") + layer_list_text(a.mlps);
  effect_lines_.clear();
  const auto& loaded = playground_.config().loaded;
  const Pretrained* checkpoint = loaded && loaded->pretrained && r.pretrained_input.batch ? &*loaded->pretrained : nullptr;
  if (checkpoint && checkpoint->model.config.family == ModelFamily::bert) {
    effect_lines_ = {tr(Str::effect_no_head)};
  } else if (r.clean_output.dimension() == 2) {
    const Tensor& now = r.trace.at(checkpoint ? "next_token_probs" : "logits");
    effect_lines_ = checkpoint ? token_effect(*checkpoint, r.clean_output, now, std::min(size_t(batch_), r.tokens.size() - 1))
                               : class_effect(r.clean_output, now);
  }
  layer_labels_.clear();
  head_labels_.clear();
  for (size_t l = 0; l < r.stages.layers; ++l) layer_labels_.push_back("L" + std::to_string(l));
  for (size_t h = 0; h < r.stages.heads; ++h) head_labels_.push_back("H" + std::to_string(h));
  try {
    const std::vector<HeadScores> scores = sentence_head_scores(r);
    for (size_t k = 0; k < scores.size(); ++k) {
      detector_scores_[k] = Tensor::from_shape({scores[k].layers, scores[k].heads});
      std::copy(scores[k].scores.begin(), scores[k].scores.end(), detector_scores_[k].begin());
    }
  } catch (const std::exception& e) {  // weights the run did not pull back (a backend's fused layers)
    for (Tensor& t : detector_scores_) t = Tensor();
    status_ = e.what();
  }
}

void App::draw_ablation_effect() {
  if (effect_lines_.empty()) return;
  ImGui::SeparatorText(tr(Str::effect_title));
  for (const std::string& line : effect_lines_) ImGui::TextUnformatted(line.c_str());
}

void App::draw_detectors(float width) {
  if (detector_scores_[0].dimension() != 2) return;
  ImGui::SeparatorText(tr(Str::detectors_title));
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float w = std::floor((width - 2 * gap) / 3.0f), h = ImGui::GetContentRegionAvail().y - 8;
  for (size_t k = 0; k < 3; ++k) {
    Heatmap& map = detector_maps_[k];
    // Scores lie in [0, 1]: one fixed range for all three, so that they compare.
    refresh(map, {playground_.result_generation(), &detector_scores_[k], 0, 0}, detector_scores_[k], ColorMap::sequential,
            true);
    if (k) ImGui::SameLine();
    ImGui::BeginGroup();
    fitted_title(tr(detector_titles[k]), w, "detectors");
    char id[24];
    std::snprintf(id, sizeof id, "detector %zu", k);
    draw_heatmap(map, &layer_labels_, &head_labels_, w, h, id);
    ImGui::EndGroup();
  }
}

}  // namespace attn::ui
