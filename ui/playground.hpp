// The playground's state without any window or ImGui: the configuration (what the user controls), its
// URL-hash form, and the computed run (recomputed only when the configuration changes). Both shells
// (web/, native/gui/) and the ImGui UI (ui/app.*) share it; tests/test_ui.cpp tests it headless.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.hpp"
#include "core/base/json.hpp"
#include "core/model/decoder.hpp"
#include "core/model/head_detectors.hpp"
#include "core/model/hub_cache.hpp"
#include "core/model/interventions.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/pretrained.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/trace.hpp"
#include "core/model/trace_diff.hpp"
#include "core/model/transformer.hpp"
#include "core/plot/heatmap.hpp"
#include "core/model/tutorial.hpp"
#include "ui/strings.hpp"

namespace attn::ui {

// The first tutorial's attention, the second's classifier with seeded weights, or that classifier
// loaded from files (ui/model_files.hpp).
enum class ModelKind { tutorial, transformer, loaded };
struct LoadedModel;

struct PlaygroundConfig {
  ModelKind model = ModelKind::tutorial;
  std::vector<std::string> sentences = tutorial_sentences();
  uint64_t seed = 0;
  size_t d_model = 6, max_len = 100;
  MaskKind mask = MaskKind::padding;
  // The Transformer only (second tutorial); defaults are its TransformerClassifier's.
  size_t num_heads = 8, num_layers = 4, d_ff = 0, num_classes = 5;
  double dropout = 0.1;
  bool train = false, norm_first = false;
  // The model read from files; kept across model switches so the user can come back to it. Not in
  // the URL hash (a link cannot carry files); for ModelKind::loaded the sizes above mirror its config.
  std::shared_ptr<const LoadedModel> loaded;
  // A Hugging Face Hub model ("ORG/NAME" or "ORG/NAME@REVISION"; ui/hub.hpp) for ModelKind::loaded: the
  // one `loaded` holds, or one a link asks for (model=ORG/NAME@REVISION in the hash) until it is
  // downloaded; empty for a model read from files. hub_endpoint: the Hub's address (hub=…; empty: the
  // shell's default, huggingface.co or HF_ENDPOINT).
  std::string hub, hub_endpoint;
  // Heads and feed-forward blocks ablated (core/model/interventions.hpp), checked against the model when
  // computed: the Interventions view's clicks; in the hash as ablate=0.1,1.3&ablate_mlp=0&ablation=mean.
  Ablation ablation;
  // The Interventions tab's activation patching (attn patch's inputs and metric; a change recomputes
  // nothing: the sweep runs when asked). In the hash as patch.clean=…&patch.corrupted=…&patch.answer=…
  // &patch.wrong=… (GPT-2) or patch.label=K (a classifier).
  struct Patching {
    std::string clean, corrupted, answer, wrong, label;
    bool operator==(const Patching& o) const {
      return clean == o.clean && corrupted == o.corrupted && answer == o.answer && wrong == o.wrong && label == o.label;
    }
  } patching;
  // The Train tab's settings (ui/training.hpp: attn train's options as JSON keys); {} = the tab's
  // defaults. In the hash as train.KEY=VALUE, except "data" (a file).
  Json training = Json::object();
  // What the UI shows, not what it computes (a change recomputes nothing): the language ("en", "ko", or
  // "" for the platform's default; ui/strings.hpp) and the guided tour's step (0: none; ui/tour.hpp).
  std::string lang;
  int tour = 0;

  bool operator==(const PlaygroundConfig& o) const;
  bool operator!=(const PlaygroundConfig& o) const { return !(*this == o); }
};

// The defaults of a model kind: the first tutorial (d_model 6, max_len 100), the second tutorial's
// classifier (d_model 128, 8 heads, 4 layers, max_len 512, dropout 0.1) or the loaded model's config;
// sentences, seed, mask, the loaded model, the training settings, the language and the tour step kept.
PlaygroundConfig defaults_for(ModelKind kind, const PlaygroundConfig& keep = PlaygroundConfig());
// Sets the loaded model (null: none); for ModelKind::loaded the sizes follow its config.
void attach_model(PlaygroundConfig& config, std::shared_ptr<const LoadedModel> model);
std::string model_kind_name(ModelKind kind);  // "tutorial" | "transformer" | "loaded"
ModelKind parse_model_kind(const std::string& text);
// A Hub model's name as the UI and links write it: "ORG/NAME", "@REVISION" added when not main.
std::string hub_name(const hub::Reference& ref);
// The model setting (model=… in the hash, settings.model): the kind's name, or the Hub model's name.
std::string model_setting(const PlaygroundConfig& c);
// True while the configuration names a Hub model that is not the loaded one (a link's, until downloaded).
bool awaits_hub_model(const PlaygroundConfig& c);
// The language the UI speaks for this configuration: its `lang`, else the platform's default.
Lang language_of(const PlaygroundConfig& config);

// URL hash "#model=transformer&s=나는%20간다&seed=1&…&train.task=brackets&lang=ko&tour=3": only the values that
// differ from the defaults (sentences as repeated `s`, percent-encoded UTF-8), so the default state is "".
std::string to_hash(const PlaygroundConfig& config);
// Parses a hash (with or without '#'); unknown keys and bad values throw InputError naming them, and
// so do sizes with model=loaded (its config sets them).
PlaygroundConfig from_hash(const std::string& hash);
// The compare view's run A in a hash: its settings as a.KEY=VALUE after compare=1 (the same keys as
// to_hash's), or none; InputError names a bad one.
std::optional<PlaygroundConfig> compare_from_hash(const std::string& hash);
std::string compare_hash(const PlaygroundConfig& a);  // "compare=1&a.KEY=VALUE…": what compare_from_hash reads
// A run's configuration in a line, for the compare view: "transformer · seed 1 · mask padding · 나는 … | …"
// (a loaded model by its files' names; an ablation after it).
std::string run_summary(const PlaygroundConfig& config);
std::string percent_encode(const std::string& text);
std::string percent_decode(const std::string& text);  // throws InputError on a bad escape

// Applies a JSON object of settings ({sentences, seed, d_model, num_heads, num_layers, d_ff, max_len,
// num_classes, mask, dropout, train, norm_first, model, lang, tour, ablate, ablate_mlp, ablation}) on top
// of `base` (ablate "L.H,…", ablate_mlp "L,…", ablation "zero"|"mean"; and the patching's
// "patch.clean", "patch.corrupted", "patch.answer", "patch.wrong", "patch.label", strings); `model` first (it resets the
// sizes to that model's defaults). Unknown keys and wrong types throw InputError.
PlaygroundConfig apply_settings(const PlaygroundConfig& base, const Json& settings);
Json settings_json(const PlaygroundConfig& config);  // the same keys, all of them

// The sentences as the text field shows them: one per line; and back (blank lines are skipped).
std::string sentences_text(const std::vector<std::string>& sentences);
std::vector<std::string> parse_sentences_text(const std::string& text);

// How a model names its layers' stages: "{prefix}{i}.{query|key|weights}".
struct LayerNames {
  std::string prefix = "layers.", query = "self_attn.query", key = "self_attn.key",
              weights = "self_attn.attention_weights";
};
LayerNames layer_names_of(ModelFamily family);  // a checkpoint's: encoder.layer.{i}.… or h.{i}.…

// What one configuration computes.
struct Computed {
  Vocab vocab;
  std::vector<std::vector<std::string>> tokens;  // [B][S], padded with [PAD]
  Trace trace;                                   // the stages in order
  Tensor pe_table;                               // the whole positional table [max_len, d_model]
  Tensor mask;                                   // the attention mask [B, S, S], 1 = may attend
  size_t num_layers = 0;                         // encoder layers (0: the first tutorial's single attention)
  LayerNames layer_names;                        // the layers' stage names
  // pe_table: a sinusoidal table, a checkpoint's learned position embeddings, or a decoder's rotary angles
  // of the input's positions [S, rotary_dim] (nothing added to its embeddings).
  enum class Positions { sinusoidal, learned, rotary } positions = Positions::sinusoidal;
  PretrainedInput pretrained_input;              // a checkpoint's input (ids, lengths): next-token lists
  ModelStages stages;                            // how its stages are named (and which family computed them)
  std::vector<int64_t> ids;                      // [B, S] token ids, padded
  std::vector<size_t> lengths;                   // each item's real tokens
  // With an ablation: the output of the same run without it — the classifier's logits [B, C], GPT-2's
  // next_token_probs [B, V], the first tutorial's attention_output [B, S, d] — to show what the ablation
  // changed; else empty (and for BERT).
  Tensor clean_output;
  bool scale_query_first = false;                // nn.TransformerEncoderLayer style (a loaded model)
  // The Transformer's model; a seeded one is reused by the next computation when its seed and sizes
  // are the same (a new mask, train mode or sentences with as many distinct words), with the
  // generator as initialisation left it (train mode's dropout continues from there, as in PyTorch).
  std::shared_ptr<const TransformerModel> model;
  std::shared_ptr<const DecoderModel> decoder;  // a decoder that computed it (its Masks view recomputes scores)
  bool seeded_model = false;
  TorchGenerator after_init;
  Json header;  // the trace document without its stages (built on demand: json())
  // The `attn tutorial --json` / `attn encode --json` document.
  Json json() const;
  size_t parameter_count = 0;
  double compute_ms = 0;
  // How it was computed: "exact" (the PyTorch-bit-exact path) or the backend's name; a note when a
  // backend was selected (what it pulled back, or why the exact path ran instead); and the stages the
  // fused path cannot compute (the shown layer's scores), for the pipeline to name.
  std::string computed_by = "exact";
  struct PathNote {  // formatted when drawn, in the language shown: note's text with backend (and layer)
    std::optional<Str> note;
    std::string backend;
    size_t layer = 0;
  } path_note;
  std::vector<std::string> not_computed;
};

// The Transformer on a compute backend (core/backend/device_model.hpp) instead of the exact path: eval mode
// only (train mode and the first tutorial keep the exact path), pulling back only the stages outside
// the layers and those of `layer` (the one the pipeline shows, its attention weights included). Scores
// are never computed (fused attention).
struct BackendPath {
  Backend* backend = nullptr;  // null: the exact path
  size_t layer = 0;
};
// The stages of one layer the fused path records ("layers.{i}.norm1", …, its attention weights).
std::vector<std::string> fused_layer_stages(size_t layer);

// Makes a backend by name ("cpu", "cuda", "auto", …) and sets `note` to which backend/device it chose;
// throws InputError when it cannot run here. Native shells pass attn::make_backend's; the web has none.
using BackendFactory = std::function<std::unique_ptr<Backend>(const std::string& name, std::string& note)>;
// The selected compute path: "exact" or a backend name, its note, and the error that made it fall back.
struct BackendChoice {
  std::string name = "exact";
  std::string note;
  std::string error;
};

// Runs the engine; throws InputError for anything the user can get wrong (and for sizes the playground
// refuses to draw: more than `max_trace_floats` floats in the trace). `previous` (the last result, if
// any) lends what this configuration would compute again: the seeded model, the positional table.
std::unique_ptr<Computed> compute(const PlaygroundConfig& config, const Computed* previous = nullptr,
                                  const BackendPath& path = BackendPath());
inline constexpr double max_trace_floats = 64.0 * 1024 * 1024;

// Every head's previous-token, duplicate-token and induction scores (core/model/head_detectors.hpp) on
// the run's own sentences, real tokens only; InputError for the first tutorial (no layers of heads) and
// for a run whose attention weights were not all pulled back (a backend's).
std::vector<HeadScores> sentence_head_scores(const Computed& computed);

// The attention weights of one layer as if there were no mask (softmax of that layer's QKᵀ/√d_k, no
// dropout): [B, S, S] for the first tutorial, [B, H, S, S] for the Transformer. Computed on demand
// (only the Masks view needs it, for the layer it shows). Throws InputError for a layer out of range.
Tensor unmasked_weights(const Computed& computed, size_t layer);
// The mask layer `layer` applied [B, S, S]: the run's mask, narrowed to the window on a decoder's sliding
// layers (a query sees a key when q − window < k ≤ q).
Tensor layer_mask(const Computed& computed, size_t layer);
// The attention-weights stage the Masks view compares with: "attention_weights" or
// "layers.{layer}.self_attn.attention_weights".
std::string weights_stage_name(const Computed& computed, size_t layer);

// The engine's view of the model that computed `computed` (core/model/loaded_model.hpp), sharing it (no
// copy): a checkpoint's, or the Transformer's classifier with the configuration's mask.
attn::LoadedModel engine_model(const PlaygroundConfig& config, const Computed& computed);

// The configuration, its last result or error, recomputed lazily and only after a change.
class Playground {
 public:
  explicit Playground(PlaygroundConfig config = PlaygroundConfig()) : config_(std::move(config)) {}
  const PlaygroundConfig& config() const { return config_; }
  // Replaces the configuration; does nothing (and keeps the result) when it is unchanged.
  void set_config(const PlaygroundConfig& config);
  // Computes if the configuration changed since the last computation; returns true if it ran.
  bool update();
  const Computed* result() const { return result_.get(); }  // null when the configuration is in error
  const std::string& error() const { return error_; }
  uint64_t config_generation() const { return config_generation_; }  // +1 per configuration change
  uint64_t result_generation() const { return result_generation_; }  // +1 per computation
  size_t compute_count() const { return compute_count_; }

  // Selects the compute path: "exact", or a backend made once here by `factory` (on the caller's
  // thread). A factory error (InputError) is kept in the choice and falls back to the exact path.
  // Recomputes on the next update when the path changed.
  const BackendChoice& select_backend(const std::string& name, const BackendFactory& factory);
  const BackendChoice& backend_choice() const { return choice_; }
  bool uses_backend() const { return backend_ != nullptr; }
  // With a backend: the layer whose stages are pulled back (recomputes when it changes).
  void set_shown_layer(size_t layer);

  // The compare view's run A, beside the current one (B). pin(): the current result as it stands (kept,
  // not recomputed: a train-mode run's dropout would not draw the same again); pin_config(): A computed
  // from a configuration (a link, the JS API), InputError when it cannot be; unpin(): none. Each counts
  // as a configuration change (the URL hash carries A) but recomputes nothing of B.
  void pin();
  void pin_config(const PlaygroundConfig& a);
  void unpin();
  const Computed* pinned() const { return pinned_.get(); }
  const PlaygroundConfig& pinned_config() const { return pinned_config_; }
  uint64_t pinned_generation() const { return pinned_generation_; }
  // A against the current result stage by stage, B the reference (attn diff A B's measures); rebuilt
  // when either run or the tolerance changes; null without both.
  const TraceDiff* compare();
  Tolerance tolerance() const { return tolerance_; }
  void set_tolerance(Tolerance tolerance);
  // The URL hash: to_hash of the configuration, then A's settings where A fits in a link (not a model
  // read from files).
  std::string hash() const;
  // Applies a hash: the configuration (the loaded model kept: a link cannot carry files) and A (or none,
  // unless A is a loaded model's and so could not be in it). InputError changes nothing.
  void set_hash(const std::string& hash);

 private:
  PlaygroundConfig config_;
  std::unique_ptr<Backend> backend_;
  BackendChoice choice_;
  size_t shown_layer_ = 0;
  std::shared_ptr<const Computed> result_;
  std::string error_;
  std::shared_ptr<const Computed> pinned_;
  PlaygroundConfig pinned_config_;
  uint64_t pinned_generation_ = 0;
  Tolerance tolerance_;
  std::optional<TraceDiff> diff_;
  uint64_t diff_pinned_ = 0, diff_result_ = 0;  // the runs diff_ compares
  bool dirty_ = true;
  uint64_t config_generation_ = 1, result_generation_ = 0;
  size_t compute_count_ = 0;
};

// --- views of a stage ---

const char* stage_formula(const std::string& stage_name);  // e.g. "softmax(masked, dim=-1)"; "" if none
// "layers.1.self_attn.scores" → 1 (also "encoder.layer.1.…", "h.1.…", "h.1"); -1 for a stage outside
// the layers.
int stage_layer(const std::string& stage_name);
// The same stage of another layer ("layers.1.norm1", 2 → "layers.2.norm1"); others unchanged.
std::string stage_in_layer(const std::string& stage_name, size_t layer);

// A stage as {"name", "shape", "data"} and as .npy bytes (numpy.save's format).
std::string stage_json_text(const Stage& stage);
std::vector<uint8_t> stage_npy_bytes(const Tensor& t);

}  // namespace attn::ui
