// Bonds, angles, dihedrals and impropers by particle index, and the bonded neighbours (1-2,
// 1-3, 1-4) that nonbonded terms leave out or scale (potentials/force_field.h, SpecialBonds).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pairmd {

struct Bond {
  int i, j;
  int type;  // index into ForceField::bond_types
};

// Angle (i, j, k): j is the vertex.
struct Angle {
  int i, j, k;
  int type;  // index into ForceField::angle_types
};

// Dihedral or improper (i, j, k, l): the angle between the planes (i, j, k) and (j, k, l).
struct Dihedral {
  int i, j, k, l;
  int type;  // index into ForceField::dihedral_types (or improper_types)
};

// A pair of particles `order` bonds apart along the shortest path of the bond graph: 1 (1-2,
// bonded), 2 (1-3) or 3 (1-4). As LAMMPS's special list with its default `special_bonds angle no
// dihedral no`: from the bonds alone, each pair once, at its lowest order (in a ring, a pair that
// is both 1-2 and 1-4 is 1-2).
struct SpecialPair {
  int i, j;  // i < j
  int order;
};

struct Topology {
  std::vector<Bond> bonds;
  std::vector<Angle> angles;
  std::vector<Dihedral> dihedrals;
  std::vector<Dihedral> impropers;

  // The 1-2, 1-3 and 1-4 pairs up to `max_order` (1 to 3) of n particles, sorted by (i, j).
  std::vector<SpecialPair> special_pairs(size_t n, int max_order) const;
};

}  // namespace pairmd
