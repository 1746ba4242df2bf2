// The App's Train tab (training a classifier live, its curves, its attention and the replay of it) and
// the model view (every layer x head of one item at once), which the Stage tab and the Train tab share.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"
#include "core/train/train_data.hpp"
#include "core/plot/svg.hpp"
#include "ui/app.hpp"
#include "ui/app_head_grid.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {
namespace {

const ImU32 train_color = IM_COL32(90, 160, 255, 255), val_color = IM_COL32(255, 170, 60, 255);
const char* const optimizer_items[] = {"sgd", "adam", "adamw"};

template <size_t N>
int index_of(const char* const (&items)[N], const std::string& name) {
  for (size_t i = 0; i < N; ++i)
    if (name == items[i]) return int(i);
  return 0;
}

// The Task combo: the classifier's tasks (train::tasks()), the language tasks (train::lm_tasks()), then
// a labelled file.
const std::string* task_at(int i) {
  const auto& classifier = train::tasks();
  const auto& language = train::lm_tasks();
  if (size_t(i) < classifier.size()) return &classifier[size_t(i)].name;
  if (size_t(i) < classifier.size() + language.size()) return &language[size_t(i) - classifier.size()].name;
  return nullptr;
}
int file_task_index() { return int(train::tasks().size() + train::lm_tasks().size()); }
int task_index(const std::string& name) {
  for (int i = 0; i < file_task_index(); ++i)
    if (*task_at(i) == name) return i;
  return 0;
}
const char* task_label(void*, int i) { return task_at(i) ? task_at(i)->c_str() : tr(Str::task_file); }

// A file's settings: a plain text (.txt) trains the text task's language model, else the classifier.
Json data_settings(const std::string& path) {
  const bool text = path.size() >= 4 && path.compare(path.size() - 4, 4, ".txt") == 0;
  return text ? Json{{"task", "text"}, {"data", path}} : Json{{"data", path}};
}

size_t size_setting(const Json& j, const char* key) { return json_field<size_t>(j, key, "the run's settings"); }
int int_setting(const Json& j, const char* key) { return j.contains(key) ? json_integer<int>(j[key], key) : 0; }

// A line chart of up to two series (x = step) in a box of `size`; log_y plots log10 of positive values.
// `scratch` holds the screen points (kept between frames: no allocation once grown). Its box and
// labels go to `layout`; the left margin is as wide as the value labels.
void line_chart(const char* id, const char* title, const std::vector<ImVec2>& a, const std::vector<ImVec2>& b,
                bool log_y, ImVec2 size, std::vector<ImVec2>& scratch, LayoutLog& layout) {
  ImGui::PushID(id);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("chart", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  const float line = ImGui::GetTextLineHeight();
  auto y_of = [&](float v) { return log_y ? std::log10(std::max(v, 1e-8f)) : v; };
  float x_hi = 1, y_lo = INFINITY, y_hi = -INFINITY;
  for (const auto* s : {&a, &b})
    for (const ImVec2& p : *s) {
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, y_of(p.y));
      y_hi = std::max(y_hi, y_of(p.y));
    }
  const bool any = y_lo <= y_hi;
  if (any && y_hi - y_lo < 1e-6f) y_hi = y_lo + 1e-6f;
  char hi_text[32] = "", lo_text[32] = "";
  const auto value_text = [&](char (&text)[32], float y) {
    std::snprintf(text, sizeof text, "%.3g", log_y ? std::pow(10.0, double(y)) : double(y));
  };
  if (any) {
    value_text(hi_text, y_hi);
    value_text(lo_text, y_lo);
  }
  const float margin = std::max({40.0f, ImGui::CalcTextSize(hi_text).x, ImGui::CalcTextSize(lo_text).x}) + 6;
  const ImVec2 p0(top.x + margin, top.y + line + 4), p1(top.x + size.x - 6, top.y + size.y - line - 4);
  dl->AddRect(p0, p1, ImGui::GetColorU32(ImGuiCol_Border));
  dl->AddText(ImVec2(p0.x, top.y), text_col, title);
  const auto record = [&](LayoutKind kind, const char* text, ImVec2 min, ImVec2 max) {
    record_box(layout, kind, id, text, min, max);
  };
  record(LayoutKind::chart, "", p0, p1);
  record(LayoutKind::title, title, ImVec2(p0.x, top.y), ImVec2(p0.x + ImGui::CalcTextSize(title).x, top.y + line));
  if (!any) {
    ImGui::PopID();
    return;
  }
  const auto screen = [&](ImVec2 p) {
    return ImVec2(p0.x + (p1.x - p0.x) * p.x / x_hi, p1.y - (p1.y - p0.y) * (y_of(p.y) - y_lo) / (y_hi - y_lo));
  };
  for (const auto& [series, color] : {std::pair{&a, train_color}, std::pair{&b, val_color}}) {
    // At most about one point per pixel column: every k-th point.
    const size_t k = std::max<size_t>(1, series->size() / size_t(std::max(1.0f, p1.x - p0.x)));
    scratch.clear();
    for (size_t i = 0; i < series->size(); i += k) scratch.push_back(screen((*series)[i]));
    if (!series->empty() && (series->size() - 1) % k) scratch.push_back(screen(series->back()));
    if (scratch.size() > 1) dl->AddPolyline(scratch.data(), int(scratch.size()), color, 0, 1.5f);
    if (series == &b)
      for (const ImVec2& p : scratch) dl->AddCircleFilled(p, 2.5f, color);
  }
  // The range's ends left of the box, at its top and bottom; the last step under its right end.
  const ImVec2 hi_at(top.x, p0.y - 2), lo_at(top.x, p1.y - line + 2);
  dl->AddText(hi_at, text_col, hi_text);
  dl->AddText(lo_at, text_col, lo_text);
  record(LayoutKind::label, hi_text, hi_at, ImVec2(top.x + ImGui::CalcTextSize(hi_text).x, hi_at.y + line));
  record(LayoutKind::label, lo_text, lo_at, ImVec2(top.x + ImGui::CalcTextSize(lo_text).x, lo_at.y + line));
  char step_text[32];
  std::snprintf(step_text, sizeof step_text, tr(Str::chart_step), double(x_hi));
  const ImVec2 step_at(p1.x - ImGui::CalcTextSize(step_text).x, p1.y + 2);
  dl->AddText(step_at, text_col, step_text);
  record(LayoutKind::label, step_text, step_at, ImVec2(p1.x, step_at.y + line));
  if (hovered && !a.empty()) {  // the values at the step under the mouse
    const float step = std::clamp((ImGui::GetMousePos().x - p0.x) / (p1.x - p0.x), 0.0f, 1.0f) * x_hi;
    const auto near = [&](const std::vector<ImVec2>& s) {
      return std::lower_bound(s.begin(), s.end(), step, [](const ImVec2& p, float x) { return p.x < x; });
    };
    const auto ia = near(a), ib = near(b);
    ImGui::BeginTooltip();
    if (ia != a.end()) ImGui::Text(tr(Str::chart_training), double(ia->x), double(ia->y));
    if (ib != b.end()) ImGui::Text(tr(Str::chart_validation), double(ib->x), double(ib->y));
    ImGui::EndTooltip();
  }
  ImGui::PopID();
}

}  // namespace

// --- the model view ---

void App::draw_model_view() {
  const Computed* r = playground_.result();
  if (!r) return;
  const size_t layers = layer_weights_.size();
  const Stage* first = layers ? layer_weights_[0] : nullptr;
  const size_t heads = first && first->value.dimension() == 4 ? first->value.shape()[1] : 1;
  size_t batch = r->tokens.size();
  index_slider(tr(Str::batch_item), batch_, batch, false);
  ImGui::TextColored(dim_color, tr(Str::grid_caption), batch_);
  ImGui::SameLine();
  if (ImGui::SmallButton(tr(Str::export_svg)))  // every head as drawn, a vector figure (core/plot/svg.hpp)
    save_svg("every_head.svg", [&] {
      std::vector<HeatmapFigure> figures;
      for (size_t k = 0; k < layers * heads && k < stage_grid_.size(); ++k)
        figures.push_back({"L" + std::to_string(k / heads) + " H" + std::to_string(k % heads), stage_grid_[k].slice,
                           stage_grid_[k].map, stage_grid_[k].range, {}, {}});
      return heads_svg(format(Str::grid_caption, batch_), figures, layers);
    });
  if (r->decoder) draw_sink_controls(*r);
  ImGui::BeginChild("grid", ImVec2(0, 0), false);
  if (r->decoder && show_sinks_) {
    draw_sinks_map(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y);
    ImGui::EndChild();
    return;
  }
  int layer = layer_, head = head_;
  // [B, H, S, S] per layer (the first tutorial's [B, S, S]: its head index is ignored); a decoder's
  // without its first key when asked.
  const auto cell = [&](size_t l, size_t h, ViewKey& key) -> const Tensor* {
    const Stage* s = layer_weights_[l];
    if (!s) return nullptr;
    const Tensor* shown = r->decoder ? shown_weights(l, s->value) : &s->value;
    key = {playground_.result_generation(), shown, size_t(batch_), h};
    return shown;
  };
  // Grouped-query attention: the query heads under the key/value head they share.
  if (draw_head_grid(stage_grid_, stage_cells_, layers, heads, cell, ImGui::GetContentRegionAvail(), layer, head, "grid",
                     Str::grid_tip, r->stages.group())) {
    set_layer(layer);
    head_ = head;
    stage_ = weights_stage_name(*r, size_t(layer));
    model_view_ = false;
  }
  ImGui::EndChild();
}

// --- the Train tab: its run follows the configuration's training settings ---

// A new run from the settings (the old one stays when they are refused): "" or the reason.
std::string App::build_training(const Json& settings) {
  try {
    training_.configure(settings);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return tr(Str::train_out_of_memory);
  }
  train_error_.clear();
  replay_index_ = -1;
  return "";
}

std::string App::configure_training(const Json& settings) {
  std::string error = build_training(settings);
  if (!error.empty()) return error;
  PlaygroundConfig c = playground_.config();
  c.training = settings;
  apply(c);
  train_synced_generation_ = playground_.config_generation();
  return "";
}

std::string App::ensure_training() {
  return training_.configured() ? "" : configure_training(playground_.config().training);
}

void App::set_training(const Json& settings) {
  const std::string error = configure_training(settings);
  if (!error.empty()) train_error_ = error;
}

// A configuration change (a link, the API, a control) that touched the training settings rebuilds the
// run; pump() trains where there is no worker thread.
void App::sync_training() {
  if (train_synced_generation_ != playground_.config_generation()) {
    train_synced_generation_ = playground_.config_generation();
    const Json& wanted = playground_.config().training;
    if (training_.configured() ? wanted != training_.settings() : tab_ == Tab::train || !wanted.empty()) {
      const std::string error = build_training(wanted);
      if (!error.empty()) train_error_ = error;
    }
  }
  training_.pump(train_budget_ms);
  training_.update_view(train_view_);
  refresh_train_cache();
}

// The curves grow with each published step; labels and controls change only with the run.
void App::refresh_train_cache() {
  if (train_cache_generation_ == train_view_.generation) return;
  train_cache_generation_ = train_view_.generation;
  if (train_cache_run_ != train_view_.run) {
    train_cache_run_ = train_view_.run;
    for (auto* points : {&loss_points_, &accuracy_points_, &val_loss_points_, &val_accuracy_points_,
                         &repeated_loss_points_, &induction_points_, &previous_token_points_})
      points->clear();
    refresh_train_controls();
  }
  for (size_t i = loss_points_.size(); i < train_view_.steps.size(); ++i) {
    const train::StepRecord& s = train_view_.steps[i];
    loss_points_.push_back(ImVec2(float(s.step), s.loss));
    accuracy_points_.push_back(ImVec2(float(s.step), float(s.accuracy)));
  }
  for (size_t i = val_loss_points_.size(); i < train_view_.evals.size(); ++i) {
    const train::EvalRecord& e = train_view_.evals[i];
    val_loss_points_.push_back(ImVec2(float(e.step), e.loss));
    val_accuracy_points_.push_back(ImVec2(float(e.step), float(e.accuracy)));
    if (e.repeated_loss) repeated_loss_points_.push_back(ImVec2(float(e.step), *e.repeated_loss));
    if (e.induction_score) induction_points_.push_back(ImVec2(float(e.step), float(*e.induction_score)));
    if (e.previous_token_score) previous_token_points_.push_back(ImVec2(float(e.step), float(*e.previous_token_score)));
  }
  for (size_t i = train_samples_.size(); i < train_view_.snapshots.size(); ++i) {  // the new samples' lines
    const Snapshot& snap = *train_view_.snapshots[i];
    train_samples_.push_back(format(Str::sample_at, snap.step, training_.sample_prompt().c_str(), snap.sample.c_str()));
  }
}

void App::refresh_train_controls() {
  replay_labels_.clear();
  for (const ReplayItem& item : training_.replay()) replay_labels_.push_back(item.tokens);
  train_samples_.clear();
  train_layer_labels_.clear();
  train_head_labels_.clear();
  for (size_t l = 0; l < training_.num_layers(); ++l) train_layer_labels_.push_back("L" + std::to_string(l));
  for (size_t h = 0; h < training_.num_heads(); ++h) train_head_labels_.push_back("H" + std::to_string(h));
  train_pair_labels_.clear();  // "layer.head", as the ablation button names a head
  for (size_t l = 0; l < training_.num_layers(); ++l)
    for (size_t h = 0; h < training_.num_heads(); ++h) train_pair_labels_.push_back(std::to_string(l) + "." + std::to_string(h));
  const Json& e = training_.effective_settings();
  train_sizes_text_ = training_.language_model()
                          ? format(Str::language_model_sizes, size_setting(e, "n_embd"), size_setting(e, "n_head"),
                                   size_setting(e, "n_layer"), size_setting(e, "n_positions"), size_setting(e, "vocab_size"))
                          : "";
  TrainControls& c = train_controls_;
  c.task = e.contains("task") ? task_index(e["task"].get<std::string>()) : int(train::tasks().size());
  c.steps = int_setting(e, "steps");
  c.batch_size = int_setting(e, "batch_size");
  c.d_model = int_setting(e, "d_model");
  c.num_heads = int_setting(e, "num_heads");
  c.num_layers = int_setting(e, "num_layers");
  c.d_ff = int_setting(e, "d_ff");
  c.eval_every = int_setting(e, "eval_every");
  c.optimizer = e.contains("optimizer") ? index_of(optimizer_items, e["optimizer"].get<std::string>()) : 2;
  c.mask = e.contains("mask") ? index_of(mask_names, e["mask"].get<std::string>()) : 1;
  c.lr = e.contains("lr") ? e["lr"].get<double>() : 0;
  c.attention_only = e.value("attention_only", false);
  c.seed = e.contains("seed") ? json_integer<uint64_t>(e["seed"], "seed") : 0;
}

void App::draw_train_view(float width) {
  if (!training_.configured() && train_error_.empty()) {
    train_error_ = ensure_training();  // the first visit builds the default run
    sync_training();
  }
  ImGui::BeginChild("train", ImVec2(0, 0), false);
  draw_train_controls();
  if (!train_error_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("%s", train_error_.c_str());
    ImGui::PopStyleColor();
  }
  if (training_.configured()) {
    draw_train_curves(width);
    draw_train_attention(width);
  }
  ImGui::EndChild();
}

bool App::kept_button(std::vector<ButtonRect>& into, const char* name, const char* label) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const bool pressed = ImGui::Button(label);
  const ImVec2 size = ImGui::GetItemRectSize();
  into.push_back({name, at.x, at.y, size.x, size.y});
  return pressed;
}

bool App::train_button(const char* name, const char* label) { return kept_button(train_buttons_, name, label); }

void App::draw_train_controls() {
  train_buttons_.clear();
  const TrainingStatus& s = train_view_.status;
  const bool done = s.step >= s.steps;
  ImGui::BeginDisabled(!training_.configured() || done || !s.error.empty());
  if (train_button("play", tr(s.running ? Str::pause : Str::play))) s.running ? training_.pause() : training_.play();
  ImGui::SameLine();
  if (train_button("step", tr(Str::step))) training_.run_steps(1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (train_button("reset", tr(Str::reset))) set_training(playground_.config().training);
  ImGui::SameLine();
  ImGui::Text(tr(Str::step_of), s.step, s.steps);
  if (s.step) {
    ImGui::SameLine();
    ImGui::TextColored(dim_color, tr(training_.language_model() ? Str::next_token_rate : Str::train_rate), s.threads,
                       s.steps_per_s, double(s.loss), 100 * s.accuracy);
    if (s.val_accuracy) {
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(1.0f, 0.67f, 0.24f, 1.0f), tr(Str::validation_pct), 100 * *s.val_accuracy);
    }
  }
  if (!s.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped(tr(Str::stopped), s.error.c_str());
    ImGui::PopStyleColor();
  }
  if (const auto texts = task_texts(training_.task())) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(dim_color, tr(Str::task_is), tr(texts->description));
    ImGui::TextColored(dim_color, tr(Str::look_for), tr(texts->pattern));
    ImGui::PopTextWrapPos();
  }
  if (!Training::has_worker())
    ImGui::TextColored(dim_color, "%s", tr(Str::one_thread));
  draw_train_settings();
}

void App::draw_train_settings() {
  ImGui::PushItemWidth(130);
  TrainControls& c = train_controls_;
  Json settings = Json();  // built only when a control changes
  const auto edit = [&](const char* key, Json value) {
    if (settings.is_null()) settings = playground_.config().training;
    settings[key] = std::move(value);
  };
  int task = c.task;
  const int file_task = file_task_index();
  if (ImGui::Combo(tr(Str::task), &task, task_label, nullptr, file_task + 1) && task != c.task) {
    settings = Json::object();
    if (task < file_task) settings["task"] = *task_at(task);
    else if (train_data_path_[0]) settings = data_settings(train_data_path_);
    if (task < file_task && *task_at(task) == "text") settings["text"] = train_text_.data();
    if (playground_.config().training.contains("seed")) settings["seed"] = playground_.config().training["seed"];
    if (task == file_task && !train_data_path_[0]) {
      settings = Json();
      train_error_ = tr(platform_.external_model_picker() ? Str::choose_data_page : Str::type_data_path);
    }
  }
  if (training_.task() == "text") draw_train_text(settings);
  if (!platform_.external_model_picker()) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(260);
    ImGui::InputTextWithHint("##data", tr(Str::data_hint), train_data_path_, sizeof train_data_path_);
    ImGui::SameLine();
    if (ImGui::Button(tr(Str::load)) && train_data_path_[0]) settings = data_settings(train_data_path_);
  }
  if (ImGui::CollapsingHeader(tr(Str::train_settings))) {
    const ImGuiInputTextFlags enter = ImGuiInputTextFlags_EnterReturnsTrue;
    const auto int_input = [&](const char* label, const char* key, int& value, int min_value, bool same_line) {
      if (same_line) ImGui::SameLine();
      int v = value;
      if (ImGui::InputInt(label, &v, 1, 10, enter) && v >= min_value) edit(key, v);
    };
    int_input(tr(Str::steps), "steps", c.steps, 1, false);
    int_input(tr(Str::batch_size), "batch_size", c.batch_size, 1, true);
    int_input(tr(Str::eval_every), "eval_every", c.eval_every, 1, true);
    int optimizer = c.optimizer;
    if (ImGui::Combo(tr(Str::optimizer), &optimizer, optimizer_items, 3) && optimizer != c.optimizer)
      edit("optimizer", optimizer_items[optimizer]);
    ImGui::SameLine();
    double lr = c.lr;
    if (ImGui::InputDouble("lr", &lr, 0, 0, "%g", enter) && lr > 0) edit("lr", lr);
    ImGui::SameLine();
    uint64_t seed = c.seed;
    if (ImGui::InputScalar(tr(Str::seed), ImGuiDataType_U64, &seed, nullptr, nullptr, nullptr, enter)) edit("seed", seed);
    if (training_.language_model()) {  // its sizes come from its config
      ImGui::TextColored(dim_color, "%s", train_sizes_text_.c_str());
      bool attention_only = c.attention_only;
      if (!training_.task().empty() && ImGui::Checkbox(tr(Str::attention_only), &attention_only))
        edit("attention_only", attention_only);
    } else {
      int_input("d_model", "d_model", c.d_model, 1, false);
      int_input(tr(Str::heads), "num_heads", c.num_heads, 1, true);
      int_input(tr(Str::layers), "num_layers", c.num_layers, 1, true);
      int_input("d_ff", "d_ff", c.d_ff, 1, false);
      int mask = c.mask;
      ImGui::SameLine();
      if (ImGui::Combo(tr(Str::mask), &mask, mask_names, 4) && mask != c.mask) edit("mask", mask_names[mask]);
    }
  }
  ImGui::PopItemWidth();
  if (!settings.is_null()) set_training(settings);
}

void App::draw_train_curves(float width) {
  ImGui::Checkbox(tr(Str::log_loss), &log_loss_);
  ImGui::SameLine();
  ImGui::TextColored(ImVec4(0.35f, 0.63f, 1.0f, 1.0f), "%s", tr(Str::training));
  ImGui::SameLine();
  ImGui::TextColored(ImVec4(1.0f, 0.67f, 0.24f, 1.0f), "%s", tr(Str::validation));
  const bool induction = !induction_points_.empty();  // the phase change's two curves beside them
  ImGui::SameLine();
  if (ImGui::SmallButton(tr(Str::export_svg))) ImGui::OpenPopup("curves_svg");
  if (ImGui::BeginPopup("curves_svg")) {  // each chart as a vector figure, the curves as drawn
    const auto points = [](const std::vector<ImVec2>& from) {
      std::vector<std::pair<double, double>> out;
      for (const ImVec2& p : from) out.emplace_back(p.x, p.y);
      return out;
    };
    const auto chart = [&](const char* file, Str title, const std::vector<ImVec2>& blue, const std::vector<ImVec2>& orange,
                           bool log_y, Str blue_name = Str::training, Str orange_name = Str::validation) {
      if (ImGui::MenuItem(tr(title)))
        save_svg(file, [&] {
          return curves_svg(tr(title), {{tr(blue_name), "#59a1ff", points(blue)}, {tr(orange_name), "#ffab3d", points(orange)}},
                            log_y);
        });
    };
    chart("loss.svg", Str::loss, loss_points_, val_loss_points_, log_loss_);
    chart("accuracy.svg", Str::accuracy, accuracy_points_, val_accuracy_points_, false);
    if (induction) {
      chart("repeated_loss.svg", Str::repeated_loss_chart, no_points_, repeated_loss_points_, log_loss_);
      chart("induction_score.svg", Str::induction_score_chart, previous_token_points_, induction_points_, false,
            Str::previous_token_series, Str::induction_series);
    }
    ImGui::EndPopup();
  }
  const ImVec2 size(std::max(160.0f, width / (induction ? 4.0f : 2.0f) - 8), 150);
  line_chart("loss", tr(Str::loss), loss_points_, val_loss_points_, log_loss_, size, plot_scratch_, layout_);
  ImGui::SameLine();
  line_chart("accuracy", tr(Str::accuracy), accuracy_points_, val_accuracy_points_, false, size, plot_scratch_, layout_);
  if (!induction) return;
  ImGui::SameLine();
  line_chart("repeated_loss", tr(Str::repeated_loss_chart), no_points_, repeated_loss_points_, log_loss_, size,
             plot_scratch_, layout_);
  ImGui::SameLine();
  line_chart("induction_score", tr(Str::induction_score_chart), previous_token_points_, induction_points_, false, size,
             plot_scratch_, layout_);
}

// The task text's own text: a box to type or paste it in, and the button that trains on it.
void App::draw_train_text(Json& settings) {
  ImGui::InputTextMultiline("##text", train_text_.data(), train_text_.size(), ImVec2(-1, 4 * ImGui::GetTextLineHeight()));
  if (train_button("train_text", tr(Str::train_on_text)) && train_text_[0]) {
    settings = playground_.config().training;
    settings.erase("data");
    settings["task"] = "text";
    settings["text"] = train_text_.data();
  }
}

void App::draw_train_attention(float width) {
  const auto& snapshots = train_view_.snapshots;
  if (replay_labels_.empty() || snapshots.empty() || !train_view_.live) return;
  index_slider(tr(Str::item), train_item_, replay_labels_.size(), false);
  const size_t item = size_t(train_item_);
  // The replay: a recorded snapshot, or the live one (the slider's last position).
  int replay = replay_index_ < 0 ? int(snapshots.size()) : replay_index_;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(120.0f, width * 0.35f));
  const size_t shown_step = replay < int(snapshots.size()) ? snapshots[size_t(replay)]->step : train_view_.live->step;
  char label[48];
  std::snprintf(label, sizeof label, tr(replay < int(snapshots.size()) ? Str::replay_step : Str::replay_live), shown_step);
  if (ImGui::SliderInt(tr(Str::replay), &replay, 0, int(snapshots.size()), label))
    replay_index_ = replay >= int(snapshots.size()) ? -1 : replay;
  const Snapshot& snap = *shown_snapshot();
  if (item >= snap.weights.size()) return;
  const bool language = training_.language_model();
  if (language) {
    draw_train_samples(replay < int(snapshots.size()) ? size_t(replay) : snapshots.size() - 1);
  } else {
    ImGui::Text(tr(Str::label_predicted), static_cast<long long>(training_.replay()[item].label),
                static_cast<long long>(snap.predicted[item]), double(snap.probability[item]));
    record_box(layout_, LayoutKind::title, "train", "", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    if (snap.predicted[item] == training_.replay()[item].label) {
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(0.4f, 0.9f, 0.4f, 1.0f), "%s", tr(Str::right));
    }
  }
  const size_t layers = training_.num_layers(), heads = training_.num_heads();
  const Tensor& w = snap.weights[item];
  const float grid_w = std::min(width * 0.4f, 60.0f * float(heads) + 40);
  ImGui::BeginGroup();
  const auto cell = [&](size_t l, size_t h, ViewKey& key) -> const Tensor* {  // w is [layers, heads, S, S]
    key = {snap.id, &w, l, h};
    return &w;
  };
  const float avail_h = ImGui::GetContentRegionAvail().y;
  draw_head_grid(train_grid_, train_cells_, layers, heads, cell, ImVec2(grid_w, language ? avail_h * 0.5f : avail_h),
                 train_layer_, train_head_, "train grid");
  if (language) draw_head_scores(snap, grid_w);
  ImGui::EndGroup();
  train_layer_ = std::clamp(train_layer_, 0, int(layers) - 1);
  train_head_ = std::clamp(train_head_, 0, int(heads) - 1);
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::Text(tr(Str::train_head_caption), train_layer_, train_head_);
  refresh(train_main_, ViewKey{snap.id, &w, size_t(train_layer_), size_t(train_head_)}, w, ColorMap::sequential);
  ImGui::SameLine();
  ImGui::PushID("train_main");  // this head's exports (JSON and .npy: every head of the snapshot, [L, H, S, S])
  export_buttons(train_main_, "train_attention_weights", w, PrintDtype::float32, true, &replay_labels_[item],
                 &replay_labels_[item]);
  ImGui::PopID();
  const float heatmap_w = width - grid_w - ImGui::GetStyle().ItemSpacing.x;
  const float button_rows = language ? 2.0f : 1.0f;
  draw_heatmap(train_main_, &replay_labels_[item], &replay_labels_[item], heatmap_w,
               std::max(120.0f, height_above_buttons() - (button_rows - 1) * ImGui::GetFrameHeightWithSpacing()),
               "train_main");
  if (train_button("show", tr(Str::show_in_stage))) show_trained_model(Tab::stage);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::show_in_stage_tip));
  if (language) {
    ImGui::SameLine();
    if (train_button("generate", tr(Str::generate_with_model))) show_trained_model(Tab::generate);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::generate_with_model_tip));
  }
  ImGui::SameLine();
  if (train_button("save", tr(Str::save_model))) save_trained_model();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("%s", tr(language ? Str::save_lm_tip : Str::save_model_tip));
  if (!language) ImGui::SameLine();  // a language model's row has one button more: on a line of its own
  draw_ablated_accuracy();
  ImGui::EndGroup();
}

const Snapshot* App::shown_snapshot() const {
  const auto& snapshots = train_view_.snapshots;
  return replay_index_ >= 0 && size_t(replay_index_) < snapshots.size() ? snapshots[size_t(replay_index_)].get()
                                                                         : train_view_.live.get();
}

// A language model's samples: the replay's up to the one shown (the last few), the one shown last.
void App::draw_train_samples(size_t shown) {
  ImGui::TextColored(dim_color, tr(Str::samples_caption), training_.sample_prompt().c_str(),
                     training_.sample_expected().c_str());
  const size_t lines = 3, first = shown + 1 > lines ? shown + 1 - lines : 0;
  for (size_t i = first; i <= shown && i < train_samples_.size(); ++i) {
    ImGui::TextUnformatted(train_samples_[i].c_str());
    record_box(layout_, LayoutKind::label, "train samples", train_samples_[i].c_str(), ImGui::GetItemRectMin(),
               ImGui::GetItemRectMax());
  }
  for (size_t i = shown + 1 - first; i < lines; ++i) ImGui::NewLine();  // the layout below stays put
}

// Every head's detector score at the snapshot shown, [layers, heads], on the fixed range [0, 1].
void App::draw_head_scores(const Snapshot& snap, float w) {
  static const Str titles[head_score_kinds] = {Str::score_previous_token, Str::score_duplicate_token, Str::score_induction,
                                               Str::score_prefix_matching, Str::score_q_composition,
                                               Str::score_k_composition, Str::score_v_composition};
  if (snap.head_scores[size_t(train_score_kind_)].size() == 0) train_score_kind_ = 0;
  ImGui::SetNextItemWidth(w);
  if (ImGui::BeginCombo("##score kind", tr(titles[train_score_kind_]))) {
    for (int k = 0; k < int(head_score_kinds); ++k)
      if (snap.head_scores[size_t(k)].size() && ImGui::Selectable(tr(titles[k]), k == train_score_kind_)) train_score_kind_ = k;
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::head_scores_tip));
  const Tensor& scores = snap.head_scores[size_t(train_score_kind_)];
  refresh(train_scores_, {snap.id, &scores, 0, 0}, scores, ColorMap::sequential, true);
  const bool pairs = size_t(train_score_kind_) >= first_composition_kind;  // writer rows, reader columns
  draw_heatmap(train_scores_, pairs ? &train_pair_labels_ : &train_layer_labels_, pairs ? &train_pair_labels_ : &train_head_labels_,
               w, ImGui::GetContentRegionAvail().y, "train scores");
}

// What the head shown does for the task: the validation accuracy with it zero-ablated (and on repeated
// segments, their accuracy and the induction score), on request, then again at each evaluation (live).
void App::draw_ablated_accuracy() {
  char label[96];
  std::snprintf(label, sizeof label,
                tr(training_.language_model() ? Str::head_ablated_next_token : Str::ablated_accuracy), train_layer_,
                train_head_);
  auto& shown = ablated_accuracy_;
  const auto of_this_head = [&] {
    return shown && shown->run == train_view_.run && shown->layer == train_layer_ && shown->head == train_head_;
  };
  const bool asked = train_button("ablated_accuracy", label);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::ablated_accuracy_tip));
  if (asked || (of_this_head() && shown->evaluations != train_view_.evals.size()))
    if (const auto r = training_.ablated_accuracy({{size_t(train_layer_), size_t(train_head_)}}))
      shown = {train_view_.run, train_layer_, train_head_, train_view_.evals.size(), *r, ablated_text(*r)};
  if (!of_this_head()) return;
  ImGui::SameLine();
  ImGui::TextUnformatted(shown->text.c_str());
}

std::string App::ablated_text(const Training::AblatedAccuracy& r) const {
  if (!r.repeated) return format(Str::ablated_accuracy_result, 100 * r.ablated, 100 * r.accuracy, r.step);
  return format(Str::ablated_circuit_result, 100 * r.ablated, 100 * r.accuracy, 100 * *r.repeated_ablated, 100 * *r.repeated,
                *r.induction_ablated, *r.induction, r.step);
}

// The trained model as a model from files, on the replay items, in the Stage tab (or Generate, with
// the sample's prompt).
void App::show_trained_model(Tab tab) {
  auto loaded = std::make_shared<LoadedModel>();
  loaded->name = format(Str::trained_model_name, train_view_.status.step);
  PlaygroundConfig c = playground_.config();
  c.model = ModelKind::loaded;
  c.sentences.clear();
  if (auto lm = training_.language_model_copy()) {
    loaded->pretrained = std::make_shared<const Pretrained>(std::move(*lm));
    for (const ReplayItem& item : training_.replay()) c.sentences.push_back(item.text);
    std::snprintf(generate_prompt_, sizeof generate_prompt_, "%s", training_.sample_prompt().c_str());
  } else {
    loaded->model = *training_.model_copy();
    loaded->vocab = training_.vocab();
    for (const ReplayItem& item : training_.replay()) {
      std::string text;
      for (const std::string& t : item.tokens) text += (text.empty() ? "" : " ") + t;
      c.sentences.push_back(text);
    }
    c.mask = parse_mask_kind(training_.effective_settings()["mask"].get<std::string>());
  }
  c.train = false;
  attach_model(c, std::move(loaded));
  apply(c);
  batch_ = train_item_;
  set_layer(train_layer_);
  head_ = train_head_;
  stage_ = training_.language_model() ? attention_weights_stage(ModelFamily::gpt2, size_t(train_layer_))
                                      : "layers." + std::to_string(train_layer_) + ".self_attn.attention_weights";
  select_tab(tab);
}

void App::save_trained_model() {
  try {
    const Training::ModelFilesBytes files = training_.model_files();
    const auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
    if (training_.language_model()) {  // a GPT-2 folder's files, under their names
      status_ = platform_.save_file("model.safetensors", bytes(files.weights), "application/octet-stream");
      status_ += "; " + platform_.save_file("config.json", bytes(files.config), "application/json");
      status_ += "; " + platform_.save_file("vocab.json", bytes(files.vocab), "application/json");
      status_ += "; " + platform_.save_file("merges.txt", bytes(files.merges), "text/plain");
      return;
    }
    status_ = platform_.save_file("trained.safetensors", bytes(files.weights), "application/octet-stream");
    status_ += "; " + platform_.save_file("trained.config.json", bytes(files.config), "application/json");
    status_ += "; " + platform_.save_file("trained.vocab.json", bytes(files.vocab), "application/json");
  } catch (const std::exception& e) {
    status_ = format(Str::status_save_failed, e.what());
  }
}

}  // namespace attn::ui
