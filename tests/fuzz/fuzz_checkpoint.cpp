// A training checkpoint (attn train --resume): its tensors, and the state in its metadata, restored
// into a trainer of the places task's model (the run the seed checkpoint comes from), which then takes
// a step.
#include "core/train/train.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

attn::train::Trainer places_trainer() {
  const attn::train::TaskSpec& task = attn::train::find_task("places");
  attn::TorchGenerator gen(0);
  attn::TransformerModel model = attn::init_transformer(task.model, gen);
  attn::train::TrainSettings settings;
  settings.optimizer.kind = attn::parse_optimizer(task.optimizer);
  settings.batch_size = 4, settings.steps = 10;
  return attn::train::Trainer(std::move(model), attn::train::task_data(task, 16, 0, 0).train, settings, gen);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    std::map<std::string, std::string> metadata;
    const auto tensors = attn::read_safetensors(path, &metadata);
    attn::Json state;
    try {  // as attn train's resume reads it
      state = attn::Json::parse(metadata["state"]);
    } catch (const attn::Json::exception&) {
      throw attn::InputError("the checkpoint's state is not valid JSON");
    }
    attn::train::Trainer trainer = places_trainer();
    trainer.restore(tensors, state);
    if (trainer.steps_done() < trainer.settings().steps) trainer.step();
  });
}
