#include "core/train/train_data.hpp"
#include "core/train/train_lm.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/json.hpp"

namespace attn::train {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_blank(const std::string& text) { return is_valid_utf8(text) && split_words(text).empty(); }

int64_t json_label(const Json& line) {
  if (!line.contains("label")) throw InputError("missing \"label\"");
  const Json& label = line["label"];
  return json_integer<int64_t>(label, "\"label\"", 0);
}

int64_t tsv_label(const std::string& text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("the label must be a non-negative integer of at most 18 digits, got '" + text + "'");
  return std::stoll(text);
}

// batch::parse_line accepts an empty "text" or "ids" (make_item refuses them later); here they are
// bad lines like any other.
void check_not_empty(const batch::RawItem& raw) {
  if (raw.text && split_words(*raw.text).empty()) throw InputError("empty text");
  if (!raw.text && raw.ids.empty()) throw InputError("empty \"ids\"");
}

LabelledLine parse_jsonl(const std::string& text) {
  LabelledLine out;
  out.raw = batch::parse_line(text, batch::InputFormat::jsonl);
  if (!out.raw.error.empty()) throw InputError(out.raw.error);
  out.label = json_label(Json::parse(text));  // parse_line has checked it is a JSON object
  return out;
}

LabelledLine parse_tsv(const std::string& text) {
  const size_t tab = text.find('\t');
  if (tab == std::string::npos) throw InputError("no tab (a TSV line is label<TAB>sentence)");
  LabelledLine out;
  out.label = tsv_label(text.substr(0, tab));
  out.raw.text = text.substr(tab + 1);
  return out;
}

LabelledLine parse_labelled_line(const std::string& text, DataFormat format) {
  if (!is_valid_utf8(text)) throw InputError("invalid UTF-8");
  LabelledLine out = format == DataFormat::jsonl ? parse_jsonl(text) : parse_tsv(text);
  check_not_empty(out.raw);
  return out;
}

}  // namespace

void LineErrors::throw_if_any() const {
  if (count_ == 0) return;
  const std::string more = count_ > listed ? "\n  ... and " + std::to_string(count_ - listed) + " more" : "";
  throw InputError("'" + path_ + "': " + std::to_string(count_) + (count_ == 1 ? " bad line:" : " bad lines:") +
                   listed_ + more);
}

std::vector<std::pair<size_t, std::string>> content_lines(const std::string& content) {
  std::vector<std::pair<size_t, std::string>> lines;
  size_t number = 0;
  for (size_t start = 0; start < content.size();) {
    size_t end = std::min(content.find('\n', start), content.size());
    std::string text = content.substr(start, end - start);
    batch::strip_line(text, ++number);
    if (!is_blank(text)) lines.emplace_back(number, std::move(text));
    start = end + 1;
  }
  return lines;
}

DataFormat data_format(const std::string& path, const std::string& first_line) {
  if (ends_with(path, ".tsv")) return DataFormat::tsv;
  if (batch::format_from_name(path) == batch::InputFormat::jsonl) return DataFormat::jsonl;
  return batch::format_from_first_line(first_line) == batch::InputFormat::jsonl ? DataFormat::jsonl : DataFormat::tsv;
}

std::vector<LabelledLine> parse_data(const std::string& path, const std::string& content) {
  const auto lines = content_lines(content);
  if (lines.empty()) throw InputError("'" + path + "': " + (content.empty() ? "the file is empty" : "no items, only blank lines"));
  const DataFormat format = data_format(path, lines.front().second);
  std::vector<LabelledLine> out;
  LineErrors errors(path);
  std::map<std::string, size_t> id_lines;  // an "id" names one item: a repeat is a mistake in the file
  for (const auto& [number, text] : lines) {
    try {
      LabelledLine line = parse_labelled_line(text, format);
      line.line = number;
      if (!line.raw.id.is_null()) {
        const auto [at, fresh] = id_lines.emplace(line.raw.id.dump(), number);
        if (!fresh) throw InputError("id " + line.raw.id.dump() + " repeats line " + std::to_string(at->second) + "'s");
      }
      out.push_back(std::move(line));
    } catch (const InputError& e) {
      errors.add(number, e.what());
    }
  }
  errors.throw_if_any();
  return out;
}

void add_words(Vocab& vocab, const std::vector<LabelledLine>& lines) {
  for (const auto& line : lines) batch::add_sentence_words(vocab, line.raw);
}

std::vector<LabelledItem> make_items(const std::string& path, const std::vector<LabelledLine>& lines,
                                     const batch::ItemRules& rules) {
  std::vector<LabelledItem> items;
  LineErrors errors(path);
  for (const auto& line : lines) {
    try {
      items.push_back({batch::make_item(line.raw, line.line, rules), line.label, {}});
    } catch (const InputError& e) {
      errors.add(line.line, e.what());
    }
  }
  errors.throw_if_any();
  return items;
}

void check_labels(const std::vector<LabelledItem>& items, size_t num_classes) {
  for (const auto& item : items)
    if (uint64_t(item.label) >= num_classes)
      throw InputError("line " + std::to_string(item.line) + ": label " + std::to_string(item.label) +
                       " is not below num_classes " + std::to_string(num_classes));
}

size_t class_count(const std::vector<LabelledItem>& items) {
  size_t count = 0;
  for (const auto& item : items) count = std::max(count, size_t(item.label) + 1);
  return count;
}

std::string data_jsonl(const std::vector<LabelledItem>& items) {
  std::string out;
  for (const auto& item : items) {
    Json record = Json::object();
    if (!item.id.is_null()) record["id"] = item.id;
    if (item.tokens.empty())
      record["ids"] = item.ids;
    else
      record["text"] = std::accumulate(std::next(item.tokens.begin()), item.tokens.end(), item.tokens.front(),
                                       [](std::string a, const std::string& b) { return a + " " + b; });
    record["label"] = item.label;
    out += record.dump() + "\n";
  }
  return out;
}

size_t validation_count(size_t n, double fraction) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    std::ostringstream text;
    text << "the validation fraction must be between 0 and 1 (both excluded), got " << fraction;
    throw InputError(text.str());
  }
  if (n < 2) throw InputError("a validation split needs at least 2 items, the data has " + std::to_string(n));
  const auto k = static_cast<size_t>(std::floor(fraction * static_cast<double>(n) + 0.5));
  return std::clamp<size_t>(k, 1, n - 1);
}

Datasets split_validation(std::vector<LabelledItem> items, double fraction, uint64_t seed) {
  const size_t k = validation_count(items.size(), fraction);
  TorchGenerator generator(seed);
  const std::vector<size_t> perm = randperm(generator, items.size());
  std::vector<bool> is_val(items.size(), false);
  for (size_t i = 0; i < k; ++i) is_val[perm[i]] = true;
  Datasets out;
  for (size_t i = 0; i < items.size(); ++i) (is_val[i] ? out.val : out.train).push_back(std::move(items[i]));
  return out;
}

std::vector<size_t> randperm(TorchGenerator& generator, size_t n) {
  std::vector<size_t> r(n);
  std::iota(r.begin(), r.end(), size_t{0});
  for (size_t i = 0; i + 1 < n; ++i) std::swap(r[i], r[i + generator.random() % (n - i)]);
  return r;
}

BatchOrder::BatchOrder(size_t n, size_t batch_size, bool shuffle, uint64_t seed)
    : n_(n), batch_size_(batch_size), shuffle_(shuffle), generator_(seed) {
  if (n == 0) throw InputError("no training items");
  if (batch_size == 0) throw InputError("the batch size must be at least 1");
}

std::vector<size_t> BatchOrder::batch(size_t k) {
  std::vector<size_t> out(batch_size_);
  for (size_t j = 0; j < batch_size_; ++j) out[j] = item_at(k * batch_size_ + j);
  return out;
}

size_t BatchOrder::item_at(size_t position) {
  return shuffle_ ? permutation(position / n_)[position % n_] : position % n_;
}

const std::vector<size_t>& BatchOrder::permutation(size_t epoch) {
  if (epoch + 1 == next_epoch_) return perm_;
  if (epoch < next_epoch_) {
    generator_.manual_seed(generator_.initial_seed());
    next_epoch_ = 0;
  }
  for (; next_epoch_ < epoch; ++next_epoch_)  // randperm(n) takes n - 1 outputs, whatever they are
    for (size_t i = 1; i < n_; ++i) generator_.random();
  perm_ = randperm(generator_, n_);
  next_epoch_ = epoch + 1;
  return perm_;
}

size_t steps_for_epochs(size_t epochs, size_t n, size_t batch_size) { return (epochs * n + batch_size - 1) / batch_size; }

TrainBatch make_batch(const std::vector<LabelledItem>& items, const std::vector<size_t>& indices) {
  TrainBatch out;
  out.batch = indices.size();
  for (size_t i : indices) out.seq = std::max(out.seq, items[i].ids.size());
  out.ids.assign(out.batch * out.seq, 0);  // [PAD]
  for (size_t row = 0; row < out.batch; ++row) {
    const LabelledItem& item = items[indices[row]];
    std::copy(item.ids.begin(), item.ids.end(), out.ids.begin() + std::ptrdiff_t(row * out.seq));
    out.labels.push_back(item.label);
  }
  out.items = indices;
  return out;
}

// --- tasks ---

namespace {

// torch.randint(0, m, (1,), generator=g): one 32-bit output, reduced modulo m.
size_t draw(TorchGenerator& g, size_t m) { return g.random() % m; }

// 32 symbols: with 16, d_model 32 gives each its own direction and the model counts them (diffuse
// attention); with 32, matching a symbol's twin is the better route, and a sharp head emerges.
constexpr size_t kSymbols = 32;
std::string symbol(size_t s) { return std::string(1, char(s < 26 ? 'a' + s : 'A' + (s - 26))); }  // a-z, A-F

std::vector<std::string> duplicate_sample(TorchGenerator& g, size_t index) {
  const bool repeated = index % 2 == 1;
  const size_t length = 4 + draw(g, 7);
  std::vector<size_t> symbols = randperm(g, kSymbols);
  symbols.resize(repeated ? length - 1 : length);
  if (repeated) {
    const size_t twin = symbols[draw(g, length - 1)];
    symbols.insert(symbols.begin() + std::ptrdiff_t(draw(g, length)), twin);
  }
  std::vector<std::string> tokens;
  for (size_t s : symbols) tokens.push_back(symbol(s));
  return tokens;
}

bool is_balanced(const std::vector<std::string>& tokens) {
  int64_t depth = 0;
  for (const auto& t : tokens)
    if ((depth += t == "(" ? 1 : -1) < 0) return false;
  return depth == 0;
}

// Left to right, a free choice wherever both brackets can still end balanced.
std::vector<std::string> balanced_brackets(TorchGenerator& g, size_t length) {
  std::vector<std::string> tokens;
  size_t depth = 0;
  for (size_t pos = 0; pos < length; ++pos) {
    const bool opens = depth == 0 || (depth != length - pos && draw(g, 2) == 0);
    depth = opens ? depth + 1 : depth - 1;
    tokens.emplace_back(opens ? "(" : ")");
  }
  return tokens;
}

std::vector<std::string> unequal_counts(TorchGenerator& g) {
  std::vector<std::string> tokens(2 + draw(g, 15));
  for (auto& t : tokens) t = draw(g, 2) == 0 ? "(" : ")";
  if (std::count(tokens.begin(), tokens.end(), "(") * 2 == std::ptrdiff_t(tokens.size()))
    tokens.back() = tokens.back() == "(" ? ")" : "(";
  return tokens;
}

// Equal counts that a prefix breaks: shuffled halves, shuffled again while they come out balanced.
std::vector<std::string> bad_prefix(TorchGenerator& g) {
  const size_t half = 1 + draw(g, 8);
  std::vector<std::string> tokens(2 * half);
  do {
    const std::vector<size_t> perm = randperm(g, 2 * half);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = perm[i] < half ? "(" : ")";
  } while (is_balanced(tokens));
  return tokens;
}

std::vector<std::string> brackets_sample(TorchGenerator& g, size_t index) {
  switch (index % 4) {
    case 0: return unequal_counts(g);
    case 2: return bad_prefix(g);
    default: return balanced_brackets(g, 2 * (1 + draw(g, 8)));
  }
}

const char* const kSubjects[] = {"나는", "너는", "우리는", "그는", "그녀는"};
const char* const kTimes[] = {"", "오늘", "내일", "어제"};
const char* const kPlacesTo[] = {"학교에", "도서관에", "집에"};
const char* const kPlacesAt[] = {"학교에서", "도서관에서", "집에서"};

std::vector<std::string> places_sample(TorchGenerator& g, size_t index) {
  const std::string subject = kSubjects[draw(g, 5)];
  const size_t time = draw(g, 4);
  const bool before = time != 0 && draw(g, 2) == 0;
  const bool study = draw(g, 2) == 1;
  const bool past = time == 3;
  std::vector<std::string> words = {subject, study ? kPlacesAt[index % 3] : kPlacesTo[index % 3]};
  words.emplace_back(study ? (past ? "공부했다" : "공부한다") : (past ? "갔다" : "간다"));
  if (time != 0) words.insert(words.begin() + (before ? 0 : 1), kTimes[time]);
  return words;
}

// The asked task: three people go to three different places, then one of them is named again. Only
// the pairing of each person with the place after it tells the answer, and every item holds all
// three places, so the words alone (mean pooling of their embeddings) say nothing about the label.
const char* const kGoAnd[] = {"가고", "공부하고"};  // a clause that another follows

std::vector<std::string> asked_sample(TorchGenerator& g, size_t index) {
  const std::vector<size_t> people = randperm(g, 5), places = randperm(g, 3);
  const size_t time = draw(g, 4);
  std::vector<std::string> words;
  if (time != 0) words.emplace_back(kTimes[time]);
  size_t asked = 0;
  for (size_t k = 0; k < 3; ++k) {
    const bool study = draw(g, 2) == 1, last = k == 2, past = time == 3;
    words.emplace_back(kSubjects[people[k]]);
    words.emplace_back(study ? kPlacesAt[places[k]] : kPlacesTo[places[k]]);
    words.emplace_back(!last ? kGoAnd[study] : study ? (past ? "공부했다" : "공부한다") : (past ? "갔다" : "간다"));
    if (places[k] == index % 3) asked = k;
  }
  words.emplace_back(kSubjects[people[asked]]);
  return words;
}

// Pre-norm: these tasks train much faster with it than with the tutorial's post-norm.
TransformerConfig task_model(size_t vocab_size, size_t d_model, size_t heads, size_t layers, size_t max_len,
                             size_t num_classes) {
  TransformerConfig c;
  c.vocab_size = vocab_size;
  c.d_model = d_model;
  c.num_heads = heads;
  c.num_layers = layers;
  c.d_ff = 2 * d_model;
  c.max_len = max_len;
  c.num_classes = num_classes;
  c.dropout = 0.0;
  c.norm_first = true;
  return c;
}

TaskSpec duplicate_task() {
  TaskSpec t;
  t.name = "duplicate";
  t.tokens = {pad_token};
  for (size_t s = 0; s < kSymbols; ++s) t.tokens.push_back(symbol(s));
  // One wide head under the causal mask: a symbol's attention to itself then depends on its position
  // (position 0 sees only itself), so the head learns to look past itself to the earlier twin.
  t.model = task_model(t.tokens.size(), 32, 1, 1, 16, 2);
  t.mask = MaskKind::padding_causal;
  t.sample = duplicate_sample;
  t.batch_size = 64;
  t.steps = 8000;
  t.train_size = 20000;
  t.val_size = 1000;
  return t;
}

TaskSpec brackets_task() {
  TaskSpec t;
  t.name = "brackets";
  t.tokens = {pad_token, "(", ")"};
  t.model = task_model(t.tokens.size(), 32, 2, 1, 16, 2);
  t.mask = MaskKind::padding_causal;
  t.sample = brackets_sample;
  t.steps = 1500;
  t.train_size = 4000;
  t.val_size = 1000;
  return t;
}

TaskSpec places_task() {
  TaskSpec t;
  t.name = "places";
  // The first tutorial's vocabulary keeps its ids (1 … 8); the templates' other words follow.
  t.tokens = {pad_token, "나는", "오늘", "학교에", "간다", "도서관에", "학교에서", "공부한다", "집에", "너는", "우리는",
              "그는", "그녀는", "내일", "어제", "도서관에서", "집에서", "갔다", "공부했다"};
  t.model = task_model(t.tokens.size(), 32, 2, 1, 8, 3);
  t.sample = places_sample;
  t.steps = 300;
  t.train_size = 1200;
  t.val_size = 300;
  return t;
}

TaskSpec asked_task() {
  TaskSpec t;
  t.name = "asked";
  t.tokens = {pad_token, "나는", "오늘", "학교에", "간다", "도서관에", "학교에서", "공부한다", "집에", "너는", "우리는",
              "그는", "그녀는", "내일", "어제", "도서관에서", "집에서", "갔다", "공부했다", "가고", "공부하고"};
  t.model = task_model(t.tokens.size(), 32, 2, 2, 16, 3);
  t.mask = MaskKind::padding_causal;
  t.sample = asked_sample;
  t.lr = 1e-3;  // at 3e-3 two seeds of four never left chance in 6000 steps; at 1e-3 all learn by step 3000
  t.steps = 4000;
  t.train_size = 4000;
  t.val_size = 1000;
  return t;
}

}  // namespace

const std::vector<TaskSpec>& tasks() {
  static const std::vector<TaskSpec> all = {duplicate_task(), brackets_task(), places_task(), asked_task()};
  return all;
}

const TaskSpec& find_task(const std::string& name) {
  std::string names;
  for (const auto& t : tasks()) {
    if (t.name == name) return t;
    names += (names.empty() ? "" : ", ") + t.name;
  }
  std::string lm_names;
  for (const auto& t : lm_tasks()) lm_names += ", " + t.name;
  throw InputError("unknown task '" + name + "' (tasks: " + names + "; language models: " + lm_names.substr(2) + ")");
}

std::vector<LabelledItem> generate_task(const TaskSpec& task, size_t count, uint64_t seed) {
  const Vocab vocab(task.tokens);
  TorchGenerator g(seed);
  std::vector<LabelledItem> items(count);
  for (size_t i = 0; i < count; ++i) {
    LabelledItem& item = items[i];
    item.line = i + 1;
    item.tokens = task.sample(g, i);
    for (const auto& w : item.tokens) item.ids.push_back(vocab.id(w));
    item.label = int64_t(i % task.model.num_classes);
  }
  return items;
}

Datasets task_data(const TaskSpec& task, size_t train_size, size_t val_size, uint64_t seed) {
  std::vector<LabelledItem> items = generate_task(task, train_size + val_size, seed);
  Datasets out;
  out.val.assign(std::make_move_iterator(items.begin() + std::ptrdiff_t(train_size)), std::make_move_iterator(items.end()));
  items.resize(train_size);
  out.train = std::move(items);
  for (size_t i = 0; i < out.val.size(); ++i) out.val[i].line = i + 1;
  return out;
}

std::optional<std::pair<size_t, size_t>> twin_positions(const batch::Item& item) {
  for (size_t j = 1; j < item.ids.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (item.ids[i] == item.ids[j]) return std::make_pair(i, j);
  return std::nullopt;
}

}  // namespace attn::train
