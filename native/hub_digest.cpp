#include "native/hub_digest.hpp"

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/base/error.hpp"

namespace attn::hub {
namespace {

struct MdContext {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  explicit MdContext(const EVP_MD* md) {
    if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) throw std::runtime_error("OpenSSL: cannot start a digest");
  }
  void update(std::string_view bytes) { EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx.get(), digest, &size);
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) out += {digits[digest[i] >> 4], digits[digest[i] & 15]};
    return out;
  }
};

// git hashes a blob as "blob <size>\0" followed by its bytes.
std::string git_blob_header(uint64_t size) { return "blob " + std::to_string(size) + std::string(1, '\0'); }

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  MdContext md(EVP_sha256());
  md.update(bytes);
  return md.hex();
}

std::string git_blob_sha1_hex(std::string_view bytes) {
  MdContext md(EVP_sha1());
  md.update(git_blob_header(bytes.size()));
  md.update(bytes);
  return md.hex();
}

std::string file_digest(const std::string& path, EtagKind kind) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) throw InputError("cannot read '" + path + "' to check it");
  MdContext md(kind == EtagKind::sha256 ? EVP_sha256() : EVP_sha1());
  if (kind == EtagKind::git_sha1) md.update(git_blob_header(size));
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    md.update(std::string_view(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) throw InputError("cannot read '" + path + "' to check it");
  return md.hex();
}

}  // namespace attn::hub
