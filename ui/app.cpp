#include "ui/app.hpp"

#include <filesystem>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/base/error.hpp"
#include "core/model/tutorial.hpp"
#include "core/plot/png.hpp"
#include "core/plot/svg.hpp"
#include "core/plot/table.hpp"
#include "imgui_internal.h"  // SetItemKeyOwner: the wheel zooms a heatmap instead of scrolling
#include "ui/strings.hpp"
#include "ui/tour.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {
namespace {

constexpr float font_size = 17.0f;

std::vector<uint32_t> code_points(const std::string& text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; k < n && i + k < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// What the atlas must hold for this configuration: the sentences and the loaded model's file names.
std::vector<uint32_t> wanted_code_points(const PlaygroundConfig& c) {
  std::vector<uint32_t> wanted;
  for (const auto& s : c.sentences) {
    const auto cps = code_points(s);
    wanted.insert(wanted.end(), cps.begin(), cps.end());
  }
  if (c.loaded) {
    const auto cps = code_points(c.loaded->name);
    wanted.insert(wanted.end(), cps.begin(), cps.end());
  }
  return wanted;
}

bool input_size(const char* label, size_t& value, int min_value = 0) {
  int v = int(std::min<size_t>(value, 1u << 30));
  if (!ImGui::InputInt(label, &v)) return false;
  value = size_t(std::max(v, min_value));
  return true;
}

}  // namespace

const char* tab_name(Tab tab) {
  static const char* const names[] = {"stage", "masks", "positional_encoding", "interventions", "attribution",
                                      "train", "generate", "compare", "tour"};  // Tab's order
  return names[int(tab)];
}

Tab parse_tab(const std::string& name) {
  for (Tab t : {Tab::stage, Tab::masks, Tab::positional_encoding, Tab::interventions, Tab::attribution, Tab::train,
                Tab::generate, Tab::compare, Tab::tour})
    if (name == tab_name(t)) return t;
  throw InputError("tab must be 'stage', 'masks', 'positional_encoding', 'interventions', 'attribution', 'train', "
                   "'generate', 'compare' or 'tour' (got '" + name + "')");
}

App::App(Playground& playground, Platform& platform) : playground_(playground), platform_(platform) {
  ImGuiStyle& style = ImGui::GetStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0;
  style.FrameRounding = 3;
  if (!playground_.config().training.empty()) pending_tab_ = int(Tab::train);  // a link to a training run
  std::string text;  // the text task's first text, to edit: the first tutorial's sentences, a line each
  for (const std::string& sentence : tutorial_sentences()) text += sentence + "\n";
  std::copy_n(text.begin(), std::min(text.size(), train_text_.size() - 1), train_text_.begin());
  const std::vector<std::string> names = platform_.backend_names();
  if (!names.empty()) {
    backend_names_.push_back("exact");
    backend_names_.insert(backend_names_.end(), names.begin(), names.end());
    for (const std::string& n : backend_names_) backend_items_.push_back(n.c_str());
  }
}

App::~App() {
  for (Heatmap* h : {&main_, &mask_, &unmasked_, &masked_, &pe_, &train_main_})
    if (h->texture) platform_.delete_texture(h->texture);
  for (auto* grid : {&stage_grid_, &train_grid_})
    for (Heatmap& h : *grid)
      if (h.texture) platform_.delete_texture(h.texture);
}

bool App::update_fonts() {
  if (font_generation_ == playground_.config_generation() && font_result_ == playground_.result_generation() &&
      font_train_run_ == train_view_.run && font_next_tokens_ == next_tokens_version_ &&
      font_samples_ == train_samples_.size() && font_generated_ == generate_version_ && !glyphs_.empty())
    return false;
  font_generation_ = playground_.config_generation();
  font_result_ = playground_.result_generation();
  font_train_run_ = train_view_.run;
  font_next_tokens_ = next_tokens_version_;
  font_samples_ = train_samples_.size();
  font_generated_ = generate_version_;
  set_language(language_of(playground_.config()));
  std::vector<uint32_t> wanted = wanted_code_points(playground_.config());
  auto want = [&](const std::string& text) {
    const auto cps = code_points(text);
    wanted.insert(wanted.end(), cps.begin(), cps.end());
  };
  for (size_t k = 0; k < size_t(Str::count); ++k) want(tr(Str(k)));  // the UI's own texts
  if (const Computed* r = playground_.result())  // a checkpoint's tokens: lower-cased, pieces, "·"
    for (const auto& row : r->tokens)
      for (const std::string& token : row) want(token);
  for (const NextToken& t : next_tokens_) want(t.token);
  for (const ReplayItem& item : training_.replay())  // the Train tab's labels
    for (const std::string& token : item.tokens) want(token);
  for (const std::string& sample : train_samples_) want(sample);
  if (generator_)  // the Generate tab's tokens and candidates
    for (const GeneratedToken& t : generator_->generation().tokens)
      for (const NextToken& c : t.candidates) want(c.token);
  bool rebuild = glyphs_.empty();
  for (uint32_t cp : wanted) rebuild = rebuild || (cp >= 0x20 && cp <= 0xFFFF && !glyphs_.count(cp));
  if (rebuild) {
    for (uint32_t cp = 0x20; cp < 0x7F; ++cp) glyphs_.insert(cp);
    for (uint32_t cp : {0xB7u, 0xD7u, 0xF7u, 0x2026u, 0x221Au, 0x2192u}) glyphs_.insert(cp);
    for (uint32_t cp : wanted)
      if (cp <= 0xFFFF && cp >= 0x20) glyphs_.insert(cp);
    build_font_atlas();
  }
  // Characters the font has no glyph for are drawn as '?': count them (tests, the JS API).
  const ImFont* font = ImGui::GetIO().Fonts->Fonts[0];
  missing_glyphs_ = 0;
  for (uint32_t cp : wanted) missing_glyphs_ += cp >= 0x20 && (cp > 0xFFFF || !font->FindGlyphNoFallback(ImWchar(cp)));
  return rebuild;
}

// Only the glyphs in glyphs_: an atlas of all 11,172 Hangul syllables would be large and slow to build.
void App::build_font_atlas() {
  ImFontGlyphRangesBuilder builder;
  for (uint32_t cp : glyphs_) builder.AddChar(ImWchar(cp));
  glyph_ranges_.clear();
  builder.BuildRanges(&glyph_ranges_);
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const std::string path = platform_.font_path();
  ImFont* font = nullptr;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
    ImFontConfig config;
    config.OversampleH = 1;  // a smaller atlas; text stays sharp at integer positions
    font = io.Fonts->AddFontFromFileTTF(path.c_str(), font_size, &config, glyph_ranges_.Data);
  }
  if (!font) io.Fonts->AddFontDefault();
  io.Fonts->Build();
}

void App::refresh_labels() {
  const Computed* r = playground_.result();
  if (!r || labels_generation_ == playground_.result_generation()) return;
  labels_generation_ = playground_.result_generation();
  stage_labels_.clear();
  for (const Stage& s : r->trace.stages()) stage_labels_.push_back(s.name + "  " + shape_text(s.value.shape()));
  size_t dims = 0;
  for (const Stage& s : r->trace.stages()) dims = std::max(dims, s.value.shape().empty() ? 0 : s.value.shape().back());
  dims = std::max(dims, r->pe_table.shape().empty() ? 0 : r->pe_table.shape().back());
  dim_labels_.clear();
  for (size_t i = 0; i < dims; ++i) dim_labels_.push_back(std::to_string(i));
  size_t rows = std::max(r->tokens.size(), r->pe_table.shape().empty() ? 0 : r->pe_table.shape()[0]);
  batch_labels_.clear();
  for (size_t i = 0; i < rows; ++i) batch_labels_.push_back(std::to_string(i));
  pe_shape_ = shape_text(r->pe_table.shape());
  layer_weights_.clear();
  for (size_t l = 0; l < std::max<size_t>(1, r->num_layers); ++l) layer_weights_.push_back(find_stage(weights_stage_name(*r, l)));
  if (!find_stage(stage_)) {
    stage_ = weights_stage_name(*r, size_t(layer_));
    if (!find_stage(stage_)) stage_ = weights_stage_name(*r, 0);
    if (!find_stage(stage_)) stage_ = r->trace.stages().back().name;
  }
}

const Stage* App::find_stage(const std::string& name) const {
  const Computed* r = playground_.result();
  if (!r) return nullptr;
  for (const Stage& s : r->trace.stages())
    if (s.name == name) return &s;
  return nullptr;
}

App::AxisLabels App::axis_labels(const Computed& r, const Stage& stage, size_t item) const {
  const auto& shape = stage.value.shape();
  AxisLabels labels{nullptr, &dim_labels_};
  if (r.tokens.empty()) return labels;
  const size_t b = std::min(item, r.tokens.size() - 1), seq = r.tokens[0].size();
  if (shape.size() >= 3 && shape[shape.size() - 2] == seq) labels.rows = &r.tokens[b];
  if (is_attention_matrix(stage.name)) labels.cols = &r.tokens[b];
  if (shape.size() == 2) labels.rows = &batch_labels_;
  return labels;
}

void App::draw() {
  set_language(language_of(playground_.config()));
  playground_.update();  // no-op unless the configuration changed
  layout_.clear();
  sync_tour();
  refresh_labels();
  sync_training();
  if (patching_.running()) patching_.pump(train_budget_ms);  // a few patched runs a frame, whatever the tab
  step_generation();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::Begin("attnlab", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  const float left_w = std::min(340.0f, vp->WorkSize.x * 0.4f);
  ImGui::BeginChild("left", ImVec2(left_w, 0), true);
  draw_controls();
  ImGui::Separator();
  draw_pipeline();
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("right", ImVec2(0, 0), true);
  if (!playground_.error().empty() && (hub_download_ || hub_reading_)) {
    ImGui::TextColored(dim_color, "%s", playground_.error().c_str());  // not an error: the model is on its way
  } else if (!playground_.error().empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped(tr(Str::error_prefix), playground_.error().c_str());
    ImGui::PopStyleColor();
  }
  if (playground_.result() && ImGui::BeginTabBar("views")) {
    const float width = ImGui::GetContentRegionAvail().x;  // each view fits the height it has left
    const Str titles[] = {Str::tab_stage, Str::tab_masks, Str::tab_pe, Str::tab_interventions, Str::tab_attribution,
                          Str::tab_train, Str::tab_generate, Str::tab_compare, Str::tab_tour};
    const int pending = pending_tab_;  // a tab selected while drawing one (a button) waits for the next frame
    pending_tab_ = -1;
    for (int t = 0; t < int(std::size(titles)); ++t) {
      const ImGuiTabItemFlags flags = pending == t ? ImGuiTabItemFlags_SetSelected : 0;
      char title[96];  // "###name": the tab keeps its identity when the language changes
      std::snprintf(title, sizeof title, "%s###%s", tr(titles[t]), tab_name(Tab(t)));
      if (!ImGui::BeginTabItem(title, nullptr, flags)) continue;
      tab_ = Tab(t);
      if (tab_ == Tab::stage) draw_stage_view(width);
      else if (tab_ == Tab::masks) draw_masks_view(width);
      else if (tab_ == Tab::train) draw_train_view(width);
      else if (tab_ == Tab::generate) draw_generate_view(width);
      else if (tab_ == Tab::tour) draw_tour_view(width);
      else if (tab_ == Tab::interventions) draw_interventions_view(width);
      else if (tab_ == Tab::compare) draw_compare_view(width);
      else if (tab_ == Tab::attribution) draw_attribution_view(width);
      else draw_pe_view(width);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
  ImGui::End();
}

void App::select_view(const Json& view) {
  if (!view.is_object()) throw InputError("the view must be an object");
  auto index = [](const Json& v, const std::string& key) { return json_integer<int>(v, key, 0, 1 << 20); };
  for (const auto& [key, value] : view.items()) {
    if (key == "tab" && value.is_string()) select_tab(parse_tab(value.get<std::string>()));
    else if (key == "stage" && value.is_string()) stage_ = value.get<std::string>();
    else if (key == "batch") batch_ = index(value, key);
    else if (key == "layer") set_layer(index(value, key));
    else if (key == "head") head_ = index(value, key);
    else if (key == "model_view" && value.is_boolean()) model_view_ = value.get<bool>();
    else if (key == "patching" && value.is_boolean()) patching_view_ = value.get<bool>();
    else if (key == "train_item") train_item_ = index(value, key);
    else if (key == "train_layer") train_layer_ = index(value, key);
    else if (key == "train_head") train_head_ = index(value, key);
    else if (key == "replay" && value == -1) replay_index_ = -1;
    else if (key == "replay") replay_index_ = index(value, key);
    else if (key == "train_score") train_score_kind_ = std::min(index(value, key), int(head_score_kinds) - 1);
    else if (key == "tour") go_to_tour_step(index(value, key));
    else if (key == "generate") {
      const std::string error = start_generation(generate_settings(value));
      if (!error.empty()) throw InputError(error);
    } else if (key == "attribute") {  // malformed settings throw; a method the model cannot give is the tab's message
      start_attribution(value);
    } else if (key == "hide_first_token" && value.is_boolean()) hide_first_ = value.get<bool>();
    else if (key == "first_token_share" && value.is_boolean()) show_sinks_ = value.get<bool>();
    else if (key == "rotary" && value.is_array() && value.size() == 4) {  // [query, key, layer, head]: clamped when drawn
      rotary_query_ = index(value[0], "rotary query");
      rotary_key_ = index(value[1], "rotary key");
      rotary_layer_ = index(value[2], "rotary layer");
      rotary_head_ = index(value[3], "rotary head");
    } else if (key == "generate_token") generate_selected_ = index(value, key);
    else if (key == "generate_layer") generate_layer_ = index(value, key);
    else if (key == "png_scale" && (value == 1 || value == 2 || value == 4)) png_scale_ = json_integer<int>(value, key);
    else if (key == "zoom" && value.is_array() && value.size() == 3 && value[0].is_number() && value[0] >= 1 &&
             value[1].is_number() && value[2].is_number()) {  // [zoom, first row, first column]: clamped when drawn
      main_.zoom = value[0].get<float>();
      main_.view_row = value[1].get<float>();
      main_.view_col = value[2].get<float>();
    }
    else throw InputError("unknown view key '" + key + "' or wrong type (tab, stage, batch, layer, head, model_view, "
                          "patching, train_item, train_layer, train_head, replay, train_score, tour, generate, "
                          "generate_token, generate_layer, attribute, png_scale: 1, 2 or 4, zoom: [zoom >= 1, row, column], "
                          "hide_first_token, first_token_share, rotary: [query, key, layer, head])");
  }
}

// --- controls ---

void App::sync_draft() {
  if (draft_generation_ == playground_.config_generation()) return;
  draft_ = playground_.config();
  draft_generation_ = playground_.config_generation();
}

void App::draw_controls() {
  sync_draft();
  ImGui::TextUnformatted(tr(Str::title));
  ImGui::SameLine();
  if (ImGui::SmallButton(tr(Str::watch_learn))) select_tab(Tab::train);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::watch_learn_tip));
  draw_language_choice();
  ImGui::SameLine();
  if (ImGui::SmallButton(tr(Str::start_tour))) go_to_tour_step(std::max(1, playground_.config().tour));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::start_tour_tip));
  draw_model_choice();
  draw_backend_choice();
  if (platform_.external_sentence_field()) {
    ImGui::TextColored(dim_color, "%s", tr(Str::sentences_external));
  } else {
    if (sentence_generation_ != playground_.config_generation() && !ImGui::IsAnyItemActive()) {
      const std::string text = sentences_text(draft_.sentences);
      sentence_buffer_.assign(text.begin(), text.end());
      sentence_buffer_.resize(text.size() + 4096, '\0');
      sentence_generation_ = playground_.config_generation();
    }
    ImGui::TextUnformatted(tr(Str::sentences_label));
    if (ImGui::InputTextMultiline("##sentences", sentence_buffer_.data(), sentence_buffer_.size(),
                                  ImVec2(-1, ImGui::GetTextLineHeight() * 5))) {
      draft_.sentences = parse_sentences_text(sentence_buffer_.data());
      apply(draft_);
    }
  }
  ImGui::PushItemWidth(140);
  const bool checkpoint = draft_.model == ModelKind::loaded && draft_.loaded && draft_.loaded->checkpoint();
  uint64_t seed = draft_.seed;
  if (!checkpoint && ImGui::InputScalar(tr(Str::seed), ImGuiDataType_U64, &seed)) {
    draft_.seed = seed;
    apply(draft_);
  }
  int mask = int(draft_.mask);
  if (!checkpoint && ImGui::Combo(tr(Str::mask), &mask, mask_names, 4)) {
    draft_.mask = MaskKind(mask);
    apply(draft_);
  }
  if (draft_.model == ModelKind::loaded) draw_loaded_model();
  else draw_sizes();
  ImGui::PopItemWidth();
  if (ImGui::Button(tr(Str::reset_tutorial))) {
    const auto loaded = draft_.loaded;  // keep the loaded model to come back to
    const std::string lang = draft_.lang;
    draft_ = PlaygroundConfig();
    draft_.lang = lang;
    attach_model(draft_, loaded);
    apply(draft_);
  }
  draw_hub();
  draw_model_files();
  if (const Computed* r = playground_.result())
    ImGui::TextColored(dim_color, tr(Str::computed_in), r->parameter_count, r->compute_ms);
  if (!status_.empty()) ImGui::TextWrapped("%s", status_.c_str());
}

void App::draw_model_choice() {
  int model = int(draft_.model);
  bool clicked = ImGui::RadioButton(tr(Str::model_tutorial), &model, 0);
  clicked |= ImGui::RadioButton(tr(Str::model_transformer), &model, 1);
  if (draft_.loaded || draft_.model == ModelKind::loaded) clicked |= ImGui::RadioButton(tr(Str::model_loaded), &model, 2);
  if (clicked && ModelKind(model) != draft_.model) {
    draft_ = defaults_for(ModelKind(model), draft_);
    apply(draft_);
  }
}

void App::draw_backend_choice() {
  if (backend_items_.empty()) return;  // no backends here (the web)
  for (size_t i = 0; i < backend_names_.size(); ++i)  // the shell may have selected one (--backend)
    if (backend_names_[i] == playground_.backend_choice().name) backend_index_ = int(i);
  ImGui::PushItemWidth(140);
  if (ImGui::Combo(tr(Str::compute), &backend_index_, backend_items_.data(), int(backend_items_.size()))) {
    const BackendChoice& choice =
        playground_.select_backend(backend_names_[size_t(backend_index_)], platform_.backend_factory());
    if (!choice.error.empty()) backend_index_ = 0;  // fell back to exact
  }
  ImGui::PopItemWidth();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", tr(Str::compute_tip));
  const BackendChoice& choice = playground_.backend_choice();
  if (!choice.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("%s", choice.error.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  if (!choice.note.empty()) ImGui::TextWrapped("%s", choice.note.c_str());
  if (const Computed* r = playground_.result(); r && r->path_note.note) {
    const Computed::PathNote& p = r->path_note;
    ImGui::TextWrapped(tr(*p.note), p.backend.c_str(), p.layer);  // a %s-only format ignores the layer
  }
  ImGui::PopStyleColor();
}

void App::draw_sizes() {
  bool changed = input_size("d_model", draft_.d_model);
  changed |= input_size("max_len", draft_.max_len);
  if (draft_.model == ModelKind::transformer) {
    changed |= input_size(tr(Str::heads), draft_.num_heads);
    changed |= input_size(tr(Str::layers), draft_.num_layers);
    changed |= input_size(tr(Str::d_ff_label), draft_.d_ff);
    changed |= input_size(tr(Str::classes), draft_.num_classes);
    float dropout = float(draft_.dropout);
    if (ImGui::SliderFloat(tr(Str::dropout), &dropout, 0.0f, 0.9f, "%.2f")) {
      draft_.dropout = double(dropout);
      changed = true;
    }
    changed |= ImGui::Checkbox(tr(Str::train_mode), &draft_.train);
    changed |= ImGui::Checkbox(tr(Str::pre_norm), &draft_.norm_first);
  }
  if (changed) apply(draft_);
}

void App::draw_loaded_model() {
  if (!draft_.loaded) {
    ImGui::TextColored(dim_color, "%s", tr(Str::no_model_loaded));
    return;
  }
  ImGui::TextWrapped("%s", draft_.loaded->name.c_str());
  if (draft_.loaded->pretrained) return draw_checkpoint(*draft_.loaded->pretrained);
  if (draft_.loaded->decoder) return draw_decoder(*draft_.loaded->decoder);
  const TransformerConfig& t = draft_.loaded->model.config;
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped(tr(Str::loaded_summary), t.d_model, t.num_heads,
                     t.num_layers, t.ff_width(), t.max_len, t.norm_first ? "pre-norm" : "post-norm",
                     t.activation == Activation::relu ? "relu" : "gelu",
                     draft_.loaded->vocab ? "" : tr(Str::vocab_from_sentences));
  ImGui::PopStyleColor();
  if (ImGui::Checkbox(tr(Str::train_mode), &draft_.train)) apply(draft_);
}

void App::draw_checkpoint(const Pretrained& p) {
  const PretrainedConfig& c = p.model.config;
  const bool bert = c.family == ModelFamily::bert;
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped(tr(Str::checkpoint_summary), bert ? "BERT" : "GPT-2", c.hidden_size, c.num_heads, c.num_layers,
                     c.intermediate_size, c.max_positions, c.vocab_size,
                     bert ? tr(Str::bert_mask) : tr(Str::mask_causal));
  if (!p.model.ignored.empty()) ImGui::TextWrapped(tr(Str::ignored_tensors), p.model.ignored.size());
  ImGui::PopStyleColor();
  if (!bert) draw_next_tokens();
}

void App::draw_decoder(const DecoderModel& d) {
  const DecoderConfig& c = d.config;
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped(tr(Str::decoder_summary), c.architecture.c_str(), c.hidden_size, c.num_heads, c.num_kv_heads,
                     c.num_layers, c.intermediate_size, c.max_positions, c.vocab_size);
  const size_t sliding = size_t(std::count(c.sliding_layers.begin(), c.sliding_layers.end(), true));
  if (c.sliding_window && sliding) ImGui::TextWrapped(tr(Str::decoder_window), c.sliding_window, sliding);
  else ImGui::TextWrapped("%s", tr(Str::decoder_causal));
  if (!d.ignored.empty()) ImGui::TextWrapped(tr(Str::ignored_tensors), d.ignored.size());
  ImGui::PopStyleColor();
  draw_next_tokens();
}

// A causal model's next-token distribution after each sentence (as Transformer Explainer shows GPT-2's).
void App::draw_next_tokens() {
  const Computed* r = playground_.result();
  if (!r || !draft_.loaded || !draft_.loaded->causal_lm() || r->pretrained_input.batch == 0) return;
  ImGui::SliderInt(tr(Str::top_k), &top_k_, 1, 20);
  ImGui::SliderFloat(tr(Str::temperature), &temperature_, 0.05f, 3.0f, "%.2f");
  const ViewKey key{playground_.result_generation(), nullptr, size_t(batch_), size_t(top_k_)};
  if (!(next_key_ == key) || next_temperature_ != temperature_) {
    next_key_ = key;
    next_temperature_ = temperature_;
    const size_t row = std::min(size_t(batch_), r->pretrained_input.batch - 1);
    const LoadedModel& m = *draft_.loaded;
    next_tokens_ = next_tokens(r->trace, r->pretrained_input, row, size_t(top_k_), double(temperature_),
                               [&m](int64_t id) { return m.token(id); });
    ++next_tokens_version_;  // their labels may need glyphs
  }
  ImGui::Text(tr(Str::next_token_after), batch_ + 1);
  for (const NextToken& t : next_tokens_) {
    ImGui::ProgressBar(float(t.probability), ImVec2(120, 0), "");
    ImGui::SameLine();
    ImGui::Text("%5.1f%%  %s", 100.0 * t.probability, t.token.c_str());
  }
}

void App::draw_model_files() {
  draw_loading();  // also with the section closed (attn-gui --model-dir)
  if (!ImGui::CollapsingHeader(tr(Str::open_model_files))) return;
  if (platform_.external_model_picker()) {
    ImGui::TextWrapped("%s", tr(Str::choose_model_files));
  } else {
    static const Str labels[] = {Str::weights, Str::config, Str::vocab};
    static const Str hints[] = {Str::weights_hint, Str::config_hint, Str::vocab_hint};
    for (int i = 0; i < 3; ++i)
      ImGui::InputTextWithHint(tr(labels[i]), tr(hints[i]), model_paths_[i], sizeof model_paths_[i]);
    if (ImGui::Button(tr(Str::open))) {
      std::error_code ec;
      if (!std::filesystem::is_directory(model_paths_[0], ec)) {
        start_loading({model_paths_[0], model_paths_[1], model_paths_[2], {}});
      } else {
        try {
          start_loading(sort_model_files({model_paths_[0]}));
        } catch (const InputError& e) {
          use_model({nullptr, e.what()});  // a folder without a checkpoint's files
        }
      }
    }
  }
  if (draft_.loaded && ImGui::Button(tr(Str::forget_model))) {
    if (draft_.model == ModelKind::loaded) draft_ = defaults_for(ModelKind::transformer, draft_);
    attach_model(draft_, nullptr);
    apply(draft_);
  }
}

std::string App::load_model_files(const ModelFiles& files) {
  loader_.cancel();
  return use_model(read_model_files(files));
}

void App::start_loading(ModelFiles files) {
  loader_.start(std::move(files));
  if (auto done = loader_.take()) use_model(std::move(*done));  // read at once (no threads)
}

std::string App::use_model(LoadResult loaded) {
  set_language(language_of(playground_.config()));  // before any frame (attn-gui --model-dir --lang ko)
  const bool from_hub = bool(hub_reading_);
  hub_reading_.reset();  // the model holds its own copy of the files
  if (!loaded.model) {
    if (from_hub) hub_gave_up(loaded.error, "");
    status_ = format(Str::status_load_failed, loaded.error.c_str());
    return loaded.error;
  }
  if (from_hub) loaded.model = hub_model(*loaded.model, hub_pending_);
  PlaygroundConfig c = playground_.config();
  c.model = ModelKind::loaded;
  c.hub = loaded.model->hub;
  attach_model(c, std::move(loaded.model));
  apply(c);
  status_ = format(Str::status_loaded, c.loaded->name.c_str());
  return "";
}

bool App::busy() const {
  return loader_.running() || hub_download_ || train_view_.status.running || patching_.running() || generate_running_ ||
         attribution_.running();
}

// A read on the loader's thread: its progress bar and Cancel, then its model or its message.
void App::draw_loading() {
  if (auto done = loader_.take()) use_model(std::move(*done));
  if (!loader_.running()) return;
  const double mib = 1 << 20, read = double(loader_.bytes_read()), total = double(loader_.bytes_total());
  char text[64];
  std::snprintf(text, sizeof text, tr(Str::loading_progress), read / mib, total / mib);
  ImGui::ProgressBar(total > 0 ? float(read / total) : 0.0f, ImVec2(-FLT_MIN, 0), text);
  if (ImGui::Button(tr(Str::cancel))) {
    loader_.cancel();
    status_ = tr(Str::loading_cancelled);
  }
}

// --- pipeline ---

void App::set_layer(int layer) {
  if (layer == layer_) return;
  layer_ = layer;
  playground_.set_shown_layer(size_t(layer_));  // a backend pulls back only this layer's stages
  if (stage_layer(stage_) < 0) return;
  const std::string renamed = stage_in_layer(stage_, size_t(layer_));
  if (find_stage(renamed) || playground_.uses_backend()) stage_ = renamed;  // a backend computes it next
}

void App::draw_pipeline() {
  const Computed* r = playground_.result();
  if (!r) return;
  ImGui::TextUnformatted(tr(Str::pipeline));
  int layer = layer_;
  index_slider(tr(Str::layer), layer, r->num_layers, false);
  set_layer(layer);
  ImGui::BeginChild("stages", ImVec2(0, 0), false);
  const auto& stages = r->trace.stages();
  for (size_t i = 0; i < stages.size() && i < stage_labels_.size(); ++i) {
    const int l = stage_layer(stages[i].name);
    if (l >= 0 && l != layer_) continue;
    if (ImGui::Selectable(stage_labels_[i].c_str(), stages[i].name == stage_)) stage_ = stages[i].name;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", stage_formula(stages[i].name));
  }
  for (const std::string& name : r->not_computed) {  // scores: the fused path never stores them
    ImGui::TextDisabled("%s", name.c_str());
    ImGui::SameLine();
    ImGui::TextColored(dim_color, "%s", tr(Str::not_computed_fused));
  }
  ImGui::EndChild();
}

// --- the Stage view ---

void App::draw_stage_view(float width) {
  const Computed* r = playground_.result();
  const Stage* stage = find_stage(stage_);
  if (!r || !stage) return;
  ImGui::Checkbox(tr(Str::every_head), &model_view_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::every_head_tip));
  if (model_view_) {
    draw_model_view();
    return;
  }
  const Tensor& t = stage->value;
  const auto& shape = t.shape();
  const size_t index = size_t(stage - r->trace.stages().data());
  if (index < stage_labels_.size()) ImGui::TextUnformatted(stage_labels_[index].c_str());
  ImGui::TextColored(dim_color, "%s", stage_formula(stage->name));
  if (shape.size() >= 3) index_slider(tr(Str::batch_item), batch_, shape[0], false);
  if (shape.size() == 4) index_slider(tr(Str::head), head_, shape[1], shape[0] > 1);
  const ViewKey key{playground_.result_generation(), &t, shape.size() >= 3 ? size_t(batch_) : 0,
                    shape.size() == 4 ? size_t(head_) : 0};
  refresh(main_, key, t, stage_color_map(stage->name),
          stage->name == "mask");
  const auto [rows, cols] = axis_labels(*r, *stage, size_t(batch_));  // tokens of the chosen sentence on sequence axes
  // A small stage leaves room below for its numbers; the export buttons' row stays in view.
  const bool small = main_.slice.rows * main_.slice.cols <= 400 && main_.slice.cols <= 24;
  const float left = height_above_buttons();
  draw_heatmap(main_, rows, cols, width, small ? left * 0.6f : left, "main");
  export_buttons(main_, stage->name.c_str(), t, stage->dtype, false, rows, cols);
  if (small) {
    ImGui::BeginChild("numbers", ImVec2(0, std::max(60.0f, ImGui::GetContentRegionAvail().y)), false,
                      ImGuiWindowFlags_HorizontalScrollbar);
    draw_number_table(main_, rows, cols);
    ImGui::EndChild();
  }
}

// --- the Masks view ---

void App::update_mask_cache(const Computed& r) {
  const uint64_t generation = playground_.result_generation();
  if (unmasked_generation_ == generation && unmasked_layer_ == layer_) return;
  unmasked_generation_ = generation;
  unmasked_layer_ = layer_;
  ++unmasked_version_;
  masked_stage_ = find_stage(weights_stage_name(r, size_t(layer_)));
  // Engine work, but only when the result or the layer changes (an idle frame reuses it).
  try {
    unmasked_cache_ = masked_stage_ ? unmasked_weights(r, size_t(layer_)) : Tensor();
    layer_mask_ = layer_mask(r, size_t(layer_));
  } catch (const std::exception& e) {  // e.g. out of memory: a message, not a crash inside the frame
    masked_stage_ = nullptr;
    status_ = format(Str::status_unmasked_failed, e.what());
  }
}

void App::draw_masks_view(float width) {
  const Computed* r = playground_.result();
  if (!r || r->tokens.empty()) return;
  index_slider(tr(Str::batch_item), batch_, r->tokens.size(), false);
  int layer = layer_;
  index_slider(tr(Str::layer), layer, r->num_layers, r->tokens.size() > 1);
  set_layer(layer);
  update_mask_cache(*r);
  if (!masked_stage_) {
    ImGui::TextUnformatted(tr(Str::no_attention_layer));
    return;
  }
  const auto& shape = masked_stage_->value.shape();
  if (shape.size() == 4) index_slider(tr(Str::head), head_, shape[1], r->tokens.size() > 1 || r->num_layers > 1);
  const size_t head = shape.size() == 4 ? size_t(head_) : 0;
  const auto& loaded = playground_.config().loaded;
  const char* mask_name = mask_names[int(playground_.config().mask)];
  if (playground_.config().model == ModelKind::loaded && loaded && loaded->checkpoint()) {
    const bool sliding = loaded->decoder && loaded->decoder->config.sliding_window;
    mask_name = !loaded->causal_lm() ? "padding" : tr(sliding ? Str::mask_sliding : Str::mask_causal);
  }
  ImGui::TextWrapped(tr(Str::mask_caption), mask_name);
  const uint64_t generation = playground_.result_generation();
  refresh(mask_, {unmasked_version_, &layer_mask_, size_t(batch_), 0}, layer_mask_, ColorMap::sequential, true);
  bool changed = refresh(unmasked_, {unmasked_version_, &unmasked_cache_, size_t(batch_), head}, unmasked_cache_,
                         ColorMap::sequential);
  changed |= refresh(masked_, {generation, &masked_stage_->value, size_t(batch_), head}, masked_stage_->value,
                     ColorMap::sequential);
  if (changed) sum_pad_attention();
  const auto& tokens = r->tokens[size_t(batch_)];
  // Three side by side in the width; below them the [PAD] table (or its one-line note).
  const float gap = ImGui::GetStyle().ItemSpacing.x, line = ImGui::GetTextLineHeightWithSpacing();
  const float w = std::floor((width - 2 * gap) / 3.0f);
  const float h = ImGui::GetContentRegionAvail().y - 2 * line - (any_pad_ ? 120.0f : line);  // titles, export menus
  const std::pair<Heatmap*, Str> maps[] = {
      {&mask_, Str::mask}, {&unmasked_, Str::weights_without_mask}, {&masked_, Str::weights_with_mask}};
  float legend_room = 0;  // the widest legend's, for all three: cells of one size
  for (const auto& [map, title] : maps) legend_room = std::max(legend_room, legend_width(*map));
  for (const auto& [map, title] : maps) {
    if (map != &mask_) ImGui::SameLine();
    ImGui::BeginGroup();
    fitted_title(tr(title), w, key_name(title));
    draw_heatmap(*map, &tokens, &tokens, w, std::min(h, w), key_name(title), legend_room);
    ImGui::PushID(key_name(title));
    const Tensor& value = map == &mask_ ? layer_mask_ : map == &unmasked_ ? unmasked_cache_ : masked_stage_->value;
    export_buttons(*map, key_name(title), value, PrintDtype::float32, true, &tokens, &tokens);
    ImGui::PopID();
    ImGui::EndGroup();
  }
  draw_pad_table();
}

// Attention paid to [PAD] keys by each query, with and without the mask: summed when the slices change.
void App::sum_pad_attention() {
  const auto& tokens = playground_.result()->tokens[size_t(batch_)];
  const size_t S = std::min(tokens.size(), std::min(unmasked_.slice.rows, masked_.slice.rows));
  pad_without_.assign(S, 0.0f);
  pad_with_.assign(S, 0.0f);
  any_pad_ = false;
  for (size_t k = 0; k < S; ++k) {
    if (tokens[k] != pad_token) continue;
    any_pad_ = true;
    for (size_t q = 0; q < S; ++q) {
      pad_without_[q] += unmasked_.slice.values[q * unmasked_.slice.cols + k];
      pad_with_[q] += masked_.slice.values[q * masked_.slice.cols + k];
    }
  }
}

void App::draw_pad_table() {
  const auto& tokens = playground_.result()->tokens[size_t(batch_)];
  if (!any_pad_) {
    ImGui::TextColored(dim_color, "%s", tr(Str::no_pad));
    return;
  }
  ImGui::TextUnformatted(tr(Str::pad_title));
  const float height = std::max(ImGui::GetContentRegionAvail().y, 80.0f);
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("pad", 3, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(tr(Str::query));
  ImGui::TableSetupColumn(tr(Str::without_mask));
  ImGui::TableSetupColumn(tr(Str::with_mask));
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;  // only the visible rows are formatted (S may be in the hundreds)
  clipper.Begin(int(pad_with_.size()));
  while (clipper.Step())
    for (int q = clipper.DisplayStart; q < clipper.DisplayEnd; ++q) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(tokens[size_t(q)].c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", double(pad_without_[size_t(q)]));
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", double(pad_with_[size_t(q)]));
    }
  ImGui::EndTable();
}

// --- the positional-encoding view ---

void App::draw_pe_view(float width) {
  const Computed* r = playground_.result();
  if (!r) return;
  // Formatted each frame, in the language shown (a language switch recomputes nothing).
  static const Str captions[] = {Str::pe_sinusoidal, Str::pe_learned, Str::pe_rotary};
  ImGui::TextWrapped(tr(captions[int(r->positions)]), pe_shape_.c_str(),
                     r->tokens.empty() ? size_t(0) : r->tokens[0].size());
  refresh(pe_, {playground_.result_generation(), &r->pe_table, 0, 0}, r->pe_table, ColorMap::diverging);
  // A decoder's angles share the height with its rotary split below them.
  const float height = r->decoder ? ImGui::GetContentRegionAvail().y * 0.4f : height_above_buttons();
  draw_heatmap(pe_, &batch_labels_, &dim_labels_, width, height, "pe");
  export_buttons(pe_, "positional_encoding_table", r->pe_table, PrintDtype::float32);
  if (r->decoder) draw_rotary_view(*r, width);
}

namespace {

Json cells_json(const std::vector<App::GridCell>& cells) {
  Json out = Json::array();
  for (const auto& c : cells) out.push_back({{"layer", c.layer}, {"head", c.head}, {"x", c.x}, {"y", c.y}, {"w", c.w}, {"h", c.h}});
  return out;
}

}  // namespace

// The patching sweep as attn patch --json gives it, its error, and where its heads heatmap was drawn.
Json App::patching_json() const {
  Json doc = patching_.started() ? patching_.json() : Json::object();
  doc["error"] = patching_error_;
  const Heatmap& h = patch_maps_[0];
  doc["heads"] = {{"x", h.x}, {"y", h.y}, {"cell_w", h.cell_w}, {"cell_h", h.cell_h}};
  return doc;
}

Json App::view_json() const {
  Json buttons = Json::object();
  for (const ButtonRect& b : train_buttons_) buttons[b.name] = {b.x, b.y, b.w, b.h};
  Json train = {{"item", train_item_}, {"layer", train_layer_}, {"head", train_head_}, {"replay", replay_index_},
                {"snapshots", train_view_.snapshots.size()}, {"buttons", buttons}, {"cells", cells_json(train_cells_)},
                {"error", train_error_},
                {"ablated_accuracy", ablated_accuracy_ ? Json{{"layer", ablated_accuracy_->layer},
                                                             {"head", ablated_accuracy_->head},
                                                             {"step", ablated_accuracy_->result.step},
                                                             {"accuracy", ablated_accuracy_->result.accuracy},
                                                             {"ablated", ablated_accuracy_->result.ablated}}
                                                       : Json()},
                {"heatmap", {{"x", train_main_.x}, {"y", train_main_.y}, {"cell_w", train_main_.cell_w},
                             {"rows", train_main_.slice.rows}, {"cols", train_main_.slice.cols},
                             {"values", train_main_.slice.values}}},
                {"language_model", training_.language_model()}};
  if (training_.language_model()) {
    Json samples = Json::array(), scores = Json::object();
    for (const auto& snap : train_view_.snapshots) samples.push_back({{"step", snap->step}, {"sample", snap->sample}});
    const Snapshot* shown = shown_snapshot();
    for (size_t k = 0; shown && k < head_score_kinds; ++k)
      if (const Tensor& t = shown->head_scores[k]; t.size()) {
        Json rows = Json::array();
        for (size_t l = 0; l < t.shape(0); ++l) rows.push_back(std::vector<float>(t.data() + l * t.shape(1), t.data() + (l + 1) * t.shape(1)));
        scores[head_score_names[k]] = std::move(rows);
      }
    train["samples"] = std::move(samples);
    train["head_scores"] = std::move(scores);
    train["sample_prompt"] = training_.sample_prompt();
    train["sample_expected"] = training_.sample_expected();
  }
  Json colors = Json::array(), values = Json::array(), exports = Json::object();
  for (const ButtonRect& b : export_buttons_) exports[b.name] = {b.x, b.y, b.w, b.h};
  for (size_t i = 0; main_.slice.values.size() <= max_json_cells && i < main_.slice.values.size(); ++i) {
    const Rgba c = value_color(main_.map, main_.range, main_.slice.values[i]);
    colors.push_back({c[0], c[1], c[2]});
    values.push_back(main_.slice.values[i]);
  }
  return {{"tab", tab_name(tab_)},
          {"stage", stage_},
          {"batch", batch_},
          {"head", head_},
          {"layer", layer_},
          {"lang", lang_code(language_of(playground_.config()))},
          {"tour", playground_.config().tour},
          {"missing_glyphs", missing_glyphs_},
          {"heatmap",
           {{"x", main_.x}, {"y", main_.y}, {"cell_w", main_.cell_w}, {"cell_h", main_.cell_h},
            {"rows", main_.slice.rows}, {"cols", main_.slice.cols}, {"colors", colors}, {"values", values},
            {"export", exports}, {"zoom", main_.zoom}, {"view_row", main_.view_row}, {"view_col", main_.view_col},
            {"box", main_.box}, {"minimap", main_.minimap}, {"row_sums", main_.row_sums}, {"col_sums", main_.col_sums}}},
          {"masks",
           {{"layer", unmasked_layer_}, {"leading", masked_.slice.leading}, {"rows", masked_.slice.rows},
            {"unmasked", unmasked_.slice.values}, {"masked", masked_.slice.values},
            {"pad_without", pad_without_}, {"pad_with", pad_with_}}},
          {"model_view", {{"on", model_view_}, {"cells", cells_json(stage_cells_)}}},
          {"decoder",
           {{"hide_first_token", hide_first_}, {"first_token_share", show_sinks_}, {"sinks", sinks_map_.slice.values},
            {"rotary", {{"query", rotary_query_}, {"key", rotary_key_}, {"layer", rotary_layer_}, {"head", rotary_head_},
                        {"pairs", rotary_pairs_}, {"by_distance", rotary_distance_}}}}},
          {"interventions",
           {{"view", patching_view_ ? "patching" : "ablation"},
            {"cells", cells_json(ablation_cells_)},
            {"ablated", ablated_text_},
            {"effect", effect_lines_},
            {"patching", patching_json()}}},
          {"train", train},
          {"generate", generate_json()},
          {"attribution", attribution_json()},
          {"hub", hub_json()},
          {"compare", compare_json()},
          {"layout", {{"boxes", layout_.boxes().size()}, {"problems", layout_.problems()}}}};
}

Json App::layout_views() const {
  Json views = Json::array();
  if (const Computed* r = playground_.result())
    for (const Stage& s : r->trace.stages())
      views.push_back(Json::object({{"tab", "stage"}, {"stage", s.name}, {"model_view", false}}));
  views.push_back(Json::object({{"tab", "stage"}, {"model_view", true}}));
  if (const Computed* r = playground_.result(); r && r->decoder)
    for (const char* toggle : {"hide_first_token", "first_token_share"})
      views.push_back(Json::object({{"tab", "stage"}, {"model_view", true}, {toggle, true}}));
  for (Tab t : {Tab::masks, Tab::positional_encoding, Tab::train, Tab::generate})
    views.push_back(Json::object({{"tab", tab_name(t)}}));
  for (bool patching : {false, true}) views.push_back(Json::object({{"tab", "interventions"}, {"patching", patching}}));
  views.push_back(Json::object({{"tab", "attribution"}}));
  if (const Computed* r = playground_.result(); r && r->stages.family != StageFamily::tutorial)
    for (const char* method : {"gradient-x-input", "flow", "logit-attribution"})  // one pass each: drawn at once
      views.push_back(Json::object({{"tab", "attribution"}, {"attribute", {{"method", method}}}}));
  return views;
}

}  // namespace attn::ui
