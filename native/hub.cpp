#include "native/hub.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include "core/base/error.hpp"
#include "core/io/safetensors_index.hpp"

namespace attn::hub {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);  // follows a snapshot's symlink: a dangling one is no file
}

void make_dirs(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw InputError("cannot create the cache folder '" + folder + "': " + ec.message());
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "'");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `text` as the file `path`, replaced at once (a reader never sees half of it).
void write_atomically(const std::string& path, const std::string& text) {
  make_dirs(fs::path(path).parent_path().string());
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) throw InputError("cannot write '" + tmp + "'");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw InputError("cannot write '" + path + "': " + ec.message());
}

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", double(bytes) / 1e6);
  return text;
}

// --- the terminal's progress line, or plain lines when standard error is not a terminal ---

class Progress {
 public:
  Progress(std::string name, uint64_t total, uint64_t done, bool quiet)
      : name_(std::move(name)), total_(total), start_done_(done), quiet_(quiet), terminal_(::isatty(2)) {
    if (!quiet_ && !terminal_) std::cerr << "attn: downloading " << name_ << ": " << megabytes(total_) << "\n";
  }
  Progress(const Progress&) = delete;
  ~Progress() {
    if (drawn_) std::cerr << "\n";
  }

  void update(uint64_t done) {
    const auto now = std::chrono::steady_clock::now();
    if (quiet_ || !terminal_ || (drawn_ && now - last_draw_ < std::chrono::milliseconds(100) && done < total_)) return;
    last_draw_ = now;
    drawn_ = true;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? double(done - std::min(done, start_done_)) / seconds : 0;
    const double remaining = double(total_ - std::min(done, total_));
    const long long left = rate > 0 ? static_cast<long long>(std::min(remaining / rate, 1e9)) : 0;
    const size_t width = 24;
    const size_t filled = total_ ? size_t(double(width) * double(std::min(done, total_)) / double(total_)) : width;
    char line[256];
    std::snprintf(line, sizeof line, "\r%s [%s%s] %s / %s  %.1f MB/s  %lld:%02lld left ", name_.c_str(),
                  std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(), megabytes(done).c_str(),
                  megabytes(total_).c_str(), rate / 1e6, left / 60, left % 60);
    std::cerr << line << std::flush;
  }

 private:
  std::string name_;
  uint64_t total_, start_done_;
  bool quiet_, terminal_, drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_draw_;
};

// --- HTTP (libcurl) ---

struct Response {
  long status = 0;
  Headers headers;  // the last response's (after redirects)
  CURLcode code = CURLE_OK;
  std::string error;  // libcurl's words when code is not CURLE_OK
  bool reached() const { return code == CURLE_OK || code == CURLE_HTTP_RETURNED_ERROR || status != 0; }
};

// Where a GET's body goes: the .incomplete file from `offset` on. A 200 answer to a range request
// starts the file over: the server ignored the range and sends the whole file.
struct Sink {
  CURL* curl = nullptr;
  int fd = -1;
  uint64_t offset = 0;
  bool started = false;
  int write_errno = 0;
  std::function<bool(uint64_t)> progress;  // false: stop the transfer (cancelled)

  bool restart_if_whole() {
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (offset == 0 || status != 200) return true;
    offset = 0;
    return ::ftruncate(fd, 0) == 0 && ::lseek(fd, 0, SEEK_SET) == 0;
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& headers = *static_cast<Headers*>(user);
  const std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) headers.clear();  // a new response (after a redirect): its headers alone
  if (auto h = parse_header_line(line)) headers.push_back(std::move(*h));
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& sink = *static_cast<Sink*>(user);
  if (!sink.started) {
    sink.started = true;
    if (!sink.restart_if_whole()) {
      sink.write_errno = errno;
      return 0;
    }
  }
  for (size_t done = 0; done < size * count;) {
    const ssize_t n = ::write(sink.fd, data + done, size * count - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sink.write_errno = n < 0 ? errno : ENOSPC;
      return 0;  // libcurl stops with CURLE_WRITE_ERROR
    }
    done += size_t(n);
  }
  sink.offset += size * count;
  return size * count;
}

int on_transfer(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& sink = *static_cast<Sink*>(user);
  return sink.progress && !sink.progress(sink.offset) ? 1 : 0;  // non-zero: libcurl aborts
}

class Request {
 public:
  Request(const std::string& url, const std::string& token) : curl_(curl_easy_init(), &curl_easy_cleanup) {
    if (!curl_) throw InputError("cannot start libcurl");  // curl_easy_init initialises libcurl once
    set(CURLOPT_URL, url.c_str());
    set(CURLOPT_USERAGENT, "attnlab/0.1 (huggingface_hub protocol)");
    set(CURLOPT_PROTOCOLS_STR, "http,https");
    set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_CONNECTTIMEOUT, 10L);
    set(CURLOPT_ERRORBUFFER, error_);
    set(CURLOPT_HEADERFUNCTION, &on_header);
    set(CURLOPT_HEADERDATA, &response_.headers);
    add_header("Accept-Encoding: identity");  // the real size, as huggingface_hub asks
    // A token goes with this URL alone: libcurl drops an Authorization header on a redirect to
    // another host (CURLOPT_UNRESTRICTED_AUTH unset), and a caller never adds it for another host.
    if (!token.empty()) add_header("authorization: Bearer " + token);
  }

  Response head() {
    set(CURLOPT_NOBODY, 1L);
    set(CURLOPT_TIMEOUT, 30L);
    return perform();
  }

  // Follows redirects; a ranged request when sink.offset > 0.
  Response get(Sink& sink) {
    sink.curl = curl_.get();
    set(CURLOPT_FOLLOWLOCATION, 1L);
    set(CURLOPT_MAXREDIRS, 10L);
    set(CURLOPT_FAILONERROR, 1L);
    set(CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled connection ends after a minute, to be resumed
    set(CURLOPT_LOW_SPEED_TIME, 60L);
    set(CURLOPT_WRITEFUNCTION, &on_body);
    set(CURLOPT_WRITEDATA, &sink);
    set(CURLOPT_NOPROGRESS, 0L);
    set(CURLOPT_XFERINFOFUNCTION, &on_transfer);
    set(CURLOPT_XFERINFODATA, &sink);
    const std::string range = std::to_string(sink.offset) + "-";
    if (sink.offset > 0) set(CURLOPT_RANGE, range.c_str());
    return perform();
  }

 private:
  template <class T>
  void set(CURLoption option, T value) {
    curl_easy_setopt(curl_.get(), option, value);
  }
  void add_header(const std::string& line) {
    if (curl_slist* list = curl_slist_append(headers_.get(), line.c_str())) {
      headers_.release();  // the same list, grown (or a new one when it was empty)
      headers_.reset(list);
    }
  }
  Response perform() {
    set(CURLOPT_HTTPHEADER, headers_.get());
    response_.code = curl_easy_perform(curl_.get());
    curl_easy_getinfo(curl_.get(), CURLINFO_RESPONSE_CODE, &response_.status);
    if (response_.code != CURLE_OK) response_.error = *error_ ? error_ : curl_easy_strerror(response_.code);
    return response_;
  }

  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl_;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers_{nullptr, &curl_slist_free_all};
  Response response_;
  char error_[CURL_ERROR_SIZE] = {};
};

// An exclusive flock on a lock file, as Python's filelock takes it for huggingface_hub (fcntl.flock
// on the file opened O_RDWR | O_CREAT | O_TRUNC): attnlab and huggingface_hub never write one blob at once.
class FileLock {
 public:
  FileLock(const std::string& path, const std::function<void()>& on_wait) {
    make_dirs(fs::path(path).parent_path().string());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InputError("cannot open the lock file '" + path + "': " + errno_text());
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    on_wait();
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_text();
      ::close(fd_);
      throw InputError("cannot lock '" + path + "': " + why);
    }
  }
  FileLock(const FileLock&) = delete;
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_ = -1;
};

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// One repository's snapshot: each file from the snapshot folder when it is there, else asked of the
// server (HEAD: its commit, etag and size), its blob downloaded and verified under the blob's lock;
// the snapshot's links and refs/<revision> are written once every file is there.
class Download {
 public:
  Download(const Reference& ref, const Settings& settings, bool quiet, Watch watch)
      : ref_(ref), s_(settings), cache_{settings.cache, ref.repo_id}, quiet_(quiet), watch_(std::move(watch)) {
    if (is_commit_hash(ref_.revision)) commit_ = ref_.revision;
    if (!commit_.empty() || !s_.offline) return;
    commit_ = cached_commit();
    if (commit_.empty())
      throw InputError("offline (HF_HUB_OFFLINE=1), and the cache '" + s_.cache + "' holds no revision '" +
                       ref_.revision + "' of " + ref_.repo_id + " (no " + cache_.ref(ref_.revision) +
                       "): run once online, or name a cached commit as " + ref_.repo_id + "@COMMIT");
  }

  std::string run() {
    const TokenizerFiles tokenizer = tokenizer_files(config(*fetch("config.json", true)), ref_.repo_id + "/config.json");
    fetch_weights();
    for (const std::string& file : tokenizer.required) fetch(file, true);
    for (const std::string& file : tokenizer.optional) fetch(file, false);
    for (const auto& [file, etag] : links_) link(file, etag);
    if (ref_.revision != commit_ && cached_commit() != commit_) write_atomically(cache_.ref(ref_.revision), commit_);
    return cache_.snapshot(commit_);
  }

 private:
  // The file's path (its snapshot link, or its verified blob until the snapshot is linked); none for
  // an optional file the repository lacks.
  std::optional<std::string> fetch(const std::string& file, bool required) {
    if (!commit_.empty()) {
      const std::string pointer = cache_.pointer(commit_, file);
      if (exists(pointer)) return pointer;
      if (!required && exists(cache_.no_exist(commit_, file))) return std::nullopt;
    }
    if (s_.offline) {
      if (!required) return std::nullopt;
      throw InputError("offline (HF_HUB_OFFLINE=1), and " + file + " of " + ref_.repo_id + " (commit " + commit_ +
                       ") is not in the cache: no " + cache_.pointer(commit_, file));
    }
    if (watch_ && !watch_(file, 0, 0)) throw InputError("the download of " + what(file) + " was cancelled");
    // Once config.json told the commit, the other files are asked at that commit: one snapshot.
    const auto [r, url] = head(file_url(s_.endpoint, {ref_.repo_id, commit_.empty() ? ref_.revision : commit_}, file));
    if (!r.reached() || r.status >= 500) return unreachable(file, required, r);
    if (r.status >= 400) {
      const std::string code = header(r.headers, "x-error-code").value_or("");
      if (r.status == 404 && code == "EntryNotFound") note_missing(file, r);
      if (r.status == 404 && !required && (code.empty() || code == "EntryNotFound")) return std::nullopt;
      refuse(r, file);
    }
    const FileMetadata m = file_metadata(r.headers, r.status / 100 == 3, what(file) + " at " + s_.endpoint);
    if (commit_.empty()) commit_ = m.commit;
    const std::string pointer = cache_.pointer(commit_, file);
    if (exists(pointer)) return pointer;
    const std::string blob = obtain(file, m, url_origin(m.location).empty() ? url : m.location);
    links_.emplace_back(file, m.etag);
    return blob;
  }

  // model.safetensors, else model.safetensors.index.json and every shard it names.
  void fetch_weights() {
    if (fetch("model.safetensors", false)) return;
    const auto index = fetch("model.safetensors.index.json", false);
    if (!index)
      throw InputError((s_.offline ? "offline (HF_HUB_OFFLINE=1), and the cache holds" : "the repository holds") +
                       std::string(" neither model.safetensors nor model.safetensors.index.json of ") + ref_.repo_id +
                       " at revision '" + ref_.revision + "': attnlab reads safetensors weights");
    const std::string what = ref_.repo_id + "'s model.safetensors.index.json";
    for (const auto& shard : parse_shard_index(read_all(*index), what)) fetch(shard.first, true);
  }

  Json config(const std::string& path) const {
    const Json json = Json::parse(read_all(path), nullptr, false);
    if (json.is_discarded())
      throw InputError("config.json of " + ref_.repo_id + " from " + s_.endpoint +
                       " is not valid JSON (is the repository a model, and the server a Hub?)");
    return json;
  }

  struct Head {
    Response response;
    std::string url;  // after the relative redirects followed
  };
  // A HEAD request following relative redirects only (a renamed repository), as huggingface_hub:
  // a redirect to another server names where the file's bytes are.
  Head head(std::string url) const {
    for (int hop = 0;; ++hop) {
      const Response r = Request(url, token_for(url)).head();
      const std::string location = header(r.headers, "location").value_or("");
      if (r.status / 100 != 3 || location.rfind('/', 0) != 0 || location.rfind("//", 0) == 0 || hop == 5) return {r, url};
      url = url_origin(url) + location;
    }
  }

  // The token goes to the endpoint's own server alone, never to a CDN it redirects to.
  std::string token_for(const std::string& url) const {
    return url_origin(url) == url_origin(s_.endpoint) ? s_.token : "";
  }

  // The file's verified blob: from the cache when there (another tool's download is used as it is),
  // else downloaded under the blob's lock, which a concurrent download of it holds until it is done.
  std::string obtain(const std::string& file, const FileMetadata& m, const std::string& url) {
    const std::string blob = cache_.blob(m.etag);
    if (exists(blob)) return blob;
    make_dirs(cache_.storage() + "/blobs");
    const std::string lock_path = cache_.lock(m.etag);
    const FileLock lock(lock_path, [&] { say("waiting for another download of " + file + " (" + lock_path + ")"); });
    if (!exists(blob)) download(file, m, url, blob);
    return blob;
  }

  // Into blob.incomplete (resumed from its size with a range request; once more when the connection
  // drops), then checked against the size and the etag, and renamed into place.
  void download(const std::string& file, const FileMetadata& m, const std::string& url, const std::string& blob) {
    const std::string part = blob + ".incomplete";
    uint64_t have = size_or_zero(part);
    std::error_code ec;
    if (have > m.size) fs::remove(part, ec), have = 0;
    for (int attempt = 0; attempt == 0 || have < m.size; ++attempt) {
      const Response r = transfer(file, m, url, part, have);
      have = size_or_zero(part);
      if (r.code == CURLE_ABORTED_BY_CALLBACK)
        throw InputError("the download of " + what(file) + " was cancelled at " + std::to_string(have) + " of " +
                         std::to_string(m.size) + " bytes; the part is kept in " + part + " to be resumed");
      if (have >= m.size) break;
      if (attempt > 0 || r.code == CURLE_OK)
        throw InputError(what(file) + ": the download stopped at " + std::to_string(have) + " of " +
                         std::to_string(m.size) + " bytes (" + (r.error.empty() ? "the server sent no more" : r.error) +
                         "); the part is kept in " + part + ": run the command again to resume it");
      say("the connection closed at " + std::to_string(have) + " of " + std::to_string(m.size) + " bytes of " +
          file + ": resuming");
    }
    if (have != m.size) {
      fs::remove(part, ec);
      throw InputError(what(file) + ": the server sent " + std::to_string(have) + " bytes, not the " +
                       std::to_string(m.size) + " it announced; deleted, nothing was cached");
    }
    verify(file, m, part);
    fs::rename(part, blob, ec);
    if (ec) throw InputError("cannot move '" + part + "' to '" + blob + "': " + ec.message());
  }

  // One GET into `part` from `have` on (nothing to get when the part is whole).
  Response transfer(const std::string& file, const FileMetadata& m, const std::string& url, const std::string& part,
                    uint64_t have) {
    const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::ftruncate(fd, off_t(have)) != 0 || ::lseek(fd, off_t(have), SEEK_SET) < 0)
      throw InputError("cannot write '" + part + "': " + errno_text());
    Response r;
    Sink sink;
    sink.fd = fd;
    sink.offset = have;
    if (have < m.size) {
      Progress progress(ref_.repo_id + " " + file, m.size, have, quiet_);
      sink.progress = [&](uint64_t done) {
        progress.update(done);
        return !watch_ || watch_(file, done, m.size);
      };
      r = Request(url, token_for(url)).get(sink);
      progress.update(sink.offset);
    }
    const int closed = ::close(fd);
    if (sink.write_errno || closed != 0)
      throw InputError("cannot write '" + part + "': " + std::strerror(sink.write_errno ? sink.write_errno : errno));
    if (r.status >= 400) refuse(r, file);
    return r;
  }

  void verify(const std::string& file, const FileMetadata& m, const std::string& part) const {
    const EtagKind kind = etag_kind(m.etag);
    if (kind == EtagKind::other) return;  // not a digest: the size alone is checked
    const std::string digest = file_digest(part, kind);
    if (digest == m.etag) return;
    std::error_code ec;
    fs::remove(part, ec);
    throw InputError(what(file) + " is corrupt: its " + (kind == EtagKind::sha256 ? "SHA-256" : "git blob SHA-1") +
                     " is " + digest + ", the server's ETag " + m.etag + "; deleted, nothing was cached");
  }

  // The server cannot be reached (or fails, 5xx): the cached file of the revision, as huggingface_hub falls back.
  std::optional<std::string> unreachable(const std::string& file, bool required, const Response& r) {
    const std::string commit = commit_.empty() ? cached_commit() : commit_;
    if (!commit.empty() && exists(cache_.pointer(commit, file))) {
      commit_ = commit;
      return cache_.pointer(commit, file);
    }
    if (!commit.empty() && !required) return std::nullopt;
    throw InputError("cannot reach " + s_.endpoint + " for " + what(file) + " (" +
                     (r.reached() ? "HTTP " + std::to_string(r.status) : r.error) + "), and the cache '" + s_.cache +
                     "' does not hold it (HF_HUB_OFFLINE=1 reads the cache alone)");
  }

  // huggingface_hub's .no_exist/<commit>/<file>: the server said the file is not in that commit.
  void note_missing(const std::string& file, const Response& r) const {
    const std::string commit = header(r.headers, "x-repo-commit").value_or("");
    if (!is_commit_hash(commit)) return;
    const std::string path = cache_.no_exist(commit, file);
    make_dirs(fs::path(path).parent_path().string());
    std::ofstream touch(path, std::ios::app);
  }

  [[noreturn]] void refuse(const Response& r, const std::string& file) const {
    const std::string code = header(r.headers, "x-error-code").value_or("");
    const std::string status = "HTTP " + std::to_string(r.status) + (code.empty() ? "" : ", " + code);
    const std::string repo = "repository '" + ref_.repo_id + "'";
    if (code == "RepoNotFound")
      throw InputError(repo + " was not found at " + s_.endpoint + " (" + status + ", asking for " + file +
                       "): check its name; a private repository needs HF_TOKEN");
    if (code == "GatedRepo" || r.status == 401 || r.status == 403)
      throw InputError(repo + " refused " + file + " (" + status + "): it is gated or private; " +
                       (s_.token.empty() ? "no token was sent: set HF_TOKEN (or write one to $HF_HOME/token) to a "
                                           "token that may read it"
                                         : "the token sent (HF_TOKEN or $HF_HOME/token) may not read it") +
                       (code == "GatedRepo" ? ", once its conditions are accepted on its page" : ""));
    if (code == "RevisionNotFound")
      throw InputError(repo + " has no revision '" + ref_.revision + "' (" + status + ")");
    if (r.status == 404)
      throw InputError(repo + " has no file " + file + " at revision '" + ref_.revision + "' (" + status + ")");
    throw InputError(what(file) + ": " + status + " from " + s_.endpoint);
  }

  // The snapshot's relative link to the blob; a link made meanwhile (another download) is kept.
  void link(const std::string& file, const std::string& etag) const {
    const std::string pointer = cache_.pointer(commit_, file);
    if (exists(pointer)) return;
    make_dirs(fs::path(pointer).parent_path().string());
    std::error_code ec;
    fs::remove(pointer, ec);  // a dangling link
    if (::symlink(blob_link_target(file, etag).c_str(), pointer.c_str()) != 0 && errno != EEXIST)
      throw InputError("cannot link '" + pointer + "': " + errno_text());
  }

  // refs/<revision>'s commit, if the cache has one.
  std::string cached_commit() const {
    std::ifstream in(cache_.ref(ref_.revision), std::ios::binary);
    std::string commit;
    std::getline(in, commit);
    return is_commit_hash(commit) ? commit : "";
  }

  std::string what(const std::string& file) const { return file + " of " + ref_.repo_id + "@" + ref_.revision; }

  void say(const std::string& message) const {
    if (!quiet_) std::cerr << "attn: " << message << "\n";
  }

  Reference ref_;
  Settings s_;
  RepoCache cache_;
  bool quiet_;
  Watch watch_;
  std::string commit_;  // the snapshot's: the revision when it is a commit hash, else the server's or refs/'s
  std::vector<std::pair<std::string, std::string>> links_;  // (file, etag) of the blobs obtained
};

}  // namespace

std::string snapshot(const Reference& ref, const Settings& settings, bool quiet, const Watch& watch) {
  return Download(ref, settings, quiet, watch).run();
}

}  // namespace attn::hub

namespace attn::cli {

void resolve_model(ModelOptions& o, bool quiet) {
  if (o.model_name.empty()) return;
  const std::string name = std::exchange(o.model_name, "");  // resolved once (the Python module resolves again)
  if (!o.config_file.empty() || !o.weights.empty() || !o.vocab.empty() || !o.merges.empty())
    throw InputError("--model names a whole checkpoint: drop --config, --weights, --vocab and --merges");
  std::error_code ec;
  if (std::filesystem::is_directory(name, ec)) {
    o.model_dir = name;
    return;
  }
  hub::Reference ref;
  try {
    ref = hub::parse_reference(name);
  } catch (const InputError& e) {
    throw InputError("--model '" + name + "' is no folder, and " + e.what());
  }
  o.model_dir = hub::snapshot(ref, hub::settings_from_environment(), quiet);
}

}  // namespace attn::cli
