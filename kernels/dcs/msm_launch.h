// Multilevel summation on the GPU: the host-callable launcher in plain C++ (no CUDA headers), as
// dcs_launch.h. Implemented by msm_kernels.cu in a CUDA build and by dcs_stub.cpp otherwise.
//
// The plan (grids, stencils, interpolation tables) is made on the host in double
// (analysis/msm.cpp, make_msm_plan) and handed over in float; the GPU bins the atoms, sums the
// short-range part tile by tile, anterpolates, restricts, sums every level, prolongs and
// interpolates, all in float, and returns V / k_e on the lattice.
#pragma once

#include <cstddef>
#include <vector>

namespace pairmd::dcs {

struct MsmGpuLevel {
  int lo[3] = {0, 0, 0};  // open: index of the first point; periodic: 0
  int dims[3] = {0, 0, 0};
};

struct MsmGpuPlan {
  int order = 4;  // interpolation points per direction: 4 or 6
  int split = 2;  // Taylor order K of the softening: 2 or 3
  int periodic = 0;
  float a = 0, floor2 = 0;
  float coef[5] = {0, 0, 0, 0, 0};      // g_a(r) = sum_j coef[j] r^(2j) below a
  int nx = 0, ny = 0, nz = 0;           // lattice
  float s[3] = {1, 1, 1};               // lattice spacing
  float origin[3] = {0, 0, 0};          // grid index 0, relative to lattice point (0,0,0)
  float h[3] = {1, 1, 1};               // finest grid spacing
  float box[3] = {0, 0, 0};             // periodic box
  std::vector<MsmGpuLevel> levels;      // [0] finest
  int radius[3] = {0, 0, 0};            // level stencil (below the top)
  std::vector<float> stencil;           // (2R+1)^3, x fastest, level 1; level l scaled by 2^-(l-1)
  std::vector<int> row_reach;           // per (sy, sz): largest |sx| with a nonzero weight, -1 none
  std::vector<float> top;               // top kernel table (see MsmPlan::top)
  std::vector<int> interp_index[3];     // per lattice index, `order` finest-grid storage indices
  std::vector<float> interp_weight[3];  // and their weights
};

struct MsmGpuOptions {
  bool short_range = true;  // the parts to compute (tests check them one at a time)
  bool long_range = true;
  bool poison = false;  // fill the device output with NaN first (tests: every point written)
};

// Milliseconds of each phase (CUDA events) and in all.
struct MsmGpuTimes {
  double binning = 0, short_range = 0, anterpolation = 0, grids = 0, interpolation = 0, total = 0;
};

// `xyzq`: 4 floats per atom, x y z relative to the grid origin (plan.origin), wrapped into the
// box where periodic, and the charge. `out` receives nx*ny*nz floats (x fastest). `grid`, if not
// null, receives the finest grid's potential (the long-range part before interpolation).
// Throws std::runtime_error naming the CUDA call, file and line on any CUDA error.
MsmGpuTimes gpu_msm_potential(const MsmGpuPlan& plan, const float* xyzq, size_t natoms, float* out,
                              const MsmGpuOptions& options, std::vector<float>* grid = nullptr);

}  // namespace pairmd::dcs
