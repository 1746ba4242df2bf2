// attn-gui: the playground's UI (ui/) in a GLFW window with ImGui's OpenGL 3 backend.
//   attn-gui [--hash "s=…&seed=1"] [--stage NAME] [--tab stage|masks|positional_encoding|train|tour]
//            [--weights W.safetensors [--config C.json] [--vocab V.json] | --model-dir DIR | --model NAME[@REVISION]]
//            [--screenshot out.png --frames N [--max-frame-ms MS]]
//            [--backend exact|cpu|gl|cuda|auto] [--size WxH] [--trace FILE.json] [--train-steps N]
//            [--train-log FILE.jsonl] [--view JSON] [--check-layout] [--lang en|ko]
// --weights/--config/--vocab load a model as `attn encode` does, --model-dir a checkpoint's folder (the
// UI's "Open model files" fields do the same later), --model a folder or a Hugging Face Hub repository
// (downloaded as `attn --model` does, with the "Hugging Face model" field's progress bar; docs/hub.md). --screenshot renders N frames, writes the last one (glReadPixels) as PNG and exits:
// for headless checks under Xvfb; it also reports the heap allocations of the last frame's UI, and with
// --check-idle fails (exit 1) if that frame allocated or computed (an idle frame must do neither; give
// ImGui 3 frames to settle first: --frames 4 or more); it prints the slowest frame from the third on (the
// UI's part, and the whole frame with drawing and glFinish: under Xvfb's software renderer ~10 ms for any
// view), and --max-frame-ms fails (exit 1) when the UI's part is over MS; --trace then also writes the trace document of
// what is shown (the web's attnlab.trace()). --train-steps N builds the Train tab's run from the hash's
// train.* settings and trains N steps before the first frame; --train-log writes their records as attn
// train --log does (JSON Lines, one record a line). --view selects what is shown as the JS API's
// selectView does ({"model_view": true, "layer": 1, …}; {"tour": 3} opens the guided tour at step 3).
// The UI speaks --lang's language, else Korean where the locale (LC_ALL, LC_MESSAGES or LANG) is
// Korean, else English. --check-layout draws every view (each stage, the model view, the Masks,
// Positional encoding and Train tabs; the Train tab's run trains --train-steps or 20 steps first) at the
// window's size, prints each label, legend or heatmap that overlaps another or is cut off by its region,
// and exits 1 if there is one. Exports go to the current folder.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/plot/png.hpp"
#include "native/backends.hpp"
#include "native/gui/hub_download.hpp"
#include "ui/alloc_count.hpp"
#include "ui/app.hpp"
#include "ui/drawn_text.hpp"
#include "ui/gl_platform.hpp"
#include "ui/tour.hpp"

namespace {

class NativePlatform : public attn::ui::GlPlatform {
 public:
  std::string save_file(const std::string& name, const std::vector<uint8_t>& bytes, const std::string&) override {
    std::ofstream out(name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return out ? attn::ui::format(attn::ui::Str::status_saved, name.c_str(), bytes.size())
               : attn::ui::format(attn::ui::Str::status_write_failed, name.c_str());
  }
  bool external_sentence_field() const override { return false; }
  bool external_model_picker() const override { return false; }
  std::string font_path() const override { return ATTN_FONT_PATH; }
  bool has_hub() const override { return true; }
  std::unique_ptr<attn::ui::HubDownload> open_hub(const attn::hub::Reference& ref, const std::string& endpoint) override {
    return std::make_unique<attn::gui::NativeHubDownload>(ref, endpoint);
  }
  std::vector<std::string> backend_names() const override { return attn::backend_names(); }
  // gl computes in the window's own context, borrowed: a context of its own would replace it on this
  // thread, where the factory is called and the playground computes. "auto" chooses as `attn` does.
  attn::ui::BackendFactory backend_factory() override {
    return [](const std::string& name, std::string& note) {
      return attn::make_backend(name, 0, note, attn::gl::ContextSource::current);
    };
  }
};

// OpenGL 4.3 core where the driver has it, so that the gl backend can compute in this window's context;
// else 3.3 core, all ImGui's renderer needs ("#version 330" shaders run in both).
GLFWwindow* open_window(int width, int height) {
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  for (int major : {4, 3}) {
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, major);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    if (GLFWwindow* window = glfwCreateWindow(width, height, "attnlab playground", nullptr, nullptr)) return window;
  }
  return nullptr;
}

// Writes a file for --screenshot/--trace; throws InputError when it cannot.
void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(size));
  if (!out) throw attn::InputError("cannot write " + path);
}

// The cost of one frame's UI (NewFrame … Render): heap allocations and engine runs.
struct FrameCost {
  uint64_t allocations = 0;
  size_t computations = 0;
  double ui_ms = 0;  // the UI's part: laying out and building the draw lists (what --max-frame-ms checks)
  double ms = 0;     // the whole frame: that, drawing, and the GPU finishing it (glFinish)
};

// Lays out one frame of the UI and, when `show`, draws it into the back buffer.
FrameCost render_frame(GLFWwindow* window, attn::ui::App& app, const attn::ui::Playground& playground,
                       bool show = true) {
  const auto start = std::chrono::steady_clock::now();
  if (app.update_fonts()) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  const uint64_t before = attn::ui::allocation_count();
  const size_t computed_before = playground.compute_count();
  ImGui::NewFrame();
  app.draw();
  ImGui::Render();
  FrameCost cost{attn::ui::allocation_count() - before, playground.compute_count() - computed_before,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
  if (!show) return cost;
  int w = 0, h = 0;
  glfwGetFramebufferSize(window, &w, &h);
  glViewport(0, 0, w, h);
  glClearColor(0.1f, 0.1f, 0.12f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  glFinish();
  cost.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return cost;
}

// The Korean UI's untranslated words in the last frame's text (ui/drawn_text.hpp), one sentence each.
std::vector<std::string> untranslated_text() {
  std::vector<std::string> found;
  for (const std::string& run : attn::ui::drawn_text(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts)) {
    const std::vector<std::string> words = attn::ui::english_only_words(run);
    if (!words.empty()) found.push_back("untranslated '" + words.front() + "' in \"" + run + "\"");
  }
  return found;
}

// --check-layout: every view laid out for two frames (a tab shows from the frame after it is selected;
// nothing is drawn: the layout is all it checks), then what the last frame placed that overlaps or is
// cut off; in Korean, every tour step too, and any English UI word the frames drew. 1 when anything is.
int check_layout(GLFWwindow* window, attn::ui::App& app, const attn::ui::Playground& playground) {
  render_frame(window, app, playground);  // computes: the views list the result's stages
  const bool korean = attn::ui::language() == attn::ui::Lang::ko;
  attn::Json all = app.layout_views();
  for (int step = 1; korean && step <= attn::ui::tour_length; ++step) all.push_back({{"tour", step}});
  if (korean) all.push_back({{"tour", 0}});
  size_t views = 0, boxes = 0, problems = 0;
  for (const attn::Json& view : all) {
    app.select_view(view);
    for (int frame = 0; frame < 2; ++frame) {
      glfwPollEvents();
      render_frame(window, app, playground, false);
    }
    std::vector<std::string> found = app.layout().problems();
    if (korean)
      for (std::string& s : untranslated_text()) found.push_back(std::move(s));
    ++views;
    boxes += app.layout().boxes().size();
    problems += found.size();
    if (found.empty()) continue;
    std::printf("attn-gui: %s: %zu layout problem(s)\n", view.dump().c_str(), found.size());
    for (const std::string& p : found) std::printf("  %s\n", p.c_str());
  }
  int w = 0, h = 0;
  glfwGetWindowSize(window, &w, &h);
  std::printf("attn-gui: layout at %dx%d: %zu view(s), %zu box(es), %zu problem(s)\n", w, h, views, boxes, problems);
  return problems ? 1 : 0;
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "%s\nusage: attn-gui [--hash SETTINGS] [--stage NAME] [--tab TAB] [--weights W.safetensors [--config C.json] "
               "[--vocab V.json] | --model-dir DIR | --model NAME[@REVISION]] [--backend exact|cpu|gl|cuda|auto] [--size WxH] "
               "[--screenshot FILE.png --frames N [--check-idle] [--max-frame-ms MS] [--trace FILE.json]] [--train-steps N [--train-log FILE]] "
               "[--patch] [--view JSON] "
               "[--check-layout] [--lang en|ko]\n",
               problem);
  return 2;
}

// The locale's language, as setlocale would pick it (LC_ALL over LC_MESSAGES over LANG).
attn::ui::Lang locale_language() {
  for (const char* name : {"LC_ALL", "LC_MESSAGES", "LANG"})
    if (const char* value = std::getenv(name); value && *value) return attn::ui::lang_for_locale(value);
  return attn::ui::Lang::en;
}

}  // namespace

int main(int argc, char** argv) {
  std::string hash, stage, screenshot, trace, tab, view, model_dir, model, lang, train_log, backend = "exact";
  bool check_idle = false, check_layout_views = false, patch = false;
  attn::ui::ModelFiles model_files;
  int frames = 3, width = 1280, height = 800, train_steps = 0;
  double max_frame_ms = 0;  // --max-frame-ms: fail when a frame from the third on takes longer
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--hash") hash = value();
    else if (arg == "--stage") stage = value();
    else if (arg == "--tab") tab = value();
    else if (arg == "--view") view = value();
    else if (arg == "--backend") backend = value();
    else if (arg == "--lang") lang = value();
    else if (arg == "--check-idle") check_idle = true;
    else if (arg == "--patch") patch = true;
    else if (arg == "--check-layout") check_layout_views = true;
    else if (arg == "--screenshot") screenshot = value();
    else if (arg == "--trace") trace = value();
    else if (arg == "--weights") model_files.weights = value();
    else if (arg == "--config") model_files.config = value();
    else if (arg == "--vocab") model_files.vocab = value();
    else if (arg == "--model-dir") model_dir = value();
    else if (arg == "--model") model = value();
    else if (arg == "--frames") frames = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--max-frame-ms") max_frame_ms = std::atof(value().c_str());
    else if (arg == "--train-steps") train_steps = std::max(0, std::atoi(value().c_str()));
    else if (arg == "--train-log") train_log = value();
    else if (arg == "--size") {
      if (std::sscanf(value().c_str(), "%dx%d", &width, &height) != 2 || width < 200 || height < 200)
        return usage("--size must be WxH (at least 200x200)");
    } else if (arg == "--help" || arg == "-h") return usage("attn-gui: the attention playground");
    else return usage(("unknown argument " + arg).c_str());
  }
  attn::ui::set_default_language(locale_language());
  attn::ui::PlaygroundConfig config;
  std::optional<attn::ui::PlaygroundConfig> compare_a;  // the compare view's run A (compare=1&a.…)
  attn::ui::Tab first_tab = attn::ui::Tab::stage;
  try {
    config = attn::ui::from_hash(hash);
    compare_a = attn::ui::compare_from_hash(hash);
    if (!tab.empty()) first_tab = attn::ui::parse_tab(tab);
    if (!lang.empty()) config.lang = attn::ui::lang_code(attn::ui::parse_lang(lang));
    std::error_code ec;  // --model NAME: a folder of that name wins, as in from_pretrained; else the Hub's
    if (!model.empty() && !model_dir.empty()) return usage("--model and --model-dir name the same thing: give one");
    if (std::filesystem::is_directory(model, ec)) model_dir = model;
    else if (!model.empty()) config = attn::ui::apply_settings(config, attn::Json{{"model", model}});
  } catch (const attn::InputError& e) {
    return usage(e.what());
  }
  if (check_layout_views && !screenshot.empty())
    return usage("--check-layout lays views out without drawing them: no --screenshot");
  if (model_files.weights.empty() && !(model_files.config.empty() && model_files.vocab.empty()))
    return usage("--config and --vocab need --weights");
  if (!model_dir.empty()) {
    if (!model_files.weights.empty()) return usage("--model-dir replaces --weights, --config and --vocab");
    try {
      model_files = attn::ui::sort_model_files({model_dir});
    } catch (const attn::InputError& e) {
      return usage(e.what());
    }
  }

  if (!glfwInit()) {
    std::fprintf(stderr, "attn-gui: cannot initialise GLFW (no display?)\n");
    return 1;
  }
  GLFWwindow* window = open_window(width, height);
  if (!window) {
    std::fprintf(stderr, "attn-gui: cannot open an OpenGL 3.3 window\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);

  IMGUI_CHECKVERSION();
  attn::ui::count_imgui_allocations();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  int status = 0;
  {
    attn::ui::Playground playground(config);
    NativePlatform platform;
    attn::ui::App app(playground, platform);
    try {
      if (compare_a) playground.pin_config(*compare_a);
    } catch (const attn::InputError& e) {
      std::fprintf(stderr, "attn-gui: run A of the hash: %s\n", e.what());
      status = 2;
    }
    if (backend != "exact") {
      const attn::ui::BackendChoice& choice = playground.select_backend(backend, platform.backend_factory());
      if (!choice.error.empty()) std::fprintf(stderr, "attn-gui: %s\n", choice.error.c_str());
      else std::printf("attn-gui: backend %s: %s\n", choice.name.c_str(), choice.note.c_str());
    }
    if (!stage.empty()) app.select_stage(stage);
    app.select_tab(first_tab);
    const bool reading = !model_files.weights.empty() || model_files.pretrained;
    if (reading) app.start_loading(model_files);  // the window shows how far it has got
    else if (!config.hub.empty()) app.open_hub_model(config.hub);  // --model ORG/NAME, or model= in the hash
    if (reading || !config.hub.empty()) {
      if (!screenshot.empty() || check_layout_views) {
        while (app.busy()) render_frame(window, app, playground);  // the views and the screenshot show the model
        if (!playground.config().loaded) {
          std::fprintf(stderr, "attn-gui: %s\n", app.status().c_str());
          status = 2;
        }
      }
    }
    if (!view.empty()) {  // after the model: a view may use it (the Generate tab's "generate")
      try {
        app.select_view(attn::Json::parse(view));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "attn-gui: --view: %s\n", e.what());
        return 2;
      }
    }
    if (patch || check_layout_views) {  // the Interventions tab's patching, as its Run button starts it
      const std::string error = app.start_patching();
      if (!error.empty() && patch) {
        std::fprintf(stderr, "attn-gui: cannot patch: %s\n", error.c_str());
        status = 2;
      }
      while (app.patching().running()) render_frame(window, app, playground);
    }
    if (check_layout_views && !train_steps) train_steps = 20;  // the Train tab shows its curves and heads
    if (train_steps) {
      const std::string error = app.configure_training(config.training);
      if (!error.empty()) {
        std::fprintf(stderr, "attn-gui: cannot train: %s\n", error.c_str());
        status = 2;
      } else {
        std::string log;
        for (const attn::Json& record : app.training().run_steps(size_t(train_steps))) log += record.dump() + "\n";
        if (!train_log.empty()) write_file(train_log, log.data(), log.size());
      }
    }
    if (check_layout_views && !status) status = check_layout(window, app, playground);
    FrameCost slowest;  // of the frames from the third on (the first computes, the second settles)
    for (int frame = 1; !check_layout_views && !glfwWindowShouldClose(window); ++frame) {
      if (screenshot.empty()) glfwWaitEventsTimeout(app.busy() ? 1.0 / 30 : 0.5);  // idle: no busy loop, no recompute
      else glfwPollEvents();
      const FrameCost cost = render_frame(window, app, playground);
      if (frame >= 3) slowest.ui_ms = std::max(slowest.ui_ms, cost.ui_ms), slowest.ms = std::max(slowest.ms, cost.ms);
      if (!screenshot.empty() && frame >= frames) {
        int w = 0, h = 0;
        glfwGetFramebufferSize(window, &w, &h);
        std::vector<uint8_t> rgba(size_t(w) * size_t(h) * 4), flipped(rgba.size());
        glPixelStorei(GL_PACK_ALIGNMENT, 1);
        glReadBuffer(GL_BACK);
        glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, rgba.data());
        const size_t row = size_t(w) * 4;
        for (size_t y = 0; y < size_t(h); ++y)
          std::memcpy(flipped.data() + y * row, rgba.data() + (size_t(h) - 1 - y) * row, row);
        try {
          const auto png = attn::png_bytes(flipped, size_t(w), size_t(h));
          write_file(screenshot, png.data(), png.size());
          std::printf("attn-gui: %d frames, %d computation(s), last in %.1f ms; screenshot %s (%dx%d)\n", frame,
                      int(playground.compute_count()), playground.result() ? playground.result()->compute_ms : 0.0,
                      screenshot.c_str(), w, h);
          std::printf("attn-gui: last frame's UI: %llu heap allocation(s), %zu computation(s)\n",
                      static_cast<unsigned long long>(cost.allocations), cost.computations);
          if (frames >= 3)
            std::printf("attn-gui: slowest frame from the 3rd on: UI %.1f ms, whole frame %.1f ms\n", slowest.ui_ms, slowest.ms);
          if (max_frame_ms > 0 && slowest.ui_ms > max_frame_ms) {
            std::fprintf(stderr, "attn-gui: a frame's UI took %.1f ms, over --max-frame-ms %.1f\n", slowest.ui_ms, max_frame_ms);
            status = 1;
          }
          if (check_idle && (cost.allocations || cost.computations)) {
            std::fprintf(stderr, "attn-gui: the last frame was not idle (--check-idle)\n");
            status = 1;
          }
          if (!playground.error().empty()) std::printf("attn-gui: error shown: %s\n", playground.error().c_str());
          if (const attn::ui::Computed* result = playground.result()) {
            std::printf("attn-gui: computed by %s\n", result->computed_by.c_str());
            if (!trace.empty()) {
              const std::string document = result->json().dump();
              write_file(trace, document.data(), document.size());
            }
          }
        } catch (const std::exception& e) {
          std::fprintf(stderr, "attn-gui: %s\n", e.what());
          status = 1;
        }
        break;
      }
      glfwSwapBuffers(window);
    }
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}
