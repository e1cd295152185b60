// The subcommands of the `pairmd` program, one file each. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace pairmd::cli {

// Exit codes shared by all commands.
enum ExitCode {
  kExitOk = 0,
  kExitFailure = 1,      // the run failed (blow-up, I/O error during the run)
  kExitUsage = 2,        // bad command line or config; nothing was written
  kExitInterrupted = 130,
};

using Args = std::vector<std::string>;

int cmd_run(const Args& args);
int cmd_check(const Args& args);
int cmd_compare(const Args& args);
int cmd_potential_map(const Args& args);
int cmd_place_ions(const Args& args);

// Small helpers for the commands' own option parsing.
struct OptionReader {
  const Args& args;
  size_t i = 0;
  bool done() const { return i >= args.size(); }
  const std::string& peek() const { return args[i]; }
  // "--name value" or "--name=value"; returns true and sets value if args[i] is option `name`.
  bool value(const char* name, std::string& out);
  bool flag(const char* name);
};

}  // namespace pairmd::cli
