// Training a language model: GPT-2 (core/model/gpt2.hpp) learning to predict each next token, as a plain
// PyTorch loop does it (tests/torchgen/gpt2_train.py): per step, the batch (BatchOrder; items padded on
// the right with id 0, the padding labelled −100), model.train() forward drawing dropout from the
// generator initialisation drew from, the loss GPT2LMHeadModel(input_ids, labels=input_ids) computes,
// backward, the gradient norm (clipped when asked), optimizer.step(). The data: files of text or ids,
// cut into windows, or the built-in language tasks whose heads are known (docs/training-lm.md).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/gpt2.hpp"
#include "core/text/tokenizer_bpe.hpp"
#include "core/train/train.hpp"

namespace attn::train {

// --- data (--data with a GPT-2 model) ---

// The texts of a data file: JSON Lines {"text": "…"} (or {"ids": […]}, which has none), other keys
// ignored; or plain text, the whole file one text (by the name: .jsonl, .ndjson, .json are JSON Lines,
// .txt text; else JSON Lines when the first character that is not blank is '{'). InputError names the
// file and its bad lines (the first 10: invalid UTF-8 or JSON, no "text" or "ids", bad ids).
struct LmLine {
  size_t line = 0;            // 1-based; 0 for a plain text file
  std::string text;           // or
  std::vector<int64_t> ids;
};
std::vector<LmLine> parse_lm_data(const std::string& path, const std::string& content);
// All the lines' texts, one after another (a character vocabulary is built from them).
std::string lm_text(const std::vector<LmLine>& lines);
// Each line's tokens (its ids, or its text through `tokenizer`), cut into windows of `seq_len` tokens; a
// last window of at least 2 tokens is kept (a window of 1 has nothing to predict). Ids must be below
// `vocab_size`. InputError naming the file for an id out of range or a text that does not tokenize,
// and when no window is left ("no usable token").
std::vector<LabelledItem> lm_items(const std::string& path, const std::vector<LmLine>& lines,
                                   const BytePairTokenizer& tokenizer, size_t seq_len, size_t vocab_size);

// The batch of items `indices`: ids right-padded with 0, each row's length.
PretrainedInput lm_batch(const std::vector<LabelledItem>& items, const std::vector<size_t>& indices);

// --- built-in language tasks (--task NAME) ---
//
// Item i (0-based) is drawn from the task's one generator after items 0 … i−1 (draw(m) as train_data.hpp's:
// g.random() mod m), as text over the task's characters:
//   induction: 32 tokens, each of a … z A … Z 0 … 9 drawn (draw(62)); then a segment's length
//     n = 4 + draw(9), its first place a = draw(33 − 2n) and its second b = a + n + draw(33 − 2n − a):
//     tokens b … b+n−1 are made those of a … a+n−1. Only the content finds the earlier copy (its length and
//     distance vary), so a previous-token head and an induction head reading it must form (Olsson et al.);
//   halves: 12 letters of a … z A … F (draw(32)), then the same 12 again: the positional contrast, which a
//     head attending 11 places back solves (docs/training-lm.md);
//   copy: L = 3 + draw(8) letters of a … z, "|", the same letters again (the copy's attention is a
//     diagonal L + 1 positions back);
//   reverse: the same letters, "|", then reversed (an anti-diagonal);
//   korean: a sentence of the classifier tasks' places (even i) or asked (odd i) generators, its words
//     joined by spaces, then "\n"; the items are windows of that text (seq_len characters);
//   text: no items of its own: a character language model of --data's text (its vocabulary built from it).
// Induction and halves items carry their repeated segment (LabelledItem::repeat).
struct LmSample {
  std::string text;
  RepeatedSegment repeat;
};
struct LmTaskSpec {
  std::string name;
  std::string characters;  // the vocabulary's characters (character_tokenizer's input); "": the data's
  size_t n_embd = 64, n_head = 2, n_layer = 2, seq_len = 32;
  double lr = 1e-3;
  size_t batch_size = 32, steps = 1000, train_size = 0, val_size = 0;
  LmSample (*sample)(TorchGenerator& g, size_t index) = nullptr;  // item `index`; null: none
  bool attention_only = false;  // no MLP (n_inner 0, as transformers builds it: the MLP adds its c_proj.bias)
  bool untied = false;          // an LM head of its own (tie_word_embeddings false)
  double initializer_range = 0.02;
  std::string schedule = "constant";  // and its warm-up, a share of the run's steps (--schedule, --warmup)
  double warmup_share = 0;
};
const std::vector<LmTaskSpec>& lm_tasks();  // induction, halves, copy, reverse, korean, text
const LmTaskSpec* find_lm_task(const std::string& name);        // null: not a language task
// The task's tokenizer, GPT-2 config (from the task's sizes; dropout 0) and items.
BytePairTokenizer lm_task_tokenizer(const LmTaskSpec& task);
PretrainedConfig lm_task_config(const LmTaskSpec& task, size_t vocab_size);
Datasets lm_task_data(const LmTaskSpec& task, const BytePairTokenizer& tokenizer, uint64_t seed);

// --- training ---

// Whether the item carries a repeated segment that fits it (the induction and halves tasks'), and whether
// every one of `items` (at least one) does.
bool has_repeat(const LabelledItem& item);
bool has_repeats(const std::vector<LabelledItem>& items);
// The loss and the share of right next-token predictions on the repeated segments' predictable tokens
// (from each segment's second token on: only there can the earlier copy tell the next token), in
// evaluation mode; null when the items carry no segments.
struct RepeatedFit {
  float loss = 0;
  double accuracy = 0;
};
std::optional<RepeatedFit> repeated_fit(const PretrainedModel& model, const std::vector<LabelledItem>& items);
// The induction (prefix-matching) score of Olsson et al. and ARENA's tutorials, per head ([layers, heads]
// flat): a head's mean attention from each position i of a repeated segment's second copy to i − (second −
// first) + 1, the token after the earlier copy of i's token. `items` are the batch `in` was made of
// (lm_batch) and `trace` its forward's. TransformerLens's detector (attn heads) averages over every
// position, most of which no head can match, so it stays lower.
std::vector<double> prefix_matching_scores(const PretrainedModel& model, const Trace& trace, const PretrainedInput& in,
                                           const std::vector<LabelledItem>& items);
// On the first 32 items: the best prefix-matching score of the model's heads, and the best previous-token
// score (TransformerLens's detector) of its first layer's heads: the two heads of the induction circuit;
// with `hooks` (an ablation), those of the model so changed.
struct CircuitScores {
  double induction = 0, previous_token = 0;
};
CircuitScores circuit_scores(const PretrainedModel& model, const std::vector<LabelledItem>& items,
                             const Hooks* hooks = nullptr);

class LmTrainer : public Training {
 public:
  // Throws InputError for bad settings or an item longer than the model's positions.
  LmTrainer(PretrainedModel model, std::vector<LabelledItem> train_items, TrainSettings settings,
            TorchGenerator dropout);

  // accuracy: the share of predicted positions whose most likely next token is the right one.
  StepRecord step() override;
  void begin_step() override;  // the forward pass and the loss
  // With repeated segments (the induction tasks), also their fit and the circuit's scores (with `hooks`,
  // of the model they change: an ablated head's part in the circuit).
  EvalRecord evaluate(const std::vector<LabelledItem>& items, const Hooks* hooks = nullptr) const override;
  std::unique_ptr<Evaluation> begin_evaluation(const std::vector<LabelledItem>& items) const override;
  const PretrainedModel& model() const { return model_; }
  const PretrainedModel& gradients() const { return grads_; }
  std::vector<NamedTensor> checkpoint_tensors() const override;  // the model under its checkpoint names
  void restore(const std::vector<NamedTensor>& tensors, const Json& meta) override;

 private:
  PretrainedModel model_, grads_;
  struct Begun;
  std::shared_ptr<Begun> begun_;  // begin_step()'s, until step()
};

}  // namespace attn::train
