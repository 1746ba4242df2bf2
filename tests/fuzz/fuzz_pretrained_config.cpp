// A Hugging Face config.json (attn encode --model-dir, the playground's Model files…): JSON, the family,
// sizes and options, then the weights' names and shapes it implies, checked against an empty file. A
// Llama-family one (model_type llama, mistral, qwen2, qwen3, gemma2, gemma3_text, gpt_neox) is read
// as the decoders read it (rope_scaling, layer types, eos_token_id, …).
#include "core/model/decoder.hpp"
#include "core/model/pretrained_files.hpp"
#include "tests/fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".json");
  return attn::fuzz::guarded([&] {
    if (const attn::Json json = attn::read_json_file(path, "model config"); attn::is_decoder_config(json)) {
      attn::load_decoder(attn::decoder_config_from_json(json, "config.json"), {}, "model.safetensors");
      return;
    }
    const attn::PretrainedConfig config = attn::read_pretrained_config(path);
    // Sizes beyond what a file could hold are only listed as missing: nothing is allocated for them.
    attn::load_pretrained(config, {}, "model.safetensors");
  });
}
