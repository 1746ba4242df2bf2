// The App's language switch and its guided tour (ui/tour.hpp): the Tour tab shows a step's explanation,
// formula and shapes above the Stage view of the step's stage, with Back / Next.
#include <algorithm>

#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/tour.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

void App::draw_language_choice() {
  const Lang current = language_of(playground_.config());
  const auto choose = [&](Str label, Lang lang) {
    if (ImGui::RadioButton(tr(label), current == lang) && current != lang) {
      draft_.lang = lang_code(lang);
      apply(draft_);
    }
  };
  choose(Str::english, Lang::en);
  ImGui::SameLine();
  choose(Str::korean, Lang::ko);
}

// A new step (from the hash, the API or the buttons) selects its stage, once: the user may look at
// other stages while the tour stays on the step.
void App::sync_tour() {
  const int step = playground_.config().tour;
  if (step == tour_applied_) return;
  tour_applied_ = step;
  if (step == 0) return;
  const Computed* r = playground_.result();
  const size_t layers = r ? r->num_layers : 0;
  stage_ = tour_stage(step, layers ? std::min(size_t(layer_), layers - 1) : 0);
  model_view_ = false;
  select_tab(Tab::tour);
}

void App::go_to_tour_step(int step) {
  const PlaygroundConfig c = tour_config(playground_.config(), step);  // throws InputError out of range
  apply(c);
  if (step) tour_applied_ = -1;  // (re)select the step's stage and tab, even when it is the current step
  if (step == 0 && tab_ == Tab::tour) select_tab(Tab::stage);
}

void App::draw_tour_view(float width) {
  const PlaygroundConfig& c = playground_.config();
  if (c.tour == 0) {  // not started, or just ended (the Stage tab shows from the next frame)
    ImGui::TextWrapped("%s", tr(Str::start_tour_tip));
    if (ImGui::Button(tr(Str::tour_start))) go_to_tour_step(1);
    return;
  }
  const TourStep& step = tour_step(c.tour);
  ImGui::BeginDisabled(c.tour == 1);
  if (ImGui::Button(tr(Str::tour_back))) go_to_tour_step(c.tour - 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(c.tour == tour_length);
  if (ImGui::Button(tr(Str::tour_next))) go_to_tour_step(c.tour + 1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::TextColored(dim_color, tr(Str::tour_step_of), c.tour, tour_length);
  ImGui::SameLine();
  ImGui::TextColored(dim_color, "%s", tr(step.transformer ? Str::tour_part2 : Str::tour_part1));
  ImGui::SameLine();
  if (ImGui::SmallButton(tr(Str::tour_end))) go_to_tour_step(0);
  ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.45f, 1.0f), "%s", tr(step.title));
  ImGui::TextWrapped("%s", tr(step.text));
  ImGui::Text("%s: %s", tr(Str::tour_formula), tr(step.formula));
  ImGui::Text("%s: %s", tr(Str::tour_shape), step.shape);
  if (const Computed* r = playground_.result(); r && !r->tokens.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(dim_color, tr(Str::tour_sizes), r->tokens.size(), r->tokens[0].size(), c.d_model);
    if (r->num_layers && c.num_heads) {
      ImGui::SameLine(0, 0);
      ImGui::TextColored(dim_color, tr(Str::tour_heads), c.num_heads, c.d_model / c.num_heads);
    }
  }
  if (!tour_model_fits(c, c.tour)) {  // the model was switched during the tour
    ImGui::TextColored(dim_color, "%s", tr(Str::tour_other_model));
    ImGui::SameLine();
    if (ImGui::SmallButton(tr(Str::tour_show_step))) go_to_tour_step(c.tour);
  }
  ImGui::Separator();
  draw_stage_view(width);  // in the height left
}

}  // namespace attn::ui
