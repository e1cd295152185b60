// What the system builder needs from the file formats: the start state of `system.file`.
//
// The formats live in io/, one floor above the engine (docs/extending.md, "Layout"), so the
// engine names only this function; io/start_file.cpp defines it and picks the reader. A new
// input format is a reader in io/ and a line there, not an include here.
#pragma once

#include <cstdint>
#include <string>

#include "base/system_state.h"
#include "base/topology.h"

namespace pairmd {

struct StartFrame {
  SystemState state;  // positions, images, velocities (zero if not stored), types, masses, charges, box, step
  Topology topology;  // bonds, if the file has them
  double time = 0.0;
};

// Frame `frame` (-1: the last) of the file at `path`. Throws std::runtime_error with a message
// naming the file and what is wrong.
StartFrame read_start_file(const std::string& path, int64_t frame);

}  // namespace pairmd
