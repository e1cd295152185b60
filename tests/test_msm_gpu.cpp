// The GPU multilevel-summation kernels (kernels/dcs/msm_kernels.cu) against the double-precision
// CPU reference (analysis/msm.cpp) running the same plan, part by part, on random charges of
// both signs (never zero), open and periodic; and the whole map against the exact sum.
//
// Tolerances. The GPU computes the same approximation in float, so it must match the CPU
// reference far more closely than MSM matches the exact sum: float coordinates relative to the
// grid origin (2^-24 of the extent), rsqrtf (<= 2 ulp), the softening polynomial evaluated in
// float (cancellation near r = a is ~2 of 1/a's ulps per term), and float running sums of at
// most a few thousand terms per point (short range: the atoms within a; level sums: the
// stencil's ~4000 points; random rounding ~sqrt(n/3) * 2^-24 ~ 2e-6 of the partial sums). Each
// part's error is stated relative to the RMS of the whole map (parts can be much smaller than
// the map, where a part-relative error would mean little) and asserted < 1e-5; the whole map
// against the exact sum < 1e-3 (as the CPU reference, test_msm.cpp). The output is poisoned with
// NaN first, so a point that no thread writes fails; two runs must agree bitwise (no float
// atomics: deterministic binning and gathers only).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "analysis/msm.h"
#include "analysis/potential_map.h"
#include "kernels/dcs/dcs_launch.h"
#include "kernels/dcs/msm_launch.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::charged_state;
using test::lattice;
using test::random_charges;

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / std::max<size_t>(v.size(), 1));
}

// RMS of (gpu - ref) over `scale`; counts non-finite GPU values.
double error_over(const std::vector<float>& gpu, const std::vector<double>& ref, double scale, size_t* bad) {
  double se = 0;
  *bad = 0;
  for (size_t p = 0; p < ref.size(); ++p) {
    if (!std::isfinite(gpu[p])) ++*bad;
    se += (gpu[p] - ref[p]) * (gpu[p] - ref[p]);
  }
  return std::sqrt(se / ref.size()) / scale;
}

struct Case {
  const char* name;
  std::array<int, 3> dims;
  std::array<double, 3> origin, spacing;
  size_t atoms;
  std::array<double, 3> lo, hi;  // atoms (periodic: the box)
  bool periodic;
  int order;
  double cutoff;  // 0: automatic
};

void check_case(const Case& k) {
  const ChargeList c = random_charges(k.atoms, k.lo, k.hi, 41);
  Grid3 g = lattice(k.dims, k.origin, k.spacing);
  Box box;
  box.lo = {k.lo[0], k.lo[1], k.lo[2]};
  box.L = {k.hi[0] - k.lo[0], k.hi[1] - k.lo[1], k.hi[2] - k.lo[2]};
  box.periodic = k.periodic;
  MsmParams p;
  p.order = k.order;
  p.cutoff = k.cutoff;
  p.periodic = k.periodic;
  p.gpu = true;
  const MsmPlan plan = make_msm_plan(c, g, p, 0.25, k.periodic ? &box : nullptr);
  const MsmAtoms atoms = msm_atoms(plan, c, g);
  std::vector<double> short_ref, long_ref(plan.lattice_points(), 0.0);
  msm_short_range_cpu(plan, atoms, short_ref);
  msm_long_range_cpu(plan, atoms, long_ref);
  const std::vector<double> grid_ref = msm_grid_potential_cpu(plan, atoms);
  std::vector<double> total_ref(short_ref.size());
  for (size_t i = 0; i < total_ref.size(); ++i) total_ref[i] = short_ref[i] + long_ref[i];
  const double scale = rms(total_ref);

  const dcs::MsmGpuPlan gp = msm_gpu_plan(plan);
  const std::vector<float> xyzq = msm_gpu_atoms(atoms);
  std::vector<float> out(plan.lattice_points()), again(out.size()), grid;
  size_t bad = 0;
  dcs::MsmGpuOptions opt;
  opt.poison = true;

  opt.long_range = false;
  dcs::gpu_msm_potential(gp, xyzq.data(), c.size(), out.data(), opt);
  const double e_short = error_over(out, short_ref, scale, &bad);
  EXPECT_EQ(bad, 0u) << k.name << ": short range left points unwritten";

  opt.long_range = true;
  opt.short_range = false;
  dcs::gpu_msm_potential(gp, xyzq.data(), c.size(), out.data(), opt, &grid);
  const double e_long = error_over(out, long_ref, scale, &bad);
  EXPECT_EQ(bad, 0u) << k.name << ": long range left points unwritten";
  ASSERT_EQ(grid.size(), grid_ref.size());
  const double e_grid = error_over(grid, grid_ref, rms(grid_ref), &bad);

  opt.short_range = true;
  const dcs::MsmGpuTimes t = dcs::gpu_msm_potential(gp, xyzq.data(), c.size(), out.data(), opt);
  const double e_total = error_over(out, total_ref, scale, &bad);
  EXPECT_EQ(bad, 0u) << k.name;
  dcs::gpu_msm_potential(gp, xyzq.data(), c.size(), again.data(), opt);
  EXPECT_EQ(std::memcmp(out.data(), again.data(), out.size() * sizeof(float)), 0) << k.name << ": two runs differ";

  // Against the exact sum (open) or the CPU reference's own accuracy check (periodic: Ewald).
  Grid3 map = g;
  map.values.assign(out.begin(), out.end());
  const MapAccuracy acc = sampled_accuracy(c, 1.0, 0.25, k.periodic ? &box : nullptr, map, 300);
  std::printf(
      "  %-18s %s\n    GPU vs CPU (/ RMS of V): short %.2e, long %.2e, finest grid %.2e, total %.2e; "
      "vs exact (300 points) %.2e; %.3f ms (binning %.3f, short %.3f, anterpolation %.3f, grids %.3f, "
      "interpolation %.3f)\n",
      k.name, plan.describe().c_str(), e_short, e_long, e_grid, e_total, acc.rel_rms, t.total, t.binning, t.short_range,
      t.anterpolation, t.grids, t.interpolation);
  EXPECT_LT(e_short, 1e-5) << k.name;
  EXPECT_LT(e_long, 1e-5) << k.name;
  EXPECT_LT(e_grid, 1e-5) << k.name;
  EXPECT_LT(e_total, 1e-5) << k.name;
  EXPECT_LT(acc.rel_rms, 1e-3) << k.name;
}

TEST(MsmGpu, OpenBoundaryPartsMatchTheCpuReference) {
  PAIRMD_REQUIRE_GPU();
  // Odd sizes (partial 8^3 tiles), anisotropic spacing, atoms beyond the lattice, far origin.
  check_case(
      {"open quintic", {37, 29, 23}, {0, 0, 0}, {0.5, 0.6, 0.45}, 5000, {-2, -2, -2}, {20, 19, 12}, false, 6, 2.5});
  check_case(
      {"open cubic", {37, 29, 23}, {0, 0, 0}, {0.5, 0.6, 0.45}, 5000, {-2, -2, -2}, {20, 19, 12}, false, 4, 2.5});
  check_case({"far origin, auto a",
              {33, 9, 70},
              {1000, -2000, 30},
              {0.7, 0.9, 0.35},
              3000,
              {995, -2005, 25},
              {1025, -1990, 60},
              false,
              6,
              0});
  check_case({"one atom", {17, 17, 17}, {0, 0, 0}, {0.5, 0.5, 0.5}, 1, {3, 3, 3}, {5, 5, 5}, false, 6, 2.0});
}

TEST(MsmGpu, PeriodicPartsMatchTheCpuReference) {
  PAIRMD_REQUIRE_GPU();
  // The lattice sticks out of the box on every side (the map is periodic).
  check_case(
      {"periodic brick", {31, 25, 27}, {-1, -1, -1}, {0.5, 0.5, 0.5}, 3000, {0, 0, 0}, {14, 11, 12.5}, true, 6, 3.2});
  check_case({"periodic cubic", {20, 20, 20}, {0, 0, 0}, {0.6, 0.6, 0.6}, 2000, {0, 0, 0}, {12, 12, 12}, true, 4, 2.5});
  // a beyond half the box: several images of an atom within a of a point.
  check_case(
      {"periodic small box", {13, 15, 14}, {0, 0, 0}, {0.5, 0.5, 0.5}, 300, {0, 0, 0}, {6, 7, 6.5}, true, 6, 3.5});
}

TEST(MsmGpu, ThirtyThousandAtoms) {
  PAIRMD_REQUIRE_GPU();
  // Many atoms per tile: several 128-atom chunks and row batches per block.
  check_case({"30k atoms", {64, 64, 64}, {0, 0, 0}, {0.5, 0.5, 0.5}, 30000, {0, 0, 0}, {32, 32, 32}, false, 6, 0});
}

TEST(MsmGpu, NoAtomsGiveZeros) {
  PAIRMD_REQUIRE_GPU();
  ChargeList none;
  Grid3 g = lattice({9, 10, 11}, {0, 0, 0}, {0.5, 0.5, 0.5});
  MsmParams p;
  p.cutoff = 2;
  const MsmPlan plan = make_msm_plan(none, g, p, 0.25);
  std::vector<float> out(plan.lattice_points(), 1.0f);
  dcs::MsmGpuOptions opt;
  opt.poison = true;
  dcs::gpu_msm_potential(msm_gpu_plan(plan), nullptr, 0, out.data(), opt);
  for (float v : out) ASSERT_EQ(v, 0.0f);
}

TEST(MsmGpu, SeriesUsesTheGpuForMsm) {
  PAIRMD_REQUIRE_GPU();
  const ChargeList c = random_charges(4000, {0, 0, 0}, {16, 16, 16}, 43);
  const SystemState s = charged_state(c, test::make_box({0, 0, 0}, {16, 16, 16}, false));
  MapSettings m;
  m.spacing = 0.5;
  m.method = "msm";
  PotentialMapSeries series(m, Units::real());
  const Grid3 map = series.add(s);
  EXPECT_NE(series.kernel(), MapKernel::Cpu);
  EXPECT_NE(series.kernel_description().find("msm GPU"), std::string::npos) << series.kernel_description();
  Grid3 exact = map;
  potential_cpu(c, Units::real().coulomb, m.floor(), exact);
  const double e = test::rel_rms(map.values, exact.values);
  std::printf("  series on the GPU: %s, rel RMS against the exact sum %.2e (estimated %.2e)\n",
              series.method_description().c_str(), e, series.accuracy().rel_rms);
  EXPECT_LT(e, 1e-3);
  EXPECT_GT(series.accuracy().samples, 0);
}

}  // namespace
}  // namespace pairmd
