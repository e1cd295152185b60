// Shared set-up of the commands that start from a config: options common to run, check and
// compare, loading and validating, building the system.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/config.h"
#include "engine/resources.h"
#include "engine/system_builder.h"

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

// The output file stem: output.prefix, else the config's file name without extension.
std::string output_prefix(const RunConfig& cfg);

// One-paragraph description of the system for the log.
std::string describe_system(const RunConfig& cfg, const BuiltSystem& sys);

// The backend a run of `cfg` will use: "cpu" or "cuda" (auto resolved as make_backend does).
std::string planned_backend(const RunConfig& cfg);

// Points of the potential map analysis.potential_map asks for on `state` (0 without one), laid
// out as analysis/potential_map.cpp's map_lattice does, without allocating them. Throws
// ConfigError naming analysis.potential_map.spacing past kMaxMapPoints.
double potential_map_points(const RunConfig& cfg, const SystemState& state);

// Before the system is built: throws ConfigError (with the estimate) when building it and running
// it with `backend` cannot fit in this process's memory. Sizes known only from a start file are
// checked by check_run_memory once it is read.
void check_build_memory(const RunConfig& cfg, const std::string& backend);
// Once the system is built: the whole run's estimate, with the potential map. Throws ConfigError
// when it cannot fit; returns the estimate for the log.
MemoryEstimate check_run_memory(const RunConfig& cfg, const std::string& backend, const BuiltSystem& sys);

// The forces on the start state must be finite. An infinite or NaN force before the first step
// means overlapping particles (or a damaged start file), not a time step that is too large:
// throws ConfigError saying so, with the particle, its force and its nearest neighbour.
void check_start_forces(const RunConfig& cfg, const SystemState& state, const std::vector<Vec3d>& forces);

}  // namespace pairmd::cli
