// Ion placement on a potential map, what the map is for: put K ions of charge q, one at a time,
// at the lattice point where the ion's energy q * V is lowest (or highest), at least
// `min_distance` from every particle and every ion placed before; after each ion, its own
// potential k_e q / max(r, floor) is added to the map so that the next ion feels it. A cation
// (q > 0) thus goes where V is most negative, next to negative charges.
#pragma once

#include <vector>

#include "base/box.h"
#include "base/grid.h"
#include "base/vec3.h"

namespace pairmd {

struct IonPlacementSettings {
  int count = 1;
  double charge = 1.0;
  double min_distance = 3.0;  // from every particle and placed ion
  bool highest = false;       // false: lowest energy q V (the physical choice); true: highest
  double k_e = 1.0;           // Coulomb constant of the map's units
  double floor = 0.5;         // distance floor of the ions' own potential (as the map's)
};

struct PlacedIon {
  Vec3d position;    // a lattice point (wrapped into the box when it is periodic)
  double potential;  // V there before the ion was placed (with the earlier ions)
  double energy;     // charge * potential
};

// `map` gets every placed ion's potential added. Distances use the minimum image when `box` is
// periodic (so that ions written into a periodic config do not overlap the particles' images).
// Throws std::runtime_error when fewer than `count` ions fit (saying how many did).
std::vector<PlacedIon> place_ions(Grid3& map, const std::vector<Vec3d>& particles, const Box& box,
                                  const IonPlacementSettings& settings);

}  // namespace pairmd
