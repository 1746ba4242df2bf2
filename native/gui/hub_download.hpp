// attn-gui's Hub client for the playground's "Hugging Face model" field (ui/hub.hpp): native/hub.cpp's
// snapshot() on a thread, into the cache huggingface_hub shares (HF_HOME, HF_HUB_CACHE, HF_TOKEN,
// HF_HUB_OFFLINE as for `attn --model`; the endpoint from hub=… in the hash, else HF_ENDPOINT).
#pragma once
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/model/hub_cache.hpp"
#include "ui/hub.hpp"

namespace attn::gui {

class NativeHubDownload final : public ui::HubDownload {
 public:
  NativeHubDownload(const hub::Reference& ref, const std::string& endpoint);
  ~NativeHubDownload() override;
  ui::HubProgress progress() const override;
  std::optional<ui::HubResult> take() override;
  void cancel() override { cancelled_ = true; }

 private:
  bool watch(const std::string& file, uint64_t done, uint64_t total);

  mutable std::mutex mutex_;
  ui::HubProgress progress_;
  std::optional<ui::HubResult> result_;
  std::atomic<bool> cancelled_{false};
  std::thread thread_;  // last: started once the members it uses exist
};

}  // namespace attn::gui
