// Renumbering particles along a space-filling curve, so that particles close in space get
// close indices. On the GPU, the force and summation kernels read neighbours' data by index
// (gathers): with neighbours at nearby indices, threads of a warp share cache sectors.
#pragma once

#include <vector>

#include "engine/system_state.h"
#include "engine/topology.h"

namespace pairmd {

// Sorts the particles of `s` along a Morton (Z-order) curve over cells about `cell` long
// (ties keep their order) and renumbers the bonds of `topo` to match. Returns the order:
// new particle k is old particle order[k]. Positions, velocities, images, types, masses and
// charges move with their particle; the step and the box do not change.
std::vector<int> sort_spatially(SystemState& s, Topology& topo, double cell = 1.0);

}  // namespace pairmd
