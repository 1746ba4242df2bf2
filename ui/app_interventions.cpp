// The App's Interventions tab: ablate heads and feed-forward blocks by clicking (the configuration's
// ablation, so the URL hash carries it and every view shows the ablated run), see what that changed in
// the model's outputs, and the head detectors' scores of the run shown (core/model/head_detectors.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/kernels/kernels.hpp"
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
  std::sort(list.begin(), list.end());
}

bool ablated(const Ablation& a, size_t layer, size_t head) {
  return std::find(a.heads.begin(), a.heads.end(), HeadIndex{layer, head}) != a.heads.end();
}

// Class probabilities of logits [B, C] (softmax_rows, as the model's own outputs are computed).
Tensor class_probabilities(Tensor logits) {
  softmax_rows(logits.data(), logits.shape(0), logits.shape(1));
  return logits;
}

// A classifier's prediction before and after, per item: "item 1: class 2 (61.0%) -> class 0 (40.2%)".
std::vector<std::string> class_effect(const Tensor& clean, const Tensor& ablated) {
  std::vector<std::string> lines;
  const Tensor p = class_probabilities(clean), q = class_probabilities(ablated);
  const size_t C = p.shape(1);
  for (size_t b = 0; b < p.shape(0); ++b) {
    const float* pb = p.data() + b * C;
    const float* qb = q.data() + b * C;
    const size_t i = size_t(std::max_element(pb, pb + C) - pb), j = size_t(std::max_element(qb, qb + C) - qb);
    lines.push_back(format(Str::effect_class, b + 1, i, 100.0 * pb[i], j, 100.0 * qb[j]));
  }
  return lines;
}

// A causal model's five likeliest next tokens after item `b` of the ablated run, each with its clean
// probability (`clean`: the clean run's next_token_probs [B, V]).
std::vector<std::string> token_effect(const LoadedModel& m, const Computed& r, const Tensor& clean, size_t b) {
  std::vector<std::string> lines = {format(Str::effect_next_after, b + 1)};
  for (const NextToken& t : next_tokens(r.trace, r.pretrained_input, b, 5, 1.0, [&m](int64_t id) { return m.token(id); }))
    lines.push_back(format(Str::effect_token, 100.0 * t.probability, 100.0 * clean.data()[b * clean.shape(1) + size_t(t.id)],
                           t.token.c_str()));
  return lines;
}

// The largest |after - before| over item b of two [B, S, d] tensors.
float largest_change(const Tensor& before, const Tensor& after, size_t b) {
  const size_t n = before.size() / before.shape(0);
  float most = 0;
  for (size_t i = b * n; i < (b + 1) * n; ++i) most = std::max(most, std::abs(after.data()[i] - before.data()[i]));
  return most;
}

}  // namespace

void App::draw_interventions_view(float width) {
  const Computed* r = playground_.result();
  if (!r) return;
  refresh_interventions_cache(*r);  // the layer and head labels both views use
  if (r->stages.family == StageFamily::tutorial) {  // its single head can be ablated; nothing to patch
    ImGui::TextColored(dim_color, "%s", tr(Str::patching_tutorial));
    return draw_ablation_view(*r, width);
  }
  int view = patching_view_ ? 1 : 0;
  ImGui::RadioButton(tr(Str::interventions_ablation), &view, 0);
  ImGui::SameLine();
  ImGui::RadioButton(tr(Str::interventions_patching), &view, 1);
  patching_view_ = view == 1;
  if (patching_view_) draw_patching_view(*r, width);
  else draw_ablation_view(*r, width);
}

void App::draw_ablation_view(const Computed& r, float width) {
  ImGui::TextWrapped("%s", tr(Str::ablation_caption));
  draw_ablation_controls(r);
  const float grid_w = std::min(width * 0.45f, 64.0f * float(r.stages.heads) + 48);
  ImGui::BeginChild("ablation grid", ImVec2(grid_w, 0), false);
  draw_ablation_grid(r, ImGui::GetContentRegionAvail());
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
  const size_t mlps = r.stages.family == StageFamily::tutorial ? 0 : r.stages.layers;
  if (mlps) ImGui::TextUnformatted(tr(Str::ablation_mlp));
  char label[32];
  for (size_t l = 0; l < mlps; ++l) {
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
                     "ablation grid", Str::ablation_grid_tip, r.stages.group())) {  // grouped-query attention
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
  const bool checkpoint = loaded && loaded->checkpoint() && r.pretrained_input.batch;
  if (checkpoint && !loaded->causal_lm()) {  // BERT
    effect_lines_ = {tr(Str::effect_no_head)};
  } else if (r.clean_output.dimension() == 3) {  // the first tutorial's attention output
    const size_t b = std::min(size_t(batch_), r.clean_output.shape(0) - 1);
    effect_lines_ = {format(Str::effect_tutorial, b + 1, largest_change(r.clean_output, r.trace.at("attention_output"), b))};
  } else if (r.clean_output.dimension() == 2) {
    effect_lines_ = checkpoint ? token_effect(*loaded, r, r.clean_output, std::min(size_t(batch_), r.tokens.size() - 1))
                               : class_effect(r.clean_output, r.trace.at("logits"));
  }
  layer_labels_.clear();
  head_labels_.clear();
  for (size_t l = 0; l < r.stages.layers; ++l) layer_labels_.push_back("L" + std::to_string(l));
  for (size_t h = 0; h < r.stages.heads; ++h) head_labels_.push_back("H" + std::to_string(h));
  for (Tensor& t : detector_scores_) t = Tensor();
  if (r.stages.family == StageFamily::tutorial) return;  // one head of random weights: nothing to detect
  try {
    const std::vector<HeadScores> scores = sentence_head_scores(r);
    for (size_t k = 0; k < scores.size(); ++k) {
      detector_scores_[k] = Tensor::from_shape({scores[k].layers, scores[k].heads});
      std::copy(scores[k].scores.begin(), scores[k].scores.end(), detector_scores_[k].begin());
    }
  } catch (const std::exception& e) {  // weights the run did not pull back (a backend's fused layers)
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
  const float w = std::floor((width - 2 * gap) / 3.0f);
  const float h = ImGui::GetContentRegionAvail().y - 2 * ImGui::GetTextLineHeightWithSpacing() - 8;
  static const char* const names[] = {"detector_previous_token", "detector_duplicate_token", "detector_induction"};
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
    ImGui::PushID(id);
    export_buttons(map, names[k], detector_scores_[k], PrintDtype::float32, true);
    ImGui::PopID();
    ImGui::EndGroup();
  }
}

// --- activation patching ---

std::string App::start_patching() {
  playground_.update();
  const Computed* r = playground_.result();
  patching_error_ = r ? patching_.start(playground_.config(), *r) : playground_.error();
  return patching_error_;
}

void App::draw_patching_view(const Computed& r, float width) {
  ImGui::TextWrapped("%s", tr(Str::patching_caption));
  draw_patching_inputs(r);
  if (!patching_error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("%s", patching_error_.c_str());
    ImGui::PopStyleColor();
  }
  if (!patching_.started()) return;
  if (patching_.running()) {
    char progress[64];
    const size_t done = patching_.done(), total = patching_.total();
    std::snprintf(progress, sizeof progress, tr(Str::patch_progress), done, total);
    ImGui::ProgressBar(float(done) / float(std::max<size_t>(total, 1)), ImVec2(-1, 0), progress);
  }
  refresh_patching_cache();
  ImGui::TextColored(dim_color, "%s", patch_metric_text_.c_str());
  draw_patching_results(width);
}

// The text fields edit the configuration's patching inputs (the hash carries them; nothing recomputes).
void App::draw_patching_inputs(const Computed&) {
  if (patch_text_generation_ != playground_.config_generation() && !ImGui::IsAnyItemActive()) {
    const PlaygroundConfig::Patching& p = playground_.config().patching;
    const std::string* values[] = {&p.clean, &p.corrupted, &p.answer, &p.wrong, &p.label};
    for (size_t i = 0; i < 5; ++i) std::snprintf(patch_text_[i], sizeof patch_text_[i], "%s", values[i]->c_str());
    patch_text_generation_ = playground_.config_generation();
  }
  const auto& loaded = playground_.config().loaded;
  const bool causal = playground_.config().model == ModelKind::loaded && loaded && loaded->causal_lm();
  const Str labels[] = {Str::patch_clean, Str::patch_corrupted, Str::patch_answer, Str::patch_wrong, Str::patch_label};
  std::string* fields[] = {&draft_.patching.clean, &draft_.patching.corrupted, &draft_.patching.answer,
                           &draft_.patching.wrong, &draft_.patching.label};
  bool changed = false;
  char hint[64];
  for (size_t i = 0; i < 5; ++i) {
    if (i >= 2 && (i < 4) != causal) continue;  // GPT-2, a decoder: answer and wrong; a classifier: its label
    std::snprintf(hint, sizeof hint, tr(Str::patch_sentence_hint), int(i) + 1);
    ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x * 0.6f);
    if (ImGui::InputTextWithHint(tr(labels[i]), i < 2 ? hint : "", patch_text_[i], sizeof patch_text_[i])) {
      *fields[i] = patch_text_[i];
      changed = true;
    }
  }
  if (changed) apply(draft_);
  ImGui::BeginDisabled(patching_.running());
  if (ImGui::Button(tr(Str::patch_run))) start_patching();
  ImGui::EndDisabled();
}

// The sweeps' recovery as heatmaps (cells not yet run are 0), rebuilt after each patched run.
void App::refresh_patching_cache() {
  const ViewKey key{patching_.id(), &patching_, patching_.done(), 0};
  if (patch_key_ == key) return;
  patch_key_ = key;
  const Patching p = patching_.result();
  const size_t layers = p.sweeps[0].shape[0];
  const auto fill = [](Tensor& t, size_t rows, size_t cols, const std::vector<const std::vector<double>*>& columns) {
    t = Tensor::from_shape({rows, cols});
    std::fill(t.begin(), t.end(), 0.0f);
    for (size_t c = 0; c < columns.size(); ++c)  // one source per column, or one row-major source
      for (size_t i = 0; i < columns[c]->size(); ++i)
        t.data()[columns.size() == 1 ? i : i * cols + c] = float((*columns[c])[i]);
  };
  fill(patch_tensors_[0], layers, p.sweeps[0].shape[1], {&p.sweeps[0].recovery});
  fill(patch_tensors_[1], layers, p.sweeps[1].shape[1], {&p.sweeps[1].recovery});
  fill(patch_tensors_[2], layers, 2, {&p.sweeps[2].recovery, &p.sweeps[3].recovery});
  const Json& about = patching_.metric_about();
  patch_metric_text_ = about["kind"] == "label_margin"
                           ? format(Str::patch_metric_label, json_integer<int>(about["label"], "label"), p.clean_metric, p.corrupted_metric)
                           : format(Str::patch_metric_tokens, about["answer"]["token"].get<std::string>().c_str(),
                                    about["wrong"]["token"].get<std::string>().c_str(), p.clean_metric, p.corrupted_metric);
}

void App::draw_patching_results(float width) {
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float h = ImGui::GetContentRegionAvail().y - 2 * ImGui::GetTextLineHeightWithSpacing() - 8;
  static const char* const names[] = {"patching_heads", "patching_resid_pre", "patching_attn_mlp_out"};
  const float w_blocks = std::max(180.0f, std::floor(width * 0.2f));
  const float w_heads = std::floor((width - w_blocks - 2 * gap) * 0.38f);
  const float widths[] = {w_heads, width - w_blocks - w_heads - 2 * gap, w_blocks};
  const Str titles[] = {Str::patch_heads, Str::patch_resid, Str::patch_blocks};
  const std::vector<std::string>* cols[] = {&head_labels_, &patching_.clean_tokens(), &block_labels_};
  for (size_t k = 0; k < 3; ++k) {
    Heatmap& map = patch_maps_[k];
    refresh(map, {patching_.id(), &patch_tensors_[k], patch_key_.i0, 0}, patch_tensors_[k], ColorMap::diverging);
    if (k) ImGui::SameLine();
    ImGui::BeginGroup();
    fitted_title(tr(titles[k]), widths[k], "patching");
    char id[24];
    std::snprintf(id, sizeof id, "patching %zu", k);
    draw_heatmap(map, &layer_labels_, cols[k], widths[k], h, id);
    ImGui::PushID(id);
    export_buttons(map, names[k], patch_tensors_[k], PrintDtype::float32, true);
    ImGui::PopID();
    ImGui::EndGroup();
  }
  // A click on a head's cell opens that head's attention in the Stage tab.
  const Heatmap& heads = patch_maps_[0];
  const ImVec2 mouse = ImGui::GetMousePos();
  if (!ImGui::IsMouseClicked(ImGuiMouseButton_Left) || heads.cell_w <= 0 || mouse.x < heads.x || mouse.y < heads.y) return;
  const size_t col = size_t((mouse.x - heads.x) / heads.cell_w), row = size_t((mouse.y - heads.y) / heads.cell_h);
  if (row >= heads.slice.rows || col >= heads.slice.cols) return;
  set_layer(int(row));
  head_ = int(col);
  stage_ = weights_stage_name(*playground_.result(), row);
  model_view_ = false;
  select_tab(Tab::stage);
}

}  // namespace attn::ui
