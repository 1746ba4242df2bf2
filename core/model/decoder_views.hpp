// What the Llama family's attention shows beyond its weights (docs/decoders.md, "Views"): how much each
// head attends to the first token (attention sinks), and how a rotary head's score between two tokens
// splits over its frequency pairs and changes with their distance.
#pragma once
#include <cstddef>
#include <vector>

#include "core/model/decoder.hpp"
#include "core/model/trace.hpp"

namespace attn {

// Each layer's and head's mean weight on the first key, over every row and every query after the first
// (the first query has no other key; a one-token input uses it): [layers][heads], from the trace's
// model.layers.{i}.self_attn.attn_weights.
std::vector<std::vector<double>> first_token_attention(const Trace& trace, size_t layers);

// One head's score between a query and a key (before any soft cap and the mask):
//   score = Σᵢ pairs[i] + unrotated, pairs[i] = (q′ᵢ·k′ᵢ + q′ᵢ₊ₕ·k′ᵢ₊ₕ) / √scale
// over the rotated halves' pairs (i, i + h) of apply_rotary_pos_emb (q′, k′ rotated; h = rotary_dim / 2),
// unrotated the dimensions past rotary_dim (partial rotary, GPT-NeoX). by_distance[δ] is the score
// of the same vectors before rotation, the key δ positions before the query: rotary makes it depend on
// δ alone, Σᵢ a²·(Aᵢ cos δθᵢ − Bᵢ sin δθᵢ) / √scale + unrotated, with Aᵢ + jBᵢ = (qᵢ + jqᵢ₊ₕ)(kᵢ − jkᵢ₊ₕ),
// θᵢ the layer's inv_freq and a its attention factor; by_distance[query − key] is the score.
struct RotarySplit {
  std::vector<double> pairs;
  double unrotated = 0, score = 0;
  std::vector<double> by_distance;
};

// Every layer's and query head's split for row `row`'s positions `query` ≥ `key`, with by_distance
// for δ = 0 … distances − 1: [layers][heads]. InputError for positions outside the row or a key after
// the query.
std::vector<std::vector<RotarySplit>> rotary_splits(const DecoderModel& model, const Trace& trace, size_t row,
                                                     size_t query, size_t key, size_t distances);

}  // namespace attn
