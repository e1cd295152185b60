// Turns the system section of a config into an initial state and topology: lattices, random
// bead-spring chains (with counterions), or a start file (H5MD, GSD, LAMMPS data, XYZ: see
// engine/start_file.h); then optional relaxation and Maxwell-Boltzmann velocities (for a start
// file: where it has none, unless system.velocities.missing: zero).
#pragma once

#include "engine/config.h"
#include "base/system_state.h"
#include "base/topology.h"

namespace pairmd {

struct BuiltSystem {
  SystemState state;
  Topology topology;
  // What the build took from a start file, converted, left out, or drew (velocities): printed
  // by `run` and `check` under the system's description.
  std::vector<std::string> notes;
};

// Throws ConfigError for inconsistent input (cutoff beyond half the box, unreadable file...).
BuiltSystem build_system(const RunConfig& cfg);

// Cutoffs plus skin must fit in half the smallest periodic box edge (minimum image).
void validate_against_box(const RunConfig& cfg, const Box& box);

// Maxwell-Boltzmann velocities at temperature T from Philox (reproducible), with the centre-of-
// mass momentum removed and the kinetic energy scaled to exactly (3N - 3) k_B T / 2.
void assign_velocities(SystemState& s, double temperature, uint64_t seed, const Units& units);

// Maxwell-Boltzmann velocities for particles first.. only (not rescaled; the others keep theirs).
void draw_velocities(SystemState& s, size_t first, double temperature, uint64_t seed, const Units& units);

// Capped steepest descent on the CPU reference backend: every step moves particles along their
// forces, the largest move being max_move. Removes overlaps of generated configurations.
void relax(SystemState& s, const RunConfig& cfg, const Topology& topology, int steps, double max_move);

}  // namespace pairmd
