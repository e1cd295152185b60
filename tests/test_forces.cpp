// Newton's third law on the CPU reference backend: forces sum to zero. (Momentum under NVE and
// forces against the energy's gradient run on every backend: tests/test_physics.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/host_threads.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::make_system;

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
  for (const std::string& yaml : {test::lj_yaml(5, 0.8442, "langevin", 1.2), std::string(test::kMixedSystem)}) {
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

}  // namespace
}  // namespace pairmd

namespace pairmd {
namespace {

// The CPU reference adds its threads' energy and virial partial sums in thread order, so the
// same thread count gives the same bits every run (the thermo files of two identical runs
// compare equal). More threads than this machine has cores make the threads finish in varying
// order: additions in finishing order (atomics) differ in the last bits between runs.
TEST(Forces, CpuEnergiesAreTheSameBitsEveryRunWithManyThreads) {
  pin_host_threads(7);
  auto sys = make_system(test::kKremerGrest, {}, "kremer_grest");
  test::jiggle(sys.built.state, 0.02, 5);
  const Observables first = CpuBackend(sys.model(), sys.built.state).observables();
  for (int trial = 0; trial < 30; ++trial) {
    const Observables o = CpuBackend(sys.model(), sys.built.state).observables();
    ASSERT_EQ(std::memcmp(&o.potential, &first.potential, sizeof(double)), 0) << "trial " << trial;
    ASSERT_EQ(std::memcmp(&o.virial, &first.virial, sizeof(double)), 0) << "trial " << trial;
    ASSERT_EQ(o.potential_by_term.size(), first.potential_by_term.size());
    for (size_t t = 0; t < o.potential_by_term.size(); ++t)
      ASSERT_EQ(std::memcmp(&o.potential_by_term[t], &first.potential_by_term[t], sizeof(double)), 0);
  }
  pin_host_threads(0);
}

}  // namespace
}  // namespace pairmd
