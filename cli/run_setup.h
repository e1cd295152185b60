// The command-line options common to run, check and compare (the set-up they share with the
// Python module is in session/run_setup.h).
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
  std::vector<std::string> sets;  // --set key.path=value
  std::string backend;            // --backend (empty: config)
  std::string strategy;           // --strategy (empty: config)
  int64_t steps = -1;             // --steps (-1: config)
};

// Registers CONFIG, --set, --backend, --strategy and (with `steps`) --steps on `app`. --set and
// --steps keep their command-line order (--steps N is --set steps=N), so the later one wins.
void add_config_options(CLI::App& app, ConfigOptions& o, bool steps = true);

// The command line's overrides in the form --set takes, in order: --set, --steps, then
// --backend and --strategy.
std::vector<std::string> command_line_overrides(const ConfigOptions& o);

// Loads the config and applies the command-line overrides. Throws ConfigError.
RunConfig load_with_options(const ConfigOptions& o);

}  // namespace pairmd::cli
