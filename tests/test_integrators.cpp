// Reproducibility of the CPU backend: the same seed gives the same trajectory bit for bit,
// another seed another one; thermostat noise is a function of (seed, step, particle tag) only;
// the forces, and hence the trajectory, do not depend on when the neighbour list was built.
#include <gtest/gtest.h>

#include <omp.h>

#include <cstring>

#include "integrators/noise.h"
#include "test_util.h"

namespace pairmd {
namespace {

bool bitwise_equal(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

SystemState run(const test::TestSystem& s, int steps) {
  auto b = s.backend();
  b->advance(steps);
  SystemState st;
  b->get_state(st);
  return st;
}

TEST(Integrators, SameSeedSameTrajectoryOtherSeedAnother) {
  for (const char* kind : {"langevin", "brownian"}) {
    const std::string yaml = test::lj_yaml(4, 0.8442, kind, 1.0, kind[0] == 'b' ? 0.0005 : 0.005);
    const SystemState a = run(test::make_system(yaml, {"integrator.seed=42"}), 300);
    const SystemState b = run(test::make_system(yaml, {"integrator.seed=42"}), 300);
    const SystemState c = run(test::make_system(yaml, {"integrator.seed=43", "system.velocities.seed=42"}), 300);
    EXPECT_TRUE(bitwise_equal(a.position, b.position)) << kind;
    EXPECT_TRUE(bitwise_equal(a.velocity, b.velocity)) << kind;
    EXPECT_FALSE(bitwise_equal(a.position, c.position)) << kind;
  }
}

// The noise is a pure function of (seed, step, tag, stream): the same draws in any order, and
// different draws when any of them changes.
TEST(Integrators, NoiseIsAFunctionOfSeedStepTag) {
  const Vec3d a = gaussian3<double>(7, 100, 5, kNoiseThermostat);
  for (uint32_t tag = 0; tag < 10; ++tag) gaussian3<double>(7, 100, tag, kNoiseThermostat);  // other draws between
  const Vec3d b = gaussian3<double>(7, 100, 5, kNoiseThermostat);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
  for (const Vec3d& other : {gaussian3<double>(8, 100, 5, kNoiseThermostat), gaussian3<double>(7, 101, 5, kNoiseThermostat),
                             gaussian3<double>(7, 100, 6, kNoiseThermostat), gaussian3<double>(7, 100, 5, kNoiseVelocities),
                             gaussian3<double>(7, 100 + (uint64_t(1) << 32), 5, kNoiseThermostat)})
    EXPECT_NE(std::memcmp(&a, &other, sizeof a), 0);
}

// Free particles (LJ switched off): a particle's trajectory depends only on its own start, the
// seed and its tag. It is the same whether or not other particles exist, and whatever the
// number of threads that step them.
TEST(Integrators, NoiseIndependentOfOtherParticlesAndThreads) {
  const std::string yaml = R"(
system:
  types: [{name: A}]
  lattice: {kind: sc, cells: 8, density: 0.2}
force_field:
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 0.0, sigma: 1.0}]}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 1.0, seed: 3}
)";
  test::TestSystem full = test::make_system(yaml);
  test::TestSystem half = full;
  const size_t keep = full.built.state.size() / 2;
  SystemState& h = half.built.state;
  h.position.resize(keep);
  h.velocity.resize(keep);
  h.image.resize(keep);
  h.type.resize(keep);
  h.mass.resize(keep);
  h.charge.resize(keep);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const SystemState a = run(full, 100);
  omp_set_num_threads(2);
  const SystemState b = run(half, 100);
  omp_set_num_threads(threads);
  ASSERT_EQ(b.size(), keep);
  for (size_t i = 0; i < keep; ++i) {
    EXPECT_EQ(std::memcmp(&a.position[i], &b.position[i], sizeof(Vec3d)), 0) << "particle " << i;
    EXPECT_EQ(std::memcmp(&a.velocity[i], &b.velocity[i], sizeof(Vec3d)), 0) << "particle " << i;
  }
}

// Stopping, handing the state to a fresh backend (which builds its neighbour list at another
// step than the first one did) and going on gives the same trajectory bit for bit: pair sums
// run in particle-index order, independent of the cells at list-build time. This is what
// restarts from checkpoints rely on. Checked for one and for two threads.
TEST(Integrators, ContinuationIsBitwiseIdenticalWhateverTheListBuildStep) {
  const test::TestSystem s = test::make_system(test::lj_yaml(5, 0.8442, "langevin", 1.2));
  const int threads = omp_get_max_threads();
  for (int nt : {1, 2}) {
    omp_set_num_threads(nt);
    const SystemState straight = run(s, 250);
    auto first = s.backend();
    first->advance(117);
    SystemState mid;
    first->get_state(mid);
    auto second = s.backend();
    second->set_state(mid);
    second->advance(133);
    SystemState resumed;
    second->get_state(resumed);
    EXPECT_EQ(resumed.step, 250);
    EXPECT_TRUE(bitwise_equal(straight.position, resumed.position)) << nt << " thread(s)";
    EXPECT_TRUE(bitwise_equal(straight.velocity, resumed.velocity)) << nt << " thread(s)";
    // And the same thread count twice gives the same result.
    EXPECT_TRUE(bitwise_equal(straight.position, run(s, 250).position)) << nt << " thread(s)";
  }
  omp_set_num_threads(threads);
}

}  // namespace
}  // namespace pairmd
