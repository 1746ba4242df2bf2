// Pieces BERT's forward (core/model/pretrained.cpp, which defines them) and GPT-2's (core/model/gpt2.cpp)
// share. Internal to core/model.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/pretrained.hpp"

namespace attn {

Tensor transposed(const Tensor& t);                    // [r, c] → [c, r]
Tensor add_rows(const Tensor& x, const Tensor& rows);  // rows broadcast over x's leading dimensions
// Rows of `table` picked by ids → [B, S, H]; an id outside the table is an InputError naming `what`.
Tensor lookup(const Tensor& table, const std::vector<int64_t>& ids, size_t batch, size_t seq, const char* what);
Tensor ids_tensor(const std::vector<int64_t>& ids, size_t batch, size_t seq);  // ids as a float [B, S] stage
// InputError for no tokens, more than the model's positions (after `past` cached ones) or a trace that
// would not fit in memory.
void check_pretrained_input(const PretrainedModel& m, const PretrainedInput& in, size_t past = 0);
// The residual stream a resumed run starts from, handed on as `stage`.
Tensor resumed(const LayerStart& start, const std::string& stage, Trace& t);

}  // namespace attn
