// The command-line options common to run, check, minimize and compare (the set-up they share
// with the Python module is in session/run_setup.h, their rules in session/options.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/config.h"
#include "engine/resources.h"
#include "engine/system_builder.h"
#include "session/run_setup.h"

namespace pairmd::cli {

struct ConfigOptions {
  std::string config_path;
  std::vector<std::string> sets;  // --set key.path=value, and --steps N as steps=N, in order
  std::string backend;            // --backend (empty: the config's)
  std::string strategy;           // --strategy (empty: the config's)
};

// Registers CONFIG (an existing file; `config_required`: it must be given), --set, --backend,
// --strategy and (with `steps`) --steps on `app`. --set and --steps keep their command-line
// order (--steps N is --set steps=N), so the later one wins.
void add_config_options(CLI::App& app, ConfigOptions& o, bool config_required, bool steps = true);

// The command line's overrides in the form --set takes, in order: --set, --steps, then
// --backend and --strategy.
std::vector<std::string> command_line_overrides(const ConfigOptions& o);

// Loads the config and applies the command-line overrides. Throws ConfigError.
RunConfig load_with_options(const ConfigOptions& o);

// "pairmd COMMAND WORD..." with each word quoted where the shell would split or expand it.
std::string shell_word(const std::string& w);
std::string command_line(const std::string& command, const Args& words);

}  // namespace pairmd::cli
