// The Verlet list against the all-pairs sum (CpuBackend::forces_all_pairs): random
// configurations in large and small periodic boxes (2 and 3 cells per direction), particles
// on and across the periodic faces, open boundaries, exclusions; and during dynamics, where
// the list is reused until the rebuild criterion fires.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "neighbor/verlet_list.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// The list and the all-pairs loop add the same pair forces in different orders, so they
// agree to rounding: ~eps * (terms per particle) * |largest pair force|. 1e-10 * max|F| is
// far above that (1e-14) and far below a missing pair (its force, >= 1e-3 * max|F| for
// pairs inside the cutoff of these systems).
void expect_same_forces(const std::vector<Vec3d>& list, const std::vector<Vec3d>& all, const std::string& what) {
  ASSERT_EQ(list.size(), all.size());
  double fmax = 0;
  for (const Vec3d& f : all) fmax = std::max(fmax, std::sqrt(dot(f, f)));
  ASSERT_GT(fmax, 0.0) << what;
  int bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Vec3d d = list[i] - all[i];
    if (std::sqrt(dot(d, d)) > 1e-10 * fmax && ++bad <= 5)
      ADD_FAILURE() << what << ": particle " << i << " list force (" << list[i].x << ", " << list[i].y << ", "
                    << list[i].z << ") vs all pairs (" << all[i].x << ", " << all[i].y << ", " << all[i].z << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}

// Random positions with a closest approach of 0.8 (no huge forces), some of them placed
// exactly on, or a hair inside, the periodic faces.
void randomise(SystemState& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const Box& box = s.box;
  std::vector<Vec3d> placed;
  for (size_t i = 0; i < s.size(); ++i) {
    Vec3d x;
    for (int trial = 0;; ++trial) {
      x = {box.lo.x + u(rng) * box.L.x, box.lo.y + u(rng) * box.L.y, box.lo.z + u(rng) * box.L.z};
      if (i % 7 == 0) x.x = box.lo.x;                                      // on the lower face
      if (i % 7 == 1) x.y = std::nextafter(box.lo.y + box.L.y, box.lo.y);  // just inside the upper face
      if (i % 7 == 2) x.z = box.lo.z + 1e-12;
      bool ok = true;
      for (const Vec3d& p : placed) {
        const Vec3d d = box.min_image(x - p);
        if (dot(d, d) < 0.64) {
          ok = false;
          break;
        }
      }
      if (ok || trial > 1000) break;
    }
    placed.push_back(x);
    s.position[i] = x;
    s.image[i] = {0, 0, 0};
  }
}

struct Case {
  const char* name;
  int cells;       // fcc unit cells per direction (4 particles each)
  double density;  // sets the box: L = cells * (4 / density)^(1/3)
  double cutoff;
};

// rlist = cutoff + 0.3. Box edges: 5 cells at 0.5 -> L = 9.28, rlist 2.8 -> 3 cells of the
// list per direction; 4 cells at 0.45 -> 8.0/2.8 -> 2 cells (cells adjacent through two images,
// where the list must fall back to the minimum image); 8 cells at 0.5 -> 14.8 -> 5 cells.
const Case kCases[] = {
    {"three_cells", 5, 0.5, 2.5},
    {"two_cells", 4, 0.45, 2.5},
    {"many_cells", 8, 0.5, 2.5},
    {"short_cutoff_small_box", 3, 0.3, 1.5},
};

TEST(NeighborList, MatchesAllPairsOnRandomPeriodicConfigurations) {
  for (const Case& c : kCases) {
    test::TestSystem s = test::make_system(test::lj_yaml(c.cells, c.density, "nve", 1.0, 0.005, c.cutoff));
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SystemState st = s.built.state;
      randomise(st, seed);
      auto b = s.backend();
      b->set_state(st);
      expect_same_forces(b->forces(), b->forces_all_pairs(), std::string(c.name) + " seed " + std::to_string(seed));
    }
  }
}

TEST(NeighborList, MatchesAllPairsWithOpenBoundaries) {
  test::TestSystem s = test::make_system(test::lj_yaml(5, 0.5, "nve", 1.0), {"system.boundary=open"});
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SystemState st = s.built.state;
    randomise(st, seed);
    // Stretch one direction and move a particle far out: open boundaries have no box.
    for (Vec3d& x : st.position) x.z *= 2.0;
    st.position[0] = {50.0, -20.0, 3.0};
    auto b = s.backend();
    b->set_state(st);
    expect_same_forces(b->forces(), b->forces_all_pairs(), "open seed " + std::to_string(seed));
  }
}

// Chains with 1-2 exclusions (and 1-3 with `angles`): excluded pairs are left out of both the
// list and the all-pairs sum; bonds are in both.
TEST(NeighborList, MatchesAllPairsWithExclusions) {
  for (const char* policy : {"bonds", "angles", "none"}) {
    const std::string yaml = R"(
system:
  types: [{name: M}]
  chains: {count: 20, length: 10, density: 0.6, bond: fene}
  relax: {steps: 100}
force_field:
  exclusions: )" + std::string(policy) +
                             R"(
  bonds: [{name: fene, potential: fene, k: 30, r0: 1.5}]
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [M, M], epsilon: 1, sigma: 1}]}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.0}
)";
    test::TestSystem s = test::make_system(yaml);
    auto b = s.backend();
    expect_same_forces(b->forces(), b->forces_all_pairs(), std::string("exclusions ") + policy);
  }
}

// During dynamics the list is built at some step and reused; after every step the forces must
// still equal the all-pairs forces (a pair that moved inside the cutoff without the list
// noticing would show up here). A hot, dilute-ish liquid in a small box makes particles cross
// the periodic faces and the list rebuild often.
TEST(NeighborList, StaysValidDuringDynamics) {
  // Box 7.5 (2 list cells per direction: minimum-image path) and 10.0 (3 cells: shifted
  // images of the wrapped stencil).
  for (const auto& [cells, density] : {std::pair<int, double>{4, 0.6}, std::pair<int, double>{5, 0.5}}) {
    const std::string what = "box of " + std::to_string(cells) + " fcc cells";
    test::TestSystem s = test::make_system(test::lj_yaml(cells, density, "langevin", 3.0), {"integrator.friction=0.1"});
    auto b = s.backend();
    int crossings = 0;
    for (int step = 0; step < 300; ++step) {
      b->advance(1);
      expect_same_forces(b->forces(), b->forces_all_pairs(), what + ", step " + std::to_string(step + 1));
      if (HasFailure()) return;
    }
    SystemState st;
    b->get_state(st);
    for (const Int3& im : st.image) crossings += std::abs(im.x) + std::abs(im.y) + std::abs(im.z);
    EXPECT_GT(crossings, 10) << what << ": particles should cross the periodic faces in this test";
    EXPECT_GT(b->stats().list_builds, 10) << what << ": the list should be rebuilt during this test";
    EXPECT_LT(b->stats().list_builds, 150) << what << ": the list should be reused between rebuilds";
  }
}

// The rebuild criterion: the list holds every pair closer than the cutoff as long as the two
// largest displacements since the build add up to less than the skin; beyond that it asks to
// be rebuilt.
TEST(NeighborList, RebuildCriterion) {
  const Box box{{0, 0, 0}, {10, 10, 10}, true};
  std::vector<Vec3d> x = {{1, 1, 1}, {1 + 2.79, 1, 1}, {9.9, 5, 5}, {0.1 + 2.79, 5, 5}};
  VerletList list(2.5, 0.3);
  list.build(x, box, {});
  // Pair (0,1) at 2.79 < rlist 2.8: listed. Pair (2,3) across the face at 2.99: not listed.
  EXPECT_EQ(list.offsets()[1] - list.offsets()[0], 1);
  EXPECT_EQ(list.offsets()[3] - list.offsets()[2], 0);
  std::vector<Vec3d> y = x;
  y[2].x += 0.14;  // wraps to 0.04
  y[2].x -= 10.0;
  y[3].x -= 0.14;  // pair (2,3) now at 2.71 > 2.5: still no force missing
  EXPECT_FALSE(list.needs_rebuild(y, box));
  y[3].x -= 0.031;  // 0.14 + 0.171 > skin: the pair could now be inside the cutoff
  EXPECT_TRUE(list.needs_rebuild(y, box));
  // One particle alone may move almost the whole skin.
  std::vector<Vec3d> z = x;
  z[0].x += 0.29;
  EXPECT_FALSE(list.needs_rebuild(z, box));
  z[0].x += 0.02;
  EXPECT_TRUE(list.needs_rebuild(z, box));
}

}  // namespace
}  // namespace pairmd
