// Bonds, and the nonbonded exclusions derived from them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pairmd {

struct Bond {
  int i, j;
  int type;  // index into ForceField::bond_types
};

// Which bonded neighbours are left out of nonbonded pair terms.
enum class ExclusionPolicy { None, Bonds /* 1-2 */, Angles /* 1-2 and 1-3 */ };

struct Topology {
  std::vector<Bond> bonds;

  // Sorted per-particle lists of excluded partners under `policy`, built from the bonds.
  std::vector<std::vector<int>> exclusions(size_t n, ExclusionPolicy policy) const;
};

}  // namespace pairmd
