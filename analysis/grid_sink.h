// Where lattice data goes besides the .dx file: the HDF5 trajectory. The trajectory writer
// (H5mdWriter) is adapted to this interface where the run is set up, so analysis/ does not
// depend on it.
#pragma once

#include <cstdint>
#include <string>

#include "base/grid.h"

namespace pairmd {

class GridSink {
 public:
  virtual ~GridSink() = default;
  // One frame of a time series `name` (origin, spacing and unit go in as attributes).
  virtual void write_grid_frame(const std::string& name, int64_t step, double time, const Grid3& grid) = 0;
  // A single lattice, e.g. the time average.
  virtual void write_grid(const std::string& name, const Grid3& grid) = 0;
};

}  // namespace pairmd
