#include "ui/tour.hpp"

#include "core/base/error.hpp"
#include "ui/model_files.hpp"

namespace attn::ui {
namespace {

const TourStep steps[tour_length] = {
    {Str::tour_sentence_title, Str::tour_sentence_text, Str::tour_sentence_formula, "[B, S]", "token_ids", false, false},
    {Str::tour_ids_title, Str::tour_ids_text, Str::tour_ids_formula, "[B, S]", "token_ids", false, false},
    {Str::tour_embedding_title, Str::tour_embedding_text, Str::tour_embedding_formula, "[B, S, d_model]", "embedding",
     false, false},
    {Str::tour_pe_title, Str::tour_pe_text, Str::tour_pe_formula, "[1, S, d_model]", "positional_encoding", false, false},
    {Str::tour_qkv_title, Str::tour_qkv_text, Str::tour_qkv_formula, "[B, S, d_k]", "query", false, false},
    {Str::tour_scores_title, Str::tour_scores_text, Str::tour_scores_formula, "[B, S, S]", "scores", false, false},
    {Str::tour_scale_title, Str::tour_scale_text, Str::tour_scale_formula, "[B, S, S]", "scaled_scores", false, false},
    {Str::tour_mask_title, Str::tour_mask_text, Str::tour_mask_formula, "[B, S, S]", "masked_scores", false, false},
    {Str::tour_softmax_title, Str::tour_softmax_text, Str::tour_softmax_formula, "[B, S, S]", "attention_weights",
     false, false},
    {Str::tour_output_title, Str::tour_output_text, Str::tour_output_formula, "[B, S, d_v]", "attention_output", false,
     false},
    {Str::tour_mha_title, Str::tour_mha_text, Str::tour_mha_formula, "[B, h, S, S]", "self_attn.attention_weights", true,
     true},
    {Str::tour_ffn_title, Str::tour_ffn_text, Str::tour_ffn_formula, "[B, S, d_model]", "ffn.output", true, true},
    {Str::tour_norm_title, Str::tour_norm_text, Str::tour_norm_formula, "[B, S, d_model]", "norm2", true, true},
    {Str::tour_encoder_title, Str::tour_encoder_text, Str::tour_encoder_formula, "[B, S, d_model]", "encoder_output",
     false, true},
    {Str::tour_classifier_title, Str::tour_classifier_text, Str::tour_classifier_formula, "[B, C]", "logits", false,
     true},
};

}  // namespace

// A classifier read from files has the Transformer's stages; a checkpoint has its own.
bool tour_model_fits(const PlaygroundConfig& c, int step) {
  if (!tour_step(step).transformer) return c.model == ModelKind::tutorial;
  return c.model == ModelKind::transformer || (c.model == ModelKind::loaded && c.loaded && !c.loaded->checkpoint());
}

const TourStep& tour_step(int step) {
  if (step < 1 || step > tour_length)
    throw InputError("tour step must be 1 to " + std::to_string(tour_length) + " (got " + std::to_string(step) + ")");
  return steps[step - 1];
}

PlaygroundConfig tour_config(const PlaygroundConfig& config, int step) {
  if (step != 0) tour_step(step);  // checks the range
  PlaygroundConfig c = config;
  c.tour = step;
  if (step == 0 || tour_model_fits(c, step)) return c;
  return defaults_for(tour_step(step).transformer ? ModelKind::transformer : ModelKind::tutorial, c);
}

std::string tour_stage(int step, size_t layer) {
  const TourStep& s = tour_step(step);
  return s.in_layer ? "layers." + std::to_string(layer) + "." + s.stage : std::string(s.stage);
}

}  // namespace attn::ui
