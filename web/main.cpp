// The web playground: the UI of ui/ in a WebGL2 canvas (GLFW from Emscripten, ImGui's OpenGL ES 3
// backend). The page (shell.html) holds the sentence text field (IME composition works there, not in a
// canvas) and the model and training-data file inputs (api.js writes the chosen files into MEMFS);
// api.js exposes window.attnlab and keeps the URL hash in sync. C functions below are its API. This
// build has no threads: the Train tab trains in slices of at most App::train_budget_ms per frame.
#include <GLFW/glfw3.h>
#include <emscripten.h>
#include <emscripten/html5.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/io/safetensors_index.hpp"
#include "core/model/generate.hpp"
#include "core/model/hub_cache.hpp"
#include "ui/alloc_count.hpp"
#include "ui/app.hpp"
#include "ui/gl_platform.hpp"

namespace {

// The page's Hub client (web/hub.js): fetch into the browser's Cache Storage, then the model's files into
// MEMFS under /hub/<id> (removed with this object, once the model has read them); hub.js reports through
// attnlab_hub_progress and attnlab_hub_finished.
class WebHubDownload final : public attn::ui::HubDownload {
 public:
  WebHubDownload(const attn::hub::Reference& ref, const std::string& endpoint) : id_(++last_id_) {
    live()[id_] = this;
    EM_ASM({ Module.attnlabHubStart($0, UTF8ToString($1), UTF8ToString($2), UTF8ToString($3)); }, id_,
           ref.repo_id.c_str(), ref.revision.c_str(), endpoint.c_str());
  }
  ~WebHubDownload() override {
    cancel();
    live().erase(id_);
    EM_ASM({ Module.attnlabHubForget($0); }, id_);
  }
  attn::ui::HubProgress progress() const override { return progress_; }
  std::optional<attn::ui::HubResult> take() override { return std::exchange(result_, std::nullopt); }
  void cancel() override {
    if (finished_) return;
    finished_ = true;
    EM_ASM({ Module.attnlabHubCancel($0); }, id_);
  }
  static WebHubDownload* find(int id) {
    const auto it = live().find(id);
    return it == live().end() ? nullptr : it->second;
  }
  void report(attn::ui::HubProgress p) { progress_ = std::move(p); }
  void finish(attn::ui::HubResult r) {
    finished_ = true;
    result_ = std::move(r);
  }

 private:
  static std::map<int, WebHubDownload*>& live() {
    static std::map<int, WebHubDownload*> downloads;
    return downloads;
  }
  static inline int last_id_ = 0;
  int id_;
  bool finished_ = false;
  attn::ui::HubProgress progress_;
  std::optional<attn::ui::HubResult> result_;
};

class WebPlatform : public attn::ui::GlPlatform {
 public:
  std::string save_file(const std::string& name, const std::vector<uint8_t>& bytes, const std::string& mime) override {
    EM_ASM({ Module.attnlabDownload(UTF8ToString($0), HEAPU8.slice($1, $1 + $2), UTF8ToString($3)); }, name.c_str(),
           bytes.data(), bytes.size(), mime.c_str());
    return attn::ui::format(attn::ui::Str::status_downloaded, name.c_str());
  }
  void copy_text(const std::string& text) override {
    ImGui::SetClipboardText(text.c_str());
    EM_ASM({ Module.attnlabCopy(UTF8ToString($0)); }, text.c_str());
  }
  bool external_sentence_field() const override { return true; }
  bool external_model_picker() const override { return true; }
  std::string font_path() const override { return "/font.ttf"; }  // api.js writes it before main
  bool has_hub() const override { return true; }
  std::unique_ptr<attn::ui::HubDownload> open_hub(const attn::hub::Reference& ref, const std::string& endpoint) override {
    return std::make_unique<WebHubDownload>(ref, endpoint);
  }
};

struct State {
  GLFWwindow* window = nullptr;
  attn::ui::Playground playground;
  WebPlatform platform;
  attn::ui::App* app = nullptr;
  uint64_t published_generation = 0;
  long frames = 0;
  double last_frame_ms = 0;
  uint64_t frame_allocations = 0;  // heap allocations during the last frame (0 when idle)
  std::string text;  // the last string handed to JS
};
State* state = nullptr;

// URL hash, text field and the page's own labels (in the UI's language) follow the configuration.
void publish_config() {
  if (state->published_generation == state->playground.config_generation()) return;
  state->published_generation = state->playground.config_generation();
  const std::string hash = state->playground.hash();
  const std::string text = attn::ui::sentences_text(state->playground.config().sentences);
  const attn::ui::Lang lang = attn::ui::language_of(state->playground.config());
  const std::string labels = attn::ui::page_strings(lang).dump();
  EM_ASM({ Module.attnlabConfigChanged(UTF8ToString($0), UTF8ToString($1), UTF8ToString($2), UTF8ToString($3)); },
         hash.c_str(), text.c_str(), attn::ui::lang_code(lang), labels.c_str());
}

void frame() {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t allocations = attn::ui::allocation_count();
  glfwPollEvents();
  double css_w = 0, css_h = 0;
  emscripten_get_element_css_size("#canvas", &css_w, &css_h);
  int w = 0, h = 0;
  glfwGetWindowSize(state->window, &w, &h);
  if (css_w > 0 && css_h > 0 && (int(css_w) != w || int(css_h) != h)) glfwSetWindowSize(state->window, int(css_w), int(css_h));
  if (state->app->update_fonts()) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  state->app->draw();
  ImGui::Render();
  glfwGetFramebufferSize(state->window, &w, &h);
  glViewport(0, 0, w, h);
  glClearColor(0.1f, 0.1f, 0.12f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  publish_config();
  state->last_frame_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  state->frame_allocations = attn::ui::allocation_count() - allocations;
  if (++state->frames == 1) EM_ASM({ Module.attnlabFirstFrame(); });
}

const char* hand_to_js(std::string text) {
  state->text = std::move(text);
  return state->text.c_str();
}

}  // namespace

extern "C" {

// The current trace document (computing first if the configuration changed); "" when in error.
EMSCRIPTEN_KEEPALIVE const char* attnlab_trace() {
  state->playground.update();
  const attn::ui::Computed* r = state->playground.result();
  return hand_to_js(r ? r->json().dump() : "");
}

// Applies a JSON object of settings and recomputes; returns "" or the reason the settings were refused.
EMSCRIPTEN_KEEPALIVE const char* attnlab_set(const char* json) {
  try {
    const attn::Json settings = attn::Json::parse(json);
    state->playground.set_config(attn::ui::apply_settings(state->playground.config(), settings));
    state->playground.update();
    publish_config();
    return hand_to_js("");
  } catch (const std::exception& e) {
    return hand_to_js(e.what());
  }
}

// The compare view's run A as a trace document; "" when none is pinned.
EMSCRIPTEN_KEEPALIVE const char* attnlab_pinned_trace() {
  const attn::ui::Computed* a = state->playground.pinned();
  return hand_to_js(a ? a->json().dump() : "");
}

// compare({a, b, rtol, atol}) of api.js: A = the configuration with `a`'s settings (without `a`: the
// current run as it is), B = the configuration with `b`'s; shows the Compare tab; attn diff --json's
// document of A against B, or {"error"} (nothing changed). null or false clears A.
EMSCRIPTEN_KEEPALIVE const char* attnlab_compare(const char* json) {
  attn::ui::Playground& p = state->playground;
  try {
    const attn::Json request = attn::Json::parse(json);
    if (request.is_null() || request == attn::Json(false)) {
      p.unpin();
      publish_config();
      return hand_to_js("{}");
    }
    if (!request.is_object()) throw attn::InputError("compare takes {a, b, rtol, atol} or null");
    attn::Tolerance tolerance = p.tolerance();
    for (const auto& [key, value] : request.items()) {
      if (key == "a" || key == "b") continue;
      if (key != "rtol" && key != "atol") throw attn::InputError("unknown compare key '" + key + "' (a, b, rtol, atol)");
      const double x = attn::json_number(value, key);
      if (!(x >= 0)) throw attn::InputError(key + " must be a number >= 0");
      (key == "rtol" ? tolerance.rtol : tolerance.atol) = x;
    }
    const attn::ui::PlaygroundConfig base = p.config();
    const attn::ui::PlaygroundConfig b = request.contains("b") ? attn::ui::apply_settings(base, request["b"]) : base;
    if (request.contains("a")) {
      p.pin_config(attn::ui::apply_settings(base, request["a"]));
    } else {
      p.update();
      if (!p.result()) throw attn::InputError("the current run cannot be A: " + p.error());
      p.pin();
    }
    p.set_tolerance(tolerance);
    p.set_config(b);
    p.update();
    state->app->select_tab(attn::ui::Tab::compare);
    publish_config();
    const attn::TraceDiff* diff = p.compare();
    if (!diff) throw attn::InputError("run B: " + p.error());
    return hand_to_js(attn::diff_json(*diff, p.tolerance()).dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

EMSCRIPTEN_KEEPALIVE const char* attnlab_set_hash(const char* hash) {
  try {
    state->playground.set_hash(hash);  // the loaded model kept: a hash cannot carry the files
    return hand_to_js("");
  } catch (const std::exception& e) {
    return hand_to_js(e.what());
  }
}

EMSCRIPTEN_KEEPALIVE void attnlab_set_sentences(const char* text) {
  attn::ui::PlaygroundConfig c = state->playground.config();
  c.sentences = attn::ui::parse_sentences_text(text);
  state->playground.set_config(c);
  state->published_generation = state->playground.config_generation();  // the field already shows it
  EM_ASM({ Module.attnlabConfigChanged(UTF8ToString($0), null, null, null); }, state->playground.hash().c_str());
}

EMSCRIPTEN_KEEPALIVE void attnlab_select_stage(const char* name) { state->app->select_stage(name); }

// {"tab", "stage", "batch", "layer", "head", "tour", …} (App::select_view): returns "" or the problem.
EMSCRIPTEN_KEEPALIVE const char* attnlab_select_view(const char* json) {
  try {
    state->app->select_view(attn::Json::parse(json));
    return hand_to_js("");
  } catch (const std::exception& e) {
    return hand_to_js(e.what());
  }
}

// The views a layout check draws (each stage, the model view, the other tabs) as a JSON array of views
// for attnlab_select_view; state().view.layout then lists what overlaps in the frame drawn.
EMSCRIPTEN_KEEPALIVE const char* attnlab_layout_views() { return hand_to_js(state->app->layout_views().dump()); }

// Loads a model from files api.js wrote into MEMFS: a JSON array of paths (sorted into weights, config
// and vocabulary by name and content) or {"weights", "config", "vocab"}. Returns "" or the problem.
EMSCRIPTEN_KEEPALIVE const char* attnlab_load_model(const char* json) {
  try {
    const attn::Json j = attn::Json::parse(json);
    attn::ui::ModelFiles files;
    if (j.is_array()) {
      files = attn::ui::sort_model_files(j.get<std::vector<std::string>>());
    } else {
      files.weights = j.value("weights", "");
      files.config = j.value("config", "");
      files.vocab = j.value("vocab", "");
    }
    std::string error = state->app->load_model_files(files);
    if (error.empty()) state->playground.update();
    publish_config();
    return hand_to_js(std::move(error));
  } catch (const std::exception& e) {
    return hand_to_js(e.what());
  }
}

// attnlab.openModel: the settings' Hub model (model=ORG/NAME) downloaded now, also one a link asked for
// that failed; nothing when it is the loaded one. Returns "" or why it cannot start.
EMSCRIPTEN_KEEPALIVE const char* attnlab_hub_open() {
  const attn::ui::PlaygroundConfig& c = state->playground.config();
  return hand_to_js(attn::ui::awaits_hub_model(c) ? state->app->open_hub_model(c.hub) : "");
}

// attnlab.cancelDownload: the Hub download's Cancel button.
EMSCRIPTEN_KEEPALIVE void attnlab_hub_cancel() { state->app->cancel_hub_download(); }

// web/hub.js's calls: how far download `id` has got, and its end (the MEMFS folder of its files, or why not).
EMSCRIPTEN_KEEPALIVE void attnlab_hub_progress(int id, const char* file, double done, double total, double earlier) {
  if (WebHubDownload* d = WebHubDownload::find(id)) d->report({file, uint64_t(done), uint64_t(total), uint64_t(earlier)});
}
EMSCRIPTEN_KEEPALIVE void attnlab_hub_finished(int id, const char* folder, const char* error) {
  if (WebHubDownload* d = WebHubDownload::find(id)) d->finish({folder, error});
}

// The files a model needs beside its weights, by its config.json (core/model/hub_cache.hpp's
// tokenizer_files, as attn --model asks for them): {"required": […], "optional": […]} or {"error": "…"}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_hub_files(const char* repo, const char* config) {
  try {
    const attn::Json j = attn::Json::parse(config, nullptr, false);
    if (j.is_discarded())
      throw attn::InputError("config.json of " + std::string(repo) + " is not valid JSON (is the repository a model?)");
    const attn::hub::TokenizerFiles f = attn::hub::tokenizer_files(j, std::string(repo) + "/config.json");
    return hand_to_js(attn::Json{{"required", f.required}, {"optional", f.optional}}.dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

// The shards model.safetensors.index.json names: {"shards": […]} or {"error": "…"}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_hub_shards(const char* repo, const char* index) {
  try {
    std::vector<std::string> shards;
    for (const auto& shard : attn::parse_shard_index(index, std::string(repo) + "'s model.safetensors.index.json"))
      shards.push_back(shard.first);
    return hand_to_js(attn::Json{{"shards", shards}}.dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

// Training (the Train tab): settings as a JSON object of attn train's options (api.js has written a
// data file into MEMFS and put its path in "data"); returns "" or why the settings are refused.
EMSCRIPTEN_KEEPALIVE const char* attnlab_train(const char* json) {
  try {
    std::string error = state->app->configure_training(attn::Json::parse(json));
    publish_config();
    return hand_to_js(std::move(error));
  } catch (const std::exception& e) {
    return hand_to_js(e.what());
  }
}

// n steps now (paused first): {"records": [...]} in `attn train --log`'s form, or {"error": "..."}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_train_steps(int n) {
  try {
    const std::string error = state->app->ensure_training();
    if (!error.empty()) return hand_to_js(attn::Json{{"error", error}}.dump());
    return hand_to_js(attn::Json{{"records", state->app->training().run_steps(size_t(std::max(0, n)))}}.dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

// "play" | "pause" | "reset": returns "" or the problem.
EMSCRIPTEN_KEEPALIVE const char* attnlab_train_control(const char* what) {
  const std::string w = what;
  attn::ui::Training& t = state->app->training();
  if (w == "pause") t.pause();
  else if (w == "play" || w == "reset") {
    std::string error = w == "reset" ? state->app->configure_training(state->playground.config().training)
                                     : state->app->ensure_training();
    if (!error.empty()) return hand_to_js(std::move(error));
    if (w == "play") t.play();
  } else {
    return hand_to_js("unknown training control '" + w + "' (play, pause, reset)");
  }
  return hand_to_js("");
}

// The head detectors' scores on the current run's sentences: {"detectors": {KIND: {"axes", "scores"}}}
// as attn heads --json gives them, or {"error": "..."}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_detect_heads() {
  try {
    state->playground.update();
    const attn::ui::Computed* r = state->playground.result();
    if (!r) return hand_to_js(attn::Json{{"error", state->playground.error()}}.dump());
    return hand_to_js(attn::Json{{"detectors", attn::head_scores_json(attn::ui::sentence_head_scores(*r))}}.dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

// Starts the Interventions tab's activation patching with the configuration's patch.* settings:
// {"done", "runs"} or {"error"}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_patch_start() {
  const std::string error = state->app->start_patching();
  if (!error.empty()) return hand_to_js(attn::Json{{"error", error}}.dump());
  const attn::ui::PatchingSweep& p = state->app->patching();
  return hand_to_js(attn::Json{{"done", p.done()}, {"runs", p.total()}}.dump());
}

// Runs the sweep for about `budget_ms` (with a worker thread it runs there): {"done", "runs"} while it
// runs, then attn patch --json's document.
EMSCRIPTEN_KEEPALIVE const char* attnlab_patch_steps(double budget_ms) {
  attn::ui::PatchingSweep& p = state->app->patching();
  if (!p.started()) return hand_to_js(attn::Json{{"error", "no patching started"}}.dump());
  p.pump(budget_ms);
  if (!p.running()) return hand_to_js(p.json().dump());
  return hand_to_js(attn::Json{{"done", p.done()}, {"runs", p.total()}}.dump());
}

// attn generate --json's document from the loaded GPT-2 checkpoint or Llama-family decoder with `settings`
// (JSON: prompt, max_new_tokens, temperature, top_k, top_p, seed), or {"error"}.
EMSCRIPTEN_KEEPALIVE const char* attnlab_generate(const char* settings) {
  try {
    const auto& loaded = state->playground.config().loaded;
    if (!loaded || !loaded->causal_lm())
      throw attn::InputError("generation needs a GPT-2 or a Llama-family checkpoint: load one first");
    const attn::GenerateSettings g = attn::generate_settings(attn::Json::parse(settings));
    const attn::CausalLM lm = loaded->generation_lm();
    const attn::Generation out = attn::generate(lm, loaded->prompt_ids(g.prompt), g.max_new_tokens, g.sampling);
    return hand_to_js(attn::generation_json(lm, out, g.max_new_tokens, g.sampling).dump());
  } catch (const std::exception& e) {
    return hand_to_js(attn::Json{{"error", e.what()}}.dump());
  }
}

EMSCRIPTEN_KEEPALIVE const char* attnlab_training_log() {
  return hand_to_js(attn::Json(state->app->training().log()).dump());
}

// {settings, hash, lang, error, status, loaded_model, compute_ms, compute_count, frames, last_frame_ms,
//  frame_allocations, view, training}
EMSCRIPTEN_KEEPALIVE const char* attnlab_state() {
  const attn::ui::Computed* r = state->playground.result();
  attn::Json doc = {{"settings", attn::ui::settings_json(state->playground.config())},
                    {"hash", state->playground.hash()},
                    {"lang", attn::ui::lang_code(attn::ui::language_of(state->playground.config()))},
                    {"error", state->playground.error()},
                    {"status", state->app->status()},
                    {"loaded_model", state->playground.config().loaded ? attn::Json(state->playground.config().loaded->name)
                                                                       : attn::Json()},
                    {"loaded_hub", state->playground.config().loaded ? state->playground.config().loaded->hub : ""},
                    {"compute_ms", r ? r->compute_ms : 0.0},
                    {"compute_count", state->playground.compute_count()},
                    {"frames", state->frames},
                    {"last_frame_ms", state->last_frame_ms},
                    {"frame_allocations", state->frame_allocations},
                    {"view", state->app->view_json()}};
  const attn::ui::Training& t = state->app->training();
  attn::Json training = attn::ui::status_json(t.status());
  training["settings"] = t.configured() ? t.effective_settings() : attn::Json();
  doc["training"] = std::move(training);
  return hand_to_js(doc.dump());
}

// {frames, last_frame_ms, frame_allocations, compute_ms, compute_count}: what timing loops poll (state()
// also serialises the view's heatmaps, too slow to call every frame at S = 128).
EMSCRIPTEN_KEEPALIVE const char* attnlab_stats() {
  const attn::ui::Computed* r = state->playground.result();
  char text[256];
  std::snprintf(text, sizeof text,
                "{\"frames\":%ld,\"last_frame_ms\":%.3f,\"frame_allocations\":%llu,\"compute_ms\":%.3f,"
                "\"compute_count\":%zu}",
                state->frames, state->last_frame_ms, static_cast<unsigned long long>(state->frame_allocations),
                r ? r->compute_ms : 0.0, state->playground.compute_count());
  return hand_to_js(text);
}

}  // extern "C"

int main() {
  state = new State();
  // Korean where the browser's first preferred language is Korean (a link's lang=… wins).
  const int korean = EM_ASM_INT({
    const first = (navigator.languages && navigator.languages[0]) || navigator.language || '';
    return /^ko([-_]|$)/i.test(first) ? 1 : 0;
  });
  attn::ui::set_default_language(korean ? attn::ui::Lang::ko : attn::ui::Lang::en);
  // The configuration in the URL hash (a shared link), if any.
  EM_ASM({
    const error = Module.ccall('attnlab_set_hash', 'string', ['string'], [String(location.hash)]);
    if (error) console.warn('attnlab: ignoring the URL hash: ' + error);
  });
  if (!glfwInit()) return 1;
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  double css_w = 1280, css_h = 800;
  emscripten_get_element_css_size("#canvas", &css_w, &css_h);
  state->window = glfwCreateWindow(int(css_w), int(css_h), "attnlab", nullptr, nullptr);
  if (!state->window) return 1;
  glfwMakeContextCurrent(state->window);
  IMGUI_CHECKVERSION();
  attn::ui::count_imgui_allocations();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui_ImplGlfw_InitForOpenGL(state->window, true);
  ImGui_ImplOpenGL3_Init("#version 300 es");
  state->app = new attn::ui::App(state->playground, state->platform);
  emscripten_set_main_loop(frame, 0, true);
  return 0;
}
