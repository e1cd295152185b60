// Multilevel summation (analysis/msm.*, potentials/msm.h, kernels/dcs/msm_bins.h) on the CPU:
// the splitting and stencils against their definitions, the cutoff binning against brute force,
// the whole map against the exact sum (open boundaries) and against an Ewald sum written here
// (periodic), on random charges of both signs (never zero). The GPU kernels are checked against
// this reference in test_msm_gpu.cpp.
//
// Tolerances. The MSM error is that of interpolating the smooth part g_a on grids of spacing h:
// it falls like (h/a)^p (p ~ 3 for cubic, ~5 for quintic; measured: quintic 3.7e-3 at a/h = 3,
// 3.3e-4 at 5; cubic 2.3e-3 at a/h = 4, 2e-4 at 8) and hardly depends on a itself. The default
// a/h (open: 5 quintic, 7 cubic; periodic: 6, 8) measured 2.6e-4..4.5e-4 relative RMS on these
// systems; the tests assert the issue's 1e-3, and that the error falls when h does (the method
// converges, so a wrong stencil or table cannot hide behind a loose bound). Parts that are exact up to rounding (the
// short-range sum, the Ewald sums, the sampled check's reference) are held to 1e-10..1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "analysis/ewald.h"
#include "analysis/msm.h"
#include "analysis/potential_map.h"
#include "analysis/potential_map_observer.h"
#include "engine/config.h"
#include "engine/system_builder.h"
#include "io/dx_writer.h"
#include "kernels/dcs/dcs_launch.h"
#include "kernels/dcs/msm_bins.h"
#include "potentials/msm.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

constexpr double kPi = 3.14159265358979323846;

using test::charged_state;
using test::lattice;
using test::random_charges;
using test::rel_rms;

Box periodic_box(std::array<double, 3> lo, std::array<double, 3> L) { return test::make_box(lo, L, true); }

std::array<double, 3> point_of(const Grid3& g, size_t p) {
  const int i = static_cast<int>(p % g.dims[0]), j = static_cast<int>((p / g.dims[0]) % g.dims[1]),
            k = static_cast<int>(p / (static_cast<size_t>(g.dims[0]) * g.dims[1]));
  return {g.origin[0] + i * g.spacing[0], g.origin[1] + j * g.spacing[1], g.origin[2] + k * g.spacing[2]};
}

// ---- An Ewald sum written for the tests ---------------------------------------------------------
// V(p) = sum_j q_j phi(p - r_j), phi(d) = sum_{|n_i| <= 1} erfc(b|d + nL|)/|d + nL|
//        + (4 pi / V) sum_{k != 0} exp(-k^2/4b^2)/k^2 cos(k.d) - pi/(b^2 V),
// every image closer than `floor` counted at `floor`. With points in the box and atoms in the
// box, |d_i| < L_i, so the images left out are at least L_min away: erfc(b L_min) < 1e-16 for
// b = 5.9 / L_min; k runs over |k| <= 12 b (exp(-36) beyond), the reciprocal
// part by structure factors. `beta_scale` changes b (the result must not change).
std::vector<double> test_ewald(const ChargeList& c, const std::array<double, 3>& L, double floor,
                               const std::vector<std::array<double, 3>>& pts, double beta_scale = 1.0) {
  const double Lmin = std::min({L[0], L[1], L[2]}), V = L[0] * L[1] * L[2];
  const double b = beta_scale * 5.9 / Lmin;
  const int images = beta_scale >= 1.0 ? 1 : 2;
  int m[3];
  for (int d = 0; d < 3; ++d) m[d] = static_cast<int>(std::ceil(12 * b * L[d] / (2 * kPi)));
  std::vector<double> out(pts.size(), 0.0);
  for (int mz = -m[2]; mz <= m[2]; ++mz)
    for (int my = -m[1]; my <= m[1]; ++my)
      for (int mx = -m[0]; mx <= m[0]; ++mx) {
        if (mx == 0 && my == 0 && mz == 0) continue;
        const double k[3] = {2 * kPi * mx / L[0], 2 * kPi * my / L[1], 2 * kPi * mz / L[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 > 144 * b * b) continue;  // exp(-k^2/4b^2) < exp(-36)
        const double coef = 4 * kPi / V * std::exp(-k2 / (4 * b * b)) / k2;
        std::complex<double> S = 0;
        for (size_t j = 0; j < c.size(); ++j)
          S += c.q[j] * std::exp(std::complex<double>(0, k[0] * c.x[j] + k[1] * c.y[j] + k[2] * c.z[j]));
        for (size_t p = 0; p < pts.size(); ++p)
          out[p] +=
              coef *
              (S * std::exp(std::complex<double>(0, -(k[0] * pts[p][0] + k[1] * pts[p][1] + k[2] * pts[p][2])))).real();
      }
  double Q = 0;
  for (double q : c.q) Q += q;
  for (size_t p = 0; p < pts.size(); ++p) {
    double v = -kPi / (b * b * V) * Q;
    for (size_t j = 0; j < c.size(); ++j)
      for (int nz = -images; nz <= images; ++nz)
        for (int ny = -images; ny <= images; ++ny)
          for (int nx = -images; nx <= images; ++nx) {
            const double dx = pts[p][0] - c.x[j] + nx * L[0], dy = pts[p][1] - c.y[j] + ny * L[1],
                         dz = pts[p][2] - c.z[j] + nz * L[2];
            const double r = std::sqrt(dx * dx + dy * dy + dz * dz);
            if (r < floor)
              v += c.q[j] * (1 / floor - (r > 0 ? std::erf(b * r) / r : 2 * b / std::sqrt(kPi)));
            else
              v += c.q[j] * std::erfc(b * r) / r;
          }
    out[p] += v;
  }
  return out;
}

// ---- Splitting and stencils -------------------------------------------------------------------

TEST(MsmSplitting, TaylorSofteningMatchesOneOverRWithKDerivativesAtTheCutoff) {
  for (int K : {2, 3}) {
    const double a = 1.7;
    double c[5];
    msm::softening_polynomial(K, a, c);
    if (K == 2) {
      // gamma = 15/8 - 5/4 rho^2 + 3/8 rho^4, g = gamma(r/a)/a
      EXPECT_NEAR(c[0], 15.0 / 8 / a, 1e-15);
      EXPECT_NEAR(c[1], -5.0 / 4 / (a * a * a), 1e-15);
      EXPECT_NEAR(c[2], 3.0 / 8 / std::pow(a, 5), 1e-15);
    }
    // g and 1/r agree at a in value and K derivatives (central differences of the polynomial
    // against the analytic derivatives of 1/r: d^n/dr^n r^-1 = (-1)^n n! r^-(n+1)).
    const double hstep = 1e-3;
    auto g = [&](double r) { return msm::softening_poly(c, K, r * r); };
    EXPECT_NEAR(g(a), 1 / a, 1e-14);
    EXPECT_NEAR((g(a + hstep) - g(a - hstep)) / (2 * hstep), -1 / (a * a), 1e-5);
    EXPECT_NEAR((g(a + hstep) - 2 * g(a) + g(a - hstep)) / (hstep * hstep), 2 / (a * a * a), 1e-4);
    // Softened: below 1/r inside (the short-range part is positive) and finite at 0.
    for (double r = 0.05; r < a; r += 0.05) EXPECT_LT(g(r), 1 / r) << "K " << K << " r " << r;
    EXPECT_DOUBLE_EQ(msm::softened(c, K, a, 2 * a), 1 / (2 * a));
  }
}

TEST(MsmSplitting, ShortRangeTermVanishesAtTheCutoffAndKeepsTheFloor) {
  const double a = 2.0, floor = 0.3;
  double c[5];
  msm::softening_polynomial(2, a, c);
  EXPECT_EQ(msm::short_range_term<2>(a * a, floor * floor, a * a, c), 0.0);
  EXPECT_LT(std::fabs(msm::short_range_term<2>(a * a * (1 - 1e-6), floor * floor, a * a, c)), 1e-12);
  // Inside the floor the exact part is 1/floor: short + long = the floored potential.
  const double r = 0.1;
  EXPECT_NEAR(msm::short_range_term<2>(r * r, floor * floor, a * a, c) + msm::softening_poly<2>(c, r * r), 1 / floor,
              1e-14);
  const double r2 = 1.3;
  EXPECT_NEAR(msm::short_range_term<2>(r2 * r2, floor * floor, a * a, c) + msm::softening_poly<2>(c, r2 * r2), 1 / r2,
              1e-14);
}

template <int P>
void check_interpolant(int exact_degree) {
  EXPECT_DOUBLE_EQ(msm::phi<P>(0.0), 1.0);
  for (int n = 1; n <= P / 2 + 1; ++n) EXPECT_NEAR(msm::phi<P>(double(n)), 0.0, 1e-15) << n;
  EXPECT_EQ(msm::phi<P>(P / 2 + 0.01), 0.0);
  // Continuity of Phi and Phi' at the knots (C1).
  for (int n = 0; n <= P / 2; ++n) {
    const double e = 1e-7;
    EXPECT_NEAR(msm::phi<P>(n - e), msm::phi<P>(n + e), 1e-6);
    const double dl = (msm::phi<P>(n - e) - msm::phi<P>(n - 2 * e)) / e,
                 dr = (msm::phi<P>(n + 2 * e) - msm::phi<P>(n + e)) / e;
    if (n > 0) EXPECT_NEAR(dl, dr, 1e-5) << "P " << P << " knot " << n;
  }
  // Partition of unity and reproduction of polynomials up to exact_degree.
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-20, 20);
  for (int t = 0; t < 200; ++t) {
    const double x = u(rng);
    double w[P];
    const int first = msm::stencil_weights<P>(x, w);
    EXPECT_LE(first, x);
    EXPECT_GE(first + P - 1, x);
    for (int deg = 0; deg <= exact_degree; ++deg) {
      double s = 0;
      for (int k = 0; k < P; ++k) s += w[k] * std::pow(first + k, deg);
      EXPECT_NEAR(s, std::pow(x, deg), 1e-9 * std::pow(20.0, deg)) << "P " << P << " degree " << deg << " x " << x;
    }
  }
}

TEST(MsmInterpolation, CubicAndQuinticArePartitionsOfUnityThatReproducePolynomials) {
  check_interpolant<4>(2);
  check_interpolant<6>(4);
  // Cubic restriction weights: -1/16, 0, 9/16, 1, 9/16, 0, -1/16.
  const double want[7] = {-1.0 / 16, 0, 9.0 / 16, 1, 9.0 / 16, 0, -1.0 / 16};
  for (int d = -3; d <= 3; ++d) EXPECT_DOUBLE_EQ(msm::restriction_weight<4>(d), want[d + 3]) << d;
  EXPECT_EQ(msm::wrap_index(-1, 5), 4);
  EXPECT_EQ(msm::wrap_index(-11, 5), 4);
  EXPECT_EQ(msm::wrap_index(12, 5), 2);
  EXPECT_EQ(msm::floor_div(-1, 4), -1);
  EXPECT_EQ(msm::floor_div(-4, 4), -1);
  EXPECT_EQ(msm::floor_div(-5, 4), -2);
  EXPECT_EQ(msm::floor_div(7, 4), 1);
}

// ---- Cutoff binning ---------------------------------------------------------------------------

// Every (atom, image) within a of some point of the tile appears in the tile's rows, once. Real
// is the precision of the row geometry (the GPU's is float: atoms within a (1 - 1e-5) then).
template <typename Real>
void check_rows_cover(const msm::BinGrid<Real>& g, const std::vector<std::array<Real, 3>>& atoms, const Real* bmin,
                      const Real* bmax, Real a) {
  // The binned order: atom indices sorted by bin.
  std::vector<int> order(atoms.size());
  std::vector<int> bin(atoms.size());
  const size_t nbins = static_cast<size_t>(g.nb[0]) * g.nb[1] * g.nb[2];
  std::vector<int> start(nbins + 1, 0);
  for (size_t i = 0; i < atoms.size(); ++i) bin[i] = msm::bin_of(g, atoms[i].data()), ++start[bin[i] + 1];
  for (size_t b = 0; b < nbins; ++b) start[b + 1] += start[b];
  std::vector<int> cur(start.begin(), start.end() - 1);
  for (size_t i = 0; i < atoms.size(); ++i) order[cur[bin[i]]++] = static_cast<int>(i);

  std::multiset<std::array<long, 4>> seen;  // atom, image shift in units of L
  const msm::TileRows rows = msm::tile_rows(g, bmin, bmax, a);
  for (int r = 0; r < rows.count(); ++r) {
    msm::RowSegment<Real> seg;
    if (!msm::tile_row(g, rows, bmin, bmax, a, r, seg)) continue;
    for (int s = start[seg.first]; s < start[seg.last + 1]; ++s) {
      std::array<long, 4> key{order[s], 0, 0, 0};
      for (int d = 0; d < 3; ++d) key[d + 1] = g.periodic ? std::lround(seg.shift[d] / g.L[d]) : 0;
      seen.insert(key);
    }
  }
  for (const auto& k : seen) EXPECT_EQ(seen.count(k), 1u) << "atom " << k[0] << " image visited twice";
  const int span = g.periodic ? 3 : 0;
  for (size_t i = 0; i < atoms.size(); ++i)
    for (int nz = -span; nz <= span; ++nz)
      for (int ny = -span; ny <= span; ++ny)
        for (int nx = -span; nx <= span; ++nx) {
          const long n[3] = {nx, ny, nz};
          double d2 = 0;  // distance from the image to the tile box
          for (int d = 0; d < 3; ++d) {
            const double x = double(atoms[i][d]) + n[d] * (g.periodic ? double(g.L[d]) : 0.0);
            const double gap = std::max({0.0, double(bmin[d]) - x, x - double(bmax[d])});
            d2 += gap * gap;
          }
          if (d2 < double(a) * a * (sizeof(Real) == 4 ? 1 - 1e-5 : 1 - 1e-12))
            EXPECT_EQ(seen.count({static_cast<long>(i), nx, ny, nz}), 1u)
                << "atom " << i << " image " << nx << " " << ny << " " << nz << " at " << std::sqrt(d2)
                << " < a missed";
        }
}

template <typename Real>
void check_tile_rows() {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(0, 1);
  {
    // Open: bins of 0.7 from cell -3 on; tiles inside, at the edge and beyond the atoms.
    msm::BinGrid<Real> g{{20, 14, 17}, {-3, -2, -4}, {Real(0.7), Real(0.7), Real(0.7)}, {0, 0, 0}, 0};
    std::vector<std::array<Real, 3>> atoms;
    for (int i = 0; i < 600; ++i)
      atoms.push_back({Real((-3 + 20 * u(rng)) * 0.7), Real((-2 + 14 * u(rng)) * 0.7), Real((-4 + 17 * u(rng)) * 0.7)});
    for (int t = 0; t < 20; ++t) {
      Real bmin[3], bmax[3];
      for (int d = 0; d < 3; ++d) bmin[d] = Real(-4 + 16 * u(rng)), bmax[d] = bmin[d] + Real(3 * u(rng));
      check_rows_cover<Real>(g, atoms, bmin, bmax, Real(0.5 + 3 * u(rng)));
    }
  }
  {
    // Periodic, a box smaller than 2a in y: rows wrap, several images of one atom come in.
    msm::BinGrid<Real> g{
        {12, 5, 9}, {0, 0, 0}, {Real(0.75), Real(0.8), Real(0.6)}, {Real(9.0), Real(4.0), Real(5.4)}, 1};
    std::vector<std::array<Real, 3>> atoms;
    for (int i = 0; i < 300; ++i) atoms.push_back({Real(9.0 * u(rng)), Real(4.0 * u(rng)), Real(5.4 * u(rng))});
    for (int t = 0; t < 20; ++t) {
      Real bmin[3], bmax[3];
      for (int d = 0; d < 3; ++d) bmin[d] = Real(-6 + 18 * u(rng)), bmax[d] = bmin[d] + Real(2 * u(rng));
      check_rows_cover<Real>(g, atoms, bmin, bmax, Real(0.5 + 3.5 * u(rng)));
    }
  }
}

TEST(MsmBins, TileRowsHoldEveryAtomImageWithinTheCutoffOnce) {
  check_tile_rows<double>();
  check_tile_rows<float>();  // the GPU kernel's precision
}

// Brute force over atoms and images of the short-range part at the lattice points.
std::vector<double> short_range_brute(const MsmPlan& plan, const MsmAtoms& at) {
  std::vector<double> out(plan.lattice_points(), 0.0);
  const int span = plan.periodic ? 3 : 0;
  for (size_t p = 0; p < out.size(); ++p) {
    const int i = static_cast<int>(p % plan.lattice_dims[0]),
              j = static_cast<int>((p / plan.lattice_dims[0]) % plan.lattice_dims[1]),
              k = static_cast<int>(p / (static_cast<size_t>(plan.lattice_dims[0]) * plan.lattice_dims[1]));
    const double x[3] = {i * plan.lattice_spacing[0] - plan.grid_origin[0],
                         j * plan.lattice_spacing[1] - plan.grid_origin[1],
                         k * plan.lattice_spacing[2] - plan.grid_origin[2]};
    double v = 0;
    for (size_t a = 0; a < at.q.size(); ++a)
      for (int nz = -span; nz <= span; ++nz)
        for (int ny = -span; ny <= span; ++ny)
          for (int nx = -span; nx <= span; ++nx) {
            const double dx = x[0] - at.x[a] - nx * plan.box[0], dy = x[1] - at.y[a] - ny * plan.box[1],
                         dz = x[2] - at.z[a] - nz * plan.box[2];
            v += at.q[a] * msm::short_range_term<3>(dx * dx + dy * dy + dz * dz, plan.floor * plan.floor,
                                                    plan.a * plan.a, plan.coef.data());
          }
    out[p] = v;
  }
  return out;
}

// Only the summation order differs: rounding ~ atoms * 1e-16 of the largest value.
void expect_short_range_is_brute_force(const MsmPlan& plan, const ChargeList& c, const Grid3& g) {
  const MsmAtoms at = msm_atoms(plan, c, g);
  std::vector<double> got;
  msm_short_range_cpu(plan, at, got);
  const std::vector<double> want = short_range_brute(plan, at);
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12 * scale) << i;
}

TEST(MsmCpu, ShortRangeSumMatchesBruteForceOpenAndPeriodic) {
  {
    Grid3 g = lattice({13, 11, 17}, {-1.0, 0.5, 2.0}, {0.5, 0.6, 0.45});
    const ChargeList c = random_charges(700, {-3, -2, 0}, {8, 8, 11}, 1);
    MsmParams p;
    p.cutoff = 2.2;
    expect_short_range_is_brute_force(make_msm_plan(c, g, p, 0.25), c, g);
  }
  {
    // Periodic, box 6 x 4.5 x 5 with a = 2.6 (> half the box in y): up to 3 images per atom.
    const Box box = periodic_box({-1, 2, 0}, {6, 4.5, 5});
    Grid3 g = lattice({9, 8, 7}, {-2.0, 1.0, -1.5}, {0.9, 0.8, 1.1});  // sticks out of the box
    const ChargeList c = random_charges(250, {-1, 2, 0}, {5, 6.5, 5}, 2);
    MsmParams p;
    p.cutoff = 2.6;
    p.periodic = true;
    expect_short_range_is_brute_force(make_msm_plan(c, g, p, 0.3, &box), c, g);
  }
}

// ---- Whole maps -------------------------------------------------------------------------------

struct OpenCase {
  const char* name;
  std::array<int, 3> dims;
  std::array<double, 3> origin, spacing;
  size_t atoms;
  std::array<double, 3> lo, hi;  // where the atoms are
  int order;
};

double open_error(const OpenCase& k, const MsmParams& p, double floor, MsmPlan* used = nullptr) {
  const ChargeList c = random_charges(k.atoms, k.lo, k.hi, 7);
  Grid3 msm = lattice(k.dims, k.origin, k.spacing), exact = msm;
  const MsmPlan plan = potential_msm_cpu(c, 332.0637, floor, p, nullptr, msm);
  potential_cpu(c, 332.0637, floor, exact);
  if (used) *used = plan;
  return rel_rms(msm.values, exact.values);
}

TEST(MsmCpu, OpenBoundaryMapsMatchTheExactSum) {
  const OpenCase cases[] = {
      {"cube, quintic", {41, 41, 41}, {0, 0, 0}, {0.5, 0.5, 0.5}, 3000, {0, 0, 0}, {20, 20, 20}, 6},
      {"cube, cubic", {41, 41, 41}, {0, 0, 0}, {0.5, 0.5, 0.5}, 3000, {0, 0, 0}, {20, 20, 20}, 4},
      // Odd sizes, anisotropic spacing, far origin, atoms beyond the lattice on every side.
      {"odd, far origin", {23, 37, 19}, {1000, -500, 20}, {0.8, 0.45, 1.1}, 2000, {995, -505, 15}, {1022, -480, 45}, 6},
      // A lattice far smaller than the atoms' region (one corner of it).
      {"corner", {15, 15, 15}, {0, 0, 0}, {0.5, 0.5, 0.5}, 2000, {-10, -10, -10}, {15, 15, 15}, 6},
  };
  for (const OpenCase& k : cases) {
    MsmParams p;
    p.order = k.order;
    MsmPlan plan;
    const double e = open_error(k, p, 0.25, &plan);
    std::printf("  %-16s %s: rel RMS %.2e\n", k.name, plan.describe().c_str(), e);
    EXPECT_LT(e, 1e-3) << k.name;
    EXPECT_GT(e, 1e-7) << k.name << ": suspiciously exact; is the long-range part computed at all?";
  }
}

TEST(MsmCpu, ErrorFallsWithTheGridSpacing) {
  // Same a, h halved: cubic error should fall ~8x, quintic ~30x; asserted: > 4x.
  const OpenCase k{"convergence", {33, 33, 33}, {0, 0, 0}, {0.5, 0.5, 0.5}, 2000, {0, 0, 0}, {16, 16, 16}, 4};
  for (int order : {4, 6}) {
    MsmParams p;
    p.order = order;
    p.cutoff = 3.0;
    p.grid_spacing = 1.0;
    const double coarse = open_error(k, p, 0.25);
    p.grid_spacing = 0.5;
    const double fine = open_error(k, p, 0.25);
    std::printf("  order %d, a = 3: h = 1 rel RMS %.2e, h = 0.5 rel RMS %.2e\n", order, coarse, fine);
    EXPECT_GT(coarse / fine, 4.0) << "order " << order;
  }
}

TEST(MsmCpu, SingleChargeAndEmptySystems) {
  Grid3 g = lattice({21, 21, 21}, {0, 0, 0}, {0.5, 0.5, 0.5}), exact = g;
  ChargeList one;
  one.add(5.1, 4.9, 5.3, -0.7);
  potential_msm_cpu(one, 1.0, 0.25, MsmParams{}, nullptr, g);
  potential_cpu(one, 1.0, 0.25, exact);
  EXPECT_LT(rel_rms(g.values, exact.values), 1e-3);
  ChargeList none;
  potential_msm_cpu(none, 1.0, 0.25, MsmParams{}, nullptr, g);
  for (double v : g.values) ASSERT_EQ(v, 0.0);
}

TEST(MsmCpu, AtomOrderChangesOnlyRounding) {
  const ChargeList c = random_charges(1500, {0, 0, 0}, {12, 12, 12}, 3);
  ChargeList r;
  for (size_t i = c.size(); i-- > 0;) r.add(c.x[i], c.y[i], c.z[i], c.q[i]);
  Grid3 a = lattice({25, 25, 25}, {0, 0, 0}, {0.5, 0.5, 0.5}), b = a;
  MsmParams p;
  p.cutoff = 2.5;
  potential_msm_cpu(c, 1.0, 0.25, p, nullptr, a);
  potential_msm_cpu(r, 1.0, 0.25, p, nullptr, b);
  EXPECT_LT(rel_rms(b.values, a.values), 1e-13);
}

TEST(Ewald, TheTestsEwaldSumDoesNotDependOnBeta) {
  const std::array<double, 3> L = {7, 8.5, 6};
  const ChargeList c = random_charges(40, {0, 0, 0}, L, 11);
  const std::vector<std::array<double, 3>> pts = {{1, 2, 3}, {6.9, 0.1, 5.5}, {3.3, 8, 0}, {c.x[0], c.y[0], c.z[0]}};
  const std::vector<double> a = test_ewald(c, L, 0.4, pts, 1.0), b = test_ewald(c, L, 0.4, pts, 0.7);
  for (size_t p = 0; p < pts.size(); ++p) EXPECT_NEAR(a[p], b[p], 1e-10 * std::fabs(a[p]) + 1e-12) << p;
}

TEST(Ewald, ProductionSumsMatchTheTestsEwaldSum) {
  const std::array<double, 3> L = {7, 8.5, 6};
  // One unit charge: EwaldKernel is its potential (the map of charge 1 at the origin).
  ChargeList one;
  one.add(0, 0, 0, 1.0);
  const EwaldKernel k(L);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0, 1);
  for (int t = 0; t < 10; ++t) {
    const std::array<double, 3> d = {L[0] * u(rng), L[1] * u(rng), L[2] * u(rng)};
    const double want = test_ewald(one, L, 1e-9, {d})[0];
    EXPECT_NEAR(k.potential(d[0], d[1], d[2]), want, 1e-12 * std::fabs(want) + 1e-12);
    const double r = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    EXPECT_NEAR(k.regular(d[0], d[1], d[2]), want - 1 / r, 1e-11);
  }
  // The self term: regular(0) is the limit of phi_E(d) - 1/|d|.
  EXPECT_NEAR(k.regular(0, 0, 0), k.regular(1e-5, 0, 0), 1e-8);
  // The sampled check's sum (min image + structure factors, ~1e-7 of the terms).
  const ChargeList c = random_charges(150, {0, 0, 0}, L, 12);
  std::vector<std::array<double, 3>> pts;
  for (int t = 0; t < 20; ++t) pts.push_back({L[0] * u(rng), L[1] * u(rng), L[2] * u(rng)});
  pts.push_back({c.x[3], c.y[3], c.z[3]});  // on an atom: the floor
  const std::vector<double> want = test_ewald(c, L, 0.35, pts), got = ewald_potential_at(c, L, 0.35, pts);
  EXPECT_LT(rel_rms(got, want), 2e-6);
}

struct PeriodicCase {
  const char* name;
  std::array<double, 3> lo, L;
  std::array<int, 3> dims;
  std::array<double, 3> spacing;
  size_t atoms;
  bool neutral;
  double cutoff;
};

TEST(MsmCpu, PeriodicMapsMatchAnEwaldSum) {
  const PeriodicCase cases[] = {
      {"cube", {0, 0, 0}, {12, 12, 12}, {13, 13, 13}, {1, 1, 1}, 400, false, 0},
      {"neutral, shifted box", {-3, 5, 1}, {12, 12, 12}, {9, 9, 9}, {1.5, 1.5, 1.5}, 400, true, 0},
      {"brick", {0, 0, 0}, {14, 9, 11}, {11, 7, 9}, {1.4, 1.5, 1.375}, 400, false, 0},
      // a beyond half the box: the short range counts several images of an atom.
      {"small box", {0, 0, 0}, {6, 7, 6.5}, {13, 15, 14}, {0.5, 0.5, 0.5}, 150, false, 3.5},
  };
  for (const PeriodicCase& k : cases) {
    const Box box = periodic_box(k.lo, k.L);
    ChargeList c = random_charges(k.atoms, k.lo, {k.lo[0] + k.L[0], k.lo[1] + k.L[1], k.lo[2] + k.L[2]}, 21);
    if (k.neutral) {
      double Q = 0;
      for (double q : c.q) Q += q;
      for (double& q : c.q) q -= Q / c.size();
    }
    Grid3 g = lattice(k.dims, k.lo, k.spacing);
    MsmParams p;
    p.periodic = true;
    p.cutoff = k.cutoff;
    const MsmPlan plan = potential_msm_cpu(c, 1.0, 0.25, p, &box, g);
    // The Ewald sum wants atoms and points in [0, L): shift everything by -lo.
    ChargeList shifted = c;
    for (size_t i = 0; i < c.size(); ++i) shifted.x[i] -= k.lo[0], shifted.y[i] -= k.lo[1], shifted.z[i] -= k.lo[2];
    std::vector<std::array<double, 3>> pts;
    for (size_t q = 0; q < g.size(); ++q) {
      std::array<double, 3> x = point_of(g, q);
      for (int d = 0; d < 3; ++d) x[d] -= k.lo[d];
      pts.push_back(x);
    }
    const std::vector<double> want = test_ewald(shifted, k.L, 0.25, pts);
    const double e = rel_rms(g.values, want);
    std::printf("  %-22s %s: rel RMS %.2e\n", k.name, plan.describe().c_str(), e);
    EXPECT_LT(e, 1e-3) << k.name;
  }
}

TEST(MsmCpu, PeriodicNeedsAPeriodicBoxAndCutoffAboveTheFloor) {
  Grid3 g = lattice({5, 5, 5}, {0, 0, 0}, {1, 1, 1});
  const ChargeList c = random_charges(10, {0, 0, 0}, {4, 4, 4}, 1);
  MsmParams p;
  p.periodic = true;
  EXPECT_THROW(make_msm_plan(c, g, p, 0.5), std::invalid_argument);
  Box open = periodic_box({0, 0, 0}, {4, 4, 4});
  open.periodic = false;
  EXPECT_THROW(make_msm_plan(c, g, p, 0.5, &open), std::invalid_argument);
  MsmParams q;
  q.cutoff = 0.4;
  EXPECT_THROW(make_msm_plan(c, g, q, 0.5), std::invalid_argument);
  q.cutoff = 0;
  q.order = 5;
  EXPECT_THROW(make_msm_plan(c, g, q, 0.5), std::invalid_argument);
}

TEST(MsmPlan, GridsCoverTheStencilsAndPeriodicGridsDivideTheBox) {
  const ChargeList c = random_charges(500, {-4, 0, 3}, {20, 9, 30}, 5);
  const Grid3 g = lattice({30, 20, 40}, {-2, 1, 5}, {0.5, 0.4, 0.6});
  MsmParams p;
  p.cutoff = 1.5;
  const MsmPlan plan = make_msm_plan(c, g, p, 0.2);
  ASSERT_GE(plan.levels.size(), 2u);
  // Each coarser level is at most about half the size per direction plus the stencil margin.
  for (size_t l = 1; l < plan.levels.size(); ++l)
    for (int d = 0; d < 3; ++d) {
      EXPECT_LE(plan.levels[l].dims[d], plan.levels[l - 1].dims[d] / 2 + p.order) << l;
      EXPECT_DOUBLE_EQ(plan.levels[l].h[d], 2 * plan.levels[l - 1].h[d]);
    }
  // Interpolation indices stay inside the finest grid (make_msm_plan checks) and the weights of
  // each lattice index add up to 1.
  for (int d = 0; d < 3; ++d)
    for (int i = 0; i < g.dims[d]; ++i) {
      double s = 0;
      for (int k = 0; k < p.order; ++k) s += plan.interp_weight[d][static_cast<size_t>(i) * p.order + k];
      EXPECT_NEAR(s, 1.0, 1e-12);
    }
  const Box box = periodic_box({0, 0, 0}, {30, 17, 23});
  MsmParams q;
  q.periodic = true;
  q.grid_spacing = 0.9;
  const MsmPlan per = make_msm_plan(c, lattice({10, 10, 10}, {0, 0, 0}, {3, 1.7, 2.3}), q, 0.5, &box);
  const MsmLevel& top = per.levels.back();
  for (int d = 0; d < 3; ++d) {
    EXPECT_LE(per.levels[0].h[d], 0.9);
    EXPECT_NEAR(per.levels[0].h[d] * per.levels[0].dims[d], per.box[d], 1e-9);
    EXPECT_NEAR(top.h[d] * top.dims[d], per.box[d], 1e-9);
  }
  EXPECT_GE(std::min({top.dims[0], top.dims[1], top.dims[2]}), 4);
}

TEST(MsmPlan, GpuFormCarriesThePlan) {
  const ChargeList c = random_charges(300, {-1, 0, 2}, {9, 8, 12}, 6);
  const Grid3 g = lattice({17, 13, 21}, {0, 0, 2}, {0.5, 0.6, 0.5});
  MsmParams p;
  p.cutoff = 2.0;
  const MsmPlan plan = make_msm_plan(c, g, p, 0.25);
  const dcs::MsmGpuPlan gp = msm_gpu_plan(plan);
  EXPECT_EQ(gp.order, plan.order);
  EXPECT_EQ(gp.split, plan.split);
  EXPECT_EQ(gp.nx, 17);
  EXPECT_EQ(gp.nz, 21);
  EXPECT_FLOAT_EQ(gp.a * gp.a, float(plan.a * plan.a));
  EXPECT_FLOAT_EQ(gp.floor2, 0.0625f);
  ASSERT_EQ(gp.levels.size(), plan.levels.size());
  for (size_t l = 0; l < plan.levels.size(); ++l)
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(gp.levels[l].lo[d], plan.levels[l].lo[d]);
      EXPECT_EQ(gp.levels[l].dims[d], plan.levels[l].dims[d]);
    }
  EXPECT_EQ(gp.stencil.size(), plan.stencil.size());
  EXPECT_EQ(gp.row_reach, plan.row_reach);
  EXPECT_EQ(gp.top.size(), plan.top.size());
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(gp.interp_index[d], plan.interp_index[d]);
    EXPECT_EQ(gp.interp_weight[d].size(), static_cast<size_t>(g.dims[d]) * plan.order);
  }
  for (int j = 0; j <= plan.split; ++j) EXPECT_FLOAT_EQ(gp.coef[j], float(plan.coef[j]));
  const std::vector<float> xyzq = msm_gpu_atoms(msm_atoms(plan, c, g));
  ASSERT_EQ(xyzq.size(), 4 * c.size());
  EXPECT_FLOAT_EQ(xyzq[2], float(c.z[0] - 2.0));  // relative to the lattice (and grid) origin
  EXPECT_FLOAT_EQ(xyzq[3], float(c.q[0]));
}

TEST(MsmAccuracy, SampledEstimateTracksTheTrueError) {
  // 256 sampled points estimate the RMS error over all points with a relative standard error of
  // ~sqrt(kurtosis / (4 * 256)) (~10 % for these error distributions): asserted within 0.6x..1.6x.
  const ChargeList c = random_charges(3000, {0, 0, 0}, {20, 20, 20}, 17);
  Grid3 msm = lattice({41, 41, 41}, {0, 0, 0}, {0.5, 0.5, 0.5}), exact = msm;
  MsmParams p;
  p.order = 4;
  p.cutoff = 2.0;
  p.grid_spacing = 0.5;  // a / h = 4: a larger error, well above rounding
  potential_msm_cpu(c, 2.0, 0.25, p, nullptr, msm);
  potential_cpu(c, 2.0, 0.25, exact);
  const double truth = rel_rms(msm.values, exact.values);
  const MapAccuracy est = sampled_accuracy(c, 2.0, 0.25, nullptr, msm, 256);
  std::printf("  true rel RMS %.3e, estimate from %d points %.3e\n", truth, est.samples, est.rel_rms);
  EXPECT_EQ(est.samples, 256);
  EXPECT_GT(est.rel_rms, 0.6 * truth);
  EXPECT_LT(est.rel_rms, 1.6 * truth);
  // The exact map itself: zero error, to rounding.
  EXPECT_LT(sampled_accuracy(c, 2.0, 0.25, nullptr, exact, 256).rel_rms, 1e-13);
  // More samples than points: every point, exactly the true value.
  Grid3 small = lattice({5, 4, 3}, {0, 0, 0}, {1, 1, 1}), small_exact = small;
  potential_msm_cpu(c, 2.0, 0.25, p, nullptr, small);
  potential_cpu(c, 2.0, 0.25, small_exact);
  const MapAccuracy all = sampled_accuracy(c, 2.0, 0.25, nullptr, small, 1000);
  EXPECT_EQ(all.samples, 60);
  EXPECT_NEAR(all.rel_rms, rel_rms(small.values, small_exact.values), 1e-12);
}

TEST(MsmAccuracy, CostModelPrefersMsmOnlyForLargeMaps) {
  const ChargeList small = random_charges(200, {0, 0, 0}, {10, 10, 10}, 1);
  const Grid3 g = lattice({21, 21, 21}, {0, 0, 0}, {0.5, 0.5, 0.5});
  const MapCost cs = estimate_map_cost(make_msm_plan(small, g, MsmParams{}, 0.25), small.size(), false);
  EXPECT_LT(cs.exact, cs.msm) << "200 atoms on 21^3: the exact sum is cheaper";
  const ChargeList big = random_charges(100000, {0, 0, 0}, {100, 100, 100}, 1);
  const Grid3 gb = lattice({201, 201, 201}, {0, 0, 0}, {0.5, 0.5, 0.5});
  for (bool gpu : {false, true}) {
    MsmParams p;
    p.gpu = gpu;
    const MapCost cb = estimate_map_cost(make_msm_plan(big, gb, p, 0.25), big.size(), gpu);
    EXPECT_GT(cb.exact, 20 * cb.msm) << (gpu ? "gpu" : "cpu") << ": 100k atoms on 201^3";
  }
}

// ---- Methods in the map pipeline ----------------------------------------------------------------

TEST(MsmMaps, SeriesComputesMsmMapsAndEstimatesTheirError) {
  const Box box = test::make_box({0, 0, 0}, {16, 16, 16}, false);
  const ChargeList c = random_charges(2000, {0, 0, 0}, {16, 16, 16}, 31);
  MapSettings m;
  m.spacing = 0.5;
  m.kernel = "cpu";
  m.method = "msm";
  PotentialMapSeries series(m, Units::real());
  const Grid3 map = series.add(charged_state(c, box));
  EXPECT_EQ(series.method(), MapMethod::Msm);
  Grid3 exact = map;
  potential_cpu(c, Units::real().coulomb, m.floor(), exact);
  const double e = rel_rms(map.values, exact.values);
  std::printf("  series msm: %s; true rel RMS %.2e, estimated %.2e from %d points\n",
              series.method_description().c_str(), e, series.accuracy().rel_rms, series.accuracy().samples);
  EXPECT_LT(e, 1e-3);
  EXPECT_EQ(series.accuracy().samples, 256);
  EXPECT_GT(series.accuracy().rel_rms, 0.5 * e);
  EXPECT_LT(series.accuracy().rel_rms, 2.0 * e);
  EXPECT_NE(series.summary().find("estimated relative RMS error"), std::string::npos) << series.summary();
  EXPECT_NE(series.method_description().find("quintic"), std::string::npos);
  // A second frame: same a and h, the average of both.
  ChargeList c2 = c;
  for (double& x : c2.x) x = std::fmod(x + 1.3, 16.0);
  const Grid3 map2 = series.add(charged_state(c2, box));
  Grid3 exact2 = map2;
  potential_cpu(c2, Units::real().coulomb, m.floor(), exact2);
  EXPECT_LT(rel_rms(map2.values, exact2.values), 1e-3);
  EXPECT_EQ(series.frames(), 2);
}

TEST(MsmMaps, AutoKeepsTheExactSumForSmallMapsAndPeriodicNeedsMsm) {
  Box box = periodic_box({0, 0, 0}, {8, 8, 8});
  const ChargeList c = random_charges(100, {0, 0, 0}, {8, 8, 8}, 32);
  MapSettings m;
  m.spacing = 0.5;
  m.kernel = "cpu";
  m.method = "auto";
  {
    PotentialMapSeries series(m, Units::lj());
    const Grid3 map = series.add(charged_state(c, box));
    EXPECT_EQ(series.method(), MapMethod::Exact) << series.method_description();
    EXPECT_NE(series.method_description().find("auto: exact (estimated"), std::string::npos)
        << series.method_description();
    Grid3 exact = map;
    potential_cpu(c, 1.0, m.floor(), exact);
    EXPECT_EQ(map.values, exact.values);  // the exact path, unchanged
  }
  {
    // A large map (not computed): auto picks msm on either backend.
    const ChargeList big = random_charges(200000, {0, 0, 0}, {150, 150, 150}, 33);
    const Grid3 lat = lattice({301, 301, 301}, {0, 0, 0}, {0.5, 0.5, 0.5});
    Box open = box;
    open.periodic = false;
    for (bool gpu : {false, true}) {
      std::string why;
      EXPECT_EQ(choose_map_method(big, lat, m, open, gpu, &why), MapMethod::Msm) << why;
    }
  }
  {
    // Periodic: auto is msm, the map is the Ewald-like periodic one.
    m.boundary = "periodic";
    PotentialMapSeries series(m, Units::lj());
    const Grid3 map = series.add(charged_state(c, box));
    EXPECT_EQ(series.method(), MapMethod::Msm);
    std::vector<std::array<double, 3>> pts;
    for (size_t p = 0; p < map.size(); p += 37) pts.push_back(point_of(map, p));
    const std::vector<double> want = test_ewald(c, {8, 8, 8}, m.floor(), pts);
    std::vector<double> got;
    for (size_t p = 0; p < map.size(); p += 37) got.push_back(map.values[p]);
    EXPECT_LT(rel_rms(got, want), 1e-3);
  }
  m.method = "exact";
  EXPECT_THROW(PotentialMapSeries(m, Units::lj()), std::invalid_argument);
  m.method = "msm";
  Box open = box;
  open.periodic = false;
  PotentialMapSeries needs_box(m, Units::lj());
  EXPECT_THROW(needs_box.add(charged_state(c, open)), std::invalid_argument);
  m.method = "fast";
  EXPECT_THROW(PotentialMapSeries(m, Units::lj()), std::invalid_argument);
}

const char* kMsmConfig = R"(
units: real
steps: 10
system:
  boundary: open
  types:
    - {name: A, mass: 10, charge: 1.0}
    - {name: B, mass: 10, charge: -0.5}
  lattice: {kind: sc, cells: 5, density: 0.01}
force_field:
  pair:
    - potential: lj
      cutoff: 3.0
      coeffs:
        - {types: [A, A], epsilon: 0.1, sigma: 1.0}
        - {types: [A, B], epsilon: 0.1, sigma: 1.0}
        - {types: [B, B], epsilon: 0.1, sigma: 1.0}
integrator: {kind: langevin, dt: 0.001, temperature: 300, seed: 5}
)";

std::string with_map(const std::string& keys) {
  return std::string(kMsmConfig) + "analysis:\n  potential_map: {every: 5, spacing: 1.0" + keys + "}\n";
}

TEST(MsmMaps, ConfigKeysAndTheirErrors) {
  const RunConfig cfg = parse_config(
      with_map(", method: msm, msm_cutoff: 6, msm_grid_spacing: 1.5, msm_order: 4, error_samples: 0"), "m.yaml");
  EXPECT_EQ(cfg.potential_map.settings.method, "msm");
  EXPECT_EQ(cfg.potential_map.settings.boundary, "open");
  const MapSettings m = cfg.potential_map.settings;
  EXPECT_EQ(m.msm_cutoff, 6.0);
  EXPECT_EQ(m.msm_grid_spacing, 1.5);
  EXPECT_EQ(m.msm_order, 4);
  EXPECT_EQ(m.error_samples, 0);
  const RunConfig def = parse_config(with_map(""), "d.yaml");
  EXPECT_EQ(def.potential_map.settings.method, "exact");
  EXPECT_EQ(def.potential_map.settings.msm_order, 6);
  EXPECT_EQ(def.potential_map.settings.error_samples, 256);
  const struct {
    std::string text, message;
  } bad[] = {
      {with_map(", method: fast"), "analysis.potential_map.method: expected one of exact, msm, auto, got 'fast'"},
      {with_map(", method: msm, boundary: periodic"),
       "analysis.potential_map.boundary: periodic needs a periodic system"},
      {with_map(", msm_order: 5"), "analysis.potential_map.msm_order: expected 4 (cubic) or 6 (quintic)"},
      {with_map(", msm_cutoff: -1"), "analysis.potential_map.msm_cutoff: expected"},
  };
  for (const auto& b : bad) {
    try {
      parse_config(b.text, "bad.yaml");
      ADD_FAILURE() << "no error for: " << b.message;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
  std::string periodic = with_map(", boundary: periodic");
  periodic.replace(periodic.find("boundary: open"), 14, "boundary: periodic");
  try {
    parse_config(periodic, "p.yaml");
    ADD_FAILURE() << "method exact with boundary periodic must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("boundary periodic needs method msm or auto"), std::string::npos) << e.what();
  }
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "pairmd_msm_" + name; }

// `pairmd ARGS`; `output` gets what it printed.
int run_pairmd(const std::string& args, std::string* output) {
  const test::ChildResult r = test::run_pairmd_shell(args, ::testing::TempDir());
  *output = r.out + r.err;
  return r.exit_code;
}

TEST(MsmMaps, PotentialMapAndPlaceIonsTakeMethod) {
  const std::string cfg_path = temp_path("cfg.yaml");
  {
    std::ofstream f(cfg_path);
    f << with_map(", region: particles, padding: 3.0");
  }
  std::string out;
  const std::string dx = temp_path("msm.dx");
  ASSERT_EQ(
      run_pairmd("potential-map --config " + cfg_path + " --spacing 0.5 --kernel cpu --method msm --out " + dx, &out),
      0)
      << out;
  EXPECT_NE(out.find("method: msm; msm: a ="), std::string::npos) << out;
  EXPECT_NE(out.find("accuracy: estimated relative RMS error"), std::string::npos) << out;
  const Grid3 got = read_dx(dx);
  const RunConfig cfg = load_config(cfg_path);
  MapSettings m = cfg.potential_map.settings;
  m.spacing = 0.5;
  const BuiltSystem sys = build_system(cfg);
  Grid3 want = map_lattice(sys.state, m, cfg.model.units);
  potential_cpu(charged_particles(sys.state), cfg.model.units.coulomb, m.floor(), want);
  ASSERT_EQ(got.dims, want.dims);
  EXPECT_LT(rel_rms(got.values, want.values), 1e-3);
  {
    std::ifstream f(dx);
    std::string title;
    std::getline(f, title);
    EXPECT_NE(title.find("multilevel summation, estimated relative RMS error"), std::string::npos) << title;
  }
  EXPECT_EQ(run_pairmd("potential-map --config " + cfg_path + " --method fastest", &out), 2) << out;
  EXPECT_NE(out.find("expected one of: exact, msm, auto"), std::string::npos) << out;
  EXPECT_EQ(run_pairmd("potential-map --config " + cfg_path + " --boundary periodic --method exact", &out), 2) << out;
  // place-ions on an msm map: the first ion goes where the exact map is (to the map's error)
  // as low as at the exact map's choice; this symmetric system has several equivalent places.
  const std::string ions_msm = temp_path("ions_msm.yaml"), ions_exact = temp_path("ions_exact.yaml");
  ASSERT_EQ(run_pairmd("place-ions --config " + cfg_path +
                           " --count 2 --type B --min-distance 2.0 --spacing 0.5 "
                           "--kernel cpu --method msm --out " +
                           ions_msm,
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("multilevel summation"), std::string::npos) << out;
  ASSERT_EQ(run_pairmd("place-ions --config " + cfg_path +
                           " --count 2 --type B --min-distance 2.0 --spacing 0.5 "
                           "--kernel cpu --method exact --out " +
                           ions_exact,
                       &out),
            0)
      << out;
  const BuiltSystem a = build_system(load_config(ions_msm)), b = build_system(load_config(ions_exact));
  ASSERT_EQ(a.state.size(), b.state.size());
  ASSERT_EQ(a.state.size(), sys.state.size() + 2);
  auto exact_at = [&](const Vec3d& x) {
    double v = 0;
    const ChargeList c = charged_particles(sys.state);
    for (size_t i = 0; i < c.size(); ++i)
      v += c.q[i] / std::max(m.floor(), std::sqrt((x.x - c.x[i]) * (x.x - c.x[i]) + (x.y - c.y[i]) * (x.y - c.y[i]) +
                                                  (x.z - c.z[i]) * (x.z - c.z[i])));
    return cfg.model.units.coulomb * v;
  };
  double vmax = 0;
  for (double v : want.values) vmax = std::max(vmax, std::fabs(v));
  const size_t first = sys.state.size();
  EXPECT_NEAR(exact_at(a.state.position[first]), exact_at(b.state.position[first]), 1e-3 * vmax);
}

}  // namespace
}  // namespace pairmd
