// The Hub cache's pure parts (core/model/hub_cache.hpp): repository ids as huggingface_hub's
// validate_repo_id judges them, revisions, the cache's paths and links, URLs, headers and etags, and
// the digests, each against values Python computed (huggingface_hub's regex and rules, urllib's quote,
// hashlib, git hash-object), stated here as constants.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <unistd.h>

#include "core/base/error.hpp"
#include "native/hub_digest.hpp"

namespace {

namespace fs = std::filesystem;
using namespace attn::hub;

bool valid_id(const std::string& id) {
  try {
    validate_repo_id(id);
    return true;
  } catch (const attn::InputError&) {
    return false;
  }
}

bool valid_revision(const std::string& revision) {
  try {
    validate_revision(revision);
    return true;
  } catch (const attn::InputError&) {
    return false;
  }
}

// An environment variable set for one test, restored after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (const char* v = std::getenv(n.c_str())) old = v;
    if (value) setenv(n.c_str(), value, 1);
    else unsetenv(n.c_str());
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("hub repository ids are judged as huggingface_hub's validate_repo_id", "[hub]") {
  // (id, Python's verdict)
  const std::pair<std::string, bool> cases[] = {
      {"gpt2", true}, {"openai-community/gpt2", true}, {"123", true}, {"Foo-BAR_foo.bar123", true}, {"a", true},
      {"_x_", true}, {"_a/b_", true}, {"org/na.me-1", true}, {"a/b.gitx", true}, {std::string(96, 'x'), true},
      {"n/" + std::string(96, 'x'), true}, {"datasets/foo/bar", false}, {".repo_id", false}, {"foo--bar", false},
      {"foo.git", false}, {"a//b", false}, {"../x", false}, {"a--b/c", false}, {"", false},
      {std::string(97, 'x'), false}, {std::string(200, 'x'), false}, {"-a", false}, {"a-", false}, {"a.", false},
      {"a b", false}, {"a/", false}, {"/a", false}, {"a/.b", false}, {"a@b", false}};
  for (const auto& [id, valid] : cases) {
    INFO(id);
    CHECK(valid_id(id) == valid);
  }
  // Python's \w takes any Unicode letter; the Hub itself refuses them, and so does attnlab.
  CHECK_FALSE(valid_id("\xc3\xa9"));
  CHECK_THROWS_WITH(validate_repo_id("a//b"), Catch::Contains("more than one '/'"));
  CHECK_THROWS_WITH(validate_repo_id("a--b/c"), Catch::Contains("'--' or '..'"));
}

TEST_CASE("hub revisions and references", "[hub]") {
  for (const char* ok : {"main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567", "a b"}) CHECK(valid_revision(ok));
  for (const std::string& bad : std::vector<std::string>{"", "..", "a..b", "../main", "a\nb", "a\x7f", "/main", "main/", "a//b", "a/./b"}) {
    INFO(bad);
    CHECK_FALSE(valid_revision(bad));
  }
  const Reference plain = parse_reference("openai-community/gpt2");
  CHECK(plain.repo_id == "openai-community/gpt2");
  CHECK(plain.revision == "main");
  const Reference tagged = parse_reference("gpt2@v1.0");
  CHECK(tagged.repo_id == "gpt2");
  CHECK(tagged.revision == "v1.0");
  CHECK_THROWS_WITH(parse_reference("gpt2@"), Catch::Contains("revision is empty"));
  CHECK_THROWS_WITH(parse_reference("@main"), Catch::Contains("repository id is empty"));
  CHECK_THROWS_WITH(parse_reference("gpt2@a\tb"), Catch::Contains("'a\\x09b' holds a control character"));
  CHECK(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  CHECK_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  CHECK_FALSE(is_commit_hash("main"));
}

TEST_CASE("hub cache paths follow huggingface_hub's layout", "[hub]") {
  const RepoCache c{"/cache", "openai-community/gpt2"};
  CHECK(c.folder_name() == "models--openai-community--gpt2");
  CHECK(RepoCache{"/cache", "gpt2"}.folder_name() == "models--gpt2");
  CHECK(c.blob("abc") == "/cache/models--openai-community--gpt2/blobs/abc");
  CHECK(c.pointer("c0ffee", "config.json") == "/cache/models--openai-community--gpt2/snapshots/c0ffee/config.json");
  CHECK(c.ref("main") == "/cache/models--openai-community--gpt2/refs/main");
  CHECK(c.ref("refs/pr/1") == "/cache/models--openai-community--gpt2/refs/refs/pr/1");
  CHECK(c.no_exist("c0ffee", "generation_config.json") ==
        "/cache/models--openai-community--gpt2/.no_exist/c0ffee/generation_config.json");
  CHECK(c.lock("abc") == "/cache/.locks/models--openai-community--gpt2/abc.lock");
  CHECK(blob_link_target("config.json", "abc") == "../../blobs/abc");
  CHECK(blob_link_target("onnx/model.onnx", "abc") == "../../../blobs/abc");
  // The link resolves from the snapshot's folder to the blob (what os.path.relpath gives).
  CHECK((fs::path(c.pointer("c0ffee", "onnx/model.onnx")).parent_path() / blob_link_target("onnx/model.onnx", "abc"))
            .lexically_normal() == fs::path(c.blob("abc")));
}

TEST_CASE("hub URLs quote as hf_hub_url", "[hub]") {
  // urllib.parse.quote("refs/pr/1", safe="") and quote("a b/c.json"), from Python.
  CHECK(url_quote("refs/pr/1", "") == "refs%2Fpr%2F1");
  CHECK(url_quote("v1.0 beta~x", "") == "v1.0%20beta~x");
  CHECK(url_quote("a b/c.json", "/") == "a%20b/c.json");
  CHECK(url_quote("\xc3\xa9", "") == "%C3%A9");
  CHECK(file_url("https://huggingface.co", {"openai-community/gpt2", "refs/pr/1"}, "config.json") ==
        "https://huggingface.co/openai-community/gpt2/resolve/refs%2Fpr%2F1/config.json");
  CHECK(url_origin("https://huggingface.co/gpt2/resolve/main/x") == "https://huggingface.co");
  CHECK(url_origin("HTTP://LocalHost:80/x?y") == "http://localhost");
  CHECK(url_origin("http://127.0.0.1:8080") == "http://127.0.0.1:8080");
  CHECK(url_origin("http://localhost:8080/a") != url_origin("http://127.0.0.1:8080/a"));
  CHECK(url_origin("/relative/path").empty());
}

TEST_CASE("hub headers and etags", "[hub]") {
  CHECK_FALSE(parse_header_line("HTTP/1.1 302 Found\r\n"));
  CHECK_FALSE(parse_header_line("\r\n"));
  const auto h = parse_header_line("X-Linked-Etag:  \"abc\" \r\n");
  REQUIRE(h);
  CHECK(h->first == "x-linked-etag");
  CHECK(h->second == "\"abc\"");
  // huggingface_hub's _normalize_etag: etag.lstrip("W/").strip('"').
  CHECK(normalize_etag("W/\"abc\"") == "abc");
  CHECK(normalize_etag("\"abc\"") == "abc");
  CHECK(normalize_etag("WW//abc") == "abc");
  CHECK(normalize_etag("\"\"") == "");
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const std::string sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  const Headers lfs = {{"x-repo-commit", commit}, {"etag", "\"other\""}, {"x-linked-etag", "\"" + sha + "\""},
                       {"x-linked-size", "3"}, {"content-length", "1234"}, {"location", "http://cdn/x"}};
  const FileMetadata m = file_metadata(lfs, true, "f");
  CHECK(m.commit == commit);
  CHECK(m.etag == sha);
  CHECK(m.size == 3);
  CHECK(m.location == "http://cdn/x");
  const Headers small = {{"x-repo-commit", commit}, {"etag", "W/\"abc\""}, {"content-length", "12"}};
  CHECK(file_metadata(small, false, "f").etag == "abc");
  CHECK(file_metadata(small, false, "f").size == 12);
  CHECK(file_metadata(small, false, "f").location.empty());
  // A redirect's own Content-Length is not the file's size.
  CHECK_THROWS_WITH(file_metadata(small, true, "f"), Catch::Contains("no size"));
  CHECK_THROWS_WITH(file_metadata({{"etag", "\"a\""}, {"content-length", "1"}}, false, "f"), Catch::Contains("X-Repo-Commit"));
  CHECK_THROWS_WITH(file_metadata({{"x-repo-commit", "main"}, {"etag", "\"a\""}, {"content-length", "1"}}, false, "f"),
                    Catch::Contains("not a commit hash"));
  CHECK_THROWS_WITH(file_metadata({{"x-repo-commit", commit}, {"etag", "\"../x\""}, {"content-length", "1"}}, false, "f"),
                    Catch::Contains("not a blob name"));
  CHECK_THROWS_WITH(file_metadata({{"x-repo-commit", commit}, {"etag", "\"a\""}, {"content-length", "-1"}}, false, "f"),
                    Catch::Contains("not a number"));
  CHECK(etag_kind(sha) == EtagKind::sha256);
  CHECK(etag_kind(commit) == EtagKind::git_sha1);
  CHECK(etag_kind("abc") == EtagKind::other);
}

TEST_CASE("hub digests match hashlib and git", "[hub]") {
  // hashlib.sha256(b).hexdigest() and git hash-object (sha1 of b"blob %d\0" % len(b) + b).
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("hello world\n") == "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
  CHECK(git_blob_sha1_hex("") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  CHECK(git_blob_sha1_hex("abc") == "f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f");
  CHECK(git_blob_sha1_hex("hello world\n") == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
  const fs::path file = fs::temp_directory_path() / ("attn_hub_digest_" + std::to_string(getpid()));
  std::ofstream(file, std::ios::binary) << "hello world\n";
  CHECK(file_digest(file.string(), EtagKind::sha256) == "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
  CHECK(file_digest(file.string(), EtagKind::git_sha1) == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
  fs::remove(file);
  CHECK_THROWS_AS(file_digest(file.string(), EtagKind::sha256), attn::InputError);
}

TEST_CASE("hub tokenizer files by family", "[hub]") {
  using V = std::vector<std::string>;
  CHECK(tokenizer_files(attn::Json{{"model_type", "gpt2"}}, "c").required == V{"vocab.json", "merges.txt"});
  CHECK(tokenizer_files(attn::Json{{"model_type", "bert"}}, "c").required == V{"vocab.txt"});
  const TokenizerFiles llama = tokenizer_files(attn::Json{{"model_type", "llama"}}, "c");
  CHECK(llama.required.empty());
  CHECK(llama.optional.front() == "tokenizer.json");
  CHECK_THROWS_WITH(tokenizer_files(attn::Json{{"model_type", "t5"}}, "c"), Catch::Contains("c"));
}

TEST_CASE("hub settings come from the environment as huggingface_hub reads it", "[hub]") {
  const fs::path home = fs::temp_directory_path() / ("attn_hub_home_" + std::to_string(getpid()));
  fs::create_directories(home);
  std::ofstream(home / "token") << "  hf_file\r\n";
  ScopedEnv h("HF_HOME", home.c_str()), c("HF_HUB_CACHE", nullptr), l("HUGGINGFACE_HUB_CACHE", nullptr),
      t("HF_TOKEN", nullptr), t2("HUGGING_FACE_HUB_TOKEN", nullptr), tp("HF_TOKEN_PATH", nullptr),
      e("HF_ENDPOINT", "http://127.0.0.1:1/"), o("HF_HUB_OFFLINE", "yes"), o2("TRANSFORMERS_OFFLINE", nullptr);
  Settings s = settings_from_environment();
  CHECK(s.endpoint == "http://127.0.0.1:1");
  CHECK(s.cache == (home / "hub").string());
  CHECK(s.token == "hf_file");
  CHECK(s.offline);
  {
    ScopedEnv token("HF_TOKEN", "hf_env\n"), cache("HF_HUB_CACHE", "/elsewhere"), offline("HF_HUB_OFFLINE", "0");
    s = settings_from_environment();
    CHECK(s.token == "hf_env");
    CHECK(s.cache == "/elsewhere");
    CHECK_FALSE(s.offline);
  }
  fs::remove_all(home);
}
