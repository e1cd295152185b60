// H5MD (HDF5) trajectories: the reading side used to start a run from a file.
#pragma once

#include <cstdint>
#include <string>

#include "engine/system_state.h"
#include "engine/topology.h"

namespace pairmd {

struct H5mdFrame {
  SystemState state;   // positions, images, velocities (zero if not stored), types, masses, charges, box, step
  Topology topology;   // bonds from connectivity/, if any
  double time = 0.0;
};

// Frame `frame` (-1: the last) of particles/all in an H5MD file. Throws std::runtime_error
// with a message naming the file and what is wrong.
H5mdFrame read_h5md_frame(const std::string& path, int64_t frame);

}  // namespace pairmd
