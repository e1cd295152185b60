// The set-up every front end (the pairmd program, the Python module) does before it runs a
// config: the output prefix, the backend, resource checks, the start forces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/resources.h"
#include "engine/system_builder.h"

namespace pairmd {

// The output file stem: output.prefix, else the config's file name without extension.
std::string output_prefix(const RunConfig& cfg);

// The files a config makes a command read besides itself: system.file (a start file), the pair
// list files of force_field.pair_lists. A command never writes its output over one of them.
std::vector<std::string> config_input_files(const RunConfig& cfg);

// The names pairmd stores in HDF5 attributes of the trajectory and the checkpoint (the particle
// types', the bond types') must fit there: HDF5 holds at most about 64 KiB in one attribute.
// Throws ConfigError naming the key and the size, before anything is written.
void check_storable_names(const RunConfig& cfg);

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

}  // namespace pairmd
