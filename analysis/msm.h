// Potential maps by multilevel summation (MSM): the same V(p) = k_e sum_i q_i / max(|p - r_i|, d_min)
// as the exact sum (potential_map.h), in O(atoms + lattice points) instead of O(atoms x points),
// with a relative error of about 1e-4 (docs/potential_maps.md). The splitting of 1/r and the
// interpolation stencils are in potentials/msm.h; this file sets up the grids (MsmPlan) and holds
// the double-precision CPU reference. The GPU kernels (kernels/dcs/msm_kernels.cu) run the same
// plan in float.
//
// The steps, for a lattice point p:
//   short range  sum over the atoms within a of p of q (1/max(r, d_min) - g_a(r)); the atoms are
//                binned in the finest grid's cells, and each tile of 8^3 lattice points visits
//                only the bin rows within a of it;
//   long range   anterpolation of the charges to the finest grid (spacing h), restriction to
//                coarser grids (h, 2h, 4h, ...), at each level but the top the sum of the grid
//                kernel g_{a_l} - g_{2 a_l} over the grid points within 2 a_l, at the top level
//                the sum of g_{a_L} over all top-grid pairs, prolongation back to the finest
//                grid and interpolation to p.
// Periodic boundaries (boundary: periodic): the grids are periodic, the short-range part counts
// every image within a, and the top-level kernel is the periodic sum of g_{a_L} over every image
// with a uniform neutralising background (from an Ewald sum, analysis/ewald.h): V is then the
// potential of the charges and all their images plus a uniform background of total charge
// -sum q_i, whose mean over the box is zero (the Ewald convention).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "analysis/potential_map.h"
#include "base/box.h"
#include "base/grid.h"
#include "kernels/dcs/msm_launch.h"

namespace pairmd {

// What the user sets (0 = chosen automatically, see make_msm_plan).
struct MsmParams {
  double cutoff = 0;        // splitting distance a
  double grid_spacing = 0;  // spacing h of the finest grid (periodic: the largest h that divides the box)
  int order = 6;            // interpolation: 4 (C1 cubic) or 6 (C1 quintic)
  bool periodic = false;    // every periodic image of the box, with a neutralising background
  bool gpu = false;         // the backend whose costs the automatic cutoff balances
};

// One grid level: points lo .. lo + dims - 1 (in units of h_l, from the grid origin) per direction.
struct MsmLevel {
  std::array<int, 3> lo{0, 0, 0};  // open: the first point's index; periodic: 0
  std::array<int, 3> dims{0, 0, 0};
  std::array<double, 3> h{1, 1, 1};
  size_t size() const { return static_cast<size_t>(dims[0]) * dims[1] * dims[2]; }
};

// Everything both backends need, in double. Coordinates are relative to lattice point (0,0,0).
struct MsmPlan {
  bool periodic = false;
  int order = 4;           // P
  int split = 2;           // K (Taylor order of the softening)
  double a = 0;            // splitting distance
  double h_target = 0;     // the finest spacing asked for (periodic grids round it down to divide the box)
  double atom_volume = 0;  // the atoms' bounding box (each edge at least a; periodic: the box), for costs
  double floor = 0;
  std::array<double, 5> coef{};  // g_a(r) = sum_j coef[j] r^(2j) below a

  std::array<int, 3> lattice_dims{0, 0, 0};
  std::array<double, 3> lattice_spacing{1, 1, 1};
  std::array<double, 3> grid_origin{0, 0, 0};  // position of grid index 0 (relative to lattice point 0)
  std::array<double, 3> box{0, 0, 0};          // periodic: box lengths

  std::vector<MsmLevel> levels;  // [0] the finest, back() the top

  // Level sums below the top: the kernel g_a - g_2a of level 1 on the offsets |s_d| <= radius[d]
  // (x fastest); level l uses it times 2^-(l-1). row_reach[(sz + R_z) * (2R_y + 1) + sy + R_y] is
  // the largest |s_x| with a nonzero weight in that row, -1 for none.
  std::array<int, 3> radius{0, 0, 0};
  std::vector<double> stencil;
  std::vector<int> row_reach;

  // Top level: open: g_{a_L} on the offsets -(D-1)..D-1 per direction ((2D-1)^3, x fastest);
  // periodic: the periodic kernel on the offsets 0..D-1 (D^3).
  std::vector<double> top;

  // Interpolation of the finest grid at the lattice points, per direction: for lattice index i,
  // the P grid points (storage index into level 0, wrapped where periodic) and their weights.
  std::array<std::vector<int>, 3> interp_index;
  std::array<std::vector<double>, 3> interp_weight;

  size_t lattice_points() const { return static_cast<size_t>(lattice_dims[0]) * lattice_dims[1] * lattice_dims[2]; }
  // One line: a, h, order, levels and their sizes.
  std::string describe() const;
};

// Sets up the grids for `charges` and the lattice of `grid` (dims, origin, spacing). Periodic
// (params.periodic) needs `box` periodic. Automatic choices: a minimises the estimated cost of
// the short- and long-range parts on the backend (params.gpu), at least 4 floor and 2 lattice
// spacings; h = a / 5 (quintic) or a / 7 (cubic), periodic a / 6 or a / 8. Throws
// std::invalid_argument for bad parameters or grids too large.
MsmPlan make_msm_plan(const ChargeList& charges, const Grid3& grid, const MsmParams& params, double floor,
                      const Box* box = nullptr);

// The charges as the plan sees them: relative to the grid origin, wrapped into the box (periodic).
using MsmAtoms = ChargeList;
MsmAtoms msm_atoms(const MsmPlan& plan, const ChargeList& charges, const Grid3& grid);

// The two parts on the lattice (values in units of charge / length, no k_e), double precision,
// OpenMP. out has lattice_points() values, x fastest; short_range overwrites, long_range adds.
void msm_short_range_cpu(const MsmPlan& plan, const MsmAtoms& atoms, std::vector<double>& out);
void msm_long_range_cpu(const MsmPlan& plan, const MsmAtoms& atoms, std::vector<double>& out);

// The finest-grid potential of the long-range part (for tests): e_1 at every level-0 point.
std::vector<double> msm_grid_potential_cpu(const MsmPlan& plan, const MsmAtoms& atoms);

// grid.values = k_e * (short + long range) by `plan`, on the CPU (double) or the GPU (float,
// kernels/dcs/msm_kernels.cu). Returns seconds: GPU the kernels' (CUDA events), CPU wall clock.
double compute_msm_potential(const MsmPlan& plan, const ChargeList& charges, double k_e, bool gpu, Grid3& grid);

// The CPU reference in one call (plan from params). Returns the plan it used.
MsmPlan potential_msm_cpu(const ChargeList& charges, double k_e, double floor, const MsmParams& params, const Box* box,
                          Grid3& grid);

// The plan and the atoms in the GPU's form (float), for tests that run the kernels part by part.
dcs::MsmGpuPlan msm_gpu_plan(const MsmPlan& plan);
std::vector<float> msm_gpu_atoms(const MsmAtoms& atoms);

// Estimated cost of a map, in seconds of one backend, for `auto` (docs/potential_maps.md).
struct MapCost {
  double exact = 0, msm = 0;
};
MapCost estimate_map_cost(const MsmPlan& plan, size_t atoms, bool gpu);

// Accuracy of a map against the exact sum at `samples` lattice points chosen at random (fixed
// seed; every point if there are fewer): sqrt(sum (V - V_exact)^2 / sum V_exact^2) over those
// points. V_exact is the exact sum in double (open) or an Ewald sum with the same background and
// floor (periodic_box given).
MapAccuracy sampled_accuracy(const ChargeList& charges, double k_e, double floor, const Box* periodic_box,
                             const Grid3& map, int samples, unsigned seed = 20261);

}  // namespace pairmd
