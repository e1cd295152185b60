// Particle-mesh Ewald (potentials/pme.h, coulomb_long): the CPU solver against an Ewald sum
// written here, converged to ~1e-14 and sharing no code with pairmd's (a real-space sum over the
// 27 nearest images and a reciprocal sum over every wave vector up to |k| <= 12 per axis), the
// NaCl Madelung constant, forces against the energy's finite differences, the virial, and the
// config's errors. The tests of the `PmeTargets` suite run on every target (the CPU here; the
// CUDA backend with each strategy in pairmd_gpu_tests, PAIRMD_PHYSICS_ON_GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "backends/cpu_backend.h"
#include "engine/config.h"
#include "engine/system_builder.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// ---- the reference: a plain Ewald sum ------------------------------------------------------

struct EwaldResult {
  double energy = 0;
  std::vector<Vec3d> force;
};

// E and F of point charges in a cubic periodic box of edge L (C = 1), with the neutralising
// background for a net charge. alpha L = 5.9 puts erfc(alpha L) at 1e-16, so the 27 images
// hold every real-space term that counts; |k| <= kmax = 12 takes the reciprocal terms down to
// exp(-pi^2 k^2 / (alpha L)^2) ~ 1e-17.
EwaldResult direct_ewald(const std::vector<Vec3d>& x, const std::vector<double>& q, double L, double alpha_L = 5.9,
                         int kmax = 12) {
  const size_t n = x.size();
  const double alpha = alpha_L / L, V = L * L * L;
  EwaldResult r;
  r.force.assign(n, Vec3d{0, 0, 0});
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      for (int a = -1; a <= 1; ++a)
        for (int b = -1; b <= 1; ++b)
          for (int c = -1; c <= 1; ++c) {
            if (i == j && a == 0 && b == 0 && c == 0) continue;
            Vec3d d = x[i] - x[j];
            d.x -= L * std::round(d.x / L);
            d.y -= L * std::round(d.y / L);
            d.z -= L * std::round(d.z / L);
            d += Vec3d{a * L, b * L, c * L};
            const double rr = std::sqrt(dot(d, d));
            if (rr >= L) continue;
            const double qq = q[i] * q[j];
            r.energy += 0.5 * qq * std::erfc(alpha * rr) / rr;
            const double fdivr =
                qq * (std::erfc(alpha * rr) / rr + 2 * alpha / std::sqrt(M_PI) * std::exp(-alpha * alpha * rr * rr)) /
                (rr * rr);
            r.force[i] += fdivr * d;
          }
  for (int kx = -kmax; kx <= kmax; ++kx)
    for (int ky = -kmax; ky <= kmax; ++ky)
      for (int kz = -kmax; kz <= kmax; ++kz) {
        if (kx == 0 && ky == 0 && kz == 0) continue;
        const Vec3d m{kx / L, ky / L, kz / L};
        const double m2 = dot(m, m);
        const double f = std::exp(-M_PI * M_PI * m2 / (alpha * alpha)) / m2;
        std::complex<double> s = 0;
        std::vector<std::complex<double>> e(n);
        for (size_t j = 0; j < n; ++j) {
          e[j] = std::polar(1.0, 2 * M_PI * dot(m, x[j]));
          s += q[j] * e[j];
        }
        r.energy += f * std::norm(s) / (2 * M_PI * V);
        for (size_t i = 0; i < n; ++i) r.force[i] += (2 * q[i] / V * f * std::imag(std::conj(s) * e[i])) * m;
      }
  double q2 = 0, total = 0;
  for (double v : q) {
    q2 += v * v;
    total += v;
  }
  r.energy += -alpha / std::sqrt(M_PI) * q2 - M_PI * total * total / (2 * V * alpha * alpha);
  return r;
}

// ---- systems ------------------------------------------------------------------------------

// A model with one coulomb_long term (C = 1, LJ units) and PME at `accuracy`.
Model pme_model(double cutoff, double accuracy, int order) {
  Model m;
  m.units = Units::lj();
  PairTerm t;
  t.kind = PairKind::CoulombLong;
  PairCoeffs c;
  c.rcut = cutoff;
  c.prefactor = 1.0;
  c.ewald_alpha = ewald_alpha(cutoff, accuracy);
  t.coeffs = {c};
  m.force_field.ntypes = 1;
  m.force_field.pair_terms = {t};
  m.integrator.kind = IntegratorKind::VelocityVerlet;
  m.integrator.dt = 0.001;
  m.neighbor.skin = 0.3;
  PmeSettings& s = m.electrostatics;
  s.enabled = true;
  s.accuracy = accuracy;
  s.order = order;
  s.term = 0;
  s.cutoff = cutoff;
  s.alpha = c.ewald_alpha;
  s.prefactor = 1.0;
  return m;
}

// n random charges of magnitude 0.1..1 in a cubic box of edge L, at least 0.8 apart; the last
// one makes the sum `net`.
SystemState random_ions(size_t n, double L, double net, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, L), mag(0.1, 1.0);
  ChargeList c;
  std::vector<Vec3d> placed;
  double total = 0;
  while (placed.size() < n) {
    const Vec3d x{u(rng), u(rng), u(rng)};
    bool clash = false;
    for (const Vec3d& y : placed) {
      Vec3d d = x - y;
      for (double* v : {&d.x, &d.y, &d.z}) *v -= L * std::round(*v / L);
      clash = clash || dot(d, d) < 0.64;
    }
    if (clash) continue;
    placed.push_back(x);
    const double q = placed.size() == n ? net - total : (rng() & 1 ? 1.0 : -1.0) * mag(rng);
    total += q;
    c.add(x.x, x.y, x.z, q);
  }
  return test::charged_state(c, test::make_box({0, 0, 0}, {L, L, L}, true));
}

// Chains of `length` charges (magnitude 0.1..1, random sign; the last makes the box neutral),
// random walks of unit steps in a cubic box of edge L with no two beads closer than 0.8; bonds
// between neighbours along each chain.
struct Chains {
  SystemState state;
  std::vector<Bond> bonds;
};
Chains random_chains(int count, int length, double L, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), mag(0.1, 1.0);
  std::vector<Vec3d> placed;
  auto free_at = [&](Vec3d x) {
    for (const Vec3d& y : placed) {
      Vec3d d = x - y;
      for (double* v : {&d.x, &d.y, &d.z}) *v -= L * std::round(*v / L);
      if (dot(d, d) < 0.64) return false;
    }
    return true;
  };
  Chains c;
  while (static_cast<int>(placed.size()) < count * length) {
    const bool first = placed.size() % length == 0;
    Vec3d x{L * u(rng), L * u(rng), L * u(rng)};
    if (!first) {  // a unit step in a random direction from the chain's last bead
      const double z = 2 * u(rng) - 1, phi = 2 * M_PI * u(rng), s = std::sqrt(1 - z * z);
      x = placed.back() + Vec3d{s * std::cos(phi), s * std::sin(phi), z};
      for (double* v : {&x.x, &x.y, &x.z}) *v -= L * std::floor(*v / L);
    }
    if (!free_at(x)) {
      if (!first && u(rng) < 0.05) {  // stuck: the chain starts again
        placed.resize(placed.size() - placed.size() % length);
        while (!c.bonds.empty() && c.bonds.back().j >= static_cast<int>(placed.size())) c.bonds.pop_back();
      }
      continue;
    }
    if (!first) c.bonds.push_back({static_cast<int>(placed.size()) - 1, static_cast<int>(placed.size()), 0});
    placed.push_back(x);
  }
  ChargeList q;
  double total = 0;
  for (size_t i = 0; i < placed.size(); ++i) {
    const double v = i + 1 == placed.size() ? -total : (rng() & 1 ? 1.0 : -1.0) * mag(rng);
    total += v;
    q.add(placed[i].x, placed[i].y, placed[i].z, v);
  }
  c.state = test::charged_state(q, test::make_box({0, 0, 0}, {L, L, L}, true));
  return c;
}

double rel_rms_force(const std::vector<Vec3d>& got, const std::vector<Vec3d>& want) {
  double se = 0, sr = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Vec3d d = got[i] - want[i];
    se += dot(d, d);
    sr += dot(want[i], want[i]);
  }
  return std::sqrt(se / sr);
}

// The PME variant of the polyelectrolyte example, small: charged chains and counterions in a
// periodic box, WCA between all beads, coulomb_long with l_B = 2.
// short_range scales FENE's k and WCA's epsilon (1: the example's).
std::string pme_yaml(const std::string& extra = "", const std::string& exclusions = "exclusions: none",
                     double short_range = 1.0) {
  char eps[32], k[32];
  std::snprintf(eps, sizeof eps, "%.17g", short_range);
  std::snprintf(k, sizeof k, "%.17g", 30.0 * short_range);
  return R"(
units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  chains: {count: 6, length: 20, density: 0.1, bond: fene, monomer_type: M, charged_every: 2, counterion_type: C, seed: 9}
  relax: {steps: 300, max_move: 0.01}
force_field:
  )" + exclusions +
         R"(
  bonds: [{name: fene, potential: fene, k: )" +
         std::string(k) + R"(, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: )" +
         std::string(eps) + R"(, sigma: 1.0}, {types: [M, C], epsilon: )" + eps +
         R"(, sigma: 1.0}, {types: [C, C], epsilon: )" + eps + R"(, sigma: 1.0}]
    - potential: coulomb_long
      cutoff: 4.0
      bjerrum_length: 2.0
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 3}
neighbor: {skin: 0.4}
)" + extra;
}

#ifndef PAIRMD_PHYSICS_ON_GPU  // the CPU's own tests (pairmd_tests)

// ---- the method's pieces ------------------------------------------------------------------

TEST(Pme, BsplineWeightsSumToOneAndDerivativesAreTheGradient) {
  for (int order = kPmeMinOrder; order <= kPmeMaxOrder; ++order)
    for (double w : {0.0, 0.13, 0.5, 0.77, 0.999}) {
      double m[kPmeMaxOrder], dm[kPmeMaxOrder], mp[kPmeMaxOrder], mm[kPmeMaxOrder], scratch[kPmeMaxOrder];
      bspline_weights(w, order, m, dm);
      double sum = 0, dsum = 0;
      for (int t = 0; t < order; ++t) {
        sum += m[t];
        dsum += dm[t];
      }
      EXPECT_NEAR(sum, 1.0, 1e-14) << order << " " << w;
      EXPECT_NEAR(dsum, 0.0, 1e-14) << order << " " << w;
      const double h = 1e-6;
      if (w < h) continue;
      bspline_weights(w + h, order, mp, scratch);
      bspline_weights(w - h, order, mm, scratch);
      for (int t = 0; t < order; ++t) EXPECT_NEAR(dm[t], (mp[t] - mm[t]) / (2 * h), 1e-8) << order << " " << w;
    }
}

TEST(Pme, ParametersFollowTheAccuracy) {
  // alpha = sqrt(-ln(2 delta)) / rc (OpenMM's); K = ceil(c_n alpha L / delta^(1/n)) to a 2-3-5-7 size.
  EXPECT_NEAR(ewald_alpha(10.0, 5e-4), std::sqrt(-std::log(1e-3)) / 10.0, 1e-15);
  EXPECT_EQ(fft_friendly_size(61), 63);
  EXPECT_EQ(fft_friendly_size(11), 12);
  EXPECT_EQ(pme_grid_points(0.3, 50.0, 1e-5, 5), 135);   // 0.9 * 0.3 * 50 / 0.1 = 135 = 3^3 5
  EXPECT_EQ(pme_grid_points(0.3, 51.0, 1e-5, 5), 140);   // 137.7 -> 138 = 2 3 23 -> 140 = 2^2 5 7
  EXPECT_EQ(pme_grid_points(0.3, 50.0, 1e-6, 4), 1500);  // order 4: 15 / 1e-2 = 1500 = 2^2 3 5^3
  EXPECT_EQ(pme_grid_points(0.1, 5.0, 1e-3, 5), 10);     // at least 2 n
  // From 160 to 512 points the size whose measured cuFFT time (plus the grid's other passes) is
  // least: the 64k polyelectrolyte's 290 -> 300, not the friendly 294 (7^2, twice as slow); its
  // 256k's 460 -> 512; at least the minimum, with no prime factor above 7, everywhere.
  EXPECT_EQ(pme_fft_size(290), 300);
  EXPECT_EQ(pme_fft_size(460), 512);
  EXPECT_EQ(pme_fft_size(300), 300);
  for (int m = 1; m <= 1100; ++m) {
    const int n = pme_fft_size(m);
    ASSERT_GE(n, m);
    ASSERT_EQ(fft_friendly_size(n), n) << m;
    if (m < 160 || m > 512) ASSERT_EQ(n, fft_friendly_size(m)) << m;
  }
}

// ---- against the reference ------------------------------------------------------------------

struct Case {
  double accuracy;
  int order;
};

TEST(Pme, RandomNeutralSystemsMatchADirectEwaldSumAtTheRequestedAccuracy) {
  const double L = 10.0, rc = 4.5;
  for (unsigned seed : {1u, 2u, 3u}) {
    const SystemState s = random_ions(150, L, 0.0, seed);
    const EwaldResult ref = direct_ewald(s.position, s.charge, L);
    for (const Case& c : {Case{1e-3, 5}, Case{1e-4, 4}, Case{1e-5, 4}, Case{1e-4, 5}, Case{1e-5, 5}, Case{1e-5, 6},
                          Case{1e-6, 5}, Case{1e-6, 6}}) {
      CpuBackend b(pme_model(rc, c.accuracy, c.order), s);
      const double ferr = rel_rms_force(b.forces(), ref.force);
      const double eerr = std::fabs(b.observables().potential - ref.energy) / std::fabs(ref.energy);
      std::printf("[pme] seed %u accuracy %g order %d: relative rms force error %.3g, energy error %.3g\n", seed,
                  c.accuracy, c.order, ferr, eerr);
      EXPECT_LT(ferr, c.accuracy) << "seed " << seed << " order " << c.order;
      EXPECT_LT(eerr, c.accuracy) << "seed " << seed << " order " << c.order;
    }
  }
}

TEST(Pme, TheExampleSystemMatchesADirectEwaldSum) {
  // The charges of the polyelectrolyte example (small: chains and counterions, neutral), C = 1.
  const test::TestSystem ex = test::make_system(pme_yaml());
  SystemState s = ex.built.state;
  s.type.assign(s.size(), 0);  // pme_model has one type
  const double L = s.box.L.x;
  ASSERT_EQ(L, s.box.L.y);
  ASSERT_EQ(L, s.box.L.z);
  const EwaldResult ref = direct_ewald(s.position, s.charge, L);
  for (int order : {5, 6})
    for (double accuracy : {1e-4, 1e-5, 1e-6}) {
      CpuBackend b(pme_model(4.0, accuracy, order), s);
      const double ferr = rel_rms_force(b.forces(), ref.force);
      const double eerr = std::fabs(b.observables().potential - ref.energy) / std::fabs(ref.energy);
      std::printf("[pme] example, accuracy %g, order %d: relative rms force error %.3g, energy error %.3g\n", accuracy,
                  order, ferr, eerr);
      EXPECT_LT(ferr, accuracy) << "order " << order;
      EXPECT_LT(eerr, accuracy) << "order " << order;
    }
}

TEST(Pme, ChargedSystemGetsTheNeutralisingBackground) {
  // A net charge of +3: the reference Ewald sum's energy does not depend on its alpha only
  // with the background term, and PME's matches it.
  const double L = 10.0;
  const SystemState s = random_ions(120, L, 3.0, 5);
  const EwaldResult a = direct_ewald(s.position, s.charge, L, 5.9, 12),
                    b = direct_ewald(s.position, s.charge, L, 6.5, 14);
  EXPECT_NEAR(a.energy, b.energy, 1e-10 * std::fabs(a.energy));
  CpuBackend pme(pme_model(4.5, 1e-5, 5), s);
  const Observables o = pme.observables();
  std::printf("[pme] charged: E = %.12g, Ewald %.12g, relative rms force error %.3g\n", o.potential, a.energy,
              rel_rms_force(pme.forces(), a.force));
  EXPECT_LT(std::fabs(o.potential - a.energy), 1e-5 * std::fabs(a.energy));
  EXPECT_LT(rel_rms_force(pme.forces(), a.force), 1e-5);
}

TEST(Pme, ExcludedAndScaledPairsLoseTheirWholeCoulombInteraction) {
  // special_bonds coulomb [0, 0.5, 1] (1-2 left out, 1-3 halved): the reference is the full Ewald
  // sum less (1 - w) q_i q_j / r of each such pair, so PME must take the pairs' mesh part out too.
  const double L = 10.0;
  const Chains c = random_chains(10, 12, L, 4);
  Model m = pme_model(4.5, 1e-5, 5);
  m.force_field.bond_types = {BondType{"zero", BondKind::Harmonic, BondCoeffs{0.0, 1.0}}};
  m.topology.bonds = c.bonds;
  m.force_field.special.coulomb[0] = 0.0;
  m.force_field.special.coulomb[1] = 0.5;
  m.force_field.special.coulomb[2] = 1.0;
  EwaldResult ref = direct_ewald(c.state.position, c.state.charge, L);
  const std::vector<ScaledPair> pairs = pme_excluded_pairs(m.force_field, m.topology, c.state.size(), 0);
  size_t n12 = 0, n13 = 0;
  for (const ScaledPair& p : pairs) {
    (p.weight == 1.0 ? n12 : n13) += 1;
    Vec3d d = c.state.box.min_image(c.state.position[p.i] - c.state.position[p.j]);
    const double r = std::sqrt(dot(d, d)), qq = p.weight * c.state.charge[p.i] * c.state.charge[p.j];
    ref.energy -= qq / r;
    ref.force[p.i] -= (qq / (r * r * r)) * d;
    ref.force[p.j] += (qq / (r * r * r)) * d;
  }
  EXPECT_EQ(n12, c.bonds.size());
  EXPECT_EQ(n13, 10u * 10u);  // 10 1-3 pairs per chain of 12, weight 1 - 0.5
  CpuBackend b(m, c.state);
  const double ferr = rel_rms_force(b.forces(), ref.force);
  const double eerr = std::fabs(b.observables().potential - ref.energy) / std::fabs(ref.energy);
  std::printf("[pme] chains, special_bonds coulomb [0, 0.5, 1]: relative rms force error %.3g, energy error %.3g\n",
              ferr, eerr);
  EXPECT_LT(ferr, 1e-5);
  EXPECT_LT(eerr, 1e-5);
}

TEST(Pme, ExcludedPairCorrectionIsFiniteAndSmoothDownToZeroDistance) {
  // CoulombLongExcluded switches to its series below alpha r = 1e-2 (double): both sides agree
  // there, and F/r is -dV/dr / r everywhere.
  CoulombLong<double>::Params p;
  p.prefactor = 1.0;
  p.alpha = 0.7;
  p.gauss = 2 * p.alpha / std::sqrt(M_PI);
  double f0, e0;
  CoulombLongExcluded<double>::eval(0.0, 1.0, p, f0, e0);
  EXPECT_DOUBLE_EQ(e0, -p.gauss);
  for (double r : {1e-4, 0.0142, 0.0143, 0.1, 1.0, 3.0}) {
    double f, e, fp, ep, fm, em;
    const double h = 1e-5 * std::max(r, 1e-2);
    CoulombLongExcluded<double>::eval(r * r, 1.0, p, f, e);
    CoulombLongExcluded<double>::eval((r + h) * (r + h), 1.0, p, fp, ep);
    CoulombLongExcluded<double>::eval((r - h) * (r - h), 1.0, p, fm, em);
    EXPECT_NEAR(e, -std::erf(p.alpha * r) / r, 1e-12) << r;
    EXPECT_NEAR(f * r, -(ep - em) / (2 * h), 1e-7) << r;
  }
}

// Rock salt, nearest neighbours 1 apart, unit charges: E = -M N / 2 with the Madelung constant
// M = 1.747564594633...
TEST(Pme, NaClMadelungConstantToOneInAMillion) {
  constexpr double kMadelung = 1.74756459463318;
  const int cells = 3;  // conventional cubes of edge 2: 8 ions each
  const double L = 2.0 * cells;
  ChargeList c;
  for (int i = 0; i < 2 * cells; ++i)
    for (int j = 0; j < 2 * cells; ++j)
      for (int k = 0; k < 2 * cells; ++k) c.add(i + 0.25, j + 0.25, k + 0.25, (i + j + k) % 2 ? -1.0 : 1.0);
  const SystemState s = test::charged_state(c, test::make_box({0, 0, 0}, {L, L, L}, true));
  for (int order : {5, 6}) {
    CpuBackend b(pme_model(2.6, 1e-7, order), s);
    const double madelung = -2.0 * b.observables().potential / static_cast<double>(s.size());
    std::printf("[pme] NaCl, order %d: Madelung constant %.12f (error %.2g)\n", order, madelung, madelung - kMadelung);
    EXPECT_NEAR(madelung, kMadelung, 1e-6);
    double fmax = 0;  // every ion sits at a centre of symmetry
    for (const Vec3d& f : b.forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
    EXPECT_LT(fmax, 1e-6);
  }
}

TEST(Pme, ForceIsMinusTheGradientOfTheEnergy) {
  // SPME's force is the exact gradient of its own energy (real and reciprocal parts alike):
  // central differences agree to their truncation error, far below the accuracy.
  const SystemState s0 = random_ions(40, 7.0, 0.0, 9);
  const Model m = pme_model(3.3, 1e-4, 5);
  CpuBackend b(m, s0);
  const std::vector<Vec3d> f = b.forces();
  const double h = 1e-5;
  for (size_t i : {0ul, 7ul, 23ul}) {
    for (int d = 0; d < 3; ++d) {
      double e[2];
      for (int side = 0; side < 2; ++side) {
        SystemState s = s0;
        double* c = d == 0 ? &s.position[i].x : d == 1 ? &s.position[i].y : &s.position[i].z;
        *c += side ? h : -h;
        CpuBackend bb(m, s);
        e[side] = bb.observables().potential;
      }
      const double fd = -(e[1] - e[0]) / (2 * h);
      const double got = d == 0 ? f[i].x : d == 1 ? f[i].y : f[i].z;
      EXPECT_NEAR(got, fd, 1e-6 * std::max(1.0, std::fabs(fd))) << "particle " << i << " axis " << d;
    }
  }
}

TEST(Pme, MeshVirialPerDirectionIsTheStrainDerivative) {
  // W_aa = -dE/ds_a for the box and the positions stretched by s_a along a (the same grid): the
  // mesh part and the background of a charged, non-cubic box, per direction.
  const SystemState s0 = random_ions(80, 10.0, 2.0, 13);
  const Box box0 = test::make_box({0, 0, 0}, {10.0, 11.0, 12.5}, true);
  std::vector<Vec3d> x0 = s0.position;
  for (Vec3d& x : x0) x = {x.x, 1.1 * x.y, 1.25 * x.z};
  const PmeParams params = resolve_pme(pme_model(4.5, 1e-5, 6).electrostatics, box0);
  std::vector<Vec3d> f(x0.size(), Vec3d{0, 0, 0});
  double e0;
  Vec3d w{0, 0, 0};
  PmeCpu(params, box0, s0.charge).add_forces(x0, f.data(), &e0, &w);
  const double h = 1e-5;
  for (int a = 0; a < 3; ++a) {
    double e[2];
    for (int side = 0; side < 2; ++side) {
      const double s = side ? 1 + h : 1 - h;
      Box box = box0;
      std::vector<Vec3d> x = x0;
      (a == 0 ? box.L.x : a == 1 ? box.L.y : box.L.z) *= s;
      for (Vec3d& xi : x) (a == 0 ? xi.x : a == 1 ? xi.y : xi.z) *= s;
      PmeCpu(params, box, s0.charge).add_forces(x, f.data(), &e[side], nullptr);
    }
    const double want = -(e[1] - e[0]) / (2 * h), got = a == 0 ? w.x : a == 1 ? w.y : w.z;
    EXPECT_NEAR(got, want, 1e-6 * std::fabs(e0)) << "direction " << a;
  }
}

TEST(Pme, VirialOfTheCoulombEnergyIsTheEnergy) {
  // The Coulomb energy is homogeneous of degree -1 in the coordinates (box included), so its
  // virial W = sum r.f equals E, for a neutral and for a charged box (whose background term has
  // virial 3 E_background).
  for (double net : {0.0, 2.0}) {
    const SystemState s = random_ions(150, 10.0, net, 11);
    CpuBackend b(pme_model(4.5, 1e-6, 5), s);
    const Observables o = b.observables();
    EXPECT_NEAR(o.virial, o.potential, 1e-5 * std::fabs(o.potential)) << "net charge " << net;
  }
}

// ---- the config ---------------------------------------------------------------------------

std::string config_error(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    test::make_system(yaml, overrides, "pme");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(PmeConfig, SectionDefaultsAndAlphaReachTheTerm) {
  const test::TestSystem s = test::make_system(pme_yaml("electrostatics: {method: pme, accuracy: 1e-4, order: 5}\n"));
  const PmeSettings& e = s.cfg.model.electrostatics;
  EXPECT_TRUE(e.enabled);
  EXPECT_EQ(e.order, 5);
  EXPECT_EQ(e.term, 1);
  EXPECT_DOUBLE_EQ(e.alpha, ewald_alpha(4.0, 1e-4));
  EXPECT_DOUBLE_EQ(s.cfg.model.force_field.pair_terms[1].coeffs[0].ewald_alpha, e.alpha);
  EXPECT_DOUBLE_EQ(e.prefactor, 2.0);
  const test::TestSystem d = test::make_system(pme_yaml());  // no section: pme at 1e-5, order 6
  EXPECT_TRUE(d.cfg.model.electrostatics.enabled);
  EXPECT_EQ(d.cfg.model.electrostatics.accuracy, 1e-5);
  EXPECT_EQ(d.cfg.model.electrostatics.order, 6);
}

// grid_spacing (GROMACS's fourier-spacing): per edge the fastest size with points at most that far
// apart, whatever the accuracy; with an explicit grid, or not positive, or finer than 1024 points
// allow, a clear error.
TEST(PmeConfig, GridSpacingSetsTheGrid) {
  const test::TestSystem s = test::make_system(pme_yaml("electrostatics: {accuracy: 1e-5, grid_spacing: 0.4}\n"));
  const PmeSettings& e = s.cfg.model.electrostatics;
  EXPECT_EQ(e.spacing, 0.4);
  const PmeParams p = resolve_pme(e, s.built.state.box);
  const double L = s.built.state.box.L.x;
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(p.grid[d], pme_fft_size(static_cast<int>(std::ceil(L / 0.4))));
    EXPECT_LE(L / p.grid[d], 0.4);
  }
  EXPECT_LT(p.grid[0], resolve_pme(test::make_system(pme_yaml()).cfg.model.electrostatics, s.built.state.box).grid[0]);
  const std::string both = config_error(pme_yaml("electrostatics: {grid: [16, 16, 16], grid_spacing: 0.4}\n"));
  EXPECT_NE(both.find("grid_spacing and an explicit grid both set the grid"), std::string::npos) << both;
  const std::string zero = config_error(pme_yaml("electrostatics: {grid_spacing: 0}\n"));
  EXPECT_NE(zero.find("electrostatics.grid_spacing: expected a grid spacing > 0"), std::string::npos) << zero;
  const std::string fine = config_error(pme_yaml("electrostatics: {grid_spacing: 0.001}\n"));
  EXPECT_NE(fine.find("electrostatics.grid_spacing 0.001 needs more than 1024 grid points"), std::string::npos) << fine;
}

TEST(PmeConfig, BadInputIsAClearError) {
  const std::string open = config_error(pme_yaml(), {"system.boundary=open"});
  EXPECT_NE(open.find("electrostatics: particle-mesh Ewald needs a periodic box"), std::string::npos) << open;
  const std::string small =
      config_error(pme_yaml("electrostatics: {accuracy: 1e-5}\n"), {"force_field.pair.1.cutoff=6.5"});
  EXPECT_NE(small.find("shorter than twice the real-space cutoff"), std::string::npos) << small;
  const std::string tight =
      config_error(pme_yaml("electrostatics: {accuracy: 1e-10, order: 4}\n"), {"force_field.pair.1.cutoff=0.5"});
  EXPECT_NE(tight.find("cannot be met"), std::string::npos) << tight;
  const std::string range = config_error(pme_yaml("electrostatics: {accuracy: 0.5}\n"));
  EXPECT_NE(range.find("electrostatics.accuracy: expected a relative force accuracy"), std::string::npos) << range;
  const std::string order = config_error(pme_yaml("electrostatics: {order: 3}\n"));
  EXPECT_NE(order.find("electrostatics.order"), std::string::npos) << order;
  const std::string grid = config_error(pme_yaml("electrostatics: {grid: [16, 16]}\n"));
  EXPECT_NE(grid.find("electrostatics.grid: expected auto or [nx, ny, nz]"), std::string::npos) << grid;
  const std::string lonely = config_error(test::kLjLiquid + std::string("electrostatics: {method: pme}\n"));
  EXPECT_NE(lonely.find("electrostatics: needs a coulomb_long term"), std::string::npos) << lonely;
  const std::string shifted = config_error(pme_yaml(), {"force_field.pair.1.shift=true"});
  EXPECT_NE(shifted.find("coulomb_long is not shifted"), std::string::npos) << shifted;
}

TEST(PmeConfig, RealUnitsTakeTheUnitsCoulombConstant) {
  // Ion pairs in units real (k_e = 332.06371 kcal A / (mol e^2), dielectric 1): the coulomb_long
  // term's energy is the Ewald sum of the charges times k_e, less the bonded pairs (`exclusions:
  // bonds`, the default), to the accuracy asked for.
  const test::TestSystem s = test::make_system(R"(
units: real
system:
  types: [{name: Cl, mass: 35.45, charge: -1.0}, {name: Na, mass: 22.99, charge: 1.0}]
  chains: {count: 20, length: 2, density: 0.01, bond: b, bond_length: 3.0, monomer_type: Cl, counterion_type: Na, min_distance: 2.8, seed: 5}
minimize: {algorithm: none}
force_field:
  bonds: [{name: b, potential: harmonic, k: 10.0, r0: 3.0}]
  pair:
    - {potential: lj, cutoff: 8.0, mixing: arithmetic, coeffs: [{type: Cl, epsilon: 0.1, sigma: 3.0}, {type: Na, epsilon: 0.1, sigma: 2.5}]}
    - {potential: coulomb_long, cutoff: 9.0, dielectric: 1.0}
electrostatics: {method: pme, accuracy: 1e-5}
integrator: {kind: langevin, dt: 2.0, temperature: 300, friction: 0.01, seed: 3}
)");
  const PmeSettings& e = s.cfg.model.electrostatics;
  EXPECT_DOUBLE_EQ(e.prefactor, 332.06371);
  EXPECT_DOUBLE_EQ(e.alpha, ewald_alpha(9.0, 1e-5));
  const SystemState& st = s.built.state;
  ASSERT_EQ(st.box.L.x, st.box.L.z);
  EwaldResult ref = direct_ewald(st.position, st.charge, st.box.L.x);
  for (const Bond& b : s.built.topology.bonds) {
    const Vec3d d = st.box.min_image(st.position[b.i] - st.position[b.j]);
    ref.energy -= st.charge[b.i] * st.charge[b.j] / std::sqrt(dot(d, d));
  }
  CpuBackend b(s.model(), st);
  const double coulomb = b.observables().potential_by_term[1];
  std::printf("[pme] units real: coulomb_long %.10g kcal/mol, Ewald %.10g\n", coulomb, 332.06371 * ref.energy);
  EXPECT_NEAR(coulomb, 332.06371 * ref.energy, 1e-5 * std::fabs(332.06371 * ref.energy));
}

TEST(PmeConfig, TheProgramRefusesBadInputWithExit2AndWarnsOfANetCharge) {
  test::ScratchDir dir("pme");
  test::write_text(dir.path + "/pme.yaml", pme_yaml());
  auto run = [&](const std::string& set) {
    return test::run_pairmd_shell("run pme.yaml --backend cpu --steps 0 --output out --overwrite " + set, dir.path);
  };
  const test::ChildResult small = run("--set force_field.pair.1.cutoff=6.5");
  EXPECT_EQ(small.exit_code, 2) << small.out << small.err;
  EXPECT_NE(small.err.find("shorter than twice the real-space cutoff"), std::string::npos) << small.err;
  const test::ChildResult tight =
      run("--set force_field.pair.1.cutoff=0.5 --set electrostatics.accuracy=1e-10 --set electrostatics.order=4");
  EXPECT_EQ(tight.exit_code, 2) << tight.out << tight.err;
  EXPECT_NE(tight.err.find("cannot be met"), std::string::npos) << tight.err;
  // 64 ions of charge +0.5 (a simple cubic lattice): a net charge of 32.
  test::write_text(dir.path + "/charged.yaml", R"(
units: lj
system:
  types: [{name: A, mass: 1.0, charge: 0.5}]
  lattice: {kind: sc, cells: 4, density: 0.1}
force_field:
  pair: [{potential: coulomb_long, cutoff: 4.0}]
integrator: {kind: nve, dt: 0.005, temperature: 1.0}
)");
  const test::ChildResult charged =
      test::run_pairmd_shell("run charged.yaml --backend cpu --steps 10 --output charged --overwrite", dir.path);
  EXPECT_EQ(charged.exit_code, 0) << charged.out << charged.err;
  EXPECT_NE(charged.err.find("warning: the system's net charge is 32 "), std::string::npos) << charged.err;
  EXPECT_NE(charged.err.find("neutralising background"), std::string::npos) << charged.err;
  EXPECT_NE(charged.out.find("electrostatics: particle-mesh Ewald, accuracy 1e-05"), std::string::npos) << charged.out;
}

#endif  // PAIRMD_PHYSICS_ON_GPU

// ---- on every target ----------------------------------------------------------------------

using test::Target;

class PmeTargets : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
  }
};

// Random ions (neutral, and with a net charge of +3) at accuracy 1e-5, orders 6 and 5 (and order 4
// at 1e-4): the target against the Ewald sum written here (within the accuracy, as the CPU's own
// test) and against the CPU reference. The CUDA backend computes in fp32: positions rounded to float (a few 1e-7 of the
// box edge), float pair forces, charges spread to a fixed-point grid, cuFFT in float, float gathers; its difference
// from the fp64 reference is of the order of 1e-6 relative, far below 1e-5.
TEST_P(PmeTargets, RandomIonsMatchTheEwaldSumAndTheCpuReference) {
  struct Case {
    int order;
    double accuracy;
  };
  // Every order the GPU kernels are compiled for (4, 5, 6); order 4 at 1e-4 (at 1e-5 its grid
  // would be ~340 points per edge).
  for (const Case c : {Case{6, 1e-5}, Case{5, 1e-5}, Case{4, 1e-4}})
    for (const double net : {0.0, 3.0}) {
      const SystemState s = random_ions(150, 10.0, net, 21);
      const EwaldResult ewald = direct_ewald(s.position, s.charge, 10.0);
      const Model m = pme_model(4.5, c.accuracy, c.order);
      CpuBackend ref(m, s);
      auto b = test::make_target_backend(GetParam(), m, s);
      const std::vector<Vec3d> f = b->forces();
      const Observables o = b->observables(), r = ref.observables();
      const double vs_ewald = rel_rms_force(f, ewald.force), vs_cpu = rel_rms_force(f, ref.forces());
      std::printf(
          "[pme] %s, random ions, order %d, accuracy %g, net charge %g: force error %.3g (Ewald), difference %.3g "
          "(cpu); energy %.10g (cpu %.10g, Ewald %.10g); virial %.10g (cpu %.10g)\n",
          GetParam().label().c_str(), c.order, c.accuracy, net, vs_ewald, vs_cpu, o.potential, r.potential,
          ewald.energy, o.virial, r.virial);
      EXPECT_LT(vs_ewald, c.accuracy) << "order " << c.order << ", net charge " << net;
      EXPECT_LT(std::fabs(o.potential - ewald.energy), c.accuracy * std::fabs(ewald.energy))
          << "order " << c.order << ", net charge " << net;
      EXPECT_LT(vs_cpu, 3e-6) << "order " << c.order << ", net charge " << net;
      EXPECT_NEAR(o.potential, r.potential, 1e-6 * std::fabs(r.potential)) << "order " << c.order << ", net " << net;
      EXPECT_NEAR(o.virial, r.virial, 1e-5 * std::fabs(r.potential)) << "order " << c.order << ", net " << net;
    }
}

// The example's system (chains, counterions, FENE, WCA; relaxed as the example is) as the input
// of a model whose FENE and WCA are scaled down by 1e-9: the forces left are the Coulomb sum's,
// which this test is about (the stiff short-range forces would otherwise dominate the difference:
// a bonded pair's force moves by ~1e-3 when float rounding moves r by 1e-6, GpuBackend's 2e-4
// rms tolerance). Positions and box are rounded to float first, so both targets see the same
// input. Every pair in the Coulomb sum, then special_bonds taking the 1-2 pairs out and halving
// the 1-3 pairs (the excluded pairs' mesh part taken out again, potentials/coulomb_long.h).
// Tolerances as above.
TEST_P(PmeTargets, ExampleSystemAgreesWithTheCpuReference) {
  for (const char* special : {"exclusions: none", "special_bonds: {lj: [1, 1, 1], coulomb: [0, 0.5, 1]}"}) {
    const test::TestSystem ex = test::make_system(pme_yaml("", special));
    const std::string yaml = pme_yaml("", special, 1e-9);
    const Model m = make_model(parse_config(yaml, "coulomb_only.yaml", {}), ex.built);
    SystemState s = ex.built.state;
    for (Vec3d* v : {&s.box.lo, &s.box.L})
      *v = {double(static_cast<float>(v->x)), double(static_cast<float>(v->y)), double(static_cast<float>(v->z))};
    for (Vec3d& x : s.position)
      x = {double(static_cast<float>(x.x)), double(static_cast<float>(x.y)), double(static_cast<float>(x.z))};
    CpuBackend ref(m, s);
    auto b = test::make_target_backend(GetParam(), m, s);
    const double ferr = rel_rms_force(b->forces(), ref.forces());
    const Observables o = b->observables(), r = ref.observables();
    const size_t t = 1;  // the coulomb_long term
    std::printf(
        "[pme] %s, example (%s): relative rms force difference %.3g; coulomb_long energy %.10g (cpu %.10g), "
        "virial %.10g (cpu %.10g)\n",
        GetParam().label().c_str(), special, ferr, o.potential_by_term[t], r.potential_by_term[t], o.virial, r.virial);
    // The Coulomb energy is what is left of parts ~30 times larger (E_self = -111 here, and
    // E_real + E_recip nearly its opposite), each computed in fp32 on the GPU: 1e-6 of their size.
    double sum_q2 = 0;
    for (double q : s.charge) sum_q2 += q * q;
    const double self = m.electrostatics.prefactor * m.electrostatics.alpha / std::sqrt(M_PI) * sum_q2;
    const double parts = std::fabs(r.potential_by_term[t]) + 2 * self;
    EXPECT_LT(ferr, 3e-6) << special;
    EXPECT_NEAR(o.potential_by_term[t], r.potential_by_term[t], 1e-6 * parts) << special;
    EXPECT_NEAR(o.virial, r.virial, 1e-5 * parts) << special;
  }
}

// barostat.couple aniso needs the virial per direction to sum to W (the CPU backend stops the run
// otherwise; the CUDA backend sums the mesh's in its multiply kernel); after the box has changed,
// the mesh follows it: the Coulomb energy of the running backend is that of a new CPU backend in
// the new box (to the fp32 tolerance above).
TEST_P(PmeTargets, AnisotropicBarostatReadsThePmeVirialAndRescalesTheMesh) {
  const test::TestSystem s = test::make_system(
      pme_yaml("barostat: {kind: c_rescale, pressure: 0.5, tau_p: 1.0, compressibility: 0.5, couple: aniso}\n",
               "special_bonds: {lj: [1, 1, 1], coulomb: [0, 0.5, 1]}"));
  auto b = test::make_target_backend(GetParam(), s.model(), s.built.state);
  ASSERT_NO_THROW(b->advance(100));
  SystemState now;
  b->get_state(now);
  EXPECT_NE(now.box.L.x, s.built.state.box.L.x);
  EXPECT_NE(now.box.L.x, now.box.L.y);
  CpuBackend fresh(s.model(), now);
  const double e = b->observables().potential_by_term[1], e_fresh = fresh.observables().potential_by_term[1];
  std::printf("[pme] %s, after 100 steps at constant pressure: coulomb_long %.10g, a new CPU backend's %.10g\n",
              GetParam().label().c_str(), e, e_fresh);
  EXPECT_NEAR(e, e_fresh, 1e-5 * std::fabs(e_fresh));
}

// An accuracy finer than the target's arithmetic can meet is refused with the reason (the CUDA
// backend's fp32: kPmeMinAccuracyFp32); the CPU takes it.
TEST_P(PmeTargets, AccuracyBeyondTheTargetsPrecisionIsAClearError) {
  const SystemState s = random_ions(40, 7.0, 0.0, 2);
  const Model m = pme_model(3.3, 1e-6, 6);
  if (!GetParam().fp32) {
    EXPECT_NO_THROW(test::make_target_backend(GetParam(), m, s));
    return;
  }
  try {
    test::make_target_backend(GetParam(), m, s);
    ADD_FAILURE() << "accuracy 1e-6 accepted by " << GetParam().label();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("finer than the CUDA backend's fp32 forces can meet"), std::string::npos)
        << e.what();
  }
}

// The same run twice gives the same bits where the target is deterministic (the CPU; the CUDA
// strategies without float atomics, PME's integer-atomic spreading included).
TEST_P(PmeTargets, RunsAreBitwiseReproducible) {
  if (!GetParam().deterministic) GTEST_SKIP() << GetParam().label() << " sums forces with float atomics";
  const test::TestSystem s = test::make_system(pme_yaml("", "special_bonds: {lj: [1, 1, 1], coulomb: [0, 0.5, 1]}"));
  std::vector<Vec3d> x[2];
  for (auto& xk : x) {
    auto b = test::make_target_backend(GetParam(), s.model(), s.built.state);
    b->advance(200);
    SystemState out;
    b->get_state(out);
    xk = out.position;
  }
  for (size_t i = 0; i < x[0].size(); ++i) {
    ASSERT_EQ(x[0][i].x, x[1][i].x) << "particle " << i;
    ASSERT_EQ(x[0][i].y, x[1][i].y) << "particle " << i;
    ASSERT_EQ(x[0][i].z, x[1][i].z) << "particle " << i;
  }
}

// NVE (velocity Verlet) at the example's dt = 0.005 from the example's start. The first 0.5 tau
// are its relaxation's transient (the same jump in LAMMPS with PPPM from that state, bench/
// lammps_pme.py); then the total energy over 2000 steps (10 tau): no drift beyond 1e-4 kT per
// particle per tau (least squares), no excursion beyond 2e-3 kT per particle.
TEST_P(PmeTargets, NveConservesEnergyAtTheExampleTimeStep) {
  const test::TestSystem s = test::make_system(pme_yaml(), {"integrator.kind=nve"});
  auto b = test::make_target_backend(GetParam(), s.model(), s.built.state);
  b->advance(100);
  std::vector<double> t, e;
  for (int k = 0; k <= 40; ++k) {
    if (k) b->advance(50);
    t.push_back(0.25 * k);
    e.push_back(b->observables().total());
  }
  double tm = 0, em = 0, stt = 0, ste = 0, worst = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    tm += t[k] / t.size();
    em += e[k] / e.size();
    worst = std::max(worst, std::fabs(e[k] - e[0]));
  }
  for (size_t k = 0; k < t.size(); ++k) {
    stt += (t[k] - tm) * (t[k] - tm);
    ste += (t[k] - tm) * (e[k] - em);
  }
  const double n = static_cast<double>(s.built.state.size()), slope = ste / stt / n;
  std::printf(
      "[pme] %s: NVE from 0.5 to 10.5 tau: drift %.3g kT per particle per tau, largest |E - E0| %.3g per "
      "particle (E0 = %.8g)\n",
      GetParam().label().c_str(), slope, worst / n, e[0]);
  EXPECT_LT(std::fabs(slope), 1e-4);
  EXPECT_LT(worst / n, 2e-3);
}

#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, PmeTargets, ::testing::ValuesIn(test::gpu_targets()), test::target_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, PmeTargets, ::testing::Values(test::cpu_target()), test::target_name);
#endif

}  // namespace
}  // namespace pairmd
