// Opening a model by its Hugging Face Hub name in the playground (docs/hub.md): the UI's field and progress
// bar are one code base (ui/app_hub.cpp); each shell downloads its own way behind HubDownload: attn-gui
// with libcurl into the cache huggingface_hub shares (native/hub.cpp), the page with fetch into the
// browser's Cache Storage (web/hub.js). No network here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn::ui {

// How far a download has got: the file asked for, its bytes so far of its size (0 of 0 while it is asked
// for), and the bytes of every file done before it.
struct HubProgress {
  std::string file;
  uint64_t done = 0, total = 0, earlier = 0;
};

// A finished download: the folder holding the model's files (read as attn-gui --model-dir reads one),
// or why there is none.
struct HubResult {
  std::string folder, error;
};

// One download, running beside the frames (a thread, or the page's fetch): the UI polls it each frame.
class HubDownload {
 public:
  virtual ~HubDownload() = default;
  virtual HubProgress progress() const = 0;
  // The result once finished (once); until then nothing.
  virtual std::optional<HubResult> take() = 0;
  // Stops it (what is downloaded stays in the cache, to be resumed); take() then gives no model.
  virtual void cancel() = 0;
};

// Small models the field suggests (the list): GPT-2, DistilGPT-2, SmolLM2-135M, Qwen2.5-0.5B,
// Pythia-70m, BERT base.
const std::vector<std::string>& suggested_hub_models();

}  // namespace attn::ui
