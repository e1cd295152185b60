// Whole-system force checks on the CPU reference backend: Newton's third law (forces sum to
// zero), momentum conservation under NVE, and forces = -grad of the total potential energy
// for a system with every kind of term (LJ, WCA, Debye-Hueckel, harmonic and FENE bonds,
// bonded exclusions).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace pairmd {
namespace {

using test::make_system;

// Two types of charged chains with counterions: LJ between all beads, Debye-Hueckel between
// charges, FENE and harmonic bonds (two bond types), and 1-2 exclusions for the LJ term.
const char* kMixedSystem = R"(
system:
  types:
    - {name: M, mass: 1.0, charge: -1.0}
    - {name: C, mass: 1.5, charge: 1.0}
  chains: {count: 6, length: 12, density: 0.15, bond: fene, charged_every: 2, counterion_type: C, seed: 3}
  relax: {steps: 300, max_move: 0.02}
force_field:
  exclusions: bonds
  bonds:
    - {name: fene, potential: fene, k: 30, r0: 1.5}
    - {name: spring, potential: harmonic, k: 50, r0: 1.0}
  pair:
    - potential: lj
      cutoff: 2.5
      shift: true
      coeffs:
        - {types: [M, M], epsilon: 1.0, sigma: 1.0}
        - {types: [M, C], epsilon: 0.5, sigma: 1.1}
        - {types: [C, C], epsilon: 0.8, sigma: 0.9, cutoff: 2.0}
    - potential: debye_huckel
      cutoff: 3.5
      bjerrum_length: 2.0
      debye_length: 1.5
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 11}
neighbor: {skin: 0.4}
)";

// Adds a few harmonic bonds (type 1) between chain ends so both bond kinds are exercised.
test::TestSystem mixed_system() {
  test::TestSystem s = make_system(kMixedSystem);
  for (int c = 0; c + 1 < 6; c += 2) s.built.topology.bonds.push_back({c * 12 + 11, (c + 1) * 12, 1});
  return s;
}

Vec3d total(const std::vector<Vec3d>& f) {
  Vec3d s{0, 0, 0};
  for (const Vec3d& v : f) s += v;
  return s;
}

double sum_abs(const std::vector<Vec3d>& f) {
  double s = 0;
  for (const Vec3d& v : f) s += std::fabs(v.x) + std::fabs(v.y) + std::fabs(v.z);
  return s;
}

// Every pair and bond adds +f to one particle and exactly -f to the other, so the total force
// is zero up to the rounding of the per-particle sums: |sum F| <= ~eps * sum |F_i| * (terms
// per particle). 1e-12 * sum|F| leaves a factor > 10 over that (eps = 2.2e-16, <= ~100 terms).
TEST(Forces, TotalForceIsZero) {
  for (const std::string& yaml : {test::lj_yaml(5, 0.8442, "langevin", 1.2), std::string(kMixedSystem)}) {
    test::TestSystem s = make_system(yaml);
    // Perturb the lattice so that forces are not zero by symmetry.
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-0.1, 0.1);
    for (Vec3d& x : s.built.state.position) {
      x += Vec3d{u(rng), u(rng), u(rng)};
      s.built.state.box.wrap(x, s.built.state.image[&x - s.built.state.position.data()]);
    }
    auto b = s.backend();
    const std::vector<Vec3d> f = b->forces();
    const Vec3d t = total(f);
    const double scale = sum_abs(f);
    ASSERT_GT(scale, 1.0);
    EXPECT_LT(std::sqrt(dot(t, t)), 1e-12 * scale) << "total force (" << t.x << ", " << t.y << ", " << t.z << ")";
  }
}

// Under velocity Verlet each step changes the total momentum by dt * sum F (zero up to the
// rounding above, ~1e-12 * sum|F| ~ 1e-9 here) plus the rounding of the velocity updates
// (~N eps |p_i| ~ 1e-13). Over 2000 steps this adds to < 2000 * 0.005 * 1e-9 ~ 1e-8 at worst
// and is in practice a random walk far below. We assert 1e-8 on |P(t) - P(0)|, whereas one
// lost pair force (|f| ~ 1..100) would change P by ~0.005 per step.
TEST(Forces, MomentumConservedUnderNVE) {
  for (const std::string& yaml : {test::lj_yaml(5, 0.8442, "nve", 1.2), std::string(kMixedSystem)}) {
    test::TestSystem s = make_system(yaml, {"integrator.kind=nve"});
    auto b = s.backend();
    const Observables o0 = b->observables();
    b->advance(2000);
    const Observables o1 = b->observables();
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(o1.momentum[d], o0.momentum[d], 1e-8) << "component " << d;
  }
}

// F_i = -dU/dx_i of the total potential energy, by central differences of
// Backend::observables().potential. With h = 1e-5 the truncation error is ~h^2 |U'''| ~ 1e-8
// (|U'''| <= ~1e2 at the separations of a relaxed system) and the rounding error is
// eps |U| / h ~ 2e-16 * 1e3 / 1e-5 = 2e-8; a tolerance of 1e-6 * max(1, |F|) covers both. One
// missing or double-counted term (an exclusion not applied, a bond of the wrong kind) shows
// up as an error of order |F| or more.
TEST(Forces, ForceIsMinusGradientOfTotalEnergy) {
  test::TestSystem s = mixed_system();
  auto b = s.backend();
  SystemState state = s.built.state;
  const std::vector<Vec3d> f = b->forces();
  const Observables o = b->observables();
  ASSERT_EQ(o.potential_by_term.size(), 4u);  // lj, debye_huckel, fene, harmonic
  for (double e : o.potential_by_term) EXPECT_NE(e, 0.0) << "every term contributes";
  const double h = 1e-5;
  int checked = 0;
  for (size_t i = 0; i < state.size(); i += 3) {
    for (int d = 0; d < 3; ++d) {
      SystemState p = state, m = state;
      double* xp = d == 0 ? &p.position[i].x : d == 1 ? &p.position[i].y : &p.position[i].z;
      double* xm = d == 0 ? &m.position[i].x : d == 1 ? &m.position[i].y : &m.position[i].z;
      *xp += h;
      *xm -= h;
      b->set_state(p);
      const double up = b->observables().potential;
      b->set_state(m);
      const double um = b->observables().potential;
      const double fd = -(up - um) / (2 * h);
      const double fi = d == 0 ? f[i].x : d == 1 ? f[i].y : f[i].z;
      EXPECT_NEAR(fi, fd, 1e-6 * std::max(1.0, std::fabs(fi))) << "particle " << i << " component " << d;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace pairmd
