// The playground's URL hash (a link from anyone) and its settings object (`attnlab.set`): the input as
// a hash, and as JSON settings when it parses as JSON. Whatever is taken round-trips: settings → hash
// → settings gives the same configuration, and that configuration's hash again; so does the compare
// view's run A in a hash (compare=1&a.…).
#include "tests/fuzz/fuzz_target.hpp"
#include "ui/playground.hpp"

namespace {

void check_round_trip(const attn::ui::PlaygroundConfig& config) {
  const std::string hash = attn::ui::to_hash(config);
  const attn::ui::PlaygroundConfig again = attn::ui::from_hash(hash);
  if (again != config || attn::ui::to_hash(again) != hash)
    attn::fuzz::finding("settings -> hash -> settings changed them (hash '" + hash + "')");
  attn::ui::PlaygroundConfig base;
  base.training = config.training;  // the Train tab's settings are attnlab.train's, not attnlab.set's
  if (attn::ui::apply_settings(base, attn::ui::settings_json(config)) != config)
    attn::fuzz::finding("settings -> JSON -> settings changed them (hash '" + hash + "')");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  attn::fuzz::guarded([&] { check_round_trip(attn::ui::from_hash(text)); });
  attn::fuzz::guarded([&] {
    if (const auto a = attn::ui::compare_from_hash(text)) {
      check_round_trip(*a);
      if (attn::ui::compare_from_hash(attn::ui::compare_hash(*a)) != *a)
        attn::fuzz::finding("run A -> compare hash -> run A changed it");
    }
  });
  const attn::Json settings = attn::Json::parse(text, nullptr, false);
  if (settings.is_discarded()) return 0;
  return attn::fuzz::guarded([&] { check_round_trip(attn::ui::apply_settings(attn::ui::PlaygroundConfig(), settings)); });
}
