// The GSD trajectory (output.gsd): what a run writes reads back through GSD's own library as
// HOOMD frames, and it keeps the H5MD trajectory's promises (docs/output.md): created
// exclusively, never replaced silently, continued by a restart without duplicate frames,
// flushed on the clock so that a SIGKILL loses only the last flush_seconds, and a full disk
// stops the run without damaging what was flushed.
#include <gtest/gtest.h>

#include <gsd/gsd.h>
#include <sys/stat.h>

#include <cmath>
#include <regex>

#include "backends/cpu_backend.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "io/checkpoint.h"
#include "io/gsd_util.h"
#include "io/gsd_writer.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

// A GSD file read with the reference library, frame by frame.
struct GsdFile {
  gsd_handle h{};
  explicit GsdFile(const std::string& path) {
    const int rc = gsd_open(&h, path.c_str(), GSD_OPEN_READONLY);
    if (rc != GSD_SUCCESS) throw std::runtime_error("'" + path + "' does not open: " + gsdio::error_text(rc));
  }
  ~GsdFile() { gsd_close(&h); }
  uint64_t frames() { return gsd_get_nframes(&h); }
  template <typename T>
  std::vector<T> get(uint64_t frame, const char* name, gsd_type type, uint32_t cols) {
    const gsd_index_entry* e = gsdio::find_chunk(h, frame, name);
    if (!e) return {};
    return gsdio::read_chunk<T>(h, e, type, 0, cols, name);
  }
  std::vector<uint64_t> steps() {
    std::vector<uint64_t> s;
    for (uint64_t f = 0; f < frames(); ++f)
      s.push_back(get<uint64_t>(f, "configuration/step", GSD_TYPE_UINT64, 1).at(0));
    return s;
  }
};

std::vector<uint64_t> gsd_steps(const std::string& path) { return GsdFile(path).steps(); }

const char* kChains = R"(units: lj
steps: 300
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 2.0, charge: 1.0}]
  chains: {count: 4, length: 10, density: 0.3, bond: fene, monomer_type: M, charged_every: 2, counterion_type: C, seed: 3}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], sigma: 1.0}, {types: [M, C], sigma: 0.9}, {types: [C, C], sigma: 0.8}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, seed: 5}
output:
  thermo_every: 50
  gsd: {every: 100, velocities: true, flush_seconds: 0}
)";

TEST(GsdTrajectory, RunWritesHoomdFramesThatReadBack) {
  ScratchDir dir;
  RunConfig cfg = parse_config(kChains, "chains.yaml");
  BuiltSystem sys = build_system(cfg);
  Model model = cfg.model;
  model.topology = sys.topology;
  const std::string path = dir / "t.gsd";
  Simulation sim(cfg, sys.topology, std::make_unique<CpuBackend>(model, sys.state));
  const double dof = 3.0 * sys.state.size();
  sim.add_observer(std::make_unique<GsdWriter>(path, cfg, sys.state, sys.topology, dof));
  ASSERT_EQ(sim.run(300).outcome, RunOutcome::Completed);
  SystemState end;
  sim.backend().get_state(end);

  GsdFile f(path);
  EXPECT_EQ(std::string(f.h.header.schema), "hoomd");
  EXPECT_EQ(f.steps(), (std::vector<uint64_t>{0, 100, 200, 300}));
  const size_t n = end.size();
  ASSERT_EQ(n, 60u);  // 40 beads, 20 charged, 20 counterions
  EXPECT_EQ(f.get<uint32_t>(0, "particles/N", GSD_TYPE_UINT32, 1).at(0), n);
  EXPECT_EQ(gsdio::read_names(f.h, gsd_find_chunk(&f.h, 0, "particles/types"), "types"),
            (std::vector<std::string>{"M", "C"}));
  const auto typeid_ = f.get<uint32_t>(3, "particles/typeid", GSD_TYPE_UINT32, 1);  // from frame 0
  const auto mass = f.get<float>(3, "particles/mass", GSD_TYPE_FLOAT, 1);
  const auto charge = f.get<float>(3, "particles/charge", GSD_TYPE_FLOAT, 1);
  const auto diameter = f.get<float>(0, "particles/diameter", GSD_TYPE_FLOAT, 1);
  ASSERT_EQ(typeid_.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(typeid_[i], static_cast<uint32_t>(end.type[i]));
    EXPECT_EQ(mass[i], static_cast<float>(end.mass[i]));
    EXPECT_EQ(charge[i], static_cast<float>(end.charge[i]));
    EXPECT_EQ(diameter[i], end.type[i] == 0 ? 1.0f : 0.8f);
  }
  // Bonds with their type names, in frame 0 only (the schema's constant data).
  EXPECT_EQ(f.get<uint32_t>(0, "bonds/N", GSD_TYPE_UINT32, 1).at(0), sys.topology.bonds.size());
  EXPECT_EQ(gsd_find_chunk(&f.h, 1, "bonds/group"), nullptr);
  const auto group = f.get<uint32_t>(2, "bonds/group", GSD_TYPE_UINT32, 2);
  ASSERT_EQ(group.size(), 2 * sys.topology.bonds.size());
  for (size_t b = 0; b < sys.topology.bonds.size(); ++b) {
    EXPECT_EQ(group[2 * b], static_cast<uint32_t>(sys.topology.bonds[b].i));
    EXPECT_EQ(group[2 * b + 1], static_cast<uint32_t>(sys.topology.bonds[b].j));
  }
  EXPECT_EQ(gsdio::read_names(f.h, gsd_find_chunk(&f.h, 0, "bonds/types"), "bonds/types"),
            std::vector<std::string>{"fene"});
  // The last frame is the engine's state in float32, in HOOMD's box centred on the origin.
  const auto box = f.get<float>(3, "configuration/box", GSD_TYPE_FLOAT, 1);
  ASSERT_EQ(box.size(), 6u);
  EXPECT_EQ(box[0], static_cast<float>(end.box.L.x));
  EXPECT_EQ(box[3], 0.0f);
  const auto pos = f.get<float>(3, "particles/position", GSD_TYPE_FLOAT, 3);
  const auto img = f.get<int32_t>(3, "particles/image", GSD_TYPE_INT32, 3);
  const auto vel = f.get<float>(3, "particles/velocity", GSD_TYPE_FLOAT, 3);
  ASSERT_EQ(pos.size(), 3 * n);
  const double half = 0.5 * end.box.L.x;
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(pos[3 * i], static_cast<float>(end.position[i].x - end.box.lo.x - half));
    EXPECT_EQ(pos[3 * i + 2], static_cast<float>(end.position[i].z - end.box.lo.z - half));
    EXPECT_EQ(img[3 * i + 1], end.image[i].y);
    EXPECT_EQ(vel[3 * i + 1], static_cast<float>(end.velocity[i].y));
  }
  const auto T = f.get<double>(3, "log/temperature", GSD_TYPE_DOUBLE, 1);
  const auto t = f.get<double>(3, "log/time", GSD_TYPE_DOUBLE, 1);
  EXPECT_GT(T.at(0), 0.3);
  EXPECT_DOUBLE_EQ(t.at(0), 300 * 0.005);
  // Never over an existing file.
  EXPECT_THROW(GsdWriter(path, cfg, sys.state, sys.topology, dof), std::runtime_error);
  EXPECT_EQ(gsd_steps(path).size(), 4u);
}

TEST(GsdTrajectory, RestartDropsLaterFramesAndRefusesAnotherRunsFile) {
  ScratchDir dir;
  RunConfig cfg = parse_config(kChains, "chains.yaml");
  cfg.run_id = "run-a";
  BuiltSystem sys = build_system(cfg);
  Model model = cfg.model;
  model.topology = sys.topology;
  CpuBackend b(model, sys.state);
  SystemState st = sys.state;
  const std::string path = dir / "t.gsd";
  auto write = [&](GsdWriter& w, int64_t from, int64_t to, int64_t first) {
    for (int64_t step = from; step <= to; step += 100) {
      st.step = step;
      Observables o = b.observables();
      RunContext ctx{cfg, sys.topology, b, first, 1000};
      w.observe(ctx, Frame{st, o, step * 0.005});
    }
  };
  {
    GsdWriter w(path, cfg, st, sys.topology, 1.0);
    write(w, 0, 500, 0);
    EXPECT_EQ(w.frames(), 6);
  }
  EXPECT_EQ(gsd_steps(path), (std::vector<uint64_t>{0, 100, 200, 300, 400, 500}));
  {
    GsdWriter w(path, cfg, st, sys.topology, 1.0, 200);
    EXPECT_EQ(w.frames(), 3);
    EXPECT_EQ(w.frames_dropped(), 3);
    write(w, 200, 400, 200);  // step 200 is there already: not written again
  }
  EXPECT_EQ(gsd_steps(path), (std::vector<uint64_t>{0, 100, 200, 300, 400}));
  {
    GsdFile f(path);
    // The static data stayed in frame 0.
    EXPECT_EQ(f.get<uint32_t>(4, "particles/typeid", GSD_TYPE_UINT32, 1).size(), st.size());
  }
  EXPECT_FALSE(test::file_exists(dir / ("t.gsd.tmp." + std::to_string(getpid()))));
  // Nothing to drop: appended in place.
  { GsdWriter w(path, cfg, st, sys.topology, 1.0, 400); }
  EXPECT_EQ(gsd_steps(path).size(), 5u);
  // Another run's file, or another system: refused, the file untouched.
  const std::string before = test::read_text(path);
  RunConfig other = cfg;
  other.run_id = "run-b";
  try {
    GsdWriter w(path, other, st, sys.topology, 1.0, 200);
    FAIL() << "another run's file was continued";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to another run"), std::string::npos) << e.what();
  }
  RunConfig bigger = parse_config(kChains, "chains.yaml", {"system.chains.count=5"});
  bigger.run_id = cfg.run_id;
  const BuiltSystem sys5 = build_system(bigger);
  EXPECT_THROW(GsdWriter(path, bigger, sys5.state, sys5.topology, 1.0, 200), std::runtime_error);
  EXPECT_EQ(test::read_text(path), before);
}

std::string lj_config(int64_t steps, const std::string& gsd, int64_t checkpoint_every = 0, int cells = 4) {
  std::ostringstream s;
  s << "title: gsd guarantees\nunits: lj\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: A, mass: 1.0}]\n  lattice: {kind: fcc, cells: " << cells << ", density: 0.8442}\n"
    << "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n      coeffs: [{types: [A, A], epsilon: 1.0, "
       "sigma: 1.0}]\n"
    << "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}\n"
    << "output:\n  thermo_every: 100\n  progress: off\n  checkpoint_every: " << checkpoint_every << "\n  gsd: " << gsd
    << "\n";
  return s.str();
}

// A second run refuses to replace the GSD file of an earlier one; --overwrite replaces it; an
// interrupted run continues it through the printed command without a repeated frame.
TEST(GsdTrajectory, ExistingFilesAreRefusedAndAnInterruptedRunContinuesThem) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", lj_config(300, "{every: 100}"));
  ASSERT_EQ(test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  EXPECT_EQ(gsd_steps(dir / "run.gsd"), (std::vector<uint64_t>{0, 100, 200, 300}));
  const std::string before = test::read_text(dir / "run.gsd");
  const test::ChildResult again = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("holds files of an earlier run (run.gsd, run.thermo.csv"), std::string::npos) << again.err;
  EXPECT_EQ(test::read_text(dir / "run.gsd"), before);
  const test::ChildResult over =
      test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--overwrite", "--steps", "100"}, dir.path);
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.out.find("overwrite: removed run.gsd"), std::string::npos) << over.out;
  EXPECT_EQ(gsd_steps(dir / "run.gsd"), (std::vector<uint64_t>{0, 100}));

  // 864 particles, frames every 200 steps, interrupted mid-run.
  test::write_text(dir / "long.yaml", lj_config(20000, "{every: 200, flush_seconds: 0}", 1000, 6));
  test::Child c({PAIRMD_BINARY, "run", "long.yaml", "--backend", "cpu"}, dir.path);
  for (int k = 0; k < 600; ++k) {
    if (test::file_exists(dir / "long.gsd") && GsdFile(dir / "long.gsd").frames() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  c.signal(SIGINT);
  const test::ChildResult r = c.wait(60);
  ASSERT_EQ(r.exit_code, 130) << r.out << r.err;
  const int64_t stopped = read_checkpoint(dir / "long.checkpoint.h5").state.step;
  const std::vector<uint64_t> frames_before = gsd_steps(dir / "long.gsd");
  ASSERT_FALSE(frames_before.empty());
  EXPECT_LE(static_cast<int64_t>(frames_before.back()), stopped);
  const test::ChildResult cont =
      test::run_pairmd({"run", "long.yaml", "--restart", "long.checkpoint.h5", "--steps", "8000"}, dir.path);
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  const std::vector<uint64_t> frames = gsd_steps(dir / "long.gsd");
  // Frames at multiples of 200 (an interrupted run adds no frame of its last state, as H5MD).
  std::vector<uint64_t> want;
  ASSERT_LT(stopped, 8000);
  for (uint64_t s = 0; s <= 8000; s += 200) want.push_back(s);
  EXPECT_EQ(frames, want);
  for (size_t k = 0; k < frames_before.size(); ++k) EXPECT_EQ(frames[k], frames_before[k]);
}

// With flush_seconds 1, a frame written 3 s before a SIGKILL is in the file although no later
// frame came; with 1000 (nothing flushes it) it is not: the test can tell.
TEST(GsdTrajectory, AFrameOlderThanFlushSecondsSurvivesASigkill) {
  for (const double flush : {1.0, 1000.0}) {
    SCOPED_TRACE(flush);
    ScratchDir dir;
    std::ostringstream g;
    g << "{every: 1000000000, flush_seconds: " << flush << "}";
    test::write_text(dir / "run.yaml", lj_config(1000000000, g.str()));
    test::Child c({PAIRMD_BINARY, "run", "run.yaml", "--backend", "cpu"}, dir.path);
    for (int k = 0; k < 600 && test::read_text(dir / "run.thermo.csv").find("\n0,") == std::string::npos; ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    ASSERT_TRUE(c.running()) << c.err();
    c.signal(SIGKILL);
    EXPECT_EQ(c.wait(30).signal, SIGKILL);
    GsdFile f(dir / "run.gsd");  // opens either way
    if (flush == 1.0) {
      EXPECT_EQ(f.steps(), std::vector<uint64_t>{0});
      EXPECT_EQ(f.get<float>(0, "particles/position", GSD_TYPE_FLOAT, 3).size(), 3u * 256);
    } else {
      EXPECT_EQ(f.frames(), 0u) << "frame 0 was flushed without the timer";
    }
  }
}

// A full disk (the preload library's small directory): the run stops with an error naming the
// GSD file, which opens with its frames up to the failure; with room again the printed command
// finishes the run without gaps.
TEST(GsdTrajectory, AFullDiskStopsTheRunAndTheFileStaysReadable) {
  ScratchDir out;
  ScratchDir disk_dir;
  const std::string disk = disk_dir / "disk";
  ASSERT_EQ(mkdir(disk.c_str(), 0755), 0);
  test::write_text(disk + "/run.yaml", lj_config(3000, "{every: 10, velocities: true, flush_seconds: 0}", 500));
  const std::string script = "cd '" + disk +
                             "' && dd if=/dev/zero of=filler bs=65536 count=100 2> /dev/null && '" PAIRMD_BINARY
                             "' run run.yaml --backend cpu > '" +
                             out.path + "/full.out' 2> '" + out.path + "/full.err'; echo $? > '" + out.path +
                             "/full.rc'";
  const std::vector<std::string> env = {std::string("LD_PRELOAD=") + PAIRMD_SMALL_DISK_LIBRARY,
                                        "PAIRMD_TEST_DISK_DIR=" + disk,
                                        "PAIRMD_TEST_DISK_BYTES=" + std::to_string(8 << 20)};
  test::Child c({"/bin/sh", "-c", script}, out.path, 0, 0, env);
  ASSERT_EQ(c.wait(240).exit_code, 0);
  const std::string err = test::read_text(out / "full.err");
  EXPECT_EQ(test::read_text(out / "full.rc"), "1\n") << err;
  EXPECT_NE(err.find("run.gsd"), std::string::npos) << err;
  EXPECT_TRUE(err.find("No space left on device") != std::string::npos || err.find("no room") != std::string::npos)
      << err;
  const std::vector<uint64_t> frames = gsd_steps(disk + "/run.gsd");
  ASSERT_GT(frames.size(), 3u);
  for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ(frames[k], 10 * k);
  EXPECT_LT(frames.back(), 3000u);
  const Checkpoint ck = read_checkpoint(disk + "/run.checkpoint.h5");
  EXPECT_LE(ck.state.step, static_cast<int64_t>(frames.back()) + 10);

  std::remove((disk + "/filler").c_str());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex("continue with: pairmd (.*)\n"))) << err;
  std::vector<std::string> words;
  std::istringstream in(m[1].str());
  for (std::string w; in >> w;) words.push_back(w);
  const test::ChildResult cont = test::run_pairmd(words, disk, 240, 0, 0, env);
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  const std::vector<uint64_t> all = gsd_steps(disk + "/run.gsd");
  ASSERT_EQ(all.size(), 301u);
  for (size_t k = 0; k < all.size(); ++k) EXPECT_EQ(all[k], 10 * k);
}

}  // namespace
}  // namespace pairmd
