// Turns the system section of a config into an initial state and topology: lattices, random
// bead-spring chains (with counterions), or a start file (H5MD, GSD, LAMMPS data, XYZ: see
// engine/start_file.h); then the config's energy minimisation (engine/minimize.h) and
// Maxwell-Boltzmann velocities (for a start file: where it has none, unless
// system.velocities.missing: zero).
#pragma once

#include "backends/model.h"
#include "base/system_state.h"
#include "base/topology.h"
#include "engine/config.h"

namespace pairmd {

struct BuiltSystem {
  SystemState state;
  Topology topology;
  PullSettings pulling;  // the config's pulling, resolved against this start (engine/pulling.h)
  // What the build took from a start file, converted, left out, or drew (velocities): printed
  // by `run` and `check` under the system's description.
  std::vector<std::string> notes;
};

// What a backend runs: the config's model with the system's topology and pulling.
Model make_model(const RunConfig& cfg, const BuiltSystem& sys);

struct BuildOptions {
  // The backend the minimisation runs on: "" the run's (the config's `backend`), else "cpu",
  // "cuda" or "auto" (`check` minimises with the CPU reference it checks with).
  std::string minimize_backend;
  bool minimize = true;  // false: the start as built, not minimised (a restart's comparison)
};

// Throws ConfigError for inconsistent input (cutoff beyond half the box, unreadable file...), and
// StoppedBeforeRun (engine/simulation.h) for a stop signal during the minimisation.
BuiltSystem build_system(const RunConfig& cfg, const BuildOptions& options = {});

// Cutoffs plus skin must fit in half the smallest periodic box edge (minimum image).
void validate_against_box(const RunConfig& cfg, const Box& box);

// The pair lists name particles the system has (0 <= i, j < n, i != j), each pair once per
// list. Throws ConfigError naming the file and line of the pair.
void validate_pair_lists(const RunConfig& cfg, size_t n);

// Maxwell-Boltzmann velocities at temperature T from Philox (reproducible), with the centre-of-
// mass momentum removed and the kinetic energy scaled to exactly dof k_B T / 2, so that the
// thermo table, which counts `dof` degrees of freedom (degrees_of_freedom()), reads T at step 0.
void assign_velocities(SystemState& s, double temperature, uint64_t seed, const Units& units, double dof);

// Maxwell-Boltzmann velocities for particles first.. only (not rescaled; the others keep theirs).
void draw_velocities(SystemState& s, size_t first, double temperature, uint64_t seed, const Units& units);

// The config's minimisation of `s` (cfg.minimize) on a backend of kind `backend` made for it,
// with a progress line on a terminal (output.progress); its report goes into `notes`. Throws
// ConfigError when the start cannot be evaluated, StoppedBeforeRun on a stop signal.
void minimize_system(SystemState& s, const RunConfig& cfg, const Topology& topology, const std::string& backend,
                     std::vector<std::string>& notes);

}  // namespace pairmd
