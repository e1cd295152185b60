// The settings of an electrostatic potential map (docs/potential_maps.md): what the config's
// analysis.potential_map, `pairmd potential-map`, `pairmd place-ions` and the Python module's
// potential_map take, one type for all of them (analysis/potential_map.h computes the map;
// session/map_options.h applies and checks a front end's options).
#pragma once

#include <string>

namespace pairmd {

struct MapSettings {
  std::string region = "box";  // box: the simulation box; particles: their bounding box + padding
  double spacing = 1.0;
  double padding = 5.0;       // region particles only
  double min_distance = 0.0;  // distance floor; <= 0: spacing / 2
  std::string kernel = "auto";
  int coarsen = 8;                // points per thread of the coarsened GPU kernels (4, 8, 16)
  std::string method = "exact";   // exact | msm | auto
  std::string boundary = "open";  // open | periodic (every image and a neutralising background; msm)
  double msm_cutoff = 0;          // multilevel summation: splitting distance a; 0 = automatic
  double msm_grid_spacing = 0;    // finest grid spacing h; 0 = automatic (docs/potential_maps.md)
  int msm_order = 6;              // interpolation: 4 cubic, 6 quintic
  int error_samples = 256;        // msm: lattice points of the sampled exact check of the first map

  double floor() const { return min_distance > 0 ? min_distance : 0.5 * spacing; }
};

}  // namespace pairmd
