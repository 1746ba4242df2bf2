// What --model's Hub client parses (core/model/hub_cache.hpp): the user's NAME[@REVISION], and a server's
// answers: header lines, the file metadata they give, and a shard index. Whatever is taken must be
// safe to use as the cache's paths and the request's URL.
#include <algorithm>

#include "core/io/safetensors_index.hpp"
#include "core/model/hub_cache.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

using namespace attn::hub;

// A reference taken names one folder of the cache and one URL segment per part.
void check_reference(const Reference& ref) {
  const Reference again = parse_reference(ref.repo_id + "@" + ref.revision);
  if (again.repo_id != ref.repo_id || again.revision != ref.revision)
    attn::fuzz::finding("NAME@REVISION does not parse back to itself: '" + ref.repo_id + "'");
  const std::string folder = RepoCache{"/c", ref.repo_id}.folder_name();
  if (folder.find('/') != std::string::npos || folder.find("..") != std::string::npos)
    attn::fuzz::finding("the cache folder '" + folder + "' is not one path component");
  if (url_quote(ref.revision, "").find_first_of("/?# ") != std::string::npos)
    attn::fuzz::finding("the quoted revision leaves a URL delimiter");
}

// Metadata taken names a blob and a snapshot inside the cache.
void check_metadata(const FileMetadata& m) {
  if (m.etag.empty() || m.etag.find('/') != std::string::npos || m.etag == "." || m.etag == "..")
    attn::fuzz::finding("the etag '" + m.etag + "' is not a blob name");
  if (!is_commit_hash(m.commit)) attn::fuzz::finding("the commit '" + m.commit + "' is not a commit hash");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  attn::fuzz::guarded([&] { check_reference(parse_reference(text)); });
  Headers headers;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (auto h = parse_header_line(std::string_view(text).substr(start, end - start + (end < text.size())))) {
      if (h->first.empty() || h->first.find(':') != std::string::npos) attn::fuzz::finding("a header without a name");
      headers.push_back(std::move(*h));
    }
    start = end + 1;
  }
  for (bool redirect : {false, true}) attn::fuzz::guarded([&] { check_metadata(file_metadata(headers, redirect, "f")); });
  url_origin(text);
  etag_kind(normalize_etag(text));
  return attn::fuzz::guarded([&] {
    for (const auto& shard : attn::parse_shard_index(text, "index"))
      if (shard.first.find_first_of("/\\") != std::string::npos)
        attn::fuzz::finding("the shard '" + shard.first + "' leaves the snapshot's top folder");
  });
}
