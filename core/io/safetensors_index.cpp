#include "core/io/safetensors_index.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/json.hpp"

namespace attn {
namespace {

bool plain_shard_name(const std::string& name) {
  const std::string suffix = ".safetensors";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

std::map<std::string, std::vector<std::string>> parse_shard_index(const std::string& text, const std::string& file) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception&) {
    throw InputError(file + " is not valid JSON");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object() || j["weight_map"].empty())
    throw InputError(file + " needs a 'weight_map' object naming each tensor's shard");
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) throw InputError(file + ": the shard of '" + tensor + "' must be a file name");
    const std::string name = shard.get<std::string>();
    if (!plain_shard_name(name))
      throw InputError(file + ": '" + name + "' (the shard of '" + tensor + "') is not a .safetensors file beside the index");
    shards[name].push_back(tensor);
  }
  return shards;
}

namespace {

template <class Named>
using ShardReader = std::vector<Named> (*)(const std::string&, std::vector<std::string>*, const ReadProgress&);

template <class Named>
std::vector<Named> read_shards(const std::string& index_path, std::vector<std::string>* skipped,
                               const ReadProgress& progress, ShardReader<Named> read) {
  const std::filesystem::path index(index_path);
  const std::string index_name = index.filename().string();
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw InputError("cannot open " + index_name);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Named> all;
  std::set<std::string> names;
  for (const auto& [shard, listed] : parse_shard_index(text.str(), index_name)) {
    const std::string path = (index.parent_path() / shard).string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw InputError(index_name + " names the shard " + shard + ", which is missing");
    std::vector<std::string> shard_skipped;
    std::vector<Named> tensors = read(path, &shard_skipped, progress);
    std::set<std::string> held(shard_skipped.begin(), shard_skipped.end());
    for (const Named& t : tensors) held.insert(t.name);
    for (const std::string& name : listed)
      if (!held.count(name)) throw InputError(index_name + " puts " + name + " in " + shard + ", which lacks it");
    for (const std::string& name : held)
      if (!names.insert(name).second) throw InputError(name + " is in two shards (" + shard + " and another)");
    if (skipped) skipped->insert(skipped->end(), shard_skipped.begin(), shard_skipped.end());
    for (Named& t : tensors) all.push_back(std::move(t));
  }
  return all;
}

std::vector<NamedTensor> read_one(const std::string& path, std::vector<std::string>* skipped, const ReadProgress& progress) {
  return read_safetensors(path, nullptr, skipped, progress);
}

bool is_index(const std::string& path) {
  const std::string suffix = ".index.json";
  return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<NamedTensor> read_sharded_safetensors(const std::string& index_path, std::vector<std::string>* skipped,
                                                  const ReadProgress& progress) {
  return read_shards<NamedTensor>(index_path, skipped, progress, read_one);
}

std::vector<NamedTensor> read_checkpoint(const std::string& path, std::vector<std::string>* skipped,
                                         const ReadProgress& progress) {
  return is_index(path) ? read_sharded_safetensors(path, skipped, progress) : read_one(path, skipped, progress);
}

std::vector<NamedWeight> read_checkpoint_weights(const std::string& path, std::vector<std::string>* skipped,
                                                 const ReadProgress& progress) {
  return is_index(path) ? read_shards<NamedWeight>(path, skipped, progress, read_safetensors_weights)
                        : read_safetensors_weights(path, skipped, progress);
}

}  // namespace attn
