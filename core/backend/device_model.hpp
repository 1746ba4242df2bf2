// The Transformer's forward pass on any Backend: weights uploaded once, activations in buffers reused
// from layer to layer, scores never stored (fused attention). Eval mode only (no dropout). The host
// gets back what it asks for: the result, and every stage when a trace is passed.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.hpp"
#include "core/model/transformer.hpp"

namespace attn {

class DeviceModel {
 public:
  DeviceModel(Backend& backend, const TransformerModel& model);  // model must outlive this
  ~DeviceModel();
  // Token ids [B, S] → logits [B, classes] (or the encoder output [B, S, d] for a bare encoder). With a
  // trace: the stages classify() records, except the attention scores and weights (never stored).
  Tensor classify(const std::vector<int64_t>& ids, size_t batch, size_t seq, MaskKind mask,
                  Trace* trace = nullptr);
  // Sequences of any lengths in one pass and unpadded: the Linear layers, LayerNorm and the rest take
  // the rows of every sequence together, attention stays within each sequence (backend() must
  // packs_sequences()). One trace per sequence: what classify() records for it alone ([1, S, ...]).
  std::vector<Trace> classify_packed(const std::vector<std::vector<int64_t>>& sequences, MaskKind mask);
  // Records only these stages (classify's names); "layers.{i}.self_attn.attention_weights" among them
  // makes that layer materialise its weights. Empty (the default): every stage but scores and weights.
  void record_only(std::vector<std::string> stage_names) { wanted_ = std::move(stage_names); }
  // The encoder stack on x [B, S, d]; key_keep [B, S] (1 = real token) or null; causal mask.
  Tensor encode(const Tensor& x, const uint8_t* key_keep, bool causal, Trace* trace = nullptr);
  Backend& backend() { return backend_; }

 private:
  struct Weights;
  struct Activations;
  struct Layout;
  Tensor run_encoder(const Layout& layout, const float* x, const uint8_t* key_keep, bool causal);
  void layer_forward(size_t index, const Layout& layout, bool causal, bool masked);
  void ensure_activations(size_t rows);
  bool wanted(const std::string& stage) const;
  void record_rows(const Layout& layout, const std::string& name, const Buffer& buffer, bool heads);
  void record_weights(const Layout& layout, const std::string& name);
  Tensor pull(const Buffer& buffer, const Shape& shape);

  Backend& backend_;
  const TransformerConfig config_;
  const TransformerModel& model_;
  std::unique_ptr<Weights> weights_;
  std::unique_ptr<Activations> act_;
  std::vector<std::string> wanted_;
};

}  // namespace attn
