// Opening a checkpoint by its Hugging Face Hub name (`--model NAME[@REVISION]`, docs/hub.md): the
// files a BERT or GPT-2 model needs, downloaded with libcurl into the cache huggingface_hub shares
// (its layout and parsing: core/model/hub_cache.hpp; its digests: native/hub_digest.hpp), each verified against its etag before it is used.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/model/model_options.hpp"
#include "native/hub_digest.hpp"

namespace attn::hub {

// What a window follows of a download (attn-gui's Hub field): the file asked for and its bytes so far, of
// its size (0 of 0 while it is asked for); returning false cancels the download (an InputError; a part
// downloaded is kept, to be resumed).
using Watch = std::function<bool(const std::string& file, uint64_t done, uint64_t total)>;

// The snapshot folder holding `ref`'s config.json, weights and tokenizer files, downloading what the
// cache lacks (nothing with settings.offline). The folder appears only once every file it needs is
// verified. Progress on standard error unless `quiet`; every failure is an InputError.
std::string snapshot(const Reference& ref, const Settings& settings, bool quiet, const Watch& watch = nullptr);

}  // namespace attn::hub

namespace attn::cli {

// --model NAME[@REVISION] into o.model_dir: a local folder of that name as it is (a folder wins, as in
// transformers' from_pretrained), else the Hub repository's snapshot. Nothing when --model is not given.
void resolve_model(ModelOptions& o, bool quiet);

}  // namespace attn::cli
