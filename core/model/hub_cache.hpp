// The Hugging Face Hub's names, cache layout and answers, as huggingface_hub writes and reads them
// (src/huggingface_hub/file_download.py, constants.py, utils/_validators.py), so that attnlab and
// huggingface_hub share one cache. No network and no digest here (native/hub_digest.hpp): native/hub.cpp
// downloads with libcurl, the page (web/hub.js) with fetch, and both take the names, the files a model
// needs and a server's answers from here; what it parses (the user's NAME[@REVISION], a server's headers)
// is reachable from the unit tests (tests/test_hub.cpp) and the fuzz target (tests/fuzz/fuzz_hub_reference.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/json.hpp"
#include "core/model/pretrained.hpp"

namespace attn::hub {

// A repository and a revision (a branch, a tag or a commit hash).
struct Reference {
  std::string repo_id, revision = "main";
};
// NAME[@REVISION], both validated: InputError naming the problem.
Reference parse_reference(const std::string& text);
// huggingface_hub's validate_repo_id: "name" or "namespace/name", each starting and ending with a
// letter, digit or '_', made of those, '-' and '.'; a name of at most 96 characters; no "--" or "..";
// not ending in ".git". ASCII letters only (the Hub refuses others).
void validate_repo_id(const std::string& repo_id);
// A revision names a path under refs/ and a URL segment: non-empty, no "..", no control character,
// no empty or "." segment between its '/'s.
void validate_revision(const std::string& revision);
bool is_commit_hash(const std::string& revision);  // 40 lowercase hex digits, as the Hub's commits

// The paths of one repository in a Hub cache folder (HF_HUB_CACHE).
struct RepoCache {
  std::string cache, repo_id;

  std::string folder_name() const;  // "models--ORG--NAME" (repo_folder_name)
  std::string storage() const;      // <cache>/models--ORG--NAME
  std::string blob(const std::string& etag) const;                             // storage/blobs/<etag>
  std::string snapshot(const std::string& commit) const;                       // storage/snapshots/<commit>
  std::string pointer(const std::string& commit, const std::string& file) const;  // snapshot/<file>
  std::string ref(const std::string& revision) const;                          // storage/refs/<revision>
  std::string no_exist(const std::string& commit, const std::string& file) const;  // storage/.no_exist/<commit>/<file>
  std::string lock(const std::string& etag) const;  // <cache>/.locks/models--ORG--NAME/<etag>.lock
};
// What the snapshot's symlink for `file` holds: "../../blobs/<etag>", one more "../" per folder in `file`.
std::string blob_link_target(const std::string& file, const std::string& etag);

// {endpoint}/{repo_id}/resolve/{revision}/{file}: the revision percent-quoted with no safe character,
// the file with '/' kept (hf_hub_url).
std::string file_url(const std::string& endpoint, const Reference& ref, const std::string& file);
// Python's urllib.parse.quote: every byte but letters, digits, "_.-~" and `safe` as %XX.
std::string url_quote(const std::string& text, const std::string& safe);
// "scheme://host[:port]" of an absolute URL, lowercased; empty for a relative one. Two URLs of
// different origins are two servers (a token goes to the first only).
std::string url_origin(const std::string& url);

// A response's headers, names lowercased, in arrival order.
using Headers = std::vector<std::pair<std::string, std::string>>;
// One header line as received ("Name: value\r\n"): the lowercased name and the trimmed value; none
// for a status line, the blank line or a line without a colon.
std::optional<std::pair<std::string, std::string>> parse_header_line(std::string_view line);
// The first value of header `name` (lowercase), if any.
std::optional<std::string> header(const Headers& headers, const std::string& name);
// huggingface_hub's _normalize_etag: leading 'W' and '/' characters stripped, then surrounding quotes.
std::string normalize_etag(const std::string& etag);

// What a HEAD answer says of a file: its commit, etag (the blob's name), size and where to GET it.
struct FileMetadata {
  std::string commit, etag, location;  // location: the redirect's target, empty when not redirected
  uint64_t size = 0;
};
// From a 2xx or 3xx HEAD answer: X-Repo-Commit (a commit hash), X-Linked-Etag else ETag (a file
// name), X-Linked-Size else Content-Length (not a redirect's own), Location. A missing or malformed
// one is an InputError starting with `what` (the file and the server).
FileMetadata file_metadata(const Headers& headers, bool redirect, const std::string& what);

// An etag of 64 hex digits is the file's SHA-256 (an LFS file), one of 40 git's blob SHA-1.
enum class EtagKind { sha256, git_sha1, other };
EtagKind etag_kind(const std::string& etag);

// The files a checkpoint needs beside config.json and its weights (the tokenizer's), by its config
// (`what` names it in the loader's errors for a config no family takes), and those it uses when present.
struct TokenizerFiles {
  std::vector<std::string> required, optional;
};
TokenizerFiles tokenizer_files(const Json& config, const std::string& what);

// Where the Hub and its cache are, from the environment as huggingface_hub reads it.
struct Settings {
  std::string endpoint;  // HF_ENDPOINT (trailing '/' dropped), default https://huggingface.co
  std::string cache;     // HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub
  std::string token;     // HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file HF_TOKEN_PATH ($HF_HOME/token)
  bool offline = false;  // HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is 1, ON, YES or TRUE
};
Settings settings_from_environment();

}  // namespace attn::hub
