// The guided tour: the first tutorial's steps in order (sentences → … → weights · V), then the second
// tutorial's modules (multi-head attention … classifier). Each step names the stage the canvas shows,
// so it follows the user's own sentences. Steps are numbered from 1; 0 is "no tour"
// (PlaygroundConfig::tour, the URL hash's tour=N).
#pragma once
#include <cstddef>
#include <string>

#include "ui/playground.hpp"
#include "ui/strings.hpp"

namespace attn::ui {

struct TourStep {
  Str title, text, formula;
  const char* shape;  // symbolic: "[B, S, d_model]"
  const char* stage;  // the trace stage shown; inside layer L when in_layer ("layers.L.<stage>")
  bool in_layer;
  bool transformer;  // the second tutorial's (the Transformer's) module
};

inline constexpr int tour_length = 15;
const TourStep& tour_step(int step);  // 1 … tour_length; throws InputError outside

// The configuration for showing `step` (0: ends the tour): the model it needs (the first tutorial for
// its steps, the Transformer for the second's; a classifier loaded from files stays for those), the
// sentences, seed, language and everything else kept.
PlaygroundConfig tour_config(const PlaygroundConfig& config, int step);
// Whether the configuration's model has the step's stages (tour_config keeps it then).
bool tour_model_fits(const PlaygroundConfig& config, int step);
// The stage a step shows, in `layer` for the Transformer's layer modules.
std::string tour_stage(int step, size_t layer);

}  // namespace attn::ui
