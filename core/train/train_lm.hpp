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
//   induction: 12 letters, each of a … z A … F drawn (draw(32)), then the same 12 again: the second half
//     is predictable only by looking back (an induction head: attend to the token after the earlier copy
//     of the current one);
//   copy: L = 3 + draw(8) letters of a … z, "|", the same letters again (the copy's attention is a
//     diagonal L + 1 positions back);
//   reverse: the same letters, "|", then reversed (an anti-diagonal);
//   korean: a sentence of the classifier tasks' places (even i) or asked (odd i) generators, its words
//     joined by spaces, then "\n"; the items are windows of that text (seq_len characters);
//   text: no items of its own: a character language model of --data's text (its vocabulary built from it).
struct LmTaskSpec {
  std::string name;
  std::string characters;  // the vocabulary's characters (character_tokenizer's input); "": the data's
  size_t n_embd = 64, n_head = 2, n_layer = 2, seq_len = 32;
  double lr = 1e-3;
  size_t batch_size = 32, steps = 1000, train_size = 0, val_size = 0;
  std::string (*sample)(TorchGenerator& g, size_t index) = nullptr;  // item `index`'s text; null: none
};
const std::vector<LmTaskSpec>& lm_tasks();                      // induction, copy, reverse, korean, text
const LmTaskSpec* find_lm_task(const std::string& name);        // null: not a language task
// The task's tokenizer, GPT-2 config (from the task's sizes; dropout 0) and items.
BytePairTokenizer lm_task_tokenizer(const LmTaskSpec& task);
PretrainedConfig lm_task_config(const LmTaskSpec& task, size_t vocab_size);
Datasets lm_task_data(const LmTaskSpec& task, const BytePairTokenizer& tokenizer, uint64_t seed);

// --- training ---

// Whether every item is a half repeated once (the induction task's form).
bool repeated_halves(const std::vector<LabelledItem>& items);
// The loss on the second half's predictable targets of items made of a half repeated (the induction
// task): positions half + 1 … 2·half − 1, in evaluation mode; null when the items are not of that form.
std::optional<float> repeated_half_loss(const PretrainedModel& model, const std::vector<LabelledItem>& items);
// The induction (prefix-matching) score of Olsson et al. and ARENA's tutorials, best over the model's
// heads: on the first 32 of such items, a head's mean attention from each position i of the second
// half to i − half + 1, the token after the earlier copy of i's token. TransformerLens's detector
// (attn heads) averages over the first half too, where no head can match, so it stays under 0.5.
double best_induction_score(const PretrainedModel& model, const std::vector<LabelledItem>& items);
// That score of every head, [layers, heads] flat, from a forward's trace of such items `in`.
std::vector<double> prefix_matching_scores(const PretrainedModel& model, const Trace& trace, const PretrainedInput& in);

class LmTrainer : public Training {
 public:
  // Throws InputError for bad settings or an item longer than the model's positions.
  LmTrainer(PretrainedModel model, std::vector<LabelledItem> train_items, TrainSettings settings,
            TorchGenerator dropout);

  // accuracy: the share of predicted positions whose most likely next token is the right one.
  StepRecord step() override;
  void begin_step() override;  // the forward pass and the loss
  // With repeated halves (the induction task), also their loss and the best induction score.
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
