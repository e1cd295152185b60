// Shared set-up of the commands that start from a config: options common to run, check and
// compare, loading and validating, building the system.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/cli/commands.h"
#include "engine/config.h"
#include "engine/system_builder.h"

namespace pairmd::cli {

struct ConfigOptions {
  std::string config_path;
  std::vector<std::string> sets;  // --set key.path=value
  std::string backend;            // --backend (empty: config)
  std::string strategy;           // --strategy (empty: config)
  int64_t steps = -1;             // --steps (-1: config)
};

// Consumes --set/--backend/--strategy/--steps at the reader's position; returns true if it did.
bool read_config_option(OptionReader& r, ConfigOptions& o);

// The command line's overrides in the form --set takes, in order: --set, --steps, then
// --backend and --strategy.
std::vector<std::string> command_line_overrides(const ConfigOptions& o);

// Loads the config and applies the command-line overrides. Throws ConfigError.
RunConfig load_with_options(const ConfigOptions& o);

// The output file stem: output.prefix, else the config's file name without extension.
std::string output_prefix(const RunConfig& cfg);

// One-paragraph description of the system for the log.
std::string describe_system(const RunConfig& cfg, const BuiltSystem& sys);

}  // namespace pairmd::cli
