// The subcommands on one CLI11 app, and `emit`: what attn's main and the Python module share.
#include <algorithm>

#include "core/base/error.hpp"
#include "native/commands.hpp"

namespace attn::cli {

void emit(CommandResult r, bool json, CommandResult* sink) {
  if (sink) {
    *sink = std::move(r);
    return;
  }
  print(json ? r.json() + "\n" : r.text());
}

CommandLine::CommandLine() {
  app.require_subcommand(0, 1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  add_tutorial_command(app, tutorial);
  add_encode_command(app, encode);
  add_batch_command(app, batch);
  add_merge_command(app, merge);
  add_train_command(app, train);
  add_heads_command(app, heads);
  add_patch_command(app, patch);
  add_attribute_command(app, attribute);
  add_generate_command(app, generate);
  add_diff_command(app, diff);
}

int CommandLine::run(std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector of arguments last first
  app.parse(args);
  if (app.get_subcommands().empty())
    throw InputError("a subcommand is required (tutorial, encode, batch, merge, train, heads, patch, attribute, generate, diff, "
                     "bench); see 'attn --help'");
  for (int status : {batch.exit_status, train.exit_status, diff.exit_status})
    if (status) return status;
  return 0;
}

}  // namespace attn::cli
