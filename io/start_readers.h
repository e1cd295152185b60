// The readers of start files (engine/start_file.h declares what the engine asks of them).
// Each gives a StartStructure as the file has it; io/start_file.cpp maps it onto the config.
#pragma once

#include <cstdint>
#include <string>

#include "base/box.h"
#include "base/vec3.h"
#include "engine/start_file.h"

namespace pairmd {

// One of "h5md", "gsd", "lammps", "xyz": `format` unless it is "auto", else by the file's
// extension (.h5 .hdf5 .h5md; .gsd; .data .lmp .lammps; .xyz .extxyz). Throws StartFileError.
std::string start_file_format(const std::string& path, const std::string& format);

// LAMMPS data file (read_data): header, Masses, Atoms (styles atomic, bond, angle, molecular,
// charge, full; with image flags or without), Velocities, Bonds, Angles, Dihedrals, Impropers;
// type labels; the Angle, Dihedral and Improper Coeffs of styles pairmd has (their `# style`
// comment, or hybrid) as StartStructure::types; other Coeffs sections are read past, with a note.
// `atom_style`: "auto" takes the style from the "Atoms # style" comment, else from the number
// of columns.
StartStructure read_lammps_data(const std::string& path, const std::string& atom_style);

// XYZ: "N", a comment line, N lines "name x y z". Extended XYZ comment keys are read:
// Lattice="..." (orthorhombic), Origin="x y z", Properties=species:S:1:pos:R:3[:vel:R:3...].
// Frame `frame` of a file of several (-1: the last). `box` (Lx, Ly, Lz; zero: none) for files
// without a Lattice; without either, the box is the particles' bounding box (open systems).
StartStructure read_xyz(const std::string& path, int64_t frame, const Vec3d& box, bool periodic);

// The checks every reader makes of boxes and positions. Each says what is wrong ("" when
// nothing), for the reader to prefix with where:
//   coordinate_problem(1e300, "x =")  "x = 1e+300 is beyond +-1e+12, the range pairmd takes for coordinates"
//   box_problem(lo, L)                "the box's edge inf is not a number > 0", "the box's bound ... is beyond ..."
//   position_problem(x, box)          "the position (nan, 2, 2) is not finite"; in a periodic box "x = 2e+300 is
//                                     outside the box [0, 10) by 2e+300, more than 10^6 box lengths"; in an
//                                     open one the coordinate bound (kMaxCoordinate)
std::string coordinate_problem(double v, const std::string& what);
std::string box_problem(const Vec3d& lo, const Vec3d& L);
std::string position_problem(const Vec3d& x, const Box& box);

// Wraps a position into a periodic box (position_problem has passed it), counting the
// crossings in its image; false when the image would overflow its 32 bits.
bool wrap_into_box(Vec3d& position, Int3& image, const Box& box);

// Frame `frame` (-1: the last) of a GSD file (HOOMD schema), with the schema's fallback to
// frame 0 for what the frame lacks (but not for velocities).
StartStructure read_gsd_frame(const std::string& path, int64_t frame);

}  // namespace pairmd
