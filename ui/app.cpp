#include "ui/app.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace attn::ui {
namespace {

constexpr size_t max_texture = 4096;  // WebGL2 guarantees at least this texture size
constexpr float font_size = 17.0f;
const ImVec4 error_color(1.0f, 0.45f, 0.4f, 1.0f);
const ImVec4 dim_color(0.65f, 0.65f, 0.7f, 1.0f);

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

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  return s + "]";
}

bool input_size(const char* label, size_t& value, int min_value = 0) {
  int v = int(std::min<size_t>(value, 1u << 30));
  if (!ImGui::InputInt(label, &v)) return false;
  value = size_t(std::max(v, min_value));
  return true;
}

float luminance(const Rgba& c) { return (0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2]) / 255.0f; }

bool uses_sequential_map(const std::string& name) {
  return name == "token_ids" || name == "mask" || name.find("attention_weights") != std::string::npos;
}

}  // namespace

App::App(Playground& playground, Platform& platform) : playground_(playground), platform_(platform) {
  ImGuiStyle& style = ImGui::GetStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0;
  style.FrameRounding = 3;
}

App::~App() {
  for (Heatmap* h : {&main_, &mask_, &unmasked_, &masked_, &pe_})
    if (h->texture) platform_.delete_texture(h->texture);
}

bool App::update_fonts() {
  if (font_generation_ == playground_.config_generation() && !glyphs_.empty()) return false;
  font_generation_ = playground_.config_generation();
  std::vector<uint32_t> wanted;
  for (const auto& s : playground_.config().sentences) {
    const auto cps = code_points(s);
    wanted.insert(wanted.end(), cps.begin(), cps.end());
  }
  bool missing = glyphs_.empty();
  for (uint32_t cp : wanted) missing = missing || (cp <= 0xFFFF && !glyphs_.count(cp));
  if (!missing) return false;
  for (uint32_t cp = 0x20; cp < 0x7F; ++cp) glyphs_.insert(cp);
  for (uint32_t cp : {0xB7u, 0xD7u, 0xF7u, 0x2026u, 0x221Au, 0x2192u}) glyphs_.insert(cp);
  for (uint32_t cp : wanted)
    if (cp <= 0xFFFF && cp >= 0x20) glyphs_.insert(cp);
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
  return true;
}

void App::refresh_labels() {
  const Computed* r = playground_.result();
  if (!r || labels_generation_ == playground_.result_generation()) return;
  labels_generation_ = playground_.result_generation();
  stage_labels_.clear();
  for (const Stage& s : r->trace.stages()) stage_labels_.push_back(s.name + "  " + shape_text(s.value));
  size_t dims = 0;
  for (const Stage& s : r->trace.stages()) dims = std::max(dims, s.value.shape().empty() ? 0 : s.value.shape().back());
  dims = std::max(dims, r->pe_table.shape().empty() ? 0 : r->pe_table.shape().back());
  dim_labels_.clear();
  for (size_t i = 0; i < dims; ++i) dim_labels_.push_back(std::to_string(i));
  size_t rows = std::max(r->tokens.size(), r->pe_table.shape().empty() ? 0 : r->pe_table.shape()[0]);
  batch_labels_.clear();
  for (size_t i = 0; i < rows; ++i) batch_labels_.push_back(std::to_string(i));
  if (!find_stage(stage_)) {
    stage_ = playground_.config().model == ModelKind::tutorial ? "attention_weights"
                                                               : "layers.0.self_attn.attention_weights";
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

void App::refresh(Heatmap& h, const std::string& key, const Tensor& t, const std::vector<size_t>& index, ColorMap map) {
  if (h.key == key && h.texture) return;
  h.key = key;
  h.slice = slice_2d(t, index);
  if (h.slice.rows > max_texture || h.slice.cols > max_texture) {  // show the top-left part
    Slice cut;
    cut.rows = std::min(h.slice.rows, max_texture);
    cut.cols = std::min(h.slice.cols, max_texture);
    cut.leading = h.slice.leading;
    for (size_t i = 0; i < cut.rows; ++i)
      cut.values.insert(cut.values.end(), h.slice.values.begin() + std::ptrdiff_t(i * h.slice.cols),
                        h.slice.values.begin() + std::ptrdiff_t(i * h.slice.cols + cut.cols));
    h.slice = std::move(cut);
  }
  h.map = map;
  h.range = map_range(map, h.slice.values);
  h.pixels = slice_pixels(h.slice, map, h.range);
  h.texture = platform_.upload_texture(h.texture, int(h.slice.cols), int(h.slice.rows), h.pixels.data());
}

void App::draw() {
  playground_.update();  // no-op unless the configuration changed
  refresh_labels();
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
  if (!playground_.error().empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, error_color);
    ImGui::TextWrapped("Error: %s", playground_.error().c_str());
    ImGui::PopStyleColor();
  }
  if (playground_.result() && ImGui::BeginTabBar("views")) {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    if (ImGui::BeginTabItem("Stage")) {
      draw_stage_view(avail.x, avail.y - ImGui::GetFrameHeightWithSpacing());
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Masks")) {
      draw_masks_view(avail.x, avail.y - ImGui::GetFrameHeightWithSpacing());
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Positional encoding")) {
      draw_pe_view(avail.x, avail.y - ImGui::GetFrameHeightWithSpacing());
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
  ImGui::End();
}

void App::draw_controls() {
  PlaygroundConfig c = playground_.config();
  bool changed = false;
  ImGui::TextUnformatted("attnlab playground");
  int model = c.model == ModelKind::tutorial ? 0 : 1;
  const bool first = ImGui::RadioButton("Tutorial 1: attention", &model, 0);
  const bool second = ImGui::RadioButton("Tutorial 2: Transformer", &model, 1);
  if (first || second) {
    const ModelKind kind = model == 0 ? ModelKind::tutorial : ModelKind::transformer;
    if (kind != c.model) {
      c = defaults_for(kind, c);
      changed = true;
    }
  }
  if (platform_.external_sentence_field()) {
    ImGui::TextColored(dim_color, "Sentences: edit them in the text field above");
  } else {
    if (sentence_generation_ != playground_.config_generation() && !ImGui::IsAnyItemActive()) {
      const std::string text = sentences_text(c.sentences);
      sentence_buffer_.assign(text.begin(), text.end());
      sentence_buffer_.resize(text.size() + 4096, '\0');
      sentence_generation_ = playground_.config_generation();
    }
    ImGui::TextUnformatted("Sentences (one per line)");
    if (ImGui::InputTextMultiline("##sentences", sentence_buffer_.data(), sentence_buffer_.size(),
                                  ImVec2(-1, ImGui::GetTextLineHeight() * 5))) {
      c.sentences = parse_sentences_text(sentence_buffer_.data());
      changed = true;
    }
  }
  ImGui::PushItemWidth(140);
  uint64_t seed = c.seed;
  if (ImGui::InputScalar("seed", ImGuiDataType_U64, &seed)) {
    c.seed = seed;
    changed = true;
  }
  changed |= input_size("d_model", c.d_model);
  changed |= input_size("max_len", c.max_len);
  static const char* masks[] = {"none", "padding", "causal", "padding+causal"};
  int mask = int(c.mask);
  if (ImGui::Combo("mask", &mask, masks, 4)) {
    c.mask = MaskKind(mask);
    changed = true;
  }
  if (c.model == ModelKind::transformer) {
    changed |= input_size("heads", c.num_heads);
    changed |= input_size("layers", c.num_layers);
    changed |= input_size("d_ff (0 = 4 d)", c.d_ff);
    changed |= input_size("classes", c.num_classes);
    float dropout = float(c.dropout);
    if (ImGui::SliderFloat("dropout", &dropout, 0.0f, 0.9f, "%.2f")) {
      c.dropout = double(dropout);
      changed = true;
    }
    changed |= ImGui::Checkbox("train (dropout on)", &c.train);
    changed |= ImGui::Checkbox("pre-norm", &c.norm_first);
  }
  ImGui::PopItemWidth();
  if (ImGui::Button("Reset to the tutorial")) {
    c = PlaygroundConfig();
    changed = true;
  }
  if (changed) apply(c);
  if (const Computed* r = playground_.result())
    ImGui::TextColored(dim_color, "%zu parameters, computed in %.1f ms", r->parameter_count, r->compute_ms);
  if (!status_.empty()) ImGui::TextWrapped("%s", status_.c_str());
}

void App::draw_pipeline() {
  const Computed* r = playground_.result();
  if (!r) return;
  ImGui::TextUnformatted("Pipeline");
  const size_t layers = playground_.config().model == ModelKind::transformer ? playground_.config().num_layers : 0;
  if (layers > 1) {
    ImGui::SetNextItemWidth(140);
    if (ImGui::SliderInt("layer", &layer_, 0, int(layers) - 1)) {
      const int current = stage_layer(stage_);
      if (current >= 0) {
        const size_t dot = stage_.find('.', 7);
        const std::string renamed = "layers." + std::to_string(layer_) + stage_.substr(dot);
        if (find_stage(renamed)) stage_ = renamed;
      }
    }
  }
  layer_ = std::clamp(layer_, 0, std::max(0, int(layers) - 1));
  ImGui::BeginChild("stages", ImVec2(0, 0), false);
  const auto& stages = r->trace.stages();
  for (size_t i = 0; i < stages.size() && i < stage_labels_.size(); ++i) {
    const int layer = stage_layer(stages[i].name);
    if (layer >= 0 && layer != layer_) continue;
    if (ImGui::Selectable(stage_labels_[i].c_str(), stages[i].name == stage_)) stage_ = stages[i].name;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", stage_formula(stages[i].name).c_str());
  }
  ImGui::EndChild();
}

void App::draw_stage_view(float width, float height) {
  const Computed* r = playground_.result();
  const Stage* stage = find_stage(stage_);
  if (!r || !stage) return;
  const Tensor& t = stage->value;
  const auto& shape = t.shape();
  ImGui::Text("%s   %s", stage->name.c_str(), shape_text(t).c_str());
  ImGui::TextColored(dim_color, "%s", stage_formula(stage->name).c_str());
  std::vector<size_t> index;
  if (shape.size() >= 3) {
    if (shape[0] > 1) {
      ImGui::SetNextItemWidth(160);
      ImGui::SliderInt("batch item", &batch_, 0, int(shape[0]) - 1);
      ImGui::SameLine();
    }
    batch_ = std::clamp(batch_, 0, int(shape[0]) - 1);
    index.push_back(size_t(batch_));
    if (shape.size() == 4) {
      ImGui::SetNextItemWidth(160);
      ImGui::SliderInt("head", &head_, 0, int(shape[1]) - 1);
      head_ = std::clamp(head_, 0, int(shape[1]) - 1);
      index.push_back(size_t(head_));
    }
    ImGui::NewLine();
  }
  char key[256];
  std::snprintf(key, sizeof key, "%s|%llu|%d|%d", stage->name.c_str(),
                static_cast<unsigned long long>(playground_.result_generation()), batch_, head_);
  const bool sequential = uses_sequential_map(stage->name);
  refresh(main_, key, t, index, sequential ? ColorMap::sequential : ColorMap::diverging);
  // Labels: tokens of the chosen sentence on sequence axes.
  const size_t b = std::min(size_t(batch_), r->tokens.size() - 1);
  const std::vector<std::string>* rows = nullptr;
  const std::vector<std::string>* cols = &dim_labels_;
  const size_t seq = r->tokens.empty() ? 0 : r->tokens[0].size();
  if (shape.size() >= 3 && shape[shape.size() - 2] == seq) rows = &r->tokens[b];
  if (is_attention_matrix(stage->name)) cols = &r->tokens[b];
  if (shape.size() == 2) rows = &batch_labels_;
  const float y0 = ImGui::GetCursorPosY();
  const bool small = main_.slice.rows * main_.slice.cols <= 400 && main_.slice.cols <= 24;
  draw_heatmap(main_, rows, cols, width, small ? height * 0.55f : height - 90.0f, "main");
  export_buttons(main_, stage);
  if (small) {
    ImGui::BeginChild("numbers", ImVec2(0, std::max(60.0f, height - (ImGui::GetCursorPosY() - y0) - 10)), false,
                      ImGuiWindowFlags_HorizontalScrollbar);
    draw_number_table(main_, rows, cols);
    ImGui::EndChild();
  }
}

void App::draw_masks_view(float width, float height) {
  const Computed* r = playground_.result();
  const bool transformer = playground_.config().model == ModelKind::transformer;
  const Stage* weights = find_stage(transformer ? "layers.0.self_attn.attention_weights" : "attention_weights");
  if (!r || !weights || r->unmasked_weights.size() == 0) {
    ImGui::TextUnformatted("No attention layer in this configuration.");
    return;
  }
  const size_t B = r->tokens.size();
  if (B > 1) {
    ImGui::SetNextItemWidth(160);
    ImGui::SliderInt("batch item", &batch_, 0, int(B) - 1);
  }
  batch_ = std::clamp(batch_, 0, int(B) - 1);
  std::vector<size_t> index{size_t(batch_)};
  if (transformer) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(160);
    ImGui::SliderInt("head (layer 0)", &head_, 0, int(weights->value.shape()[1]) - 1);
    head_ = std::clamp(head_, 0, int(weights->value.shape()[1]) - 1);
    index.push_back(size_t(head_));
  }
  ImGui::TextWrapped("Mask: %s (1 = may attend). Rows are queries, columns are keys.",
                     mask_kind_name(playground_.config().mask).c_str());
  char key[128];
  std::snprintf(key, sizeof key, "%llu|%d|%d", static_cast<unsigned long long>(playground_.result_generation()), batch_,
                head_);
  refresh(mask_, std::string("mask|") + key, r->mask, index, ColorMap::sequential);
  refresh(unmasked_, std::string("unmasked|") + key, r->unmasked_weights, index, ColorMap::sequential);
  refresh(masked_, std::string("masked|") + key, weights->value, index, ColorMap::sequential);
  const auto& tokens = r->tokens[size_t(batch_)];
  const float w = (width - 20) / 3.0f, h = std::min(height * 0.55f, w);
  ImGui::BeginGroup();
  ImGui::TextUnformatted("mask");
  draw_heatmap(mask_, &tokens, &tokens, w, h, "mask");
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::TextUnformatted("weights without mask");
  draw_heatmap(unmasked_, &tokens, &tokens, w, h, "unmasked");
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::TextUnformatted("weights with mask");
  draw_heatmap(masked_, &tokens, &tokens, w, h, "masked");
  ImGui::EndGroup();
  // Attention paid to [PAD] keys by each query, with and without the mask.
  const size_t S = tokens.size();
  bool any_pad = false;
  for (const auto& tok : tokens) any_pad = any_pad || tok == pad_token;
  if (!any_pad) {
    ImGui::TextColored(dim_color, "This sentence has no [PAD]: pick a shorter one to see attention to padding.");
    return;
  }
  ImGui::TextUnformatted("Attention to [PAD] (sum of the weights on [PAD] keys)");
  if (ImGui::BeginTable("pad", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("query");
    ImGui::TableSetupColumn("without mask");
    ImGui::TableSetupColumn("with mask");
    ImGui::TableHeadersRow();
    for (size_t q = 0; q < S && q < unmasked_.slice.rows; ++q) {
      float without = 0, with = 0;
      for (size_t k = 0; k < S; ++k)
        if (tokens[k] == pad_token) {
          without += unmasked_.slice.values[q * S + k];
          with += masked_.slice.values[q * S + k];
        }
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(tokens[q].c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", double(without));
      ImGui::TableNextColumn();
      ImGui::Text("%.4f", double(with));
    }
    ImGui::EndTable();
  }
}

void App::draw_pe_view(float width, float height) {
  const Computed* r = playground_.result();
  if (!r) return;
  ImGui::TextWrapped("Sinusoidal positional encoding: %s (positions x dimensions); the first %zu rows are used.",
                     shape_text(r->pe_table).c_str(), r->tokens.empty() ? size_t(0) : r->tokens[0].size());
  char key[64];
  std::snprintf(key, sizeof key, "pe|%llu", static_cast<unsigned long long>(playground_.result_generation()));
  refresh(pe_, key, r->pe_table, {}, ColorMap::diverging);
  draw_heatmap(pe_, &batch_labels_, &dim_labels_, width, height - 60, "pe");
  Stage pe{"positional_encoding_table", r->pe_table, PrintDtype::float32};
  export_buttons(pe_, &pe);
}

void App::draw_heatmap(Heatmap& h, const std::vector<std::string>* row_labels,
                       const std::vector<std::string>* col_labels, float max_w, float max_h, const char* id) {
  if (!h.texture || h.slice.rows == 0 || h.slice.cols == 0) return;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float rows = float(h.slice.rows), cols = float(h.slice.cols);
  float label_w = 0;
  if (row_labels)
    for (size_t i = 0; i < h.slice.rows && i < row_labels->size() && i < 512; ++i)
      label_w = std::max(label_w, ImGui::CalcTextSize((*row_labels)[i].c_str()).x);
  label_w = row_labels ? std::min(label_w + 8, 120.0f) : 0;
  const float label_h = col_labels ? line + 4 : 0, legend_w = 90;
  float cell = std::min((max_w - label_w - legend_w) / cols, (max_h - label_h) / rows);
  cell = std::clamp(cell, 0.05f, 80.0f);
  const bool show_rows = row_labels && cell >= line * 0.9f, show_cols = col_labels && cell >= line * 0.9f;
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 origin(top.x + (show_rows ? label_w : 0), top.y + (show_cols ? label_h : 0));
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text);
  if (show_cols)
    for (size_t j = 0; j < h.slice.cols && j < col_labels->size(); ++j) {
      const ImVec2 a(origin.x + float(j) * cell, top.y), b(a.x + cell, origin.y);
      dl->PushClipRect(a, b, true);
      const float tw = ImGui::CalcTextSize((*col_labels)[j].c_str()).x;
      dl->AddText(ImVec2(a.x + std::max(1.0f, (cell - tw) * 0.5f), a.y), text_col, (*col_labels)[j].c_str());
      dl->PopClipRect();
    }
  if (show_rows)
    for (size_t i = 0; i < h.slice.rows && i < row_labels->size(); ++i) {
      const ImVec2 a(top.x, origin.y + float(i) * cell), b(origin.x - 4, a.y + cell);
      dl->PushClipRect(a, b, true);
      dl->AddText(ImVec2(a.x, a.y + (cell - line) * 0.5f), text_col, (*row_labels)[i].c_str());
      dl->PopClipRect();
    }
  ImGui::SetCursorScreenPos(origin);
  ImGui::PushID(id);
  ImGui::Image(h.texture, ImVec2(cell * cols, cell * rows));
  h.x = origin.x;
  h.y = origin.y;
  h.cell_w = h.cell_h = cell;
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetMousePos();
    const size_t i = std::min(size_t(std::max(0.0f, (m.y - origin.y) / cell)), h.slice.rows - 1);
    const size_t j = std::min(size_t(std::max(0.0f, (m.x - origin.x) / cell)), h.slice.cols - 1);
    const float v = h.slice.values[i * h.slice.cols + j];
    ImGui::BeginTooltip();
    char where[96] = "";
    for (size_t k = 0; k < h.slice.leading.size(); ++k) {
      const size_t used = std::strlen(where);
      std::snprintf(where + used, sizeof where - used, "%zu, ", h.slice.leading[k]);
    }
    ImGui::Text("[%s%zu, %zu]", where, i, j);
    if (row_labels && i < row_labels->size()) ImGui::Text("row: %s", (*row_labels)[i].c_str());
    if (col_labels && j < col_labels->size()) ImGui::Text("column: %s", (*col_labels)[j].c_str());
    if (v <= masked_threshold)
      ImGui::Text("%.9g (masked)", double(v));
    else
      ImGui::Text("%.9g", double(v));
    ImGui::EndTooltip();
  }
  // Values on the cells when they fit.
  if (cell >= 46 && h.slice.rows * h.slice.cols <= 1024)
    for (size_t i = 0; i < h.slice.rows; ++i)
      for (size_t j = 0; j < h.slice.cols; ++j) {
        const float v = h.slice.values[i * h.slice.cols + j];
        char text[24];
        if (v <= masked_threshold)
          std::snprintf(text, sizeof text, "-1e9");
        else
          std::snprintf(text, sizeof text, "%.3f", double(v));
        const Rgba c = value_color(h.map, h.range, v);
        const ImVec2 size = ImGui::CalcTextSize(text);
        dl->AddText(ImVec2(origin.x + float(j) * cell + (cell - size.x) * 0.5f, origin.y + float(i) * cell + (cell - size.y) * 0.5f),
                    luminance(c) > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), text);
      }
  // Legend: the colour scale with its range.
  const float lx = origin.x + cell * cols + 14, lh = std::max(60.0f, std::min(cell * rows, 240.0f));
  constexpr int steps = 24;
  for (int s = 0; s < steps; ++s) {
    const double t0 = 1.0 - double(s) / steps, t1 = 1.0 - double(s + 1) / steps;
    const Rgba a = color_at(h.map, t0), b = color_at(h.map, t1);
    const ImU32 ca = IM_COL32(a[0], a[1], a[2], 255), cb = IM_COL32(b[0], b[1], b[2], 255);
    const float y0 = origin.y + lh * float(s) / steps, y1 = origin.y + lh * float(s + 1) / steps;
    dl->AddRectFilledMultiColor(ImVec2(lx, y0), ImVec2(lx + 14, y1), ca, ca, cb, cb);
  }
  char num[32];
  std::snprintf(num, sizeof num, "%.4g", double(h.range.hi));
  dl->AddText(ImVec2(lx + 18, origin.y - 2), text_col, num);
  std::snprintf(num, sizeof num, "%.4g", (double(h.range.lo) + double(h.range.hi)) / 2);
  dl->AddText(ImVec2(lx + 18, origin.y + lh / 2 - line / 2), text_col, num);
  std::snprintf(num, sizeof num, "%.4g", double(h.range.lo));
  dl->AddText(ImVec2(lx + 18, origin.y + lh - line), text_col, num);
  ImGui::SetCursorScreenPos(top);
  ImGui::Dummy(ImVec2((show_rows ? label_w : 0) + cell * cols + legend_w,
                      (show_cols ? label_h : 0) + std::max(cell * rows, lh) + 4));
  ImGui::PopID();
}

void App::draw_number_table(const Heatmap& h, const std::vector<std::string>* row_labels,
                            const std::vector<std::string>* col_labels) {
  const int ncols = int(h.slice.cols) + 1;
  if (ncols > 64 || !ImGui::BeginTable("numbers", ncols, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
    return;
  ImGui::TableSetupColumn("");
  for (size_t j = 0; j < h.slice.cols; ++j)
    ImGui::TableSetupColumn(col_labels && j < col_labels->size() ? (*col_labels)[j].c_str() : "");
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < h.slice.rows; ++i) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (row_labels && i < row_labels->size())
      ImGui::TextUnformatted((*row_labels)[i].c_str());
    else
      ImGui::Text("%zu", i);
    for (size_t j = 0; j < h.slice.cols; ++j) {
      ImGui::TableNextColumn();
      const float v = h.slice.values[i * h.slice.cols + j];
      if (v <= masked_threshold)
        ImGui::TextUnformatted("-1e9");
      else
        ImGui::Text("%.4f", double(v));
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("[%zu, %zu] = %.9g", i, j, double(v));
    }
  }
  ImGui::EndTable();
}

void App::export_buttons(const Heatmap& h, const Stage* stage) {
  if (!stage) return;
  std::string base = stage->name;
  for (size_t k : h.slice.leading) base += "_" + std::to_string(k);
  try {
    if (ImGui::Button("Export PNG")) {
      const size_t cell = std::max<size_t>(1, std::min<size_t>(32, 512 / std::max(h.slice.rows, h.slice.cols)));
      status_ = platform_.save_file(base + ".png", png_bytes(h.pixels, h.slice.cols, h.slice.rows, cell), "image/png");
    }
    ImGui::SameLine();
    if (ImGui::Button("Export JSON")) {
      const std::string text = stage_json_text(*stage);
      status_ = platform_.save_file(stage->name + ".json", std::vector<uint8_t>(text.begin(), text.end()),
                                    "application/json");
    }
    ImGui::SameLine();
    if (ImGui::Button("Export .npy"))
      status_ = platform_.save_file(stage->name + ".npy", stage_npy_bytes(stage->value), "application/octet-stream");
  } catch (const std::exception& e) {
    status_ = std::string("export failed: ") + e.what();
  }
}

Json App::view_json() const {
  Json colors = Json::array(), values = Json::array();
  for (size_t i = 0; i < main_.slice.values.size(); ++i) {
    const Rgba c = value_color(main_.map, main_.range, main_.slice.values[i]);
    colors.push_back({c[0], c[1], c[2]});
    values.push_back(main_.slice.values[i]);
  }
  return {{"stage", stage_},
          {"batch", batch_},
          {"head", head_},
          {"heatmap",
           {{"x", main_.x}, {"y", main_.y}, {"cell_w", main_.cell_w}, {"cell_h", main_.cell_h},
            {"rows", main_.slice.rows}, {"cols", main_.slice.cols}, {"colors", colors}, {"values", values}}}};
}

}  // namespace attn::ui
