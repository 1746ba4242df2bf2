#include "native/gui/hub_download.hpp"

#include <exception>
#include <utility>

#include "native/hub.hpp"

namespace attn::gui {

NativeHubDownload::NativeHubDownload(const hub::Reference& ref, const std::string& endpoint)
    : thread_([this, ref, endpoint] {
        ui::HubResult r;
        try {
          hub::Settings settings = hub::settings_from_environment();
          if (!endpoint.empty()) settings.endpoint = endpoint;
          r.folder = hub::snapshot(ref, settings, true, [this](const std::string& file, uint64_t done, uint64_t total) {
            return watch(file, done, total);
          });
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        const std::lock_guard<std::mutex> lock(mutex_);
        result_ = std::move(r);
      }) {}

NativeHubDownload::~NativeHubDownload() {
  cancel();
  thread_.join();
}

bool NativeHubDownload::watch(const std::string& file, uint64_t done, uint64_t total) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (file != progress_.file) {  // the next file: the last one's bytes join those done before
    progress_.earlier += progress_.done;
    progress_.file = file;
  }
  progress_.done = done;
  progress_.total = total;
  return !cancelled_;
}

ui::HubProgress NativeHubDownload::progress() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return progress_;
}

std::optional<ui::HubResult> NativeHubDownload::take() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(result_, std::nullopt);
}

}  // namespace attn::gui
