// Renumbering particles along a space-filling curve changes nothing physical (energies and
// forces follow their particles, bonds still join the same particles) and brings spatial
// neighbours to nearby indices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/cpu_backend.h"
#include "engine/spatial_order.h"
#include "test_systems.h"

namespace pairmd {
namespace {

bool same(const Vec3d& a, const Vec3d& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// Of the pairs closer than r, the fraction whose indices differ by less than 64: the pairs whose
// data a GPU warp or two can share.
double fraction_near_in_index(const SystemState& s, double r) {
  long near = 0, pairs = 0;
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = i + 1; j < s.size(); ++j) {
      const Vec3d d = s.box.min_image(s.position[i] - s.position[j]);
      if (dot(d, d) < r * r) {
        near += j - i < 64;
        ++pairs;
      }
    }
  return pairs ? static_cast<double>(near) / pairs : 0.0;
}

TEST(SpatialOrder, EnergiesForcesAndBondsFollowTheirParticles) {
  for (const auto& [name, yaml] : {std::pair{"kremer_grest", testing::kKremerGrest},
                                   std::pair{"polyelectrolyte", testing::kPolyelectrolyte}}) {
    SCOPED_TRACE(name);
    const testing::TestSystem sys = testing::make_system(name, yaml);
    Model model = sys.model();
    SystemState s = sys.system.state;
    const Observables before = CpuBackend(model, s).observables();
    const std::vector<Vec3d> f_before = CpuBackend(model, s).forces();

    Topology topo = model.topology;
    SystemState sorted = s;
    const std::vector<int> order = sort_spatially(sorted, topo, 1.0);
    std::vector<int> check = order;
    std::sort(check.begin(), check.end());
    for (size_t k = 0; k < check.size(); ++k) ASSERT_EQ(check[k], static_cast<int>(k)) << "not a permutation";
    EXPECT_NE(order, check) << "the system was already in Morton order: the test shows nothing";
    for (size_t k = 0; k < order.size(); ++k) {
      ASSERT_TRUE(same(sorted.position[k], s.position[order[k]]));
      ASSERT_EQ(sorted.charge[k], s.charge[order[k]]);
      ASSERT_EQ(sorted.type[k], s.type[order[k]]);
    }
    ASSERT_EQ(topo.bonds.size(), model.topology.bonds.size());
    for (size_t b = 0; b < topo.bonds.size(); ++b) {
      ASSERT_TRUE(same(sorted.position[topo.bonds[b].i], s.position[model.topology.bonds[b].i]));
      ASSERT_TRUE(same(sorted.position[topo.bonds[b].j], s.position[model.topology.bonds[b].j]));
    }

    model.topology = topo;
    const Observables after = CpuBackend(model, sorted).observables();
    const std::vector<Vec3d> f_after = CpuBackend(model, sorted).forces();
    EXPECT_NEAR(after.potential, before.potential, 1e-10 * std::fabs(before.potential));
    EXPECT_NEAR(after.virial, before.virial, 1e-10 * std::fabs(before.virial) + 1e-10);
    double rms = 0, worst = 0;
    for (size_t i = 0; i < f_before.size(); ++i) rms += dot(f_before[i], f_before[i]);
    rms = std::sqrt(rms / f_before.size());
    for (size_t k = 0; k < order.size(); ++k) {
      const Vec3d d = f_after[k] - f_before[order[k]];
      worst = std::max(worst, std::sqrt(dot(d, d)));
    }
    EXPECT_LT(worst, 1e-10 * rms) << "forces must follow their particles";
  }
}

TEST(SpatialOrder, BringsNeighboursToNearbyIndices) {
  const testing::TestSystem sys = testing::make_system("lj", testing::kLjLiquid);
  SystemState s = sys.system.state;
  Topology topo;
  // Shuffle first, so the lattice builder's own order cannot pass the test.
  std::vector<int> shuffle(s.size());
  std::iota(shuffle.begin(), shuffle.end(), 0);
  std::shuffle(shuffle.begin(), shuffle.end(), std::mt19937(5));
  SystemState shuffled = s;
  for (size_t k = 0; k < s.size(); ++k) shuffled.position[k] = s.position[shuffle[k]];
  const double before = fraction_near_in_index(shuffled, 1.5);
  sort_spatially(shuffled, topo, 1.0);
  const double after = fraction_near_in_index(shuffled, 1.5);
  EXPECT_GT(after, 3 * before) << "neighbours within 64 indices: " << before << " -> " << after;
}

}  // namespace
}  // namespace pairmd
