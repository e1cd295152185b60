// Image flags that follow the bonds.
//
// Forces use the minimum image, so the dynamics never look at image flags; every analysis of
// molecules does (unwrapped = position + image * L: radii of gyration, end-to-end vectors,
// centre-of-mass diffusion, OVITO's and MDAnalysis's unwrapping). A bond is "whole" when its
// unwrapped vector is its minimum-image vector.
#pragma once

#include <cstddef>

#include "base/system_state.h"
#include "base/topology.h"

namespace pairmd {

struct BondImageReport {
  size_t broken = 0;   // bonds that were not whole before the repair
  size_t changed = 0;  // particles whose image flags were changed
  size_t loops = 0;    // bonds that close a ring through the periodic boundary: cannot all be whole
};

// Longest bond in unwrapped coordinates (0 without bonds).
double longest_unwrapped_bond(const SystemState& s, const Topology& t);

// Sets the image flags so that every bond is whole: each molecule (connected by bonds) keeps the
// flags of its lowest-index particle and the others follow it along the bonds. A periodic box
// only; positions are not moved.
BondImageReport repair_bond_images(SystemState& s, const Topology& t);

}  // namespace pairmd
