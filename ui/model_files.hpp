// A model loaded from files into the playground: safetensors weights, its config JSON and vocabulary,
// the files `attn encode --weights/--config/--vocab` reads; or a Hugging Face BERT / GPT-2 checkpoint's
// files (core/model/pretrained_files.hpp), or a Llama-family decoder's (config.json, model.safetensors or its
// shards' index, tokenizer.json; core/model/loaded_model.hpp). Both shells hand paths here (the browser writes the chosen files
// into Emscripten's MEMFS first). No ImGui; tests/test_ui.cpp tests it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/model/decoder.hpp"
#include "core/model/generate.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer.hpp"
#include "core/text/tokenizer_json.hpp"
#include "core/model/transformer.hpp"

namespace attn::ui {

struct ModelFiles {
  std::string weights;  // .safetensors, required
  std::string config;   // JSON config, optional (then the classifier's defaults, as `attn encode`)
  std::string vocab;    // vocabulary JSON {token: id}, optional (then built from the sentences)
  std::optional<PretrainedFiles> pretrained;  // a checkpoint's files instead of the three above
};

struct LoadedModel {
  std::string name;  // the files' names, for the UI; a Hub model's "ARCHITECTURE: ORG/NAME@REVISION"
  std::string hub;   // a Hub model's "ORG/NAME@REVISION" (its link: model=… in the URL hash), else empty
  TransformerModel model;
  std::optional<Vocab> vocab;
  std::shared_ptr<const Pretrained> pretrained;  // a BERT or GPT-2 checkpoint instead of the classifier
  std::shared_ptr<const DecoderModel> decoder;   // or a Llama-family decoder's (core/model/decoder.hpp)
  std::shared_ptr<const JsonTokenizer> decoder_tokenizer;  // its tokenizer.json; null when the folder has none
  bool checkpoint() const { return pretrained || decoder; }
  bool causal_lm() const;  // GPT-2 or a decoder: next tokens, generation
  std::string token(int64_t id) const;  // a checkpoint's token as shown (shown_token)
  size_t layers() const;
  // Generation's view of the model (GPT-2, or a decoder with its tokenizer.json; else InputError), which
  // refers to it, and a prompt's ids through its tokenizer (InputError for an empty prompt).
  CausalLM generation_lm() const;
  std::vector<int64_t> prompt_ids(const std::string& prompt) const;
  // The engine's view of a checkpoint (core/model/loaded_model.hpp), sharing its parts.
  attn::LoadedModel engine() const;
};

// A token label as the playground shows it: SentencePiece's space mark ▁ as ·, as GPT-2's space is shown
// (the UI's font has no ▁).
std::string shown_token(std::string label);

// A checkpoint read from a Hub snapshot (ui/hub.hpp), named by its repository: "ARCHITECTURE: ORG/NAME@REVISION",
// and `hub` set (sharing its parts).
std::shared_ptr<const LoadedModel> hub_model(const LoadedModel& model, const std::string& hub);

// Sorts chosen files into their roles: *.safetensors are weights; a JSON object whose keys are all
// config keys is the config, anything else the vocabulary (a name containing "config" or "vocab"
// decides first). A transformers config.json, vocab.txt or merges.txt among them, or a single folder,
// makes them a checkpoint's files (sort_pretrained_files). Throws InputError for two files of one role
// or no weights.
ModelFiles sort_model_files(const std::vector<std::string>& paths);

// Reads and checks the files (every reader's InputError names the file and the problem). Without
// vocab_size in the config, the embedding's rows in the weights set it. `progress` follows the reading
// of the weights (read_safetensors).
std::shared_ptr<const LoadedModel> load_model(const ModelFiles& files, const ReadProgress& progress = nullptr);

struct LoadResult {
  std::shared_ptr<const LoadedModel> model;  // null when the files were refused
  std::string error;                         // why
};
// load_model with every failure as a message (the files' InputError, running out of memory).
LoadResult read_model_files(const ModelFiles& files, const ReadProgress& progress = nullptr);

// Reads a model on a worker thread, so that a window stays responsive and can show how far a large file
// has got; where there are no threads (WebAssembly without pthreads) start() reads it at once.
class ModelLoader {
 public:
  ModelLoader() = default;
  ModelLoader(const ModelLoader&) = delete;
  ModelLoader& operator=(const ModelLoader&) = delete;
  ~ModelLoader() { cancel(); }
  // Starts reading `files` (a read still running is cancelled first).
  void start(ModelFiles files);
  // Between start() and the take() that returns its result.
  bool running() const { return pending_; }
  // Bytes of weights read so far, and in all (0 of 0 until the weights' header has been checked).
  uint64_t bytes_read() const { return read_; }
  uint64_t bytes_total() const { return total_; }
  // Stops the read at its next 8 MiB and forgets it.
  void cancel();
  // The read's result once it has finished (once); until then nothing.
  std::optional<LoadResult> take();

 private:
  std::thread thread_;
  std::atomic<uint64_t> read_{0}, total_{0};
  std::atomic<bool> cancelled_{false}, done_{false};
  bool pending_ = false;
  LoadResult result_;
};

}  // namespace attn::ui
