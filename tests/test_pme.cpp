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
std::string pme_yaml(const std::string& extra = "") {
  return R"(
units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  chains: {count: 6, length: 20, density: 0.1, bond: fene, monomer_type: M, charged_every: 2, counterion_type: C, seed: 9}
  relax: {steps: 300, max_move: 0.01}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30.0, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: 1.0, sigma: 1.0}, {types: [M, C], epsilon: 1.0, sigma: 1.0}, {types: [C, C], epsilon: 1.0, sigma: 1.0}]
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
  for (double accuracy : {1e-4, 1e-5, 1e-6}) {
    CpuBackend b(pme_model(4.0, accuracy, 5), s);
    const double ferr = rel_rms_force(b.forces(), ref.force);
    const double eerr = std::fabs(b.observables().potential - ref.energy) / std::fabs(ref.energy);
    std::printf("[pme] example, accuracy %g: relative rms force error %.3g, energy error %.3g\n", accuracy, ferr, eerr);
    EXPECT_LT(ferr, accuracy);
    EXPECT_LT(eerr, accuracy);
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
  const test::TestSystem s = test::make_system(pme_yaml("electrostatics: {method: pme, accuracy: 1e-4, order: 6}\n"));
  const PmeSettings& e = s.cfg.model.electrostatics;
  EXPECT_TRUE(e.enabled);
  EXPECT_EQ(e.order, 6);
  EXPECT_EQ(e.term, 1);
  EXPECT_DOUBLE_EQ(e.alpha, ewald_alpha(4.0, 1e-4));
  EXPECT_DOUBLE_EQ(s.cfg.model.force_field.pair_terms[1].coeffs[0].ewald_alpha, e.alpha);
  EXPECT_DOUBLE_EQ(e.prefactor, 2.0);
  const test::TestSystem d = test::make_system(pme_yaml());  // no section: pme at 1e-5, order 5
  EXPECT_TRUE(d.cfg.model.electrostatics.enabled);
  EXPECT_EQ(d.cfg.model.electrostatics.accuracy, 1e-5);
  EXPECT_EQ(d.cfg.model.electrostatics.order, 5);
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

#endif  // PAIRMD_PHYSICS_ON_GPU

// ---- on every target ----------------------------------------------------------------------

using test::Target;

class PmeTargets : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
  }
};

// The target's forces and energies against the CPU reference on the example's system: the
// reference is fp64 and at 1e-5 itself; the GPU spreads float charges (to a fixed-point grid),
// transforms in float (cuFFT, relative error ~1e-7 log2(K)) and interpolates in float: its
// difference from the reference is far below the accuracy asked for.
TEST_P(PmeTargets, ForcesAndEnergyAgreeWithTheCpuReference) {
  const test::TestSystem s = test::make_system(pme_yaml());
  CpuBackend ref(s.model(), s.built.state);
  auto b = test::make_target_backend(GetParam(), s.model(), s.built.state);
  const double ferr = rel_rms_force(b->forces(), ref.forces());
  const Observables o = b->observables(), r = ref.observables();
  const size_t t = 1;  // the coulomb_long term
  std::printf(
      "[pme] %s: relative rms force difference %.3g; coulomb_long energy %.9g (cpu %.9g), virial %.9g (cpu %.9g)\n",
      GetParam().label().c_str(), ferr, o.potential_by_term[t], r.potential_by_term[t], o.virial, r.virial);
  EXPECT_LT(ferr, 2e-6);
  EXPECT_NEAR(o.potential_by_term[t], r.potential_by_term[t], 1e-6 * std::fabs(r.potential_by_term[t]));
  EXPECT_NEAR(o.virial, r.virial, 1e-5 * std::fabs(r.potential));
}

// NVE at the example's dt = 0.005 (velocity Verlet): the total energy's drift over 2000 steps.
TEST_P(PmeTargets, NveConservesEnergyAtTheExampleTimeStep) {
  const test::TestSystem s = test::make_system(pme_yaml(), {"integrator.kind=nve"});
  auto b = test::make_target_backend(GetParam(), s.model(), s.built.state);
  const double e0 = b->observables().total();
  double worst = 0;
  for (int k = 0; k < 20; ++k) {
    b->advance(100);
    worst = std::max(worst, std::fabs(b->observables().total() - e0));
  }
  const double per_particle = worst / static_cast<double>(s.built.state.size());
  std::printf("[pme] %s: NVE, largest |E - E0| over 2000 steps %.3g (%.3g per particle; E0 = %.6g)\n",
              GetParam().label().c_str(), worst, per_particle, e0);
  EXPECT_LT(per_particle, 2e-3);
}

#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, PmeTargets, ::testing::ValuesIn(test::gpu_targets()), test::target_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, PmeTargets, ::testing::Values(test::cpu_target()), test::target_name);
#endif

}  // namespace
}  // namespace pairmd
