// What the system builder needs from the file formats: the start structure of `system.file`.
//
// The formats live in io/, one floor above the engine (docs/extending.md, "The floors"), so the
// engine names only this function; io/start_file.cpp defines it and picks the reader (H5MD:
// pairmd's own trajectories and MDAnalysis's; GSD: HOOMD, pairmd's output.gsd; LAMMPS data
// files; XYZ, plain and extended). A new input format is a reader in io/ and a line there, not
// an include here. docs/config.md (system.file) describes the rules.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "base/system_state.h"
#include "base/topology.h"
#include "engine/config.h"
#include "potentials/force_field.h"

namespace pairmd {

// A malformed start file: the message begins with "FILE:LINE:" (text formats) or "FILE:" and
// says what is wrong.
struct StartFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The angle, dihedral and improper types a start file defines with their coefficients (a LAMMPS
// data file's Coeffs sections of styles pairmd has), each in the file's order and named by its
// type label or number; a problem (no Coeffs section, a style pairmd does not have) is kept as
// its message, an error only where the config takes the file's types.
struct StartTypes {
  std::vector<AngleType> angle_types;
  std::vector<DihedralType> dihedral_types;
  std::vector<ImproperType> improper_types;
  std::string angle_problem, dihedral_problem, improper_problem;  // "FILE:LINE: what"
};

// The largest coordinate (and box bound) a start file may give, in length units: beyond it a
// double resolves a time step's move (~0.005 sigma) to worse than a few percent, and squares of
// coordinates (1e154) would overflow.
constexpr double kMaxCoordinate = 1e12;
// The largest step a start file may be at (a run adds its steps to it).
constexpr int64_t kMaxStartStep = int64_t(1) << 62;

struct StartStructure {
  // Positions (wrapped into a periodic box, images counting the crossings), images, velocities
  // (zero where the file has none), per-particle types as indices into state.type_names,
  // masses and charges (see has_masses/has_charges), the box and the step.
  SystemState state;
  Topology topology;                         // bond types index bond_type_names (or count from 0)
  std::vector<std::string> bond_type_names;  // empty: the file numbers its bond types
  // The same for angles, dihedrals and impropers (empty: numbered; matched by order).
  std::vector<std::string> angle_type_names, dihedral_type_names, improper_type_names;
  StartTypes types;           // what the file defines of them
  bool types_by_name = true;  // match state.type_names to system.types by name (false: by order)
  bool has_velocities = false;
  bool has_masses = false;   // false: the masses of the config's types
  bool has_charges = false;  // false: the charges of the config's types
  double time = 0;
  std::vector<std::string> notes;  // what the reader took, converted or left out
  // Where each particle is, for messages: its line (text formats; empty for the others), or the
  // frame read (H5MD, GSD: "frame F, particle I").
  std::vector<int> lines;
  int64_t frame = 0;
};

// The start structure of cfg.system.file, mapped onto the config: types and bond types by name
// (H5MD: by order), masses and charges from the file where it has them, units converted where
// the file names them. Throws ConfigError: "CONFIG:LINE:COL: system.file.path: FILE:LINE: what"
// (text formats) or "...: system.file.path: 'FILE': what" (H5MD, GSD).
StartStructure load_start_file(const RunConfig& cfg);

// The types of cfg.system.file for force_field.angles (dihedrals, impropers): file, read while the
// config is (so that the run, its outputs and restarts see them as the config's). Throws
// ConfigError naming the config key and the file's line: the file cannot be read, it has no
// Coeffs for a kind the config takes from it, or a style pairmd does not have.
StartTypes read_start_file_types(const RunConfig& cfg);

}  // namespace pairmd
