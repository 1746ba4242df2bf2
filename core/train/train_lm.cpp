#include "core/train/train_lm.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/memory.hpp"
#include "core/batch/batch.hpp"
#include "core/kernels/kernels.hpp"
#include "core/model/head_detectors.hpp"
#include "core/model/tutorial.hpp"

namespace attn::train {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

// One JSON line: {"text": non-empty string} or {"ids": [non-negative integers]}; an error text or "".
std::string parse_lm_line(const std::string& raw, LmLine& out) {
  Json j;
  try {
    j = Json::parse(raw);
  } catch (const Json::exception&) {
    return "not valid JSON";
  }
  if (!j.is_object()) return "not a JSON object";
  if (j.contains("text")) {
    if (!j["text"].is_string() || j["text"].get<std::string>().empty()) return "\"text\" must be a non-empty string";
    out.text = j["text"].get<std::string>();
    if (!is_valid_utf8(out.text)) return "\"text\" is not valid UTF-8";
    return "";
  }
  if (!j.contains("ids")) return "no \"text\" or \"ids\"";
  if (!j["ids"].is_array() || j["ids"].empty()) return "\"ids\" must be a non-empty array";
  try {
    for (const Json& id : j["ids"]) out.ids.push_back(json_integer<int64_t>(id, "an id in \"ids\"", 0));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Windows of `seq_len` tokens; a last one of 2 tokens or more.
void add_windows(const std::vector<int64_t>& ids, size_t line, size_t seq_len, std::vector<LabelledItem>& out) {
  for (size_t at = 0; at + 2 <= ids.size(); at += seq_len) {
    LabelledItem item;
    item.line = line;
    item.ids.assign(ids.begin() + std::ptrdiff_t(at), ids.begin() + std::ptrdiff_t(std::min(ids.size(), at + seq_len)));
    out.push_back(std::move(item));
  }
}

}  // namespace

std::vector<LmLine> parse_lm_data(const std::string& path, const std::string& content) {
  const auto lines = content_lines(content);
  if (lines.empty()) throw InputError(path + ": no usable token (the file is empty or blank)");
  const auto by_name = batch::format_from_name(path);
  if (by_name.value_or(batch::format_from_first_line(lines.front().second)) == batch::InputFormat::text) {
    const std::string body = content.compare(0, 3, "\xEF\xBB\xBF") == 0 ? content.substr(3) : content;
    if (!is_valid_utf8(body)) throw InputError(path + ": the text is not valid UTF-8");
    return {LmLine{0, body, {}}};
  }
  std::vector<LmLine> out;
  LineErrors errors(path);
  for (const auto& [number, text] : lines) {
    LmLine l;
    l.line = number;
    const std::string error = parse_lm_line(text, l);
    if (error.empty())
      out.push_back(std::move(l));
    else
      errors.add(number, error);
  }
  errors.throw_if_any();
  return out;
}

std::string lm_text(const std::vector<LmLine>& lines) {
  std::string text;
  for (const LmLine& l : lines) text += l.text;
  return text;
}

std::vector<LabelledItem> lm_items(const std::string& path, const std::vector<LmLine>& lines,
                                   const BytePairTokenizer& tokenizer, size_t seq_len, size_t vocab_size) {
  std::vector<LabelledItem> items;
  LineErrors errors(path);
  for (const LmLine& l : lines) {
    std::vector<int64_t> ids = l.ids;
    std::string error;
    try {
      if (!l.text.empty()) ids = tokenizer.encode(l.text).ids;
    } catch (const InputError& e) {
      error = e.what();
    }
    for (int64_t id : ids)
      if (error.empty() && size_t(id) >= vocab_size)
        error = "token id " + std::to_string(id) + " is outside the model's " + std::to_string(vocab_size) + " tokens";
    if (!error.empty() && l.line == 0) throw InputError(path + ": " + error);  // a plain text: one error
    if (error.empty())
      add_windows(ids, l.line, seq_len, items);
    else
      errors.add(l.line, error);
  }
  errors.throw_if_any();
  if (items.empty()) throw InputError(path + ": no usable token (no text or ids line gives 2 tokens to learn from)");
  return items;
}

PretrainedInput lm_batch(const std::vector<LabelledItem>& items, const std::vector<size_t>& indices) {
  PretrainedInput in;
  in.batch = indices.size();
  for (size_t i : indices) in.seq = std::max(in.seq, items[i].ids.size());
  in.ids.assign(in.batch * in.seq, 0);
  for (size_t b = 0; b < in.batch; ++b) {
    const auto& ids = items[indices[b]].ids;
    std::copy(ids.begin(), ids.end(), in.ids.begin() + std::ptrdiff_t(b * in.seq));
    in.lengths.push_back(ids.size());
  }
  return in;
}

// --- tasks ---

namespace {

const std::string letters = "abcdefghijklmnopqrstuvwxyz";
const std::string induction_characters = letters + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr size_t induction_length = 32, induction_shortest = 4, induction_longest = 12;
const std::string halves_letters = letters + "ABCDEF";
constexpr size_t halves_half = 12;

size_t draw(TorchGenerator& g, size_t m) { return g.random() % m; }

LmSample induction_sample(TorchGenerator& g, size_t) {
  constexpr size_t S = induction_length;
  std::string text;
  for (size_t i = 0; i < S; ++i) text += induction_characters[draw(g, induction_characters.size())];
  const size_t n = induction_shortest + draw(g, induction_longest - induction_shortest + 1);
  const size_t a = draw(g, S + 1 - 2 * n), b = a + n + draw(g, S + 1 - 2 * n - a);
  text.replace(b, n, text, a, n);
  return {text, {a, b, n}};
}

LmSample halves_sample(TorchGenerator& g, size_t) {
  std::string half;
  for (size_t i = 0; i < halves_half; ++i) half += halves_letters[draw(g, halves_letters.size())];
  return {half + half, {0, halves_half, halves_half}};
}

std::string random_letters(TorchGenerator& g) {
  std::string s;
  for (size_t n = 3 + draw(g, 8); n > 0; --n) s += letters[draw(g, letters.size())];
  return s;
}

LmSample copy_sample(TorchGenerator& g, size_t) {
  const std::string s = random_letters(g);
  return {s + "|" + s, {}};
}

LmSample reverse_sample(TorchGenerator& g, size_t) {
  const std::string s = random_letters(g);
  return {s + "|" + std::string(s.rbegin(), s.rend()), {}};
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

LmSample korean_sample(TorchGenerator& g, size_t index) {
  return {joined(find_task(index % 2 == 0 ? "places" : "asked").sample(g, index)) + "\n", {}};
}

// Every character the korean task can write: its generators' vocabularies and the first tutorial's sentences.
std::string korean_characters() {
  std::string text = " \n";
  for (const char* name : {"places", "asked"})
    for (const std::string& t : find_task(name).tokens) text += t;
  for (const std::string& s : tutorial_sentences()) text += s;
  return text;
}

}  // namespace

const std::vector<LmTaskSpec>& lm_tasks() {
  static const std::vector<LmTaskSpec> tasks = [] {
    std::vector<LmTaskSpec> t(6);
    t[0] = {"induction", induction_characters, 64, 2, 2, induction_length, 2e-3, 64, 5000, 20000, 512, induction_sample};
    // The circuit's model as Olsson et al.'s: attention only, its own unembedding, initialised at
    // TransformerLens's scale (0.8 / sqrt(d_model) = 0.1), the learning rate warmed up then decayed: tied
    // to wte, at 0.02 or at a constant rate it finds no circuit, or a blurred one (docs/training-lm.md).
    t[0].attention_only = t[0].untied = true, t[0].initializer_range = 0.1, t[0].schedule = "cosine", t[0].warmup_share = 0.04;
    t[1] = {"halves", halves_letters, 64, 4, 2, 2 * halves_half, 1e-3, 32, 600, 20000, 500, halves_sample};
    t[2] = {"copy", letters + "|", 64, 2, 2, 21, 1e-3, 32, 2000, 10000, 500, copy_sample};
    t[3] = {"reverse", letters + "|", 64, 2, 2, 21, 1e-3, 32, 2000, 10000, 500, reverse_sample};
    t[4] = {"korean", korean_characters(), 64, 2, 2, 32, 3e-3, 32, 1500, 4000, 400, korean_sample};
    t[5] = {"text", "", 64, 2, 2, 64, 3e-3, 32, 1000, 0, 0, nullptr};
    return t;
  }();
  return tasks;
}

const LmTaskSpec* find_lm_task(const std::string& name) {
  for (const LmTaskSpec& t : lm_tasks())
    if (t.name == name) return &t;
  return nullptr;
}

BytePairTokenizer lm_task_tokenizer(const LmTaskSpec& task) { return character_tokenizer(task.characters); }

PretrainedConfig lm_task_config(const LmTaskSpec& task, size_t vocab_size) {
  PretrainedConfig c;
  c.family = ModelFamily::gpt2;
  c.architecture = "GPT2LMHeadModel";
  c.vocab_size = vocab_size, c.hidden_size = task.n_embd, c.num_heads = task.n_head, c.num_layers = task.n_layer;
  c.intermediate_size = task.attention_only ? 0 : 4 * task.n_embd, c.max_positions = task.seq_len;
  c.layer_norm_eps = 1e-5, c.activation = HiddenAct::gelu_new;
  c.embd_pdrop = c.resid_pdrop = c.attn_pdrop = 0.0;
  c.tie_word_embeddings = !task.untied, c.initializer_range = task.initializer_range;
  return c;
}

Datasets lm_task_data(const LmTaskSpec& task, const BytePairTokenizer& tokenizer, uint64_t seed) {
  if (!task.sample) return {};  // text: --data's only
  TorchGenerator g(seed);
  std::vector<LmLine> train, val;
  std::vector<RepeatedSegment> repeats;
  for (size_t i = 0; i < task.train_size + task.val_size; ++i) {
    LmSample sample = task.sample(g, i);
    (i < task.train_size ? train : val).push_back({i < task.train_size ? i + 1 : i - task.train_size + 1, std::move(sample.text), {}});
    repeats.push_back(sample.repeat);
  }
  // The korean task is one running text cut into windows; the others are an item each, of one token a
  // character, so that a segment's places are its tokens'.
  if (task.name == "korean") train = {LmLine{0, lm_text(train), {}}}, val = {LmLine{0, lm_text(val), {}}};
  const size_t V = tokenizer.size();
  Datasets d{lm_items(task.name, train, tokenizer, task.seq_len, V), lm_items(task.name, val, tokenizer, task.seq_len, V)};
  if (repeats.front().length == 0) return d;
  for (size_t i = 0; i < d.train.size(); ++i) d.train[i].repeat = repeats[i];
  for (size_t i = 0; i < d.val.size(); ++i) d.val[i].repeat = repeats[task.train_size + i];
  return d;
}

// --- training ---

namespace {

// The model's tensors and their gradients' as the optimizer's slots, named as in the model's layout.
std::vector<ParamSlot> slots(PretrainedModel& model, PretrainedModel& grads) {
  std::vector<Tensor*> values, gradients;
  for_each_tensor(model, [&](Tensor& t) { values.push_back(&t); });
  for_each_tensor(grads, [&](Tensor& t) { gradients.push_back(&t); });
  std::vector<ParamSlot> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back({"p" + std::to_string(i), values[i]->data(), gradients[i]->data(), values[i]->size()});
  return out;
}

// Predicted positions whose arg-max logit is the label (torch.argmax: the first maximum).
size_t correct(const Tensor& logits, const std::vector<int64_t>& labels) {
  const size_t V = logits.shape().back();
  size_t n = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0) continue;
    const float* row = logits.data() + r * V;
    n += size_t(std::max_element(row, row + V) - row) == size_t(labels[r]);
  }
  return n;
}

size_t counted(const std::vector<int64_t>& labels) {
  return size_t(std::count_if(labels.begin(), labels.end(), [](int64_t l) { return l >= 0; }));
}

Tensor eval_logits(const PretrainedModel& model, const PretrainedInput& in, const Hooks* hooks) {
  if (hooks && !hooks->empty()) return gpt2_forward(model, in, hooks).at("logits");
  Gpt2Saved saved;
  return gpt2_train_forward(model, in, nullptr, saved);
}

// Item indices [k · batch_size, (k + 1) · batch_size) of n: batch k.
std::vector<size_t> batch_indices(size_t n, size_t batch_size, size_t k) {
  std::vector<size_t> indices;
  for (size_t i = k * batch_size; i < std::min(n, (k + 1) * batch_size); ++i) indices.push_back(i);
  return indices;
}

// Labels of the batch `indices` kept only at the positions predicting a repeated segment's second token
// on (positions second … second + length − 2); the others −100.
std::vector<int64_t> repeated_labels(std::vector<int64_t> labels, const PretrainedInput& in,
                                     const std::vector<LabelledItem>& items, const std::vector<size_t>& indices) {
  for (size_t b = 0; b < in.batch; ++b) {
    const RepeatedSegment& r = items[indices[b]].repeat;
    for (size_t s = 0; s < in.seq; ++s)
      if (s < r.second || s + 1 >= r.second + r.length) labels[b * in.seq + s] = -100;
  }
  return labels;
}

// The items' losses in evaluation mode, summed over every predicted position and, when `repeated`, over
// the repeated segments' predictable targets of the same logits; a batch at a time.
struct LmLosses {
  double sum = 0, repeated_sum = 0;
  size_t right = 0, n = 0, repeated_right = 0, repeated_n = 0;
  void add_batch(const PretrainedModel& model, const std::vector<LabelledItem>& items, const std::vector<size_t>& indices,
                 const Hooks* hooks, bool repeated) {
    const PretrainedInput in = lm_batch(items, indices);
    const std::vector<int64_t> labels = next_token_labels(in);
    const Tensor logits = eval_logits(model, in, hooks);
    size_t c = counted(labels);
    sum += double(cross_entropy(logits, labels, 0.0, nullptr)) * double(c);
    right += correct(logits, labels);
    n += c;
    if (!repeated) return;
    const std::vector<int64_t> kept = repeated_labels(labels, in, items, indices);
    c = counted(kept);
    repeated_sum += double(cross_entropy(logits, kept, 0.0, nullptr)) * double(c);
    repeated_right += correct(logits, kept);
    repeated_n += c;
  }
  RepeatedFit repeated() const { return {float(repeated_sum / double(repeated_n)), double(repeated_right) / double(repeated_n)}; }
};

}  // namespace

bool has_repeat(const LabelledItem& item) {
  const RepeatedSegment& r = item.repeat;
  return r.length >= 2 && r.first + r.length <= r.second && r.second + r.length <= item.ids.size();
}

bool has_repeats(const std::vector<LabelledItem>& items) {
  return !items.empty() && std::all_of(items.begin(), items.end(), has_repeat);
}

std::optional<RepeatedFit> repeated_fit(const PretrainedModel& model, const std::vector<LabelledItem>& items) {
  if (!has_repeats(items)) return std::nullopt;
  LmLosses l;
  for (size_t k = 0; k * 64 < items.size(); ++k) l.add_batch(model, items, batch_indices(items.size(), 64, k), nullptr, true);
  return l.repeated();
}

std::vector<double> prefix_matching_scores(const PretrainedModel& model, const Trace& trace, const PretrainedInput& in,
                                           const std::vector<LabelledItem>& items) {
  const size_t H = model.config.num_heads, S = in.seq;
  std::vector<double> scores;
  for (size_t layer = 0; layer < model.layers.size(); ++layer) {
    const Tensor& w = trace.at(attention_weights_stage(ModelFamily::gpt2, layer));  // [B, H, S, S]
    for (size_t h = 0; h < H; ++h) {
      double sum = 0;
      size_t n = 0;
      for (size_t b = 0; b < in.batch; ++b) {
        const RepeatedSegment& r = items[b].repeat;
        for (size_t i = r.second; i < r.second + r.length; ++i, ++n)
          sum += w.data()[((b * H + h) * S + i) * S + i - (r.second - r.first) + 1];
      }
      scores.push_back(sum / double(n));
    }
  }
  return scores;
}

CircuitScores circuit_scores(const PretrainedModel& model, const std::vector<LabelledItem>& items, const Hooks* hooks) {
  const PretrainedInput in = lm_batch(items, batch_indices(items.size(), 32, 0));  // items 0 … 31: row b is items[b]
  const Trace trace = gpt2_forward(model, in, hooks);
  const std::vector<double> induction = prefix_matching_scores(model, trace, in, items);
  const std::vector<double> previous =
      detect_heads(model_stages(model.config), trace, in.ids, in.lengths, {HeadKind::previous_token}, {})[0].scores;
  const auto first_layer = previous.begin() + std::ptrdiff_t(model.config.num_heads);
  return {*std::max_element(induction.begin(), induction.end()), *std::max_element(previous.begin(), first_layer)};
}

LmTrainer::LmTrainer(PretrainedModel model, std::vector<LabelledItem> train_items, TrainSettings settings,
                     TorchGenerator dropout)
    : Training(std::move(train_items), std::move(settings), std::move(dropout)),
      model_(std::move(model)),
      grads_(zeros_like(model_)) {
  size_t longest = 0;
  for (const auto& item : items_) {
    require(item.ids.size() <= model_.config.max_positions,
            "item " + std::to_string(item.line) + " has " + std::to_string(item.ids.size()) + " tokens, more than the model's " +
                std::to_string(model_.config.max_positions) + " positions");
    longest = std::max(longest, item.ids.size());
  }
  // A step keeps about a trace's worth of activations, the logits and their gradient, and the weights'
  // gradients and Adam's two buffers.
  const PretrainedConfig& c = model_.config;
  const double tokens = double(settings_.batch_size) * double(longest);
  check_fits_in_memory(4.0 * (pretrained_trace_floats(c, settings_.batch_size, longest) + 2 * tokens * double(c.vocab_size) +
                              3.0 * double(parameter_count(model_))),
                       "a training step of " + std::to_string(settings_.batch_size) + " windows of " + std::to_string(longest) +
                           " tokens");
}

struct LmTrainer::Begun {
  Gpt2Saved saved;
  Tensor grad_logits;
  StepRecord r;
};

void LmTrainer::begin_step() {
  if (begun_) return;
  const ProductMode mode(settings_.rounding, pool_.get());
  const PretrainedInput in = lm_batch(items_, order_.batch(steps_done_));
  auto b = std::make_shared<Begun>();
  const Tensor logits = gpt2_train_forward(model_, in, &dropout_, b->saved);
  const std::vector<int64_t> labels = next_token_labels(in);
  b->r.step = steps_done_ + 1;
  b->r.loss = cross_entropy(logits, labels, settings_.label_smoothing, &b->grad_logits);
  check_loss(b->r);
  b->r.accuracy = double(correct(logits, labels)) / double(counted(labels));
  begun_ = std::move(b);
}

StepRecord LmTrainer::step() {
  begin_step();
  const ProductMode mode(settings_.rounding, pool_.get());
  const std::shared_ptr<Begun> b = std::move(begun_);
  for_each_tensor(grads_, [](Tensor& t) { t.fill(0.0f); });  // optimizer.zero_grad(), in place
  gpt2_backward(model_, b->saved, b->grad_logits, grads_);
  optimizer_step(optimizer_, settings_, steps_done_, slots(model_, grads_), b->r);
  ++steps_done_;
  return b->r;
}

namespace {

// The mean loss over every predicted position of the items, and the share predicted right; with repeated
// segments, their fit too, and a last part: the circuit's scores (all with the hooks, when given).
class LmEvaluation : public Evaluation {
 public:
  LmEvaluation(const PretrainedModel& model, const TrainSettings& s, ThreadPool* pool,
               const std::vector<LabelledItem>& items, const Hooks* hooks)
      : model_(model), s_(s), pool_(pool), items_(items), hooks_(hooks), repeated_(has_repeats(items)),
        batches_((items.size() + s.batch_size - 1) / s.batch_size) {}
  bool done() const override { return part_ == batches_ + (repeated_ ? 1 : 0); }
  void next() override {
    const ProductMode mode(s_.rounding, pool_);
    if (part_ < batches_)
      l_.add_batch(model_, items_, batch_indices(items_.size(), s_.batch_size, part_), hooks_, repeated_);
    else
      circuit_ = circuit_scores(model_, items_, hooks_);
    ++part_;
  }
  EvalRecord result() const override {
    EvalRecord r;
    r.loss = float(l_.sum / double(l_.n));
    r.accuracy = double(l_.right) / double(l_.n);
    if (!repeated_) return r;
    const RepeatedFit fit = l_.repeated();
    r.repeated_loss = fit.loss, r.repeated_accuracy = fit.accuracy;
    r.induction_score = circuit_.induction, r.previous_token_score = circuit_.previous_token;
    return r;
  }

 private:
  const PretrainedModel& model_;
  const TrainSettings& s_;
  ThreadPool* pool_;
  const std::vector<LabelledItem>& items_;
  const Hooks* hooks_;
  bool repeated_;
  size_t batches_, part_ = 0;
  LmLosses l_;
  CircuitScores circuit_;
};

}  // namespace

std::unique_ptr<Evaluation> LmTrainer::begin_evaluation(const std::vector<LabelledItem>& items) const {
  return std::make_unique<LmEvaluation>(model_, settings_, pool_.get(), items, nullptr);
}

EvalRecord LmTrainer::evaluate(const std::vector<LabelledItem>& items, const Hooks* hooks) const {
  LmEvaluation e(model_, settings_, pool_.get(), items, hooks);
  while (!e.done()) e.next();
  return e.result();
}

std::vector<NamedTensor> LmTrainer::checkpoint_tensors() const { return checkpoint_with(gpt2_state_dict(model_)); }

void LmTrainer::restore(const std::vector<NamedTensor>& tensors, const Json& meta) {
  const CheckpointParts parts = split_checkpoint(tensors, meta);
  begun_.reset();
  model_ = load_pretrained(model_.config, parts.model, "checkpoint");
  grads_ = zeros_like(model_);
  restore_state(parts, slots(model_, grads_));
}

}  // namespace attn::train
