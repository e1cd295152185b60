// OpenDX scalar fields (.dx), the lattice format of APBS that VMD, PyMOL, Chimera and
// GridDataFormats read. The file lists points with z fastest (DX order), Grid3 keeps x fastest;
// the writer and reader convert. The unit goes in a comment line ("# unit: kcal/mol/e").
#pragma once

#include <string>

#include "base/grid.h"

namespace pairmd {

// Writes `grid` to `path`; `title` becomes a comment line. Throws std::runtime_error naming the
// file if it cannot be written.
void write_dx(const std::string& path, const Grid3& grid, const std::string& title = "");

// Reads a regular, axis-aligned 3-D OpenDX scalar field (what write_dx and APBS write). Throws
// std::runtime_error naming the file and what is wrong.
Grid3 read_dx(const std::string& path);

}  // namespace pairmd
