// A model config file (--config), through the CLI's own reading: JSON, keys, values, sizes that fit.
#include "core/model/model_options.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attn::ModelOptions options;
  options.config_file = attn::fuzz::as_file(data, size, ".json");
  return attn::fuzz::guarded([&] { attn::validate(attn::model_config(options)); });
}
