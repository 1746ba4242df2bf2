// The playground's Dear ImGui UI, shared by the web shell (web/) and attn-gui (native/gui/). Only ImGui
// calls here: the shells own the window, the GL context and the backends, and provide Platform.
// An idle frame (nothing changed) allocates nothing and runs no engine code: every string, slice,
// texture and cached number below is rebuilt only when its key (configuration/result generation,
// selected stage, indices) changes.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/attribution.hpp"
#include "ui/hub.hpp"
#include "ui/layout_check.hpp"
#include "ui/model_files.hpp"
#include "ui/patching.hpp"
#include "core/model/decoder_views.hpp"
#include "ui/playground.hpp"
#include "core/model/generate.hpp"
#include "ui/training.hpp"

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
  // Puts text on the clipboard: ImGui's (the system's, natively); the web page's navigator.clipboard too.
  virtual void copy_text(const std::string& text) { ImGui::SetClipboardText(text.c_str()); }
  // True where the sentences are edited outside ImGui (the web page's text field: IME input).
  virtual bool external_sentence_field() const = 0;
  // True where model files are chosen outside ImGui (the web page's file input); else path fields.
  virtual bool external_model_picker() const = 0;
  // A TrueType font with Hangul (NanumGothic, subset in the web build).
  virtual std::string font_path() const = 0;
  // Compute backends for the Transformer (native only: attn-gui passes native/backends' choices; the
  // web shell has none, and then no selector is drawn). Names besides "exact", and the factory
  // (called on the GUI thread, once per selection; throws InputError when unavailable).
  virtual std::vector<std::string> backend_names() const { return {}; }
  virtual BackendFactory backend_factory() { return nullptr; }
  // The Hugging Face Hub (ui/hub.hpp): whether this shell downloads from it (else no field is drawn), and a
  // download of `ref`'s files from `endpoint` ("" is the shell's default) started.
  virtual bool has_hub() const { return false; }
  virtual std::unique_ptr<HubDownload> open_hub(const hub::Reference& /*ref*/, const std::string& /*endpoint*/) {
    return nullptr;
  }
};

// What a heatmap's texture shows: rebuilt only when this changes.
struct ViewKey {
  uint64_t generation = 0;       // the result (or cache) it was built from
  const void* source = nullptr;  // the tensor
  size_t i0 = 0, i1 = 0;         // the fixed leading indices (batch, head)
  bool operator==(const ViewKey& o) const {
    return generation == o.generation && source == o.source && i0 == o.i0 && i1 == o.i1;
  }
};

// One heatmap on screen: a cached texture of a 2-D slice.
struct Heatmap {
  ImTextureID texture = ImTextureID();
  ViewKey key;
  Slice slice;
  ColorMap map = ColorMap::sequential;
  ValueRange range;
  std::vector<uint8_t> pixels;
  std::vector<float> row_sums, col_sums;  // of the slice's rows and columns, masked values left out (the hover)
  // Zoom and pan (long inputs): `zoom` times the size that fits (1: the whole slice), from the first row
  // and column shown (fractional). Kept while the slice keeps its shape.
  float zoom = 1, view_row = 0, view_col = 0;
  // Where it was last drawn (screen pixels) — for tests and for picking: the corner of the whole slice at
  // this zoom (outside the box when panned) and a cell's size; the box the picture fills; the minimap
  // (x, y, w, h; zero while not zoomed).
  float x = 0, y = 0, cell_w = 0, cell_h = 0;
  float box[4] = {}, minimap[4] = {};
};

// The width of a heatmap's legend as draw_heatmap draws it (heatmaps side by side make room for the widest).
float legend_width(const Heatmap& h);

enum class Tab { stage, masks, positional_encoding, interventions, attribution, train, generate, compare, tour };
// "stage" | "masks" | "positional_encoding" | "interventions" | "attribution" | "train" | "generate" | "compare" |
// "tour"; parse throws
// InputError for another name.
const char* tab_name(Tab tab);
Tab parse_tab(const std::string& name);

class App {
 public:
  // Where a model-view cell was drawn (screen pixels).
  struct GridCell {
    int layer, head;
    float x, y, w, h;
  };
  App(Playground& playground, Platform& platform);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // Before ImGui::NewFrame: (re)builds the font atlas when the sentences need glyphs it lacks; returns
  // true when the shell must re-upload the font texture.
  bool update_fonts();
  // Between NewFrame and Render: the whole UI (recomputes first if the configuration changed).
  void draw();

  // Loads a model from files and switches to it; returns "" or the problem (also on the status line).
  std::string load_model_files(const ModelFiles& files);
  // The same on a worker thread (at once where there are none): the Model files section shows its
  // progress with a Cancel button, and the model is switched to on the frame after it has been read.
  void start_loading(ModelFiles files);
  // Downloads a Hugging Face Hub model ("ORG/NAME[@REVISION]") with the shell's client and switches to it
  // once read (the field's Open button, and links: model=ORG/NAME); returns "" or why it cannot start.
  std::string open_hub_model(const std::string& name);
  // The download's Cancel button: what has arrived stays in the cache; the model shown before stays.
  void cancel_hub_download();
  // True while something changes on its own (a model being read, training playing): the shell should
  // draw frames without waiting for input.
  bool busy() const;

  // For tests and the JS API: the main heatmap as last drawn, and the selected stage.
  const Heatmap& main_heatmap() const { return main_; }
  const std::string& selected_stage() const { return stage_; }
  void select_stage(const std::string& name) { stage_ = name; }
  // Shows a tab from the next frame on.
  void select_tab(Tab tab) { pending_tab_ = int(tab); }
  // For automation: any of {"tab", "stage", "batch", "layer", "head", "model_view", "patching", "train_item",
  // "train_layer", "train_head", "replay", "train_score", "tour", "generate", "generate_token",
  // "generate_layer", "png_scale" (1, 2, 4), "zoom" ([zoom, first row, first column] of the Stage view's heatmap)} (indices clamped when drawn; tour 0 ends the tour; "generate": the Generate tab's
  // settings {prompt, max_new_tokens, temperature, top_k, top_p, seed} (generate_settings), which start
  // it, a token a frame); unknown keys and wrong types throw InputError.
  void select_view(const Json& view);
  const std::string& status() const { return status_; }
  // What the last frame drew where, and what of it overlaps or is cut off (ui/layout_check.hpp).
  const LayoutLog& layout() const { return layout_; }
  // The views a layout check draws, for select_view: every stage of the result, the model view, the
  // Masks, Positional encoding and Train tabs.
  Json layout_views() const;
  // {"tab", "stage", "batch", "head", "layer", "lang", "tour", "missing_glyphs", "layout",
  //  "heatmap": {x, y, cell_w, cell_h, rows, cols, colors, values (both empty past 65,536 cells), zoom, view_row,
  //  view_col, box, minimap, row_sums, col_sums, export}, "masks": {"layer", "head", "unmasked", "masked", "pad_without", "pad_with"},
  //  "model_view": {layers, heads, cells: [{layer, head, x, y, w, h}]}, "interventions": {view, cells,
  //  ablated (its text), effect: [line, …], patching: {attn patch --json's document, done, error, heads:
  //  {x, y, cell_w, cell_h}}}, "train": {item, layer, head,
  //  replay, buttons: {name: [x, y, w, h]}, heatmap: {x, y, cell_w, rows, cols, values}, language_model,
  //  samples: [{step, sample}], head_scores: {kind: [[…]]} (of the snapshot shown)},
  //  "generate": {running, done, error, text, ids, tokens, probabilities, selected, layer,
  //  heatmap: {x, y, cell_w, rows, cols, values}},
  //  "compare": {pinned, a, b, summary, stage (texts shown), maps: [A, B, B - A: {x, y, cell_w, cell_h, rows,
  //  cols, lo, hi, values}], row_labels, col_labels (the difference's)},
  //  "layout": {"boxes", "problems": [sentence, …]}}
  Json view_json() const;

  // Starts the Interventions tab's activation patching on the current result with the configuration's
  // inputs (its Run button): "" or why it cannot; the sweep then runs a few milliseconds each frame.
  std::string start_patching();
  PatchingSweep& patching() { return patching_; }

  // The Train tab's run. Its settings live in the configuration (PlaygroundConfig::training, so the URL
  // hash carries them); configure_training() builds a run from settings and keeps them there, or
  // returns why it cannot (the configuration unchanged).
  Training& training() { return training_; }
  std::string configure_training(const Json& settings);
  // The run of the configuration's settings, built if there is none yet: "" or why it cannot be.
  std::string ensure_training();
  // Without a worker thread, each frame trains for at most this long while playing.
  static constexpr double train_budget_ms = 6;

  // The Generate tab's run with the loaded GPT-2 (its prompt and sampling settings): "" or why it
  // cannot start; it then generates a token a frame.
  std::string start_generation(const GenerateSettings& settings);

 private:
  void build_font_atlas();
  void sync_draft();
  void draw_controls();
  void draw_language_choice();
  // The guided tour (ui/tour.hpp): the step's text above the Stage view of its stage.
  void sync_tour();
  void go_to_tour_step(int step);
  void draw_tour_view(float width);
  void draw_model_choice();
  void draw_backend_choice();
  void draw_sizes();
  void draw_loaded_model();
  void draw_checkpoint(const Pretrained& checkpoint);
  void draw_decoder(const DecoderModel& decoder);
  void draw_next_tokens();
  void draw_model_files();
  void draw_loading();
  // The "Hugging Face model" field and its download (ui/app_hub.cpp).
  void draw_hub();
  void draw_hub_progress();
  void poll_hub();
  void hub_gave_up(const std::string& error, const std::string& status);
  Json hub_json() const;
  std::string use_model(LoadResult loaded);
  void draw_pipeline();
  void set_layer(int layer);
  void draw_stage_view(float width);
  void draw_masks_view(float width);
  void update_mask_cache(const Computed& r);
  void sum_pad_attention();
  void draw_pad_table();
  void draw_pe_view(float width);
  // Rebuilds h when key changed (true); a mask (0/1) uses the fixed range [0, 1].
  bool refresh(Heatmap& h, const ViewKey& key, const Tensor& t, ColorMap map, bool is_mask = false);
  // Draws h.slice (cut to what a texture holds) in `map` over `range`: its pixels and texture.
  void show_slice(Heatmap& h, ColorMap map, ValueRange range);
  // A stage's axis labels for item `item`: its tokens on sequence axes, else indices (null: none).
  struct AxisLabels {
    const std::vector<std::string>* rows;
    const std::vector<std::string>* cols;
  };
  AxisLabels axis_labels(const Computed& r, const Stage& stage, size_t item) const;
  // A heatmap with its axis labels and legend in at most max_w x max_h (id also names it in the layout);
  // legend_room: at least this wide for the legend (heatmaps side by side get the same cells).
  void draw_heatmap(Heatmap& h, const std::vector<std::string>* row_labels,
                    const std::vector<std::string>* col_labels, float max_w, float max_h, const char* id,
                    float legend_room = 0);
  void draw_row_labels(const Heatmap& h, const std::vector<std::string>& labels, ImVec2 top, float label_w,
                       const char* id);
  void draw_col_labels(const Heatmap& h, const std::vector<std::string>& labels, int lines, float widest, ImVec2 bounds,
                       float top, const char* id);
  void draw_cell_values(const Heatmap& h);
  // The minimap of a zoomed heatmap at `at`, `w` wide: the whole slice, the part shown framed; a click or a
  // drag there moves the view. Returns its height.
  float draw_minimap(Heatmap& h, ImVec2 at, float w, const char* id);
  // A text item cut to max_w (an ellipsis, the whole text in a tooltip), recorded as a title of owner.
  void fitted_title(const char* text, float max_w, const char* owner);
  void draw_number_table(const Heatmap& h, const std::vector<std::string>* row_labels,
                         const std::vector<std::string>* col_labels);
  // A heatmap's exports, as a row of buttons or (menu) one small button opening them: PNG at the chosen
  // scale; SVG, CSV and LaTeX (copied) with `rows` / `cols` as its labels, else the indices; JSON and .npy
  // of its stage.
  void export_buttons(const Heatmap& h, const char* name, const Tensor& value, PrintDtype dtype, bool menu = false,
                      const std::vector<std::string>* rows = nullptr, const std::vector<std::string>* cols = nullptr);
  // Saves make()'s SVG as `file`; a refusal (an empty view, too many cells) is the status line's message.
  void save_svg(const std::string& file, const std::function<std::string()>& make);
  const Stage* find_stage(const std::string& name) const;
  void apply(const PlaygroundConfig& config) { playground_.set_config(config); }
  void refresh_labels();
  // The model view: every layer x head of one item, small; a click selects that layer and head.
  template <class CellTensor>
  bool draw_head_grid(std::vector<Heatmap>& cells, std::vector<GridCell>& drawn, size_t layers, size_t heads,
                      CellTensor cell_tensor, ImVec2 size, int& layer, int& head, const char* id,
                      Str tip = Str::grid_tip, size_t group = 1);
  void draw_model_view();
  // The decoders' views (ui/app_decoder.cpp): attention sinks and "hide the first token" in the model
  // view, the rotary split of a head's score in the Positional encoding tab.
  void draw_sink_controls(const Computed& r);
  void refresh_sink_cache(const Computed& r);
  const Tensor* shown_weights(size_t layer, const Tensor& weights) const;
  void draw_sinks_map(float width, float height);
  void refresh_rotary_cache(const Computed& r);
  void draw_rotary_view(const Computed& r, float width);
  // The Interventions tab (ui/app_interventions.cpp): a head grid whose clicks ablate, what the
  // ablation changed in the outputs, and the head detectors' scores of the run shown.
  void draw_interventions_view(float width);
  void draw_ablation_controls(const Computed& r);
  void draw_ablation_grid(const Computed& r, ImVec2 size);
  void refresh_interventions_cache(const Computed& r);
  void draw_ablation_effect();
  void draw_detectors(float width);
  void draw_ablation_view(const Computed& r, float width);
  void draw_patching_view(const Computed& r, float width);
  void draw_patching_inputs(const Computed& r);
  void refresh_patching_cache();
  void draw_patching_results(float width);
  Json patching_json() const;
  // The Attribution tab (ui/app_attribution.cpp): a method on the item shown, its tokens coloured by
  // their scores, rollout's and flow's shares as a heatmap, logit attribution's layer x head heatmap (a
  // click opens the head). settings: {method, steps, target, baseline} (JS API and tests; defaults 50, the top
  // one and zero embeddings; InputError when malformed). Returns "" or why it cannot start, also the tab's
  // message.
  std::string start_attribution(const Json& settings);
  void draw_attribution_view(float width);
  void draw_attribution_controls(const Computed& r);
  void refresh_attribution_cache();
  void draw_attributed_tokens();
  void draw_attribution_map(float width);
  Json attribution_json() const;
  // The Train tab (ui/app_train.cpp).
  void sync_training();
  void draw_train_view(float width);
  void draw_train_controls();
  void draw_train_settings();
  std::string build_training(const Json& settings);
  void set_training(const Json& settings);
  bool train_button(const char* name, const char* label);
  // A button whose place is kept in `into` for the tests and the JS API (view_json's buttons).
  struct ButtonRect {
    const char* name;
    float x, y, w, h;
  };
  static bool kept_button(std::vector<ButtonRect>& into, const char* name, const char* label);
  void refresh_train_controls();
  void draw_train_curves(float width);
  void draw_train_attention(float width);
  void refresh_train_cache();
  void draw_train_text(Json& settings);
  // The replay's snapshot shown (replay_index_), or the live one.
  const Snapshot* shown_snapshot() const;
  void draw_train_samples(size_t shown);
  void draw_head_scores(const Snapshot& snap, float w);
  void show_trained_model(Tab tab);
  void save_trained_model();
  void draw_ablated_accuracy();
  std::string ablated_text(const Training::AblatedAccuracy& r) const;
  // The Generate tab (ui/app_generate.cpp).
  const LoadedModel* generation_model() const;  // the loaded model when it generates (GPT-2, a decoder)
  void step_generation();
  void draw_generate_view(float width);
  void draw_generate_controls();
  void draw_generated_tokens();
  void draw_generated_token(float width);
  void refresh_generate_cache();
  Json generate_json() const;
  // The Compare tab (ui/app_compare.cpp): the pinned run A and the current one B, the selected stage of
  // each side by side with B − A, and every stage's measures (the Playground's TraceDiff).
  void draw_compare_view(float width);
  void draw_compare_controls();
  void refresh_compare_cache(const TraceDiff& diff);
  void draw_compare_maps(float width, float height);
  void draw_compare_table(const TraceDiff& diff);
  Json compare_json() const;

  Playground& playground_;
  Platform& platform_;
  // A copy of the configuration for the controls to edit, refreshed only when it changes (copying it
  // every frame would allocate its sentences).
  PlaygroundConfig draft_;
  uint64_t draft_generation_ = 0;
  std::string stage_ = "attention_weights";
  int batch_ = 0, head_ = 0, layer_ = 0;
  Tab tab_ = Tab::stage;
  int pending_tab_ = -1;  // a tab to select (ImGui selects tabs when they are drawn)
  int tour_applied_ = 0;  // the tour step whose stage was last selected
  Heatmap main_, mask_, unmasked_, masked_, pe_;
  std::string status_;
  std::vector<char> sentence_buffer_;
  uint64_t sentence_generation_ = 0;
  char model_paths_[3][1024] = {};  // native: weights (or a checkpoint's folder), config, vocabulary paths
  // GPT-2's next-token list, recomputed when the result, the item, k or the temperature change.
  int top_k_ = 10;
  float temperature_ = 1.0f, next_temperature_ = 0.0f;
  ViewKey next_key_;
  std::vector<NextToken> next_tokens_;
  uint64_t next_tokens_version_ = 0;  // +1 per recomputation
  // The backend selector: "exact" then the platform's names (their c_str()s for the combo).
  std::vector<std::string> backend_names_;
  std::vector<const char*> backend_items_;
  int backend_index_ = 0;
  // The Masks view: the unmasked weights of layer_ (computed when the layer or the result changes),
  // the stage it is compared with, and the attention each query pays to [PAD] without / with mask.
  Tensor unmasked_cache_;
  Tensor layer_mask_;  // the mask layer_ applied (layer_mask: a decoder's sliding layers see a window)
  uint64_t unmasked_generation_ = 0, unmasked_version_ = 0;  // result it was built for; +1 per rebuild
  int unmasked_layer_ = -1;
  const Stage* masked_stage_ = nullptr;
  bool any_pad_ = false;
  std::vector<float> pad_without_, pad_with_;
  // Fonts: the code points in the atlas and how many of the sentences' the font lacks.
  std::set<uint32_t> glyphs_;
  ImVector<ImWchar> glyph_ranges_;
  uint64_t font_generation_ = 0, font_result_ = 0, font_train_run_ = 0, font_next_tokens_ = 0, font_generated_ = 0;
  size_t font_samples_ = 0;
  size_t missing_glyphs_ = 0;
  // Labels built once per result.
  std::vector<std::string> dim_labels_, batch_labels_, stage_labels_;
  std::string pe_shape_;  // the positional table's shape, for its caption
  std::vector<const Stage*> layer_weights_;  // each layer's attention weights (null: not computed)
  uint64_t labels_generation_ = 0;
  // The Stage tab's model view.
  bool model_view_ = false;
  std::vector<Heatmap> stage_grid_;
  // A decoder's model view: hide the first token, or show each head's share of attention on it.
  bool hide_first_ = false, show_sinks_ = false;
  uint64_t sinks_generation_ = 0, without_first_generation_ = 0;
  Tensor sinks_;                      // [layers, heads]
  std::vector<Tensor> without_first_;  // each layer's weights renormalised without the first key
  std::vector<std::string> sink_layer_labels_, sink_head_labels_;
  Heatmap sinks_map_;
  // A decoder's rotary split: the query and key positions, the layer and head shown, every layer's and
  // head's split for them, and the shown head's values as the plots take them.
  int rotary_query_ = 1, rotary_key_ = 0, rotary_layer_ = 0, rotary_head_ = 0;
  uint64_t rotary_generation_ = 0;
  size_t rotary_row_ = 0;
  int rotary_for_query_ = -1, rotary_for_key_ = -1, rotary_plotted_layer_ = -1, rotary_plotted_head_ = -1;
  std::vector<std::vector<RotarySplit>> rotary_;
  std::vector<float> rotary_pairs_, rotary_distance_;
  std::vector<GridCell> stage_cells_, train_cells_, ablation_cells_;  // where the grids' cells were drawn
  // The Interventions tab: its grid, and what it shows of the result (rebuilt when the result or the
  // item changes): the ablation's effect as lines of text, the detectors' [layers, heads] scores.
  std::vector<Heatmap> ablation_grid_;
  ViewKey interventions_key_;
  std::vector<std::string> effect_lines_, layer_labels_, head_labels_;
  std::string ablated_text_;
  Tensor detector_scores_[3];
  Heatmap detector_maps_[3];
  // Its activation patching: the sweep, the text fields' buffers (clean, corrupted, answer, wrong, label),
  // and the results as [layers, heads], [layers, positions] and [layers, 2] tensors, rebuilt per patched run.
  bool patching_view_ = false;
  PatchingSweep patching_;
  // The Attribution tab: its run, the settings shown, and what its last result draws (rebuilt when a
  // result comes or the language changes): the heatmap's values ([S, S] shares or [layers, heads]
  // contributions) and labels, the caption lines, the components outside the heads (name, value, …).
  AttributionRun attribution_;
  int attribution_method_ = 0, attribution_steps_ = 50, attribution_target_ = -1, attribution_baseline_ = -1;
  std::string attribution_error_;
  uint64_t attribution_version_ = 0, attribution_cache_version_ = ~uint64_t(0);
  Lang attribution_cache_lang_ = Lang::en;
  std::string attribution_caption_, attribution_detail_;
  std::vector<std::string> attribution_rows_, attribution_cols_, attribution_others_;
  Tensor attribution_values_;
  double attribution_largest_ = 0;  // the largest |score|: the tokens' colour scale
  Heatmap attribution_map_;
  std::string patching_error_;
  char patch_text_[5][256] = {};
  uint64_t patch_text_generation_ = 0;
  ViewKey patch_key_;
  Tensor patch_tensors_[3];
  Heatmap patch_maps_[3];
  std::vector<std::string> block_labels_ = {"attn_out", "mlp_out"};
  std::string patch_metric_text_;
  // The Train tab: the run, what the UI last copied of it, and its view.
  Training training_;
  ModelLoader loader_;
  // The Hub download: the shell's, and a finished one whose files the loader reads; the name it fetches,
  // the last name asked for (a link's is asked for once, not again every frame after a failure), the last
  // failure, the field's text.
  std::unique_ptr<HubDownload> hub_download_, hub_reading_;
  std::string hub_pending_, hub_requested_, hub_error_;
  std::chrono::steady_clock::time_point hub_started_;
  char hub_name_[256] = {};
  Training::View train_view_;
  uint64_t train_synced_generation_ = 0;  // the configuration generation the run was built for
  std::string train_error_;
  uint64_t train_cache_generation_ = 0, train_cache_run_ = 0;
  struct TrainControls {  // the run's effective settings, as the widgets edit them
    int task = 0, steps = 0, batch_size = 0, d_model = 0, num_heads = 0, num_layers = 0, d_ff = 0, eval_every = 0;
    int optimizer = 0, mask = 0;
    bool attention_only = false;
    double lr = 0;
    uint64_t seed = 0;
  } train_controls_;
  std::vector<ImVec2> loss_points_, val_loss_points_, accuracy_points_, val_accuracy_points_, plot_scratch_;
  // A language model's evaluations on repeated segments (the induction tasks).
  std::vector<ImVec2> repeated_loss_points_, induction_points_, previous_token_points_, no_points_;
  std::vector<std::string> train_samples_;  // per replay snapshot: "step N: prompt → sample"
  std::vector<std::string> train_layer_labels_, train_head_labels_, train_pair_labels_;  // "L0", "H0", "0.0"
  std::string train_sizes_text_;
  std::vector<char> train_text_ = std::vector<char>(1 << 16, '\0');  // the text task's text
  int train_score_kind_ = 0;  // head_score_names' index shown
  Heatmap train_scores_;
  std::vector<std::vector<std::string>> replay_labels_;  // tokens of each replay item
  int train_item_ = 1, train_layer_ = 0, train_head_ = 0, replay_index_ = -1;  // -1: the live snapshot
  bool log_loss_ = true;
  char train_data_path_[1024] = {};
  std::vector<Heatmap> train_grid_;
  Heatmap train_main_;
  std::vector<ButtonRect> train_buttons_;
  std::vector<ButtonRect> export_buttons_;  // the stage view's export row (view_json's heatmap.export)
  int png_scale_ = 1;                       // Export PNG's scale: 1, 2 or 4
  struct AblatedAccuracyShown {  // the last "accuracy with this head ablated", for the run it was asked of
    uint64_t run = 0;
    int layer = 0, head = 0;
    size_t evaluations = 0;  // the run's when measured: measured again at each new one (live)
    Training::AblatedAccuracy result;
    std::string text;
  };
  std::optional<AblatedAccuracyShown> ablated_accuracy_;
  // The Generate tab: the model it runs (kept while it does), its generator (a token a frame), the
  // controls' values, the token selected (-1: the last) and the layer shown, and what is drawn of them
  // (rebuilt when a token comes or the selection changes).
  std::shared_ptr<const LoadedModel> generate_model_;
  std::unique_ptr<TokenGenerator> generator_;
  bool generate_running_ = false;
  std::string generate_error_;
  char generate_prompt_[1024] = {};
  int generate_max_ = 20, generate_top_k_ = 0, generate_seed_ = 0, generate_selected_ = -1, generate_layer_ = 0;
  float generate_temperature_ = 1.0f, generate_top_p_ = 1.0f;
  uint64_t generate_version_ = 0, generate_cache_version_ = ~uint64_t(0);
  int generate_cache_token_ = -2, generate_cache_layer_ = -1;
  std::vector<std::string> generate_key_labels_, generate_head_labels_, generate_candidates_;
  std::string generate_caption_, generate_count_;
  Heatmap generate_map_;
  // The Compare tab's view of A and B (rebuilt when a run, the stage, the item, the head, the tolerance or the
  // language changes): A, B and B − A of the stage (the difference empty when the shapes differ or a run
  // lacks the stage); the difference's labels (B's tokens, "a→b" where A's differ); the texts shown.
  struct CompareKey {
    uint64_t pinned = ~uint64_t(0), result = 0;
    std::string stage;
    int batch = -1, head = -1;
    double rtol = 0, atol = 0;
    Lang lang = Lang::en;
  } compare_key_;
  Heatmap compare_maps_[3];
  Tensor compare_delta_;
  std::vector<std::string> compare_labels_[2];
  std::string compare_a_text_, compare_b_text_, compare_summary_, compare_counts_, compare_stage_text_;
  LayoutLog layout_;  // this frame's boxes (cleared when a frame starts)
};

}  // namespace attn::ui
