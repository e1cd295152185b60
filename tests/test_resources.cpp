// Resource estimates (engine/resources.h, backends/backend.h): the GPU figure matches what was
// measured, the sizes a config plans are the sizes it builds, and the refusal names the key
// that sets the size, the estimate and the limit.
#include <gtest/gtest.h>

#include <regex>

#include "engine/resources.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// The measured GPU memory of the default strategy is 1,627 bytes per particle for the LJ
// benchmark system from 62,500 to 4M particles (rc 2.5, skin 0.4, density 0.8442: about 43 pairs
// per particle; docs/benchmarks.md, issue #12's sixth round).
TEST(Resources, GpuEstimateMatchesTheMeasuredMemoryPerParticle) {
  const test::TestSystem s = test::make_system(test::lj_yaml(10, 0.8442, "langevin", 1.2), {"neighbor.skin=0.4"});
  const SystemSize size = built_size(s.built.state, 0);
  EXPECT_NEAR(pairs_per_particle(s.cfg.model.force_field.pair_terms[0], 0.4, size), 43.1, 0.5);
  for (const int64_t n : {int64_t(62500), int64_t(1000000)}) {
    SystemSize big = size;
    big.particles = n;
    big.volume = n / 0.8442;
    const MemoryEstimate e = estimate_backend_memory("cuda", s.cfg.model, big);
    EXPECT_NEAR(e.device_bytes / n, 1627.0, 163.0) << n;
    EXPECT_EQ(estimate_backend_memory("cpu", s.cfg.model, big).device_bytes, 0.0);
  }
}

// The CPU estimate holds what the run measured (peak RSS 912 MiB for 864,000 particles of this
// system with trajectory, forces and checkpoints every 10 steps, two threads) with room to spare,
// without being several times more.
TEST(Resources, CpuRunEstimateCoversAMeasuredRun) {
  const test::TestSystem s = test::make_system(test::lj_yaml(60, 0.8442, "langevin", 1.2), {"neighbor.skin=0.4"});
  ASSERT_EQ(s.built.state.size(), 864000u);
  const MemoryEstimate e = estimate_run_memory(s.cfg, "cpu", built_size(s.built.state, 0), 0);
  EXPECT_GT(e.host_bytes, 912.0 * 1048576);
  EXPECT_LT(e.host_bytes, 3.0 * 912.0 * 1048576);
  EXPECT_TRUE(e.impossible.empty());
}

TEST(Resources, PlannedSizesAreTheBuiltSizes) {
  for (const char* name : {"lj_liquid", "kremer_grest", "polyelectrolyte"}) {
    const RunConfig cfg = load_config(std::string(PAIRMD_SOURCE_DIR) + "/configs/" + name + ".yaml");
    const BuiltSystem sys = build_system(cfg);
    const SystemSize planned = planned_size(cfg);
    EXPECT_EQ(planned.particles, static_cast<int64_t>(sys.state.size())) << name;
    EXPECT_EQ(planned.bonds, static_cast<int64_t>(sys.topology.bonds.size())) << name;
    EXPECT_NEAR(planned.volume, sys.state.box.volume(), 1e-6 * planned.volume) << name;
  }
}

TEST(Resources, RefusalNamesTheSizeKeyTheEstimateAndTheLimit) {
  const RunConfig cfg = parse_config(test::lj_yaml(20, 0.8442, "langevin", 1.2), "big.yaml");
  const SystemSize size = planned_size(cfg);
  const MemoryEstimate need = estimate_run_memory(cfg, "cpu", size, 0);
  HostMemory host{need.host_bytes * 0.5, "a test limit"};
  try {
    require_memory(cfg, need, size, host, 0);
    FAIL() << "not refused";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(
        std::regex_search(e.what(), std::regex(R"(^big\.yaml:3:31: system\.lattice\.cells: a run of 32000 particles )"
                                               R"(needs about [0-9.]+ MiB of host memory, but only [0-9.]+ MiB can be )"
                                               R"(had here \(a test limit\); nothing was started)")))
        << e.what();
  }
  host.available_bytes = need.host_bytes * 1.01;
  EXPECT_NO_THROW(require_memory(cfg, need, size, host, 0));
  // What the process already holds counts as used.
  EXPECT_NO_THROW(require_memory(cfg, need, size, HostMemory{need.host_bytes * 0.5, "x"}, need.host_bytes * 0.6));
  EXPECT_GT(available_host_memory().available_bytes, 0.0);
}

// Pair lists of the CPU backend are indexed by int: a system whose list would pass 2^31 pairs
// cannot run on it, whatever the memory.
TEST(Resources, CpuListPastTwoToTheThirtyOnePairsIsImpossible) {
  const RunConfig cfg = parse_config(test::lj_yaml(4, 0.8442, "langevin", 1.2), "x.yaml");
  SystemSize size{200000000, 0, 200000000 / 0.8442};
  EXPECT_FALSE(estimate_backend_memory("cpu", cfg.model, size).impossible.empty());
  size = {1000000, 0, 1000000 / 0.8442};
  EXPECT_TRUE(estimate_backend_memory("cpu", cfg.model, size).impossible.empty());
  EXPECT_EQ(format_bytes(1536.0 * 1048576), "1.5 GiB");
  EXPECT_EQ(format_bytes(300.0 * 1024), "300 KiB");
}

}  // namespace
}  // namespace pairmd
