// The App's Generate tab: a GPT-2 (a loaded checkpoint or the Train tab's language model) or a Llama-family
// decoder continues a prompt a token a frame, with core/model/generate.hpp's TokenGenerator (the code attn
// generate runs, so the same settings give the same tokens); a generated token shows where the position
// that predicted it attended (one layer's heads over the tokens before it) and the distribution it was
// drawn from.
#include <algorithm>
#include <cstdio>

#include "core/base/error.hpp"
#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

const LoadedModel* App::generation_model() const {
  const auto& loaded = playground_.config().loaded;
  return loaded && loaded->causal_lm() ? loaded.get() : nullptr;
}

std::string App::start_generation(const GenerateSettings& settings) {
  const auto& loaded = playground_.config().loaded;
  if (!generation_model()) return tr(Str::generate_needs_model);
  generate_running_ = false;
  try {
    generate_model_ = loaded;
    CausalLM lm = loaded->generation_lm();
    lm.label = [label = std::move(lm.label)](int64_t id) { return shown_token(label(id)); };  // as the UI shows tokens
    generator_ = std::make_unique<TokenGenerator>(std::move(lm), loaded->prompt_ids(settings.prompt),
                                                  settings.max_new_tokens, settings.sampling);
  } catch (const InputError& e) {
    generator_.reset();
    generate_error_ = e.what();
    ++generate_version_;
    return generate_error_;
  }
  std::snprintf(generate_prompt_, sizeof generate_prompt_, "%s", settings.prompt.c_str());
  generate_max_ = int(settings.max_new_tokens);
  generate_temperature_ = float(settings.sampling.temperature);
  generate_top_k_ = int(settings.sampling.top_k);
  generate_top_p_ = float(settings.sampling.top_p);
  generate_seed_ = int(settings.sampling.seed);
  generate_error_.clear();
  generate_selected_ = -1;
  generate_running_ = !generator_->done();
  ++generate_version_;
  return "";
}

// One token a frame while running (each one position through the model, with the key/value cache).
void App::step_generation() {
  if (!generate_running_ || !generator_) return;
  generator_->step();
  generate_running_ = !generator_->done();
  ++generate_version_;
}

void App::draw_generate_view(float width) {
  const LoadedModel* model = generation_model();
  if (!model) {
    ImGui::TextWrapped("%s", tr(Str::generate_needs_model));
    return;
  }
  if (generator_ && generate_model_.get() != model) {  // another model since: its tokens are not this one's
    generator_.reset();
    generate_running_ = false;
    ++generate_version_;
  }
  if (!generate_prompt_[0] && !playground_.config().sentences.empty())
    std::snprintf(generate_prompt_, sizeof generate_prompt_, "%s", playground_.config().sentences[0].c_str());
  draw_generate_controls();
  if (!generate_error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("%s", generate_error_.c_str());
    ImGui::PopStyleColor();
  }
  if (!generator_) return;
  refresh_generate_cache();
  draw_generated_tokens();
  draw_generated_token(width);
}

void App::draw_generate_controls() {
  ImGui::SetNextItemWidth(-80);
  ImGui::InputText(tr(Str::prompt), generate_prompt_, sizeof generate_prompt_);
  ImGui::PushItemWidth(110);
  ImGui::SliderInt(tr(Str::new_tokens), &generate_max_, 1, 64);
  ImGui::SameLine();
  ImGui::SliderFloat(tr(Str::temperature), &generate_temperature_, 0.0f, 2.0f, "%.2f");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::greedy_tip));
  ImGui::SameLine();
  ImGui::SliderInt(tr(Str::top_k), &generate_top_k_, 0, 50);
  ImGui::SameLine();
  ImGui::SliderFloat(tr(Str::top_p), &generate_top_p_, 0.05f, 1.0f, "%.2f");
  ImGui::SameLine();
  ImGui::InputInt(tr(Str::seed), &generate_seed_, 1, 10);
  generate_seed_ = std::max(generate_seed_, 0);
  ImGui::PopItemWidth();
  const auto settings = [&] {  // built on a click only (an idle frame allocates nothing)
    GenerateSettings g;
    g.prompt = generate_prompt_;
    g.max_new_tokens = size_t(generate_max_);
    g.sampling = {double(generate_temperature_), size_t(generate_top_k_), double(generate_top_p_), uint64_t(generate_seed_)};
    return g;
  };
  const ImVec2 at = ImGui::GetCursorScreenPos();
  if (ImGui::Button(tr(Str::generate))) start_generation(settings());
  record_box(layout_, LayoutKind::label, "generate", "", at, ImGui::GetItemRectMax());
  ImGui::SameLine();
  const bool can_step = generator_ && !generator_->done() && !generate_running_;
  if (ImGui::Button(tr(Str::next_token))) {  // the next token, or the first of a new run
    if (can_step) {
      generator_->step();
      ++generate_version_;
    } else if (start_generation(settings()).empty()) {
      generate_running_ = false;
    }
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(!generate_running_);
  if (ImGui::Button(tr(Str::stop))) generate_running_ = false;
  ImGui::EndDisabled();
  if (generator_) {
    ImGui::SameLine();
    ImGui::TextColored(dim_color, "%s", generate_count_.c_str());
  }
}

// The labels, caption and heatmap of the token selected, rebuilt when a token comes or the selection or
// layer changes.
void App::refresh_generate_cache() {
  const Generation& g = generator_->generation();
  const int count = int(g.tokens.size());
  const int token = count == 0 ? -1 : generate_selected_ < 0 ? count - 1 : std::min(generate_selected_, count - 1);
  const int layers = int(generate_model_->layers());
  generate_layer_ = std::clamp(generate_layer_, 0, layers - 1);
  if (generate_cache_version_ == generate_version_ && generate_cache_token_ == token &&
      generate_cache_layer_ == generate_layer_)
    return;
  generate_cache_version_ = generate_version_;
  generate_cache_token_ = token;
  generate_cache_layer_ = generate_layer_;
  generate_count_ = format(Str::generated_count, g.tokens.size(), size_t(generate_max_));
  generate_candidates_.clear();
  generate_key_labels_.clear();
  if (token < 0) return;
  const GeneratedToken& t = g.tokens[size_t(token)];
  generate_caption_ = format(Str::generated_token, token + 1, t.token.c_str(), t.probability);
  for (const NextToken& c : t.candidates) {
    char line[160];
    std::snprintf(line, sizeof line, "%5.1f%%  %s", 100.0 * c.probability, c.token.c_str());
    generate_candidates_.push_back(line);
  }
  generate_key_labels_ = g.prompt_tokens;
  for (int i = 0; i < token; ++i) generate_key_labels_.push_back(g.tokens[size_t(i)].token);
  const size_t heads = t.attention[size_t(generate_layer_)].shape(0);
  generate_head_labels_.clear();
  for (size_t h = 0; h < heads; ++h) generate_head_labels_.push_back("H" + std::to_string(h));
  refresh(generate_map_, {generate_version_, &t.attention[size_t(generate_layer_)], 0, size_t(token)},
          t.attention[size_t(generate_layer_)], ColorMap::sequential);
}

// The prompt's tokens (dim), then each generated token as a button that selects it, wrapped to the width.
void App::draw_generated_tokens() {
  const Generation& g = generator_->generation();
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  const ImGuiStyle& style = ImGui::GetStyle();
  const auto wrap = [&](const char* text, float extra) {
    const float w = ImGui::CalcTextSize(text).x + extra;
    ImGui::SameLine(0, style.ItemSpacing.x / 2);
    if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
  };
  ImGui::NewLine();
  for (const std::string& t : g.prompt_tokens) {
    wrap(t.c_str(), 0);
    ImGui::TextColored(dim_color, "%s", t.c_str());
  }
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    wrap(g.tokens[i].token.c_str(), 2 * style.FramePadding.x);
    ImGui::PushID(int(i));
    const bool selected = int(i) == generate_cache_token_;
    if (selected) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    if (ImGui::SmallButton(g.tokens[i].token.c_str())) generate_selected_ = int(i);
    if (selected) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::click_token_tip));
    ImGui::PopID();
  }
}

// The token selected: its probability, the distribution it was drawn from, and where it looked.
void App::draw_generated_token(float width) {
  if (generate_cache_token_ < 0) return;
  ImGui::Separator();
  ImGui::TextUnformatted(generate_caption_.c_str());
  const float list_w = std::min(260.0f, width * 0.3f);
  ImGui::BeginGroup();
  ImGui::TextColored(dim_color, "%s", tr(Str::distribution_caption));
  const GeneratedToken& t = generator_->generation().tokens[size_t(generate_cache_token_)];
  for (size_t i = 0; i < t.candidates.size(); ++i) {
    ImGui::ProgressBar(float(t.candidates[i].probability), ImVec2(list_w * 0.4f, 0), "");
    ImGui::SameLine();
    const bool chosen = t.candidates[i].id == t.id;
    if (chosen) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.4f, 0.9f, 0.4f, 1.0f));
    ImGui::TextUnformatted(generate_candidates_[i].c_str());
    if (chosen) ImGui::PopStyleColor();
  }
  ImGui::EndGroup();
  ImGui::SameLine();
  const float map_w = ImGui::GetContentRegionAvail().x;  // what the list left of the width
  ImGui::BeginGroup();
  const int layers = int(generate_model_->layers());
  if (layers > 1) index_slider(tr(Str::layer), generate_layer_, size_t(layers), false);
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped(tr(Str::generate_attention_caption), generate_layer_);
  ImGui::PopStyleColor();
  draw_heatmap(generate_map_, &generate_head_labels_, &generate_key_labels_, map_w,
               std::max(120.0f, ImGui::GetContentRegionAvail().y), "generate");
  ImGui::EndGroup();
}

Json App::generate_json() const {
  Json j = {{"running", generate_running_}, {"error", generate_error_}, {"selected", generate_cache_token_},
            {"layer", generate_layer_}};
  if (!generator_) return j;
  const Generation& g = generator_->generation();
  Json ids = Json::array(), tokens = Json::array(), probabilities = Json::array();
  for (const GeneratedToken& t : g.tokens) {
    ids.push_back(t.id);
    tokens.push_back(t.token);
    probabilities.push_back(t.probability);
  }
  j.update({{"done", generator_->done()}, {"text", g.text}, {"prompt_ids", g.prompt_ids}, {"ids", ids},
            {"tokens", tokens}, {"probabilities", probabilities},
            {"heatmap", {{"x", generate_map_.x}, {"y", generate_map_.y}, {"cell_w", generate_map_.cell_w},
                         {"rows", generate_map_.slice.rows}, {"cols", generate_map_.slice.cols},
                         {"values", generate_map_.slice.values}}}});
  return j;
}

}  // namespace attn::ui
