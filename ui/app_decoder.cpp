// The views only the Llama-family decoders have (docs/decoders.md, "Views"; #51 item 5): in the model
// view, each head's share of attention on the first token (attention sinks) and a "hide the first token"
// toggle that renormalises the rest for display; in the Positional encoding tab, how one head's score
// between two chosen tokens splits over the rotary frequency pairs, and that pair's score by distance.
// The numbers are core/model/decoder_views.hpp's (what attn encode --json writes), computed only when
// the result or a selector changes.
#include <algorithm>
#include <cstdio>

#include "core/model/decoder_views.hpp"
#include "ui/app.hpp"
#include "ui/strings.hpp"
#include "ui/widgets.hpp"

namespace attn::ui {

// --- attention sinks, in the model view ---

void App::draw_sink_controls(const Computed& r) {
  ImGui::Checkbox(tr(Str::hide_first_token), &hide_first_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(Str::hide_first_token_tip));
  ImGui::SameLine();
  ImGui::Checkbox(tr(Str::first_token_share), &show_sinks_);
  refresh_sink_cache(r);
}

// Each part only when its toggle asks for it, once per result.
void App::refresh_sink_cache(const Computed& r) {
  const uint64_t generation = playground_.result_generation();
  if (show_sinks_ && sinks_generation_ != generation) {
    sinks_generation_ = generation;
    const auto share = first_token_attention(r.trace, r.num_layers);
    const size_t heads = share.empty() ? 0 : share[0].size();
    sinks_ = Tensor::from_shape({share.size(), heads});
    for (size_t l = 0; l < share.size(); ++l)
      for (size_t h = 0; h < heads; ++h) sinks_(l, h) = float(share[l][h]);
    sink_layer_labels_.clear();
    sink_head_labels_.clear();
    for (size_t l = 0; l < share.size(); ++l) sink_layer_labels_.push_back("L" + std::to_string(l));
    for (size_t h = 0; h < heads; ++h) sink_head_labels_.push_back("H" + std::to_string(h));
  }
  if (hide_first_ && without_first_generation_ != generation) {
    without_first_generation_ = generation;
    // Each layer's weights without the first key, every row renormalised over the others (a row that
    // sees only the first key, the first query's, stays 0).
    without_first_.clear();
    for (size_t l = 0; l < r.num_layers; ++l) {
      Tensor w = r.trace.at(weights_stage_name(r, l));
      const size_t S = w.shape(3);
      for (size_t row = 0; row < w.size() / S; ++row) {
        float* x = w.data() + row * S;
        x[0] = 0;
        float sum = 0;
        for (size_t k = 1; k < S; ++k) sum += x[k];
        for (size_t k = 1; k < S; ++k) x[k] = sum > 0 ? x[k] / sum : 0.0f;
      }
      without_first_.push_back(std::move(w));
    }
  }
}

const Tensor* App::shown_weights(size_t layer, const Tensor& weights) const {
  return hide_first_ && layer < without_first_.size() ? &without_first_[layer] : &weights;
}

void App::draw_sinks_map(float width, float height) {
  ImGui::PushStyleColor(ImGuiCol_Text, dim_color);
  ImGui::TextWrapped("%s", tr(Str::sinks_caption));
  ImGui::PopStyleColor();
  refresh(sinks_map_, {sinks_generation_, &sinks_, 0, 0}, sinks_, ColorMap::sequential);
  draw_heatmap(sinks_map_, &sink_layer_labels_, &sink_head_labels_, width,
               height - ImGui::GetTextLineHeightWithSpacing() * 2, "sinks");
}

// --- rotary positions, in the Positional encoding tab ---

void App::refresh_rotary_cache(const Computed& r) {
  const size_t row = std::min(size_t(batch_), r.lengths.size() - 1), length = r.lengths[row];
  rotary_query_ = std::clamp(rotary_query_, 0, int(length) - 1);
  rotary_key_ = std::clamp(rotary_key_, 0, rotary_query_);
  const uint64_t generation = playground_.result_generation();
  const bool same_splits = rotary_generation_ == generation && rotary_row_ == row &&
                           rotary_for_query_ == rotary_query_ && rotary_for_key_ == rotary_key_;
  if (!same_splits) {
    const size_t distances = std::min<size_t>(r.decoder->config.max_positions, 128);
    rotary_ = rotary_splits(*r.decoder, r.trace, row, size_t(rotary_query_), size_t(rotary_key_), distances);
    rotary_generation_ = generation;
    rotary_row_ = row;
    rotary_for_query_ = rotary_query_;
    rotary_for_key_ = rotary_key_;
  }
  rotary_layer_ = std::clamp(rotary_layer_, 0, int(rotary_.size()) - 1);
  rotary_head_ = std::clamp(rotary_head_, 0, int(rotary_[size_t(rotary_layer_)].size()) - 1);
  if (same_splits && rotary_plotted_layer_ == rotary_layer_ && rotary_plotted_head_ == rotary_head_) return;
  rotary_plotted_layer_ = rotary_layer_;
  rotary_plotted_head_ = rotary_head_;
  const RotarySplit& s = rotary_[size_t(rotary_layer_)][size_t(rotary_head_)];
  rotary_pairs_.assign(s.pairs.begin(), s.pairs.end());
  rotary_distance_.assign(s.by_distance.begin(), s.by_distance.end());
}

void App::draw_rotary_view(const Computed& r, float width) {
  ImGui::Separator();
  const size_t row = std::min(size_t(batch_), r.lengths.size() - 1);
  index_slider(tr(Str::batch_item), batch_, r.tokens.size(), false);
  index_slider(tr(Str::rotary_query), rotary_query_, r.lengths[row], r.tokens.size() > 1);
  index_slider(tr(Str::rotary_key), rotary_key_, size_t(std::max(rotary_query_, 0)) + 1, true);
  index_slider(tr(Str::layer), rotary_layer_, r.num_layers, false);
  index_slider(tr(Str::head), rotary_head_, r.decoder->config.num_heads, true);
  refresh_rotary_cache(r);
  const RotarySplit& s = rotary_[size_t(rotary_layer_)][size_t(rotary_head_)];
  const auto& tokens = r.tokens[row];
  ImGui::TextWrapped(tr(Str::rotary_split_caption), tokens[size_t(rotary_query_)].c_str(), rotary_query_,
                     tokens[size_t(rotary_key_)].c_str(), rotary_key_, s.score, rotary_pairs_.size());
  if (s.unrotated != 0) ImGui::TextWrapped(tr(Str::rotary_unrotated), s.unrotated);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float plot_h = std::max(60.0f, (ImGui::GetContentRegionAvail().y - 3 * line) / 2);
  ImGui::PlotHistogram("##pairs", rotary_pairs_.data(), int(rotary_pairs_.size()), 0, nullptr, FLT_MAX, FLT_MAX,
                       ImVec2(width, plot_h));
  record_box(layout_, LayoutKind::heatmap, "rotary", "", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  const size_t distance = size_t(rotary_query_ - rotary_key_);
  ImGui::TextWrapped(tr(Str::rotary_distance_caption), rotary_distance_.size() - 1, distance,
                     distance < s.by_distance.size() ? s.by_distance[distance] : s.score);
  ImGui::PlotLines("##distance", rotary_distance_.data(), int(rotary_distance_.size()), 0, nullptr, FLT_MAX, FLT_MAX,
                   ImVec2(width, plot_h));
  record_box(layout_, LayoutKind::heatmap, "rotary_distance", "", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
}

}  // namespace attn::ui
