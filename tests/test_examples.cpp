// The example configs run end to end through the pairmd binary on the CPU backend.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/bond_images.h"
#include "engine/start_file.h"
#include "io/start_readers.h"
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

// The polymer examples start without blowing up (the builder's random walks are minimised
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

// The PME variant of the polyelectrolyte: it starts cleanly, and the log gives the PME parameters.
TEST(Examples, PolyelectrolytePmeStartsCleanlyAndLogsItsParameters) {
  test::ScratchDir dir("examples");
  const std::string cfg = std::string(PAIRMD_SOURCE_DIR) + "/configs/polyelectrolyte_pme.yaml";
  const test::ChildResult r =
      test::run_pairmd_shell("run '" + cfg +
                                 "' --backend cpu --steps 200 --output out --set output.progress=off "
                                 "--set output.thermo_every=100",
                             dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("electrostatics: particle-mesh Ewald, accuracy 1e-05: alpha 0.548"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grid 70 x 70 x 70, B-spline order 6"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;  // neutral
}

// What every chain analysis reads (MDAnalysis's and OVITO's unwrapping, pairmd_mda.py): the
// positions unwrapped with the image flags. A bond of the examples is ~1 sigma long; one that a
// wrong image flag cuts is about a box length long. Every bond must be shorter than half the
// box in the first and the last frame of both trajectories, H5MD and GSD, that the shipped
// chain configs write.
TEST(Examples, ChainsAreWholeInUnwrappedCoordinatesAtTheStartAndAfterARun) {
  for (const char* name : {"kremer_grest", "polyelectrolyte"}) {
    SCOPED_TRACE(name);
    test::ScratchDir dir("examples");
    const std::string cfg = std::string(PAIRMD_SOURCE_DIR) + "/configs/" + name + ".yaml";
    const test::ChildResult r = test::run_pairmd_shell(
        "run '" + cfg +
            "' --backend cpu --steps 400 --output out --set output.progress=off "
            "--set output.trajectory.every=400 --set output.gsd.every=400 --set output.trajectory.flush_seconds=0",
        dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const BuiltSystem built = build_system(parse_config(test::read_text(cfg), cfg));
    for (int64_t frame : {0, -1}) {
      for (const std::string file : {"out.h5", "out.gsd"}) {
        RunConfig rc = parse_config(test::read_text(cfg), cfg);
        rc.system.source = SystemSource::File;
        rc.system.file.path = dir / file;
        rc.system.file.frame = frame;
        const StartStructure s = load_start_file(rc);
        ASSERT_EQ(s.state.size(), built.state.size());
        const double half = 0.5 * s.state.box.L.x;
        EXPECT_LT(longest_unwrapped_bond(s.state, built.topology), half) << file << " frame " << frame;
      }
    }
  }
}

// configs/semiflexible_melt.yaml, short and small (10 chains of 50 beads, 6000 steps: ~8 s on one
// core), and examples/persistence_length.py on its trajectory: the bond-vector correlation of
// neighbouring bonds, <cos beta>, gives the persistence length of the cosine angle potential's
// freely rotating chain (Langevin function) within 10 % (measured: 1.21 against 1.17). The full
// example (20 x 100 beads, 20,000 steps) is run by hand: docs in the config's header.
TEST(Examples, SemiflexibleMeltHasThePersistenceLengthOfItsAngles) {
  if (std::system("/usr/bin/python3 -c 'import h5py, numpy' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "no h5py/numpy for /usr/bin/python3 (Debian's python3-h5py)";
  test::ScratchDir dir("examples");
  const std::string cfg = std::string(PAIRMD_SOURCE_DIR) + "/configs/semiflexible_melt.yaml";
  const test::ChildResult r = test::run_pairmd_shell(
      "run '" + cfg +
          "' --backend cpu --output sf --set system.chains.count=10 --set system.chains.length=50 --set steps=6000 "
          "--set system.relax.steps=500 --set output.trajectory.every=500 --set output.progress=off",
      dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf("semiflexible melt, 500 beads, 6000 steps: %.1f s\n", r.seconds);
  const std::string script = std::string(PAIRMD_SOURCE_DIR) + "/examples/persistence_length.py";
  const std::string out = (dir / "lp.txt");
  const int status = std::system(
      ("/usr/bin/python3 '" + script + "' '" + (dir / "sf.h5") + "' --length 50 --k 1.5 --skip 2 > '" + out + "' 2>&1")
          .c_str());
  const std::string text = test::read_text(out);
  std::printf("%s", text.c_str());
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("agree within 0.1"), std::string::npos) << text;
}

}  // namespace
}  // namespace pairmd
