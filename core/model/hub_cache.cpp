#include "core/model/hub_cache.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/model/decoder.hpp"

namespace attn::hub {
namespace {

bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool is_word(char c) { return is_ascii_alnum(c) || c == '_'; }
bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
bool is_lower_hex(const std::string& s, size_t digits) {
  return s.size() == digits &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The text quoted for a message, control characters as \xNN (a newline would break the message's line).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (!is_control(c)) {
      out += c;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
    out += escaped;
  }
  return out + "'";
}

// One part of a repository id (REPO_ID_REGEX): word characters at both ends, '-' and '.' between.
bool valid_id_part(const std::string& part) {
  return !part.empty() && is_word(part.front()) && is_word(part.back()) &&
         std::all_of(part.begin(), part.end(), [](char c) { return is_word(c) || c == '-' || c == '.'; });
}

// A name that is one path component of the cache: letters, digits, '.', '_' and '-', starting with a
// letter or digit (so never "." or "..").
bool is_plain_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && is_ascii_alnum(name.front()) &&
         std::all_of(name.begin(), name.end(), [](char c) { return is_word(c) || c == '-' || c == '.'; });
}

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;  // set but empty: as unset (an empty endpoint or cache means nothing)
  return std::string(value);
}

std::string expand_user(const std::string& path) {
  if (path != "~" && path.rfind("~/", 0) != 0) return path;
  return env("HOME").value_or("") + path.substr(1);
}

// huggingface_hub's _clean_token: line breaks removed, then surrounding whitespace.
std::string clean_token(std::string token, const std::string& source) {
  token.erase(std::remove_if(token.begin(), token.end(), [](char c) { return c == '\r' || c == '\n'; }), token.end());
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; };
  while (!token.empty() && space(token.back())) token.pop_back();
  token.erase(token.begin(), std::find_if_not(token.begin(), token.end(), space));
  if (std::any_of(token.begin(), token.end(), is_control)) throw InputError(source + " holds a control character");
  return token;
}

bool is_true(const std::optional<std::string>& value) {
  if (!value) return false;
  const std::string v = lower(*value);
  return v == "1" || v == "on" || v == "yes" || v == "true";
}

// A decimal size header.
uint64_t parse_size(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 19 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw InputError(what + ": the file's size " + quoted(text) + " is not a number");
  return std::stoull(text);
}



}  // namespace

void validate_repo_id(const std::string& repo_id) {
  const std::string what = "the repository id " + quoted(repo_id);
  if (repo_id.empty()) throw InputError("the repository id is empty");
  if (std::count(repo_id.begin(), repo_id.end(), '/') > 1)
    throw InputError(what + " has more than one '/' (expected 'name' or 'namespace/name')");
  const size_t slash = repo_id.find('/');
  const std::string name = slash == std::string::npos ? repo_id : repo_id.substr(slash + 1);
  if ((slash != std::string::npos && !valid_id_part(repo_id.substr(0, slash))) || !valid_id_part(name) || name.size() > 96)
    throw InputError(what + " is not 'name' or 'namespace/name' of letters, digits, '-', '_' and '.', each "
                     "starting and ending with a letter, digit or '_', the name at most 96 characters");
  if (contains(repo_id, "--") || contains(repo_id, ".."))
    throw InputError(what + " holds '--' or '..', which the Hub forbids");
  if (ends_with(repo_id, ".git")) throw InputError(what + " ends in '.git', which the Hub forbids");
}

void validate_revision(const std::string& revision) {
  const std::string what = "the revision " + quoted(revision);
  if (revision.empty()) throw InputError("the revision is empty (NAME@REVISION: a branch, a tag or a commit hash)");
  if (std::any_of(revision.begin(), revision.end(), is_control)) throw InputError(what + " holds a control character");
  if (contains(revision, "..")) throw InputError(what + " holds '..'");
  for (size_t start = 0; start <= revision.size();) {
    const size_t end = std::min(revision.find('/', start), revision.size());
    const std::string segment = revision.substr(start, end - start);
    if (segment.empty() || segment == ".") throw InputError(what + " has an empty or '.' part between its '/'s");
    start = end + 1;
  }
}

bool is_commit_hash(const std::string& revision) { return is_lower_hex(revision, 40); }

Reference parse_reference(const std::string& text) {
  Reference ref;
  const size_t at = text.find('@');
  ref.repo_id = text.substr(0, at);
  if (at != std::string::npos) ref.revision = text.substr(at + 1);
  validate_repo_id(ref.repo_id);
  validate_revision(ref.revision);
  return ref;
}

std::string RepoCache::folder_name() const {
  std::string name = "models--" + repo_id;
  const size_t slash = name.find('/');
  if (slash != std::string::npos) name.replace(slash, 1, "--");
  return name;
}
std::string RepoCache::storage() const { return cache + "/" + folder_name(); }
std::string RepoCache::blob(const std::string& etag) const { return storage() + "/blobs/" + etag; }
std::string RepoCache::snapshot(const std::string& commit) const { return storage() + "/snapshots/" + commit; }
std::string RepoCache::pointer(const std::string& commit, const std::string& file) const {
  return snapshot(commit) + "/" + file;
}
std::string RepoCache::ref(const std::string& revision) const { return storage() + "/refs/" + revision; }
std::string RepoCache::no_exist(const std::string& commit, const std::string& file) const {
  return storage() + "/.no_exist/" + commit + "/" + file;
}
std::string RepoCache::lock(const std::string& etag) const {
  return cache + "/.locks/" + folder_name() + "/" + etag + ".lock";
}

std::string blob_link_target(const std::string& file, const std::string& etag) {
  std::string target = "../../";
  for (char c : file)
    if (c == '/') target += "../";
  return target + "blobs/" + etag;
}

std::string url_quote(const std::string& text, const std::string& safe) {
  std::string out;
  for (char c : text) {
    if (is_word(c) || c == '.' || c == '-' || c == '~' || safe.find(c) != std::string::npos) {
      out += c;
      continue;
    }
    char escaped[4];
    std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
    out += escaped;
  }
  return out;
}

std::string file_url(const std::string& endpoint, const Reference& ref, const std::string& file) {
  return endpoint + "/" + ref.repo_id + "/resolve/" + url_quote(ref.revision, "") + "/" + url_quote(file, "/");
}

std::string url_origin(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "";
  const std::string scheme = lower(url.substr(0, scheme_end));
  const size_t host_start = scheme_end + 3;
  const size_t host_end = std::min(url.find_first_of("/?#", host_start), url.size());
  std::string host = lower(url.substr(host_start, host_end - host_start));
  const size_t at = host.rfind('@');
  if (at != std::string::npos) host.erase(0, at + 1);  // user:password@ is not the host
  const std::string default_port = scheme == "http" ? ":80" : scheme == "https" ? ":443" : "";
  if (!default_port.empty() && ends_with(host, default_port)) host.resize(host.size() - default_port.size());
  return scheme + "://" + host;
}

std::optional<std::pair<std::string, std::string>> parse_header_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string name(line.substr(0, colon));
  if (std::any_of(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t' || is_control(c); }))
    return std::nullopt;  // a status line ("HTTP/1.1 302 Found") or garbage
  std::string_view value = line.substr(colon + 1);
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!value.empty() && space(value.front())) value.remove_prefix(1);
  while (!value.empty() && space(value.back())) value.remove_suffix(1);
  return std::make_pair(lower(std::move(name)), std::string(value));
}

std::optional<std::string> header(const Headers& headers, const std::string& name) {
  for (const auto& [key, value] : headers)
    if (key == name) return value;
  return std::nullopt;
}

std::string normalize_etag(const std::string& etag) {
  // Python's str.lstrip("W/") and strip('"') strip characters of a set, not a prefix: the same here,
  // so a blob gets the name huggingface_hub gives it.
  const size_t start = etag.find_first_not_of("W/");
  if (start == std::string::npos) return "";
  const std::string rest = etag.substr(start);
  const size_t first = rest.find_first_not_of('"');
  if (first == std::string::npos) return "";
  return rest.substr(first, rest.find_last_not_of('"') - first + 1);
}

FileMetadata file_metadata(const Headers& headers, bool redirect, const std::string& what) {
  // Python's `a or b`: an empty header counts as a missing one.
  const auto first_of = [&](const char* a, const char* b) -> std::optional<std::string> {
    for (const char* name : {a, b}) {
      const auto value = name ? header(headers, name) : std::nullopt;
      if (value && !value->empty()) return value;
    }
    return std::nullopt;
  };
  FileMetadata m;
  const auto commit = first_of("x-repo-commit", nullptr);
  if (!commit) throw InputError(what + ": the answer has no X-Repo-Commit header (is HF_ENDPOINT a Hugging Face Hub?)");
  if (!is_commit_hash(*commit)) throw InputError(what + ": X-Repo-Commit " + quoted(*commit) + " is not a commit hash");
  m.commit = *commit;
  const auto etag = first_of("x-linked-etag", "etag");
  if (!etag) throw InputError(what + ": the answer has no ETag, so the file cannot be checked or cached");
  m.etag = normalize_etag(*etag);
  if (!is_plain_name(m.etag)) throw InputError(what + ": the ETag " + quoted(*etag) + " is not a blob name");
  const auto size = first_of("x-linked-size", redirect ? nullptr : "content-length");
  if (!size) throw InputError(what + ": the answer gives no size (X-Linked-Size or Content-Length)");
  m.size = parse_size(*size, what);
  if (redirect) m.location = header(headers, "location").value_or("");
  return m;
}

EtagKind etag_kind(const std::string& etag) {
  return is_lower_hex(etag, 64) ? EtagKind::sha256 : is_lower_hex(etag, 40) ? EtagKind::git_sha1 : EtagKind::other;
}

TokenizerFiles tokenizer_files(const Json& config, const std::string& what) {
  TokenizerFiles f{{}, {"tokenizer_config.json", "special_tokens_map.json", "generation_config.json"}};
  if (is_decoder_config(config)) {
    decoder_config_from_json(config, what);  // its errors before any weight is downloaded
    f.optional.insert(f.optional.begin(), "tokenizer.json");  // without it, token ids still run
  } else if (pretrained_config_from_json(config, what).family == ModelFamily::gpt2) {
    f.required = {"vocab.json", "merges.txt"};
  } else {
    f.required = {"vocab.txt"};
  }
  return f;
}

Settings settings_from_environment() {
  Settings s;
  s.endpoint = env("HF_ENDPOINT").value_or("https://huggingface.co");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  const std::string home = expand_user(
      env("HF_HOME").value_or(env("XDG_CACHE_HOME").value_or(expand_user("~/.cache")) + "/huggingface"));
  s.cache = expand_user(env("HF_HUB_CACHE").value_or(env("HUGGINGFACE_HUB_CACHE").value_or(home + "/hub")));
  const auto variable = env("HF_TOKEN") ? "HF_TOKEN" : "HUGGING_FACE_HUB_TOKEN";
  s.token = clean_token(env(variable).value_or(""), variable);
  if (s.token.empty()) {
    const std::string path = expand_user(env("HF_TOKEN_PATH").value_or(home + "/token"));
    std::ifstream in(path, std::ios::binary);
    if (in) s.token = clean_token(std::string(std::istreambuf_iterator<char>(in), {}), "the token file '" + path + "'");
  }
  s.offline = is_true(env("HF_HUB_OFFLINE") ? env("HF_HUB_OFFLINE") : env("TRANSFORMERS_OFFLINE"));
  return s;
}

}  // namespace attn::hub
