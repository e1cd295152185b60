// The example configs run end to end through the pairmd binary on the CPU backend.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_support.h"

namespace pairmd {
namespace {

// `pairmd run configs/lj_liquid.yaml` at its default size (4000 particles, 2000 steps) on the
// CPU: it must finish well under a minute on a machine without a GPU. It takes ~5 s on two
// cores of the development machine; 30 s leaves room for slower machines and still catches a
// backend that got several times slower.
TEST(Examples, LJLiquidRunsWellUnderAMinute) {
  test::ScratchDir dir("examples");
  const std::string cfg = std::string(PAIRMD_SOURCE_DIR) + "/configs/lj_liquid.yaml";
  const test::ChildResult r =
      test::run_pairmd_shell("run '" + cfg + "' --backend cpu --output lj --set output.progress=off", dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf("pairmd run configs/lj_liquid.yaml: %.1f s\n", r.seconds);
  EXPECT_LT(r.seconds, 30.0);
  const std::filesystem::path csv = dir / "lj.thermo.csv";
  ASSERT_TRUE(std::filesystem::exists(csv));
  const std::string text = test::read_text(csv);
  // Header plus rows for steps 0, 200, ..., 2000.
  EXPECT_GE(std::count(text.begin(), text.end(), '\n'), 12) << text;
  EXPECT_NE(r.out.find("performance:"), std::string::npos);
}

// The polymer examples start without blowing up (the builder's random walks are relaxed
// before the dynamics) and keep a sane temperature over a short run.
TEST(Examples, PolymerExamplesStartCleanly) {
  for (const char* name : {"kremer_grest", "polyelectrolyte"}) {
    test::ScratchDir dir("examples");
    const std::string cfg = std::string(PAIRMD_SOURCE_DIR) + "/configs/" + name + ".yaml";
    const test::ChildResult r = test::run_pairmd_shell(
        "run '" + cfg + "' --backend cpu --steps 1000 --output out --set output.progress=off", dir.path);
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.out << r.err;
    EXPECT_LT(r.seconds, 60.0) << name;
    EXPECT_TRUE(std::filesystem::exists(dir / "out.thermo.csv")) << name;
  }
}

}  // namespace
}  // namespace pairmd
