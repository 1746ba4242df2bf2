#include "core/model/walkthrough2.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/kernels/kernels.hpp"
#include "core/model/printing.hpp"
#include "core/model/transformer.hpp"

namespace attn {
namespace {

// The script's closing summary. The seed file lost its indentation; two spaces are assumed (as in
// tests/torchgen/tutorial2.py).
const char* const kSummary = R"(
Scaled Dot-Product Attention:
  scores = Q @ K.T / sqrt(d_k)
  weights = softmax(scores)
  output = weights @ V

Multi-Head Attention:
  - 여러 헤드가 다른 관계 학습
  - 각 헤드: d_k = d_model / num_heads

Transformer Encoder:
  - Self-Attention + FFN
  - Residual + LayerNorm
  - Positional Encoding

PyTorch 내장:
  encoder_layer = nn.TransformerEncoderLayer(d_model, nhead)
  encoder = nn.TransformerEncoder(encoder_layer, num_layers)

핵심 하이퍼파라미터:
  - d_model: 모델 차원 (512)
  - num_heads: 헤드 수 (8)
  - d_ff: FFN 차원 (2048)
  - num_layers: 층 수 (6)
)";

const char* const kShades[] = {" ", "░", "▒", "▓", "█"};

// f"{v:.4f}"
std::string fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// f"{n:,}"
std::string with_commas(size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// f"{text:>width}": Python counts code points, not bytes.
std::string pad_left(const std::string& text, size_t width) {
  size_t chars = 0;
  for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return chars >= width ? text : std::string(width - chars, ' ') + text;
}

std::string torch_size(const Tensor& t) { return torch_size_repr(shape_of(t)); }

// print(t.int()): PyTorch names the non-default dtype after the values (on the last line, which is
// short here).
std::string int32_repr(const Tensor& t) {
  std::string text = torch_repr(t, PrintDtype::int64);
  text.insert(text.size() - 1, ", dtype=torch.int32");
  return text;
}

// The script's run: what it prints, and each section's tensors for the JSON form.
class Script {
 public:
  explicit Script(uint64_t seed) : gen(seed) {}

  // print("\n[n] title"); print("-" * 40)
  void section(const std::string& title) {
    sections_.push_back({title, Trace()});
    out.line("\n[" + std::to_string(sections_.size()) + "] " + title);
    out.line(rule('-', 40));
  }
  void keep(const std::string& name, const Tensor& t, PrintDtype dtype = PrintDtype::float32) {
    sections_.back().second.record(name, t, dtype);
  }
  Tensor randn(const Shape& shape) {
    Tensor t = Tensor::from_shape(shape);
    gen.randn(t.data(), t.size());
    return t;
  }
  Json json() const {
    Json sections = Json::array();
    for (const auto& [title, trace] : sections_) sections.push_back({{"title", title}, {"stages", stages_json(trace)}});
    return {{"seed", gen.initial_seed()}, {"sections", std::move(sections)}};
  }

  TorchGenerator gen;
  Printer out;

 private:
  std::vector<std::pair<std::string, Trace>> sections_;
};

// The sizes the script gives its encoder modules: d_model 64, 8 heads, d_ff 256, dropout 0.1, and
// every module in training mode (nothing calls eval()), so each dropout draws from the generator.
TransformerConfig module_config(size_t layers, bool final_norm, LayerStyle style = LayerStyle::tutorial) {
  TransformerConfig c;
  c.vocab_size = 0;
  c.d_model = 64;
  c.num_heads = 8;
  c.num_layers = layers;
  c.d_ff = 256;
  c.dropout = 0.1;
  c.classifier_head = false;
  c.final_norm = final_norm;
  c.layer_style = style;
  return c;
}

void picture_note(Script& s, const std::string& file, const std::string& what) {
  s.out.line("(here the script saves " + file + ": " + what + " drawn with matplotlib)");
}

// A module's input and output: both kept, the first output row printed.
void show_output(Script& s, const Tensor& x, const Tensor& output) {
  s.keep("x", x);
  s.keep("output", output);
  s.out.tensor("\nFirst output row (output[0, 0]):", select(select(output, 0), 0));
}

void scaled_dot_product(Script& s) {
  s.section("Scaled Dot-Product Attention");
  const size_t batch = 2, seq = 5, d_k = 8;
  const Tensor q = s.randn({batch, seq, d_k}), k = s.randn({batch, seq, d_k}), v = s.randn({batch, seq, d_k});
  const AttentionSteps a = scaled_dot_product_attention(q, k, v);
  const Tensor& w = a.attention_weights;
  s.out.line("Q, K, V: (" + std::to_string(batch) + ", " + std::to_string(seq) + ", " + std::to_string(d_k) + ")");
  s.out.line("Output: " + torch_size(a.attention_output));
  s.out.line("Attention Weights: " + torch_size(w));
  s.out.line("Weights sum (should be 1): " + fixed(double(tensor_sum(w.data(), seq))));
  s.out.tensor("\nAttention weights of batch 0 (weights[0]):", select(w, 0));
  s.keep("Q", q);
  s.keep("K", k);
  s.keep("V", v);
  s.keep("attention_weights", w);
  s.keep("output", a.attention_output);
}

struct SelfAttention {
  Tensor x, output, weights;
};

// The tutorial's MultiHeadAttention(64, 8) constructed, then run on x = randn(shape) as query, key
// and value.
SelfAttention self_attention(Script& s, const Shape& shape) {
  const TransformerConfig c = module_config(1, false);
  EncoderLayer mha;
  init_attention(mha, c.d_model, s.gen);
  SelfAttention r{s.randn(shape), {}, {}};
  Trace trace;
  r.output = multi_head_attention(mha, c.layer_config(), r.x, r.x, nullptr, &trace, "");
  r.weights = trace.at("attention_weights");
  s.keep("x", r.x);
  s.keep("attention_weights", r.weights);
  s.keep("output", r.output);
  return r;
}

void multi_head(Script& s) {
  s.section("Multi-Head Attention");
  const SelfAttention r = self_attention(s, {2, 10, 64});
  s.out.line("입력: " + torch_size(r.x));
  s.out.line("출력: " + torch_size(r.output));
  s.out.line("Attention Weights: " + torch_size(r.weights));
  s.out.tensor("\nHead 0's attention weights, batch 0 (weights[0, 0]):", select(select(r.weights, 0), 0));
}

void positional_encoding(Script& s) {
  s.section("Positional Encoding");
  const size_t max_len = 5000, d = 64, shown_rows = 5, shown_dims = 8, drawn = 50;
  const Tensor pe = positional_encoding_table(max_len, d);
  picture_note(s, "positional_encoding.png", "pe.pe[0, :50, :]");
  Tensor corner = Tensor::from_shape({shown_rows, shown_dims});
  for (size_t i = 0; i < shown_rows; ++i) std::copy_n(pe.data() + i * d, shown_dims, corner.data() + i * shown_dims);
  s.out.tensor("\nPositions 0-4, dimensions 0-7 (pe.pe[0, :5, :8]):", corner);
  Tensor picture = Tensor::from_shape({drawn, d});
  std::copy_n(pe.data(), picture.size(), picture.data());
  s.keep("positional_encoding", picture);
}

void feed_forward_network(Script& s) {
  s.section("Feed Forward Network");
  const TransformerConfig c = module_config(1, false);
  EncoderLayer ff;
  init_feed_forward(ff, c.d_model, c.ff_width(), s.gen);
  const Tensor x = s.randn({2, 10, c.d_model});
  const Tensor output = feed_forward(ff, c.layer_config(), x, &s.gen, nullptr, "");
  s.out.line("FFN 입력: " + torch_size(x) + " → 출력: " + torch_size(output));
  show_output(s, x, output);
}

// The encoder the script has just constructed, run on randn(2, 10, 64).
std::pair<Tensor, Tensor> run_encoder(Script& s, const TransformerModel& encoder) {
  const Tensor x = s.randn({2, 10, encoder.config.d_model});
  return {x, encoder_forward(encoder, x, nullptr, &s.gen, nullptr)};
}

void encoder_layer(Script& s) {
  s.section("Transformer Encoder Layer");
  const auto [x, output] = run_encoder(s, init_encoder(module_config(1, false), s.gen));
  s.out.line("인코더 층 입력: " + torch_size(x) + " → 출력: " + torch_size(output));
  show_output(s, x, output);
}

void encoder(Script& s) {
  s.section("Transformer Encoder");
  const TransformerModel model = init_encoder(module_config(6, true), s.gen);
  const auto [x, output] = run_encoder(s, model);
  s.out.line("Transformer Encoder 출력: " + torch_size(output));
  s.out.line("파라미터 수: " + with_commas(parameter_count(model)));
  show_output(s, x, output);
}

void classifier(Script& s) {
  s.section("Transformer 분류기");
  // TransformerClassifier(vocab_size=10000, d_model=128, num_heads=8, num_layers=4, num_classes=5)
  TransformerConfig c;
  c.vocab_size = 10000;
  c.d_model = 128;
  c.num_heads = 8;
  c.num_layers = 4;
  c.num_classes = 5;
  const TransformerModel model = init_transformer(c, s.gen);
  const size_t batch = 4, seq = 32;
  std::vector<int64_t> ids(batch * seq);  // torch.randint(0, 10000, (4, 32))
  s.gen.randint(ids.data(), ids.size(), 0, int64_t(c.vocab_size));
  const Trace trace = classify(model, ids, batch, seq, MaskKind::none, &s.gen);
  const Tensor &x = trace.at("token_ids"), &logits = trace.at("logits");
  s.out.line("분류기 입력: " + torch_size(x));
  s.out.line("분류기 출력: " + torch_size(logits));
  s.out.line("파라미터 수: " + with_commas(parameter_count(model)));
  s.out.tensor("\nFirst sequence's token ids (x[0]):", select(x, 0), PrintDtype::int64);
  s.out.tensor("\nLogits (output):", logits);
  s.keep("x", x, PrintDtype::int64);
  s.keep("logits", logits);
}

void torch_encoder(Script& s) {
  s.section("PyTorch 내장 Transformer");
  // nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, 256, 0.1, batch_first=True), num_layers=6)
  const auto [x, output] = run_encoder(s, init_encoder(module_config(6, false, LayerStyle::torch), s.gen));
  s.out.line("PyTorch Transformer 출력: " + torch_size(output));
  show_output(s, x, output);
}

// The picture the script saves, as text: weights [n, n] with rows Query and columns Key, first the
// values, then shades from 0 to the largest weight.
void attention_table(Printer& out, const Tensor& w, const std::vector<std::string>& tokens) {
  const double top = double(*std::max_element(w.begin(), w.end()));
  const size_t width = 8;
  auto table = [&](auto cell) {
    std::string head = pad_left("", width);
    for (const auto& token : tokens) head += pad_left(token, width);
    out.line(head);
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string row = pad_left(tokens[i], width);
      for (size_t j = 0; j < tokens.size(); ++j) row += pad_left(cell(double(w(i, j))), width);
      out.line(row);
    }
  };
  out.line("\nQuery \\ Key:");
  table([](double v) { return fixed(v); });
  std::string shades;
  for (const char* shade : kShades) shades += shade;
  out.line("\nHeatmap ('" + shades + "' from 0 to the largest weight, " + fixed(top) + "):");
  table([&](double v) {
    const char* shade = kShades[size_t(v / top * 4 + 0.5)];
    return std::string(shade) + shade + shade + shade;
  });
}

void attention_picture(Script& s) {
  s.section("Attention 시각화");
  const std::vector<std::string> tokens = {"The", "cat", "sat", "on", "mat", "."};
  const Tensor first = select(select(self_attention(s, {1, tokens.size(), 64}).weights, 0), 0);
  picture_note(s, "attention_visualization.png", "weights[0, 0]");
  s.out.tensor("\nFirst batch, first head (weights[0, 0]):", first);
  attention_table(s.out, first, tokens);
}

void causal_mask(Script& s) {
  s.section("Causal Mask");
  const size_t n = 5;
  Tensor mask = Tensor::from_shape({n, n});  // triu(ones, diagonal=1) == 0: key j <= query i
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) mask(i, j) = j <= i ? 1.0f : 0.0f;
  s.out.line("Causal Mask (5x5):");
  s.out.line(int32_repr(mask));
  s.keep("mask", mask, PrintDtype::int64);
}

Script run_script(uint64_t seed) {
  Script s(seed);
  s.out.line(rule('=', 60));
  s.out.line("PyTorch Attention & Transformer");
  s.out.line(rule('=', 60));
  for (auto section : {scaled_dot_product, multi_head, positional_encoding, feed_forward_network, encoder_layer,
                       encoder, classifier, torch_encoder, attention_picture, causal_mask})
    section(s);
  s.out.line("\n" + rule('=', 60));
  s.out.line("Attention & Transformer 정리");
  s.out.line(rule('=', 60));
  s.out.line(kSummary);
  s.out.line(rule('=', 60));
  return s;
}

}  // namespace

std::string tutorial2_walkthrough(uint64_t seed) { return run_script(seed).out.str(); }

Json tutorial2_json(uint64_t seed) { return run_script(seed).json(); }

}  // namespace attn
