// A model loaded from files into the playground: safetensors weights, its config JSON and vocabulary,
// the files `attn encode --weights/--config/--vocab` reads; or a Hugging Face BERT / GPT-2 checkpoint's
// files (core/model/pretrained_files.hpp). Both shells hand paths here (the browser writes the chosen files
// into Emscripten's MEMFS first). No ImGui; tests/test_ui.cpp tests it.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/transformer.hpp"

namespace attn::ui {

struct ModelFiles {
  std::string weights;  // .safetensors, required
  std::string config;   // JSON config, optional (then the classifier's defaults, as `attn encode`)
  std::string vocab;    // vocabulary JSON {token: id}, optional (then built from the sentences)
  std::optional<PretrainedFiles> pretrained;  // a checkpoint's files instead of the three above
};

struct LoadedModel {
  std::string name;  // the files' names, for the UI
  TransformerModel model;
  std::optional<Vocab> vocab;
  std::optional<Pretrained> pretrained;  // a BERT or GPT-2 checkpoint instead of the classifier
};

// Sorts chosen files into their roles: *.safetensors are weights; a JSON object whose keys are all
// config keys is the config, anything else the vocabulary (a name containing "config" or "vocab"
// decides first). A transformers config.json, vocab.txt or merges.txt among them, or a single folder,
// makes them a checkpoint's files (sort_pretrained_files). Throws InputError for two files of one role
// or no weights.
ModelFiles sort_model_files(const std::vector<std::string>& paths);

// Reads and checks the files (every reader's InputError names the file and the problem). Without
// vocab_size in the config, the embedding's rows in the weights set it.
std::shared_ptr<const LoadedModel> load_model(const ModelFiles& files);

}  // namespace attn::ui
