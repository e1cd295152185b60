// Starting structures from files (system.file): H5MD (pairmd's own trajectories, MDAnalysis's),
// GSD (HOOMD, pairmd's output.gsd), LAMMPS data files and XYZ (plain and extended). Each reader
// gives a StartStructure as the file has it; load_start_file() maps its types and bond types
// onto the config's, converts units where the file names them, and says what it took, converted
// or left out. docs/config.md (system.file) describes the rules.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/system_state.h"
#include "engine/topology.h"

namespace pairmd {

// A malformed start file: the message begins with "FILE:LINE:" (text formats) or "FILE:" and
// says what is wrong.
struct StartFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StartStructure {
  // Positions (wrapped into a periodic box, images counting the crossings), images, velocities
  // (zero where the file has none), per-particle types as indices into state.type_names,
  // masses and charges (see has_masses/has_charges), the box and the step.
  SystemState state;
  Topology topology;                         // bond types index bond_type_names (or count from 0)
  std::vector<std::string> bond_type_names;  // empty: the file numbers its bond types
  bool types_by_name = true;   // match state.type_names to system.types by name (false: by order)
  bool has_velocities = false;
  bool has_masses = false;     // false: the masses of the config's types
  bool has_charges = false;    // false: the charges of the config's types
  double time = 0;
  std::vector<std::string> notes;  // what the reader took, converted or left out
};

// One of "h5md", "gsd", "lammps", "xyz": `format` unless it is "auto", else by the file's
// extension (.h5 .hdf5 .h5md; .gsd; .data .lmp .lammps; .xyz .extxyz). Throws StartFileError.
std::string start_file_format(const std::string& path, const std::string& format);

// LAMMPS data file (read_data): header, Masses, Atoms (styles atomic, bond, angle, molecular,
// charge, full; with image flags or without), Velocities, Bonds; type labels; Angles,
// Dihedrals, Impropers and Coeffs sections are read past, with a note. `atom_style`: "auto"
// takes the style from the "Atoms # style" comment, else from the number of columns.
StartStructure read_lammps_data(const std::string& path, const std::string& atom_style);

// XYZ: "N", a comment line, N lines "name x y z". Extended XYZ comment keys are read:
// Lattice="..." (orthorhombic), Origin="x y z", Properties=species:S:1:pos:R:3[:vel:R:3...].
// Frame `frame` of a file of several (-1: the last). `box` (Lx, Ly, Lz; zero: none) for files
// without a Lattice; without either, the box is the particles' bounding box (open systems).
StartStructure read_xyz(const std::string& path, int64_t frame, const Vec3d& box, bool periodic);

// Frame `frame` (-1: the last) of a GSD file (HOOMD schema), with the schema's fallback to
// frame 0 for what the frame lacks (but not for velocities).
StartStructure read_gsd_frame(const std::string& path, int64_t frame);

// The start structure of cfg.system.file, mapped onto the config: types and bond types by name
// (H5MD: by order), masses and charges from the file where it has them, units converted where
// the file names them. Throws ConfigError: "CONFIG:LINE:COL: system.file.path: FILE:LINE: what"
// (text formats) or "...: system.file.path: 'FILE': what" (H5MD, GSD).
StartStructure load_start_file(const RunConfig& cfg);

}  // namespace pairmd
