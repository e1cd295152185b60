// Checkpoints: exact round trip, damaged files rejected, the previous checkpoint survives a
// failed write, and a restart continues bit for bit (CPU; GPU where one exists).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/backend.h"
#include "engine/system_builder.h"
#include "io/checkpoint_run.h"
#include "io/h5md.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

RunConfig small_config(int64_t steps = 200) { return parse_config(test::small_lj_config(steps), "small.yaml"); }

bool same_bits(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}
bool same_bits(const std::vector<Int3>& a, const std::vector<Int3>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Int3)) == 0;
}

TEST(Checkpoint, RoundTripIsExact) {
  ScratchDir dir;
  const RunConfig cfg = small_config();
  BuiltSystem sys = build_system(cfg);
  sys.state.step = 1234;
  sys.state.image[3] = {1, -2, 3};
  sys.topology.bonds.push_back({0, 1, 0});
  write_checkpoint(dir / "a.h5", sys.state, sys.topology, cfg, 1000, "cpu");
  const Checkpoint ck = read_checkpoint(dir / "a.h5");
  EXPECT_EQ(ck.state.step, 1234);
  EXPECT_EQ(ck.first_step, 1000);
  EXPECT_EQ(ck.seed, cfg.model.integrator.seed);
  EXPECT_EQ(ck.backend, "cpu");
  EXPECT_EQ(ck.config_text, cfg.text);
  EXPECT_TRUE(same_bits(ck.state.position, sys.state.position));
  EXPECT_TRUE(same_bits(ck.state.velocity, sys.state.velocity));
  EXPECT_TRUE(same_bits(ck.state.image, sys.state.image));
  EXPECT_EQ(ck.state.type, sys.state.type);
  EXPECT_EQ(ck.state.mass, sys.state.mass);
  EXPECT_EQ(ck.state.type_names, sys.state.type_names);
  ASSERT_EQ(ck.topology.bonds.size(), 1u);
  EXPECT_EQ(ck.topology.bonds[0].j, 1);
  EXPECT_EQ(std::memcmp(&ck.state.box.L, &sys.state.box.L, sizeof(Vec3d)), 0);
}

TEST(Checkpoint, DamagedOrForeignFilesAreRejectedWithTheirName) {
  ScratchDir dir;
  const RunConfig cfg = small_config();
  const BuiltSystem sys = build_system(cfg);
  write_checkpoint(dir / "good.h5", sys.state, sys.topology, cfg, 0, "cpu");
  const std::string bytes = test::read_text(dir / "good.h5");
  auto expect_error = [&](const std::string& name, const std::string& content, const char* what) {
    test::write_text(dir / name, content);
    try {
      read_checkpoint(dir / name);
      FAIL() << name << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error("truncated.h5", bytes.substr(0, bytes.size() / 2), "truncated");
  std::string flipped = bytes;
  flipped[bytes.size() / 3] ^= 0x10;
  expect_error("flipped.h5", flipped, "checksum");
  expect_error("text.h5", "steps: 10\n", "not a pairmd checkpoint");
  expect_error("empty.h5", "", "not a pairmd checkpoint");
  EXPECT_THROW(read_checkpoint(dir / "missing.h5"), std::runtime_error);
  // Whole and checksummed, but holding a state no run can start from.
  BuiltSystem nan_state = sys;
  nan_state.state.velocity[7].z = NAN;
  write_checkpoint(dir / "nan.h5", nan_state.state, sys.topology, cfg, 0, "cpu");
  expect_error("nan.h5", test::read_text(dir / "nan.h5"), "particle 7: the velocity (");
}

TEST(Checkpoint, FailedWriteLeavesThePreviousOneIntact) {
  ScratchDir dir;
  const RunConfig cfg = small_config();
  BuiltSystem sys = build_system(cfg);
  write_checkpoint(dir / "ck.h5", sys.state, sys.topology, cfg, 0, "cpu");
  // A directory where the temporary file would go makes the write fail half way.
  ASSERT_EQ(mkdir((dir / "ck.h5.tmp." + std::to_string(getpid())).c_str(), 0755), 0);
  sys.state.step = 99;
  EXPECT_THROW(write_checkpoint(dir / "ck.h5", sys.state, sys.topology, cfg, 0, "cpu"), std::runtime_error);
  EXPECT_EQ(read_checkpoint(dir / "ck.h5").state.step, 0);
  EXPECT_THROW(write_checkpoint("/nonexistent/dir/ck.h5", sys.state, sys.topology, cfg, 0, "cpu"), std::runtime_error);
}

// (a) 200 steps without a stop against (b) 100 steps, checkpoint, a new backend from the
// checkpoint, 100 steps: positions, velocities and images agree bit for bit.
void restart_is_bitwise(const std::string& backend_name) {
  ScratchDir dir;
  const RunConfig cfg = small_config();
  const BuiltSystem sys = build_system(cfg);
  Model model = cfg.model;
  model.topology = sys.topology;
  auto a = make_backend(backend_name, model, sys.state);
  a->advance(200);
  SystemState sa;
  a->get_state(sa);

  auto b = make_backend(backend_name, model, sys.state);
  b->advance(100);
  SystemState mid;
  b->get_state(mid);
  write_checkpoint(dir / "mid.h5", mid, sys.topology, cfg, 0, b->name());
  b.reset();
  const Checkpoint ck = read_checkpoint(dir / "mid.h5");
  auto c = make_backend(backend_name, model, ck.state);
  c->advance(100);
  SystemState sc;
  c->get_state(sc);
  EXPECT_EQ(sc.step, 200);
  EXPECT_TRUE(same_bits(sa.position, sc.position)) << backend_name;
  EXPECT_TRUE(same_bits(sa.velocity, sc.velocity)) << backend_name;
  EXPECT_TRUE(same_bits(sa.image, sc.image)) << backend_name;
}

TEST(Restart, BitwiseOnCpu) { restart_is_bitwise("cpu"); }

TEST(Restart, BitwiseOnGpu) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no usable GPU: " << why;
  restart_is_bitwise("cuda");
}

// The same through the command line: a run stopped at step 200 and restarted ends where an
// uninterrupted run ends, with the same trajectory and thermo table.
TEST(Restart, CommandLineRunContinuesBitwise) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", test::small_lj_config(400));
  auto full = test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--output", "full"}, dir.path);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  auto part = test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--output", "part", "--steps", "200"}, dir.path);
  ASSERT_EQ(part.exit_code, 0) << part.err;
  // The checkpoint holds --steps 200 (the run's own end); --steps 400 takes it further.
  auto rest = test::run_pairmd(
      {"run", "run.yaml", "--backend", "cpu", "--output", "part", "--restart", "part.checkpoint.h5", "--steps", "400"},
      dir.path);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  EXPECT_NE(rest.out.find("ends at step 400"), std::string::npos) << rest.out;
  EXPECT_NE(rest.out.find("  steps: 200 -> 400"), std::string::npos) << rest.out;

  const Checkpoint a = read_checkpoint(dir / "full.checkpoint.h5"), b = read_checkpoint(dir / "part.checkpoint.h5");
  EXPECT_EQ(a.state.step, 400);
  EXPECT_EQ(b.state.step, 400);
  EXPECT_TRUE(same_bits(a.state.position, b.state.position));
  EXPECT_TRUE(same_bits(a.state.velocity, b.state.velocity));
  for (int64_t f = 0; f < 5; ++f) {
    const H5mdFrame fa = read_h5md_frame(dir / "full.h5", f), fb = read_h5md_frame(dir / "part.h5", f);
    EXPECT_EQ(fa.state.step, 100 * f);
    EXPECT_EQ(fb.state.step, 100 * f);
    EXPECT_TRUE(same_bits(fa.state.position, fb.state.position)) << "frame " << f;
    EXPECT_TRUE(same_bits(fa.state.velocity, fb.state.velocity)) << "frame " << f;
  }
  EXPECT_THROW(read_h5md_frame(dir / "part.h5", 5), std::runtime_error);
  // Thermo rows: same steps and energies (the last column group is the rate, which differs).
  auto rows = [](const std::string& text) {
    std::vector<std::string> r;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      r.push_back(line.substr(
          0, line.find(",", line.find(",", line.find(",", line.find(",", line.find(",") + 1) + 1) + 1) + 1)));
    return r;
  };
  EXPECT_EQ(rows(test::read_text(dir / "full.thermo.csv")), rows(test::read_text(dir / "part.thermo.csv")));

  // A restart of a finished run has nothing to do; one with another system is refused.
  auto again = test::run_pairmd({"run", "run.yaml", "--output", "part", "--restart", "part.checkpoint.h5"}, dir.path);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;
  auto other = test::run_pairmd({"run", "run.yaml", "--output", "part", "--restart", "part.checkpoint.h5", "--set",
                                 "system.lattice.cells=5", "--steps", "1000"},
                                dir.path);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("does not describe the system"), std::string::npos) << other.err;
}

}  // namespace
}  // namespace pairmd
