// The playground's Dear ImGui UI, shared by the web shell (web/) and attn-gui (native/gui/). Only ImGui
// calls here: the shells own the window, the GL context and the backends, and provide Platform.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/playground.hpp"

namespace attn::ui {

// What a shell provides.
class Platform {
 public:
  virtual ~Platform() = default;
  // Creates (existing == 0) or replaces an RGBA8 texture, nearest-neighbour sampled; returns its id.
  virtual ImTextureID upload_texture(ImTextureID existing, int width, int height, const uint8_t* rgba) = 0;
  virtual void delete_texture(ImTextureID texture) = 0;
  // A browser download or a file; returns a message for the status line ("saved …").
  virtual std::string save_file(const std::string& name, const std::vector<uint8_t>& bytes,
                                const std::string& mime) = 0;
  // True where the sentences are edited outside ImGui (the web page's text field: IME input).
  virtual bool external_sentence_field() const = 0;
  // A TrueType font with Hangul (NanumGothic, subset in the web build).
  virtual std::string font_path() const = 0;
};

// One heatmap on screen: a cached texture of a 2-D slice, rebuilt only when its key changes.
struct Heatmap {
  ImTextureID texture = ImTextureID();
  std::string key;  // what the texture shows (stage, indices, result generation)
  Slice slice;
  ColorMap map = ColorMap::sequential;
  ValueRange range;
  std::vector<uint8_t> pixels;
  // Where it was last drawn (screen pixels) — for tests and for picking.
  float x = 0, y = 0, cell_w = 0, cell_h = 0;
};

class App {
 public:
  App(Playground& playground, Platform& platform);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Before ImGui::NewFrame: (re)builds the font atlas when the sentences need glyphs it lacks; returns
  // true when the shell must re-upload the font texture.
  bool update_fonts();
  // Between NewFrame and Render: the whole UI (recomputes first if the configuration changed).
  void draw();

  // For tests and the JS API: the main heatmap as last drawn, and the selected stage.
  const Heatmap& main_heatmap() const { return main_; }
  const std::string& selected_stage() const { return stage_; }
  void select_stage(const std::string& name) { stage_ = name; }
  const std::string& status() const { return status_; }
  Json view_json() const;  // {"stage", "batch", "head", "heatmap": {x, y, cell_w, cell_h, rows, cols, colors}}

 private:
  void draw_controls();
  void draw_pipeline();
  void draw_stage_view(float width, float height);
  void draw_masks_view(float width, float height);
  void draw_pe_view(float width, float height);
  void refresh(Heatmap& h, const std::string& key, const Tensor& t, const std::vector<size_t>& index, ColorMap map);
  void draw_heatmap(Heatmap& h, const std::vector<std::string>* row_labels,
                    const std::vector<std::string>* col_labels, float max_w, float max_h, const char* id);
  void draw_number_table(const Heatmap& h, const std::vector<std::string>* row_labels,
                         const std::vector<std::string>* col_labels);
  void export_buttons(const Heatmap& h, const Stage* stage);
  const Stage* find_stage(const std::string& name) const;
  void apply(const PlaygroundConfig& config) { playground_.set_config(config); }

  Playground& playground_;
  Platform& platform_;
  std::string stage_ = "attention_weights";
  int batch_ = 0, head_ = 0, layer_ = 0;
  Heatmap main_, mask_, unmasked_, masked_, pe_;
  std::string status_;
  std::vector<char> sentence_buffer_;
  uint64_t sentence_generation_ = 0;
  std::set<uint32_t> glyphs_;  // code points in the font atlas
  ImVector<ImWchar> glyph_ranges_;
  uint64_t font_generation_ = 0;
  std::vector<std::string> dim_labels_, batch_labels_, stage_labels_;
  uint64_t labels_generation_ = 0;
  void refresh_labels();
};

}  // namespace attn::ui
