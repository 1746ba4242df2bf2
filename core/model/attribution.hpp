// Attribution: how much each input token (or each head and MLP) accounts for a model's output, by five
// methods of the literature, each defined as its reference implementation computes it:
//   integrated-gradients  Captum's IntegratedGradients (Gauss–Legendre, a zero token-embedding baseline)
//   gradient-x-input      Captum's InputXGradient on the token embeddings
//   rollout, flow         Abnar & Zuidema (2020), on the attention weights of one forward pass
//   logit-attribution     TransformerLens's decompose_resid / stack_head_results with apply_ln
// The gradients come from the models' own backward passes (core/model/gpt2.hpp, transformer.hpp).
// docs/attribution.md gives the definitions and the choices.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/loaded_model.hpp"

namespace attn {

enum class AttributionMethod { integrated_gradients, gradient_x_input, rollout, flow, logit_attribution };
// "integrated-gradients", …; else InputError listing the methods.
AttributionMethod parse_attribution_method(const std::string& text);
std::string attribution_method_name(AttributionMethod method);

struct AttributionOptions {
  AttributionMethod method = AttributionMethod::integrated_gradients;
  std::optional<int64_t> target;  // GPT-2: a token id; the classifier: a class. Default: the top one
  size_t steps = 50;              // integrated gradients' Gauss–Legendre nodes (Captum's n_steps)
  bool every_output = false;      // flow: the shares of every output position, not only those followed
  // Integrated gradients' baseline: this token's embedding at every position (Captum's usual pad-token
  // baseline); none: zero embeddings.
  std::optional<int64_t> baseline_id;
};

// What is attributed: GPT-2's next-token logit at the last position, or the classifier's class logit
// (pre-softmax). BERT's base model has no output head, so there it has no target (id −1).
struct AttributionTarget {
  int64_t id = -1;
  std::string label;  // the token, or "class K"
  size_t position = 0;
  double logit = 0;
};

struct Attribution {
  AttributionMethod method = AttributionMethod::integrated_gradients;
  AttributionTarget target;
  std::vector<double> scores;  // per input token (every method but logit-attribution)
  // Integrated gradients: F(input), F(baseline) and the convergence delta Σ scores − (F(input) − F(baseline)).
  size_t steps = 0;
  std::optional<int64_t> baseline_id;  // none: zero embeddings
  double input_value = 0, baseline_value = 0, delta = 0;
  // Rollout and flow: the output positions followed (scores are their mean) and the shares [S, S] (row
  // i: how much output position i draws from each input position): rollout's whole product, flow's
  // rows of the outputs followed (every row with every_output; the others 0).
  std::vector<size_t> outputs;
  std::vector<double> shares;
  // Logit attribution: embed, pos_embed, then per layer LlHh for each head, Ll.attn_bias and Ll.mlp_out,
  // then ln_f.bias; they add up to the target's logit.
  std::vector<std::string> components;
  std::vector<double> contributions;
};

// One input (batch 1) of `model`; InputError for a method the model cannot give (BERT has no output
// head; logit attribution needs GPT-2's pre-norm stream), steps outside 1 to 10000, a target outside
// the vocabulary or the classes.
Attribution attribute(const LoadedModel& model, const ModelInput& input, const AttributionOptions& options);

// attn attribute --json's document (docs/attribution.md): model, method, ids, tokens, target, then the
// method's fields (scores, outputs, rollout, integrated_gradients; or components and contributions).
Json attribution_json(const LoadedModel& model, const ModelInput& input, const Attribution& attribution);

// numpy.polynomial.legendre.leggauss(n) mapped onto [0, 1] as Captum's "gausslegendre" does:
// alphas 0.5 (x + 1), weights 0.5 w, ascending.
void gauss_legendre(size_t n, std::vector<double>& alphas, std::vector<double>& weights);
// The maximum flow from `source` to `sink` of a graph given as its capacity matrix (Edmonds–Karp).
double max_flow(std::vector<std::vector<double>> capacity, size_t source, size_t sink);

}  // namespace attn
