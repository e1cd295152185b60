// H5MD (HDF5) trajectories: the reading side used to start a run from a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/system_state.h"
#include "base/topology.h"

namespace pairmd {

struct H5mdFrame {
  SystemState state;  // positions, images, velocities (zero if not stored), types, masses, charges, box, step
  Topology topology;  // bonds from connectivity/, if any
  double time = 0.0;
  int64_t frame = 0;          // the frame read (-1 resolved)
  bool has_velocity = false;  // the file has velocities at this frame's step
  // The `unit` attributes of position, velocity and time ("" where there is none): the values
  // above are as stored, the caller converts.
  std::string length_unit, velocity_unit, time_unit;
};

// Frame `frame` (-1: the last) of particles/all in an H5MD file. Throws std::runtime_error
// with a message naming the file and what is wrong.
// The file is read in a child process, so that a damaged file that crashes the HDF5 library
// is reported as an error instead of taking the caller down.
H5mdFrame read_h5md_frame(const std::string& path, int64_t frame);
// The same in this process (no fork); for callers that can afford a crash on damaged input.
H5mdFrame read_h5md_frame_inprocess(const std::string& path, int64_t frame);

// The steps of the position frames of particles/all (in frame order). Throws std::runtime_error.
std::vector<int64_t> h5md_position_steps(const std::string& path);

}  // namespace pairmd
