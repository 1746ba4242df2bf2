// A sharded checkpoint: model.safetensors.index.json's weight_map names, for every tensor, the shard
// (a .safetensors file beside the index) that holds it, as transformers' save_pretrained splits a
// large model.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/io/safetensors.hpp"

namespace attn {

// Each shard's file name and the tensors the index puts in it. InputError naming `file` for text that
// is not JSON, a weight_map that is missing, empty or not of strings, or a shard name that is not a
// plain .safetensors file name (no folders: the shards lie beside the index).
std::map<std::string, std::vector<std::string>> parse_shard_index(const std::string& text, const std::string& file);

// Every shard's tensors (read_safetensors on each, `skipped` and `progress` passed on), after checking
// that each shard exists and holds the tensors the index names in it; InputError naming the index or
// the shard otherwise, or for a tensor in two shards.
std::vector<NamedTensor> read_sharded_safetensors(const std::string& index_path,
                                                  std::vector<std::string>* skipped = nullptr,
                                                  const ReadProgress& progress = nullptr);

// A checkpoint's tensors from `path`: a model.safetensors.index.json (any name ending in .index.json)
// reads its shards, anything else is one .safetensors file. Floating-point tensors only; the names of
// the others go to `skipped`.
std::vector<NamedTensor> read_checkpoint(const std::string& path, std::vector<std::string>* skipped,
                                         const ReadProgress& progress = nullptr);

// The same, half-precision tensors kept so (read_safetensors_weights).
std::vector<NamedWeight> read_checkpoint_weights(const std::string& path, std::vector<std::string>* skipped,
                                                 const ReadProgress& progress = nullptr);

}  // namespace attn
