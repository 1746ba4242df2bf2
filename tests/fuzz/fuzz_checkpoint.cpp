// A training checkpoint (attn train --resume): its tensors, and the state in its metadata, restored
// into a trainer of the places task's model (the run the seed checkpoint comes from). A checkpoint
// taken is saved again, as attn train saves it, and loaded into a fresh trainer, which must hold the
// same tensors and state (the round trip); then it takes a step.
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

// The tensors and the state (metadata "state") of a checkpoint file, restored as attn train's resume does.
attn::train::Trainer load_checkpoint(const std::string& path) {
  std::map<std::string, std::string> metadata;
  const auto tensors = attn::read_safetensors(path, &metadata);
  attn::Json state;
  try {
    state = attn::Json::parse(metadata["state"]);
  } catch (const attn::Json::exception&) {
    throw attn::InputError("the checkpoint's state is not valid JSON");
  }
  attn::train::Trainer trainer = places_trainer();
  trainer.restore(tensors, state);
  return trainer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".safetensors");
  return attn::fuzz::guarded([&] {
    attn::train::Trainer trainer = load_checkpoint(path);
    const std::string saved = path + ".saved.safetensors";
    attn::write_safetensors(saved, trainer.checkpoint_tensors(), {{"state", trainer.checkpoint_meta().dump()}});
    attn::train::Trainer again = load_checkpoint(saved);
    if (!attn::fuzz::same_tensors(trainer.checkpoint_tensors(), again.checkpoint_tensors()) ||
        trainer.checkpoint_meta() != again.checkpoint_meta())
      attn::fuzz::finding("a checkpoint saved and loaded again differs");
    if (again.steps_done() < again.settings().steps) again.step();
  });
}
