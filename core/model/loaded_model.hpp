// Any model the engine runs, as the interventions see it: the tutorial's classifier (with its
// vocabulary and mask), a BERT / GPT-2 checkpoint (with its tokenizer) or a Llama-family decoder (with
// its tokenizer.json when its folder has one), loaded from the model options
// every front end shares, turning sentences or ids into a batch and running it with hooks.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/interventions.hpp"
#include "core/model/model_options.hpp"
#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer_json.hpp"

namespace attn {

struct ModelInput {
  std::vector<int64_t> ids, type_ids;            // [batch, seq]; type_ids: BERT's segments (empty = 0)
  std::vector<size_t> lengths;                   // each row's real tokens (right padding after them)
  size_t batch = 0, seq = 0;
  std::vector<std::vector<std::string>> tokens;  // readable labels
};

struct LoadedModel {  // shared, not copied: the playground lends its models
  std::shared_ptr<const TransformerModel> classifier;
  MaskKind mask = MaskKind::padding;
  Vocab vocab;  // the classifier's
  std::shared_ptr<const Pretrained> pretrained;
  std::shared_ptr<const DecoderModel> decoder;
  std::shared_ptr<const JsonTokenizer> decoder_tokenizer;  // null when the folder has no tokenizer.json

  ModelStages stages() const;
  std::string description() const;  // "GPT-2: 2 layers, 4 heads of 8", for reports
  size_t vocab_size() const;
  size_t max_positions() const;
  std::string token(int64_t id) const;  // readable
  // The sentences through the model's tokenizer (BERT adds [CLS] … [SEP]), padded to the longest (the
  // causal models' padding is after every real token, which never attends to it).
  ModelInput tokenize(const std::vector<std::string>& sentences) const;
  // Rows of ids (each within the vocabulary, else InputError), padded with the model's padding id.
  ModelInput from_ids(const std::vector<std::vector<int64_t>>& rows) const;
  // The forward pass in evaluation mode (no dropout), `hooks` intervening; `start` resumes an earlier
  // run of the same input at a layer (core/model/transformer.hpp; not a decoder's: InputError).
  Trace forward(const ModelInput& input, const Hooks* hooks = nullptr, const LayerStart* start = nullptr) const;
};

// A checkpoint's files: a Llama-family decoder when config.json names one, else BERT or GPT-2; `progress`
// follows the reading of the weights.
LoadedModel load_checkpoint(const PretrainedFiles& files, const ReadProgress& progress = nullptr);
// A checkpoint when the options name one, else the classifier (seeded or loaded) whose vocabulary is
// --vocab or, without it, built from `sentences` (or, for ids alone, --vocab-size / the config's).
// Options the command cannot honour (--train) are refused by the caller.
LoadedModel load_model(const ModelOptions& o, const std::vector<std::string>& sentences);

}  // namespace attn
