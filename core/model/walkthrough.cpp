#include "core/model/walkthrough.hpp"

#include "core/kernels/kernels.hpp"
#include "core/model/printing.hpp"

#include <cctype>

namespace attn {
namespace {

// Tensor.sum(dim=-1), in PyTorch's summation order.
Tensor row_sums(const Tensor& x) {
  const size_t n = x.shape().back();
  Shape shape = shape_of(x);
  shape.pop_back();
  Tensor out = Tensor::from_shape(shape);
  for (size_t r = 0; r < out.size(); ++r) out.data()[r] = tensor_sum(x.data() + r * n, n);
  return out;
}

// x[b, :, j] of a [B, S, S] tensor.
Tensor column(const Tensor& x, size_t b, size_t j) {
  const size_t s = x.shape(1);
  Tensor out = Tensor::from_shape({s});
  for (size_t i = 0; i < s; ++i) out(i) = x(b, i, j);
  return out;
}

void print_attention(Printer& p, const AttentionSteps& a, size_t d_k, bool masked) {
  p.header('-', "Attention Step 1: d_k");
  p.line("d_k:");
  p.line(std::to_string(d_k));
  p.header('-', "Attention Step 2: QK^T");
  p.tensor("raw scores:", a.scores);
  p.shape("raw scores shape:", a.scores);
  p.header('-', "Attention Step 3: QK^T / sqrt(d_k)");
  p.tensor("scaled scores:", a.scaled_scores);
  p.shape("scaled scores shape:", a.scaled_scores);
  if (masked) {
    p.header('-', "Attention Step 4: Mask");
    p.tensor("masked scores:", a.masked_scores);
  }
  p.header('-', "Attention Step 5: Softmax");
  p.tensor("attention weights:", a.attention_weights);
  p.shape("attention weights shape:", a.attention_weights);
  p.line("\nAttention weight row sums:");
  p.line(torch_repr(row_sums(a.attention_weights)));
  p.header('-', "Attention Step 6: Attention Weight \xC3\x97 V");
  p.tensor("attention output:", a.attention_output);
  p.shape("attention output shape:", a.attention_output);
}

void print_final(Printer& p, const AttentionSteps& a, const std::string& kind) {
  p.line("\nFinal " + kind + "Attention Output:");
  p.line(torch_repr(a.attention_output));
  p.shape("Final " + kind + "Attention Output Shape:", a.attention_output);
  p.line("\nFinal " + kind + "Attention Weight:");
  p.line(torch_repr(a.attention_weights));
  p.shape("Final " + kind + "Attention Weight Shape:", a.attention_weights);
}

std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "padding+causal" → "Padding+Causal"
std::string title(std::string s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (i == 0 || s[i - 1] == '+') s[i] = char(std::toupper(static_cast<unsigned char>(s[i])));
  return s;
}

}  // namespace

std::string tutorial_walkthrough(const TutorialRun& run) {
  const Trace& t = run.trace;
  const size_t B = run.batch.batch, S = run.batch.seq;
  Printer p;
  p.header('=', "1. INPUT", false);
  p.tensor("x:", t.at("token_ids"), PrintDtype::int64);
  p.shape("x shape:", t.at("token_ids"));
  p.line("\nSentences:");
  for (const auto& tokens : run.batch.tokens) p.line(python_list_repr(tokens));

  p.header('=', "2. EMBEDDING");
  p.tensor("embedding:", t.at("embedding"));
  p.shape("embedding shape:", t.at("embedding"));

  p.header('=', "3. POSITIONAL ENCODING");
  p.tensor("Positional Encoding:", t.at("positional_encoding"));
  p.shape("Positional Encoding shape:", t.at("positional_encoding"));
  p.line("\nEmbedding + Positional Encoding:");
  p.line(torch_repr(t.at("embedded")));
  p.shape("pe_result shape:", t.at("embedded"));

  p.header('=', "4. QUERY / KEY / VALUE");
  p.tensor("Query:", t.at("query"));
  p.shape("Query shape:", t.at("query"));
  p.line("\nKey:");
  p.line(torch_repr(t.at("key")));
  p.shape("Key shape:", t.at("key"));
  p.line("\nValue:");
  p.line(torch_repr(t.at("value")));
  p.shape("Value shape:", t.at("value"));

  const Tensor padding = to_tensor(padding_mask(run.batch.ids, B, S));
  Tensor key_mask = padding;
  key_mask.reshape({B, 1, S});
  p.header('=', "5. PADDING MASK");
  p.tensor("padding_mask:", padding, PrintDtype::boolean);
  p.shape("padding_mask shape:", padding);
  p.line("\nattention_mask:");
  p.line(torch_repr(key_mask, PrintDtype::boolean));
  p.shape("attention_mask shape:", key_mask);
  const MaskKind kind = run.config.mask;
  if (kind == MaskKind::causal || kind == MaskKind::padding_causal) {
    p.line("\ncombined " + mask_kind_name(kind) + " mask:");
    p.line(torch_repr(t.at("mask"), PrintDtype::boolean));
    p.shape("combined mask shape:", t.at("mask"));
  }

  const size_t d_k = run.config.d_model;
  const AttentionSteps plain = scaled_dot_product_attention(t.at("query"), t.at("key"), t.at("value"));
  p.line("\n\n");
  p.line(rule('#'));
  p.line("6. ATTENTION WITHOUT MASK");
  p.line(rule('#'));
  print_attention(p, plain, d_k, false);
  print_final(p, plain, "");

  const AttentionSteps masked{t.at("scores"), t.at("scaled_scores"), t.at("masked_scores"),
                              t.at("attention_weights"), t.at("attention_output"), {}};
  p.line("\n\n");
  p.line(rule('#'));
  p.line("7. ATTENTION WITH " + upper(mask_kind_name(kind)) + " MASK");
  p.line(rule('#'));
  print_attention(p, masked, d_k, kind != MaskKind::none);
  print_final(p, masked, "Masked ");

  const std::string with = "With " + title(mask_kind_name(kind)) + " Mask";
  p.header('=', "8. LAST SENTENCE ATTENTION WEIGHT");
  p.line("Sentence:");
  p.line(python_list_repr(run.batch.tokens.back()));
  p.line("\nWithout Mask:");
  p.line(torch_repr(select(plain.attention_weights, B - 1)));
  p.line("\n" + with + ":");
  p.line(torch_repr(select(masked.attention_weights, B - 1)));

  p.header('=', "9. PAD ATTENTION COMPARISON");
  p.line("Without Mask - attention to PAD:");
  p.line(torch_repr(column(plain.attention_weights, B - 1, S - 1)));
  p.line("\nWith Mask - attention to PAD:");
  p.line(torch_repr(column(masked.attention_weights, B - 1, S - 1)));

  p.header('=', "10. SHAPE SUMMARY");
  const std::pair<const char*, const char*> summary[] = {
      {"Input: ", "token_ids"}, {"Embedding: ", "embedding"}, {"PE Result: ", "embedded"},
      {"Query: ", "query"},     {"Key: ", "key"},             {"Value: ", "value"},
      {"Attention Weight: ", "attention_weights"}, {"Attention Output: ", "attention_output"}};
  for (const auto& [label, stage] : summary) p.line(std::string(label) + " " + torch_size_repr(shape_of(t.at(stage))));
  return p.str();
}

}  // namespace attn
