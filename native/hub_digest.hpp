// The digests a Hub download is checked with (an LFS file's SHA-256, a small file's git blob SHA-1),
// from OpenSSL's libcrypto: natively only (the page checks with the browser's crypto.subtle).
#pragma once
#include <string>
#include <string_view>

#include "core/model/hub_cache.hpp"

namespace attn::hub {

// Lowercase hex digests of bytes: SHA-256, and git's blob SHA-1 (of "blob <size>\0" + bytes).
std::string sha256_hex(std::string_view bytes);
std::string git_blob_sha1_hex(std::string_view bytes);
// The file's digest of the etag's kind (the file read in pieces); an unreadable file is an InputError.
std::string file_digest(const std::string& path, EtagKind kind);

}  // namespace attn::hub
