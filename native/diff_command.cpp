// attn diff: two traces compared stage by stage (core/model/trace_diff.hpp). Each side is a trace
// document (attn tutorial/encode --json, the playground's attnlab.trace()) or a folder of .npy files,
// one per stage named after it (attn encode --save-npy's layout, or PyTorch's tensors saved by name).
#include <algorithm>
#include <filesystem>

#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "core/model/trace_diff.hpp"
#include "native/commands.hpp"

namespace attn::cli {
namespace {

namespace fs = std::filesystem;

std::vector<Stage> npy_folder(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".npy") files.push_back(it->path().string());
  if (error) throw InputError("cannot read the folder '" + dir + "': " + error.message());
  if (files.empty()) throw InputError("the folder '" + dir + "' holds no .npy file");
  std::sort(files.begin(), files.end());
  std::vector<Stage> stages;
  for (const std::string& f : files) stages.push_back({fs::path(f).stem().string(), read_npy(f)});
  return stages;
}

std::vector<Stage> load_side(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) return npy_folder(path);
  if (fs::path(path).extension() == ".npy") return {{fs::path(path).stem().string(), read_npy(path)}};
  return stages_from_json(read_json_file(path, "trace document"), "'" + path + "'");
}

double tolerance_value(const char* flag, const std::string& text) {
  const double v = parse_number(flag, text);
  if (!(v >= 0)) throw InputError(std::string(flag) + " " + text + ": must be 0 or more");
  return v;
}

void run(DiffOptions& o) {
  const Tolerance tolerance{tolerance_value("--rtol", o.rtol), tolerance_value("--atol", o.atol)};
  const std::vector<Stage> a = load_side(o.a), b = load_side(o.b);
  const TraceDiff diff = diff_traces(a, b, tolerance);
  if (diff.compared == 0) throw InputError("'" + o.a + "' and '" + o.b + "' have no stage name in common");
  print(o.json ? diff_json(diff, tolerance).dump() + "\n" : diff_report(diff, tolerance));
  o.exit_status = diff.passed() ? 0 : 1;
}

}  // namespace

void add_diff_command(CLI::App& app, DiffOptions& o) {
  auto* cmd = app.add_subcommand("diff", "Compare two traces stage by stage (shape, max |Δ|, relative error, ULPs); "
                                         "exit 1 when a stage is beyond --rtol/--atol");
  cmd->add_option("a", o.a, "a trace document (--json output) or a folder of STAGE.npy files")->required();
  cmd->add_option("b", o.b, "the same for the other run, or the reference (PyTorch's tensors saved by stage name)")
      ->required();
  cmd->add_option("--rtol", o.rtol, "relative tolerance, of B's value (numpy.allclose's test)")->capture_default_str();
  cmd->add_option("--atol", o.atol, "absolute tolerance")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the comparison as one JSON document");
  cmd->callback([&o] { run(o); });
}

}  // namespace attn::cli
