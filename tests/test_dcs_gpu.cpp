// The GPU potential-map kernels (kernels/dcs) against the double-precision CPU reference.
//
// Tolerance: relative RMS error < 1e-5 over the lattice (the criterion). Expected: float
// coordinates relative to the lattice corner (rounding 2^-24 * extent, ~1e-6 relative to r at
// the floor distance for these lattices), rsqrtf (<= 2 ulp), and float running sums of at most
// 4096 atoms per thread (one __constant__ chunk; random rounding ~ sqrt(4096/3) * 2^-24 ~ 2e-6 of
// the partial sums, which for random charges are of the size of V itself) -> a few 1e-6; the
// scatter kernel's atomics add in arbitrary order but with the same per-chunk bound. The maximum
// error is reported relative to max |V| (point-wise relative errors are unbounded where V crosses
// zero) and asserted < 1e-4.
//
// Lattices whose sizes are not multiples of the block width or the coarsening factor, and atom
// counts that are not multiples of the chunk; the device output is poisoned with NaN first, so a
// point that no thread writes fails the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "analysis/potential_map.h"
#include "kernels/dcs/dcs_launch.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

struct Case {
  const char* kernel_name;
  dcs::GpuKernel kernel;
  int coarsen;
  int soft_rsqrt = 0;  // gather_mixed_rsqrt: points per thread whose rsqrt runs on the FMA pipes
};

const Case kCases[] = {
    {"scatter", dcs::GpuKernel::Scatter, 8},
    {"gather", dcs::GpuKernel::Gather, 8},
    {"gather_coarsened", dcs::GpuKernel::GatherCoarsened, 4},
    {"gather_coarsened", dcs::GpuKernel::GatherCoarsened, 8},
    {"gather_coarsened", dcs::GpuKernel::GatherCoarsened, 16},
    {"gather_coalesced", dcs::GpuKernel::GatherCoalesced, 4},
    {"gather_coalesced", dcs::GpuKernel::GatherCoalesced, 8},
    {"gather_coalesced", dcs::GpuKernel::GatherCoalesced, 16},
    // rsqrt_fma: per-term error <= 5.3e-7 (test_soft_rsqrt.cpp), unbiased, on 1/8..1/4 of the terms.
    {"gather_mixed_rsqrt", dcs::GpuKernel::GatherMixedRsqrt, 8, 1},
    {"gather_mixed_rsqrt", dcs::GpuKernel::GatherMixedRsqrt, 8, 2},
    {"gather_mixed_rsqrt", dcs::GpuKernel::GatherMixedRsqrt, 16, 2},
    {"gather_mixed_rsqrt", dcs::GpuKernel::GatherMixedRsqrt, 16, 3},
    {"gather_mixed_rsqrt", dcs::GpuKernel::GatherMixedRsqrt, 16, 4},
};

struct Errors {
  double rel_rms, max_over_max, max_pointwise;  // the last over points with |V| > RMS(V) / 10
  size_t unwritten;
};

Errors compare(const std::vector<float>& gpu, const Grid3& ref) {
  double se = 0, sr = 0, emax = 0, rmax = 0;
  size_t nan = 0;
  for (size_t p = 0; p < ref.size(); ++p) {
    if (!std::isfinite(gpu[p])) ++nan;
    const double e = gpu[p] - ref.values[p];
    se += e * e;
    sr += ref.values[p] * ref.values[p];
    emax = std::max(emax, std::fabs(e));
    rmax = std::max(rmax, std::fabs(ref.values[p]));
  }
  const double rms = std::sqrt(sr / ref.size());
  double pw = 0;
  for (size_t p = 0; p < ref.size(); ++p)
    if (std::fabs(ref.values[p]) > 0.1 * rms)
      pw = std::max(pw, std::fabs(gpu[p] - ref.values[p]) / std::fabs(ref.values[p]));
  return {std::sqrt(se / sr), emax / rmax, pw, nan};
}

// Random atoms over (and a little beyond) the lattice, charges of both signs, never zero.
void random_atoms(size_t n, const std::array<float, 3>& extent, unsigned seed, ChargeList& c,
                  std::vector<float>& xyzq) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.1, 1.1), mag(0.1, 1.0);
  for (size_t a = 0; a < n; ++a) {
    const double x = u(rng) * extent[0], y = u(rng) * extent[1], z = u(rng) * extent[2];
    const double q = (rng() & 1 ? 1.0 : -1.0) * mag(rng);
    c.add(x, y, z, q);
    xyzq.insert(xyzq.end(), {float(x), float(y), float(z), float(q)});
  }
}

void check_all_kernels(int nx, int ny, int nz, float h, size_t natoms, unsigned seed) {
  dcs::GpuLattice lat;
  lat.nx = nx, lat.ny = ny, lat.nz = nz;
  lat.hx = h, lat.hy = 1.25f * h, lat.hz = 0.8f * h;
  ChargeList c;
  std::vector<float> xyzq;
  random_atoms(natoms, {lat.hx * std::max(nx - 1, 1), lat.hy * std::max(ny - 1, 1), lat.hz * std::max(nz - 1, 1)}, seed,
               c, xyzq);
  Grid3 ref;
  ref.dims = {nx, ny, nz};
  ref.spacing = {lat.hx, lat.hy, lat.hz};  // the float spacings, so both sides use one lattice
  const double floor = 0.5 * h;
  potential_cpu(c, 1.0, floor, ref);
  for (const Case& k : kCases) {
    dcs::GpuOptions opt;
    opt.floor2 = static_cast<float>(floor * floor);
    opt.coarsen = k.coarsen;
    opt.soft_rsqrt = k.soft_rsqrt;
    opt.poison = true;
    std::vector<float> out(ref.size());
    dcs::gpu_potential(k.kernel, lat, xyzq.data(), natoms, out.data(), opt);
    const Errors e = compare(out, ref);
    std::printf(
        "  %-18s C=%-2d S=%d lattice %4d x %4d x %4d, %6zu atoms: rel RMS %.2e, max err / max|V| %.2e, "
        "max pointwise rel (|V| > RMS/10) %.2e\n",
        k.kernel_name, k.coarsen, k.soft_rsqrt, nx, ny, nz, natoms, e.rel_rms, e.max_over_max, e.max_pointwise);
    EXPECT_EQ(e.unwritten, 0u) << k.kernel_name << " C=" << k.coarsen << " left points unwritten (NaN poison)";
    EXPECT_LT(e.rel_rms, 1e-5) << k.kernel_name << " C=" << k.coarsen;
    EXPECT_LT(e.max_over_max, 1e-4) << k.kernel_name << " C=" << k.coarsen;
  }
}

TEST(DcsGpu, AllKernelsMatchTheReferenceOnOddLattices) {
  PAIRMD_REQUIRE_GPU();
  // 5000 atoms: one full __constant__ chunk (4096) and a partial one.
  check_all_kernels(37, 29, 23, 0.5f, 5000, 1);
  check_all_kernels(65, 7, 3, 0.3f, 5000, 2);   // nx just past a multiple of 32 and of 16
  check_all_kernels(130, 3, 5, 0.4f, 4097, 3);  // one atom into the second chunk
  check_all_kernels(1, 1, 1, 1.0f, 100, 4);     // a single point
  check_all_kernels(5, 131, 2, 0.7f, 1, 5);     // a single atom, short rows
}

TEST(DcsGpu, HundredThousandAtomsStayWithinTheErrorBound) {
  PAIRMD_REQUIRE_GPU();
  // The benchmark's atom count: 25 chunks of float partial sums per point.
  check_all_kernels(40, 36, 33, 1.0f, 100000, 6);
}

TEST(DcsGpu, NoAtomsGiveZeros) {
  PAIRMD_REQUIRE_GPU();
  dcs::GpuLattice lat;
  lat.nx = 17, lat.ny = 3, lat.nz = 2;
  for (const Case& k : kCases) {
    dcs::GpuOptions opt;
    opt.poison = true;
    opt.coarsen = k.coarsen;
    opt.soft_rsqrt = k.soft_rsqrt;
    std::vector<float> out(lat.nx * lat.ny * lat.nz, 1.0f);
    dcs::gpu_potential(k.kernel, lat, nullptr, 0, out.data(), opt);
    for (float v : out) ASSERT_EQ(v, 0.0f) << k.kernel_name;
  }
}

TEST(DcsGpu, ComputePotentialHandlesFarOriginsAndUnits) {
  PAIRMD_REQUIRE_GPU();
  // The lattice far from the coordinate origin: coordinates are made relative to the lattice
  // corner before they become floats, so the error stays that of a lattice at the origin.
  Grid3 ref;
  ref.dims = {33, 17, 9};
  ref.origin = {1000.0, -5000.0, 250.0};
  ref.spacing = {0.5, 0.5, 0.5};
  ChargeList c;
  std::vector<float> unused;
  random_atoms(3000, {16, 8, 4}, 7, c, unused);
  for (size_t a = 0; a < c.size(); ++a) c.x[a] += 1000.0, c.y[a] -= 5000.0, c.z[a] += 250.0;
  potential_cpu(c, 332.0637, 0.25, ref);
  for (const MapKernelInfo& info : kMapKernels) {  // every registered GPU kernel (engine/map_registry.h)
    if (!info.gpu) continue;
    const MapKernel k = info.kernel;
    Grid3 g = ref;
    g.values.assign(g.size(), std::nan(""));
    compute_potential(k, c, 332.0637, 0.25, g);
    std::vector<float> f(g.values.begin(), g.values.end());
    const Errors e = compare(f, ref);
    std::printf("  %-17s far origin: rel RMS %.2e, max err / max|V| %.2e\n", map_kernel_name(k), e.rel_rms,
                e.max_over_max);
    EXPECT_LT(e.rel_rms, 1e-5) << map_kernel_name(k);
  }
  std::string why;
  EXPECT_EQ(resolve_map_kernel(MapKernel::Auto, &why), MapKernel::GatherCoalesced) << why;
}

}  // namespace
}  // namespace pairmd
