// Kills at random moments, many of them, also in the middle of a flush, and cuts at every page
// written: every trajectory a killed `pairmd run` leaves (H5MD and GSD) opens in pairmd's readers
// and in users' tools (h5py, gsd) and holds every frame flushed before the kill, and no frame
// that was only half written (GSD: but the last, unflushed one; docs/output.md).
//
// The slow-write library (tests/slow_write_preload.c) pauses before every page written to the
// trajectory, so that most kills land inside a flush, or kills the process before a chosen page.
// With HDF5's own file driver (main at ad54c74) 40 of 200 slowed kills and 340 of all 1,786 cuts
// broke the file ("addr overflow", frames of zeros); the long setting's results are in
// docs/output.md ("Flush policy"). Settings (environment):
//   PAIRMD_KILL_LOOP_KILLS    kills per test (default 20 H5MD, 10 GSD; the long setting is 500)
//   PAIRMD_KILL_LOOP_SLOW_US  the pause before each page, microseconds (default 300; 0: none)
//   PAIRMD_KILL_LOOP_SPLIT_US the pause before each page after a write's first (default: the
//                             same): a kill inside one write, as the kernel may cut one
//   PAIRMD_KILL_LOOP_SEED     the kill times' seed (default 2929)
//   PAIRMD_KILL_LOOP_PAIRMD   another pairmd binary to kill (an older build, for comparison)
//   PAIRMD_KILL_LOOP_MAX_S    the latest kill, seconds after the start (default 3 with pauses,
//                             1.5 without; HDF5 splits a chunk index node after 64 frames)
//   PAIRMD_KILL_LOOP_CUT_STRIDE  cut before every N-th page (default: about 40 cuts; 1: all)
//   PAIRMD_KILL_LOOP_CUT_STEPS   the steps of the run that is cut (default 40: 21 frames)
#include <gtest/gtest.h>

#include <gsd/gsd.h>

#include <random>
#include <sstream>

#include "io/h5md.h"
#include "io/start_readers.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

constexpr int64_t kEvery = 2;

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : fallback;
}

// A 256-particle LJ liquid with a frame and a thermo row every kEvery steps, each frame flushed
// (flush_seconds 0): a thermo row at step S means that the frame of step S was flushed.
std::string config(const std::string& output, int64_t steps = 1000000000) {
  std::ostringstream s;
  s << "title: kill loop\nunits: lj\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: A, mass: 1.0}]\n  lattice: {kind: fcc, cells: 4, density: 0.8442}\n"
    << "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n      coeffs: [{types: [A, A], epsilon: 1.0, "
       "sigma: 1.0}]\n"
    << "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}\n"
    << "output:\n  thermo_every: " << kEvery << "\n  progress: off\n  checkpoint_every: 0\n"
    << output;
  return s.str();
}

// The step of the last whole row of the thermo table (-1: none).
int64_t last_row_step(const std::string& csv) {
  std::istringstream in(test::read_text(csv));
  std::string line;
  int64_t last = -1;
  while (std::getline(in, line))
    if (!in.eof() && !line.empty() && std::isdigit(static_cast<unsigned char>(line[0])))
      last = std::stoll(line.substr(0, line.find(',')));
  return last;
}

// Runs /usr/bin/python3 tests/python/check_killed_trajectory.py: "" when the file passes,
// "skip" without the module, else what it printed.
std::string users_tool_check(const char* kind, const std::string& path, int64_t min_frames) {
  const std::string out = path + ".check";
  const std::string cmd = std::string("/usr/bin/python3 '") + PAIRMD_SOURCE_DIR +
                          "/tests/python/check_killed_trajectory.py' " + kind + " '" + path + "' " +
                          std::to_string(min_frames) + " " + std::to_string(kEvery) + " > '" + out + "' 2>&1";
  const int status = std::system(cmd.c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 0) return "";
  if (rc == 77) return "skip";
  const std::string text = test::read_text(out);
  return text.empty() ? "exit " + std::to_string(rc) : text;
}

// What pairmd's H5MD reader makes of the file: "" when every frame is there in order and the
// first, last and last flushed frames read whole.
std::string pairmd_h5md_check(const std::string& path, int64_t min_frames) {
  try {
    const std::vector<int64_t> steps = h5md_position_steps(path);
    for (size_t f = 0; f < steps.size(); ++f)
      if (steps[f] != kEvery * static_cast<int64_t>(f))
        return "frame " + std::to_string(f) + " is step " + std::to_string(steps[f]);
    if (static_cast<int64_t>(steps.size()) < min_frames)
      return std::to_string(steps.size()) + " frames, " + std::to_string(min_frames) + " were flushed";
    for (const int64_t f : {int64_t(0), min_frames - 1, int64_t(-1)}) {
      if (f < -1 || steps.empty()) continue;
      const H5mdFrame fr = read_h5md_frame(path, f);
      if (fr.state.size() != 256) return "frame " + std::to_string(f) + " has " + std::to_string(fr.state.size());
      bool zero = true;
      for (const Vec3d& x : fr.state.position) {
        if (!std::isfinite(x.x + x.y + x.z)) return "frame " + std::to_string(f) + " has a non-finite position";
        zero = zero && x.x == 0 && x.y == 0 && x.z == 0;
      }
      if (zero) return "frame " + std::to_string(f) + " is all zero";
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The same through GSD's reference library and pairmd's GSD start-file reader.
std::string pairmd_gsd_check(const std::string& path, int64_t min_frames) {
  gsd_handle h{};
  if (gsd_open(&h, path.c_str(), GSD_OPEN_READONLY) != GSD_SUCCESS) return "does not open with libgsd";
  const uint64_t frames = gsd_get_nframes(&h);
  // Every frame holds its own positions, images and velocities (a frame without them would be
  // read with frame 0's, the schema's fallback); but the last one, if it was not flushed, may
  // show only its first chunks: GSD indexes a frame with one write, which a kill can cut at a
  // page boundary (docs/output.md).
  std::string lacks;
  const uint64_t whole = static_cast<int64_t>(frames) > min_frames ? frames - 1 : frames;
  for (uint64_t f = 0; f < whole && lacks.empty(); ++f)
    for (const char* name :
         {"configuration/step", "particles/position", "particles/image", "particles/velocity", "log/temperature"})
      if (!gsd_find_chunk(&h, f, name)) {
        lacks = "frame " + std::to_string(f) + " of " + std::to_string(frames) + " lacks " + name;
        break;
      }
  gsd_close(&h);
  if (!lacks.empty()) return lacks;
  if (static_cast<int64_t>(frames) < min_frames)
    return std::to_string(frames) + " frames, " + std::to_string(min_frames) + " were flushed";
  if (frames == 0) return "";
  try {
    for (const int64_t f : {int64_t(0), min_frames - 1, int64_t(-1)}) {
      if (f < -1) continue;
      const StartStructure s = read_gsd_frame(path, f);
      if (s.state.size() != 256) return "frame " + std::to_string(f) + " has " + std::to_string(s.state.size());
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

struct LoopResult {
  int kills = 0, checked = 0;
  int64_t most_frames = 0;  // the most flushed frames a checked file held
  std::vector<std::string> failures;
};

using Check = std::function<std::string(const std::string&, int64_t)>;

// The trajectory `file` a killed run left in `dir`, read by `check` (pairmd's reader) and the
// users' tool: "" when every frame of a thermo row is there and whole. With `rows_flushed` false
// (frames written behind the run: a row means its frame was handed over, not flushed) only that
// the frames there are whole and in order.
std::string check_killed_run(const ScratchDir& dir, const std::string& file, const char* kind, const Check& check,
                             LoopResult& res, bool rows_flushed = true) {
  const int64_t last = last_row_step(dir / "run.thermo.csv");
  // A run killed before its first row may have died while creating its files: no frame was
  // flushed, nothing to check.
  if (last < 0) return "";
  ++res.checked;
  const int64_t min_frames = rows_flushed ? last / kEvery + 1 : 0;
  res.most_frames = std::max(res.most_frames, min_frames);
  const std::string path = dir / file;
  if (!rows_flushed && std::string(kind) == "h5md") {  // the frames the file holds (none promised)
    try {
      res.most_frames = std::max(res.most_frames, static_cast<int64_t>(h5md_position_steps(path).size()));
    } catch (const std::exception&) {
      // no frame yet: the check below says whether the file is whole
    }
  }
  std::string problem = check(path, min_frames);
  if (problem.empty()) problem = users_tool_check(kind, path, min_frames);
  if (problem.empty() || problem == "skip") return "";
  return "last row step " + std::to_string(last) + ": " + problem;
}

std::string binary_to_kill() {
  const char* other = std::getenv("PAIRMD_KILL_LOOP_PAIRMD");
  return other && *other ? other : PAIRMD_BINARY;
}

// Kills `pairmd run` (with `output` as its output section) at random moments and checks the
// trajectory `file` each one leaves.
LoopResult kill_loop(const std::string& output, const std::string& file, const char* kind, int kills,
                     const Check& check, bool rows_flushed = true) {
  const long slow_us = env_long("PAIRMD_KILL_LOOP_SLOW_US", 300);
  const long split_us = env_long("PAIRMD_KILL_LOOP_SPLIT_US", slow_us);
  std::mt19937_64 rng(static_cast<uint64_t>(env_long("PAIRMD_KILL_LOOP_SEED", 2929)));
  // Kill times from the start of the process: some before or while the files are created, most
  // while frames are written.
  const char* max_s = std::getenv("PAIRMD_KILL_LOOP_MAX_S");
  std::uniform_real_distribution<double> delay(0.05, max_s && *max_s ? std::atof(max_s) : slow_us > 0 ? 3.0 : 1.5);
  LoopResult res;
  for (int k = 0; k < kills; ++k) {
    ScratchDir dir;
    test::write_text(dir / "run.yaml", config(output));
    std::vector<std::string> env;
    if (slow_us > 0)
      env = {std::string("LD_PRELOAD=") + PAIRMD_SLOW_WRITE_LIBRARY, "PAIRMD_TEST_SLOW_DIR=" + dir.path,
             "PAIRMD_TEST_SLOW_US=" + std::to_string(slow_us), "PAIRMD_TEST_SLOW_SPLIT_US=" + std::to_string(split_us)};
    test::Child c({binary_to_kill(), "run", "run.yaml", "--backend", "cpu"}, dir.path, 0, 0, env);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    c.signal(SIGKILL);
    const test::ChildResult r = c.wait(30);
    ++res.kills;
    const std::string problem = r.signal != SIGKILL ? "the run ended before the kill: " + r.err
                                                    : check_killed_run(dir, file, kind, check, res, rows_flushed);
    if (!problem.empty()) res.failures.push_back("kill " + std::to_string(k) + ": " + problem);
  }
  std::printf(
      "%s kill loop: %d kills, %d files with flushed frames checked (up to %lld frames), %zu failures (pause %ld us)\n",
      kind, res.kills, res.checked, static_cast<long long>(res.most_frames), res.failures.size(), slow_us);
  return res;
}

// Cuts a short run (40 steps, 21 frames; PAIRMD_KILL_LOOP_CUT_STEPS) at chosen points: the
// slow-write library kills the process instead of writing the N-th page-sized piece to the
// trajectory (`inside_writes`: counting only the pieces after a write's first, the cuts a kill
// makes inside one write), for N = every PAIRMD_KILL_LOOP_CUT_STRIDE-th piece (default: about 40
// cuts; 1 cuts at every point) until the run ends.
LoopResult cut_loop(const std::string& output, const std::string& file, const char* kind, long default_stride,
                    bool inside_writes, const Check& check) {
  const long stride = std::max(1L, env_long("PAIRMD_KILL_LOOP_CUT_STRIDE", default_stride));
  const int64_t steps = std::max(2L, env_long("PAIRMD_KILL_LOOP_CUT_STEPS", 40));
  LoopResult res;
  for (long n = (stride + 1) / 2;; n += stride) {
    ScratchDir dir;
    test::write_text(dir / "run.yaml", config(output, steps));
    const std::vector<std::string> env = {std::string("LD_PRELOAD=") + PAIRMD_SLOW_WRITE_LIBRARY,
                                          "PAIRMD_TEST_SLOW_DIR=" + dir.path, "PAIRMD_TEST_SLOW_US=0",
                                          "PAIRMD_TEST_KILL_AT_PIECE=" + std::to_string(n),
                                          std::string("PAIRMD_TEST_KILL_INSIDE=") + (inside_writes ? "1" : "0")};
    test::Child c({binary_to_kill(), "run", "run.yaml", "--backend", "cpu"}, dir.path, 0, 0, env);
    const test::ChildResult r = c.wait(60);
    if (r.exit_code == 0 && r.signal == 0) break;  // the run wrote fewer pieces: every cut is done
    ++res.kills;
    const std::string problem =
        r.signal != SIGKILL ? "the run failed: " + r.err : check_killed_run(dir, file, kind, check, res);
    if (!problem.empty()) res.failures.push_back("cut before piece " + std::to_string(n) + ": " + problem);
  }
  std::printf(
      "%s cuts: %d cut points (every %ld%s pieces), %d files with flushed frames checked (up to %lld frames), %zu "
      "failures\n",
      kind, res.kills, stride, inside_writes ? " inner" : "", res.checked, static_cast<long long>(res.most_frames),
      res.failures.size());
  return res;
}

const char* const kH5mdOutput =
    "  trajectory: {every: 2, velocities_every: 2, observables_every: 2, flush_seconds: 0}\n";
const char* const kGsdOutput = "  trajectory: {every: 0}\n  gsd: {every: 2, velocities: true, flush_seconds: 0}\n";

TEST(KillLoop, H5mdTrajectoryKeepsEveryFlushedFrameWhereverAKillLands) {
  const int kills = static_cast<int>(env_long("PAIRMD_KILL_LOOP_KILLS", 20));
  const LoopResult r = kill_loop(kH5mdOutput, "run.h5", "h5md", kills, pairmd_h5md_check);
  EXPECT_GT(r.checked, kills / 2) << "too few kills landed after the first frame";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// Frames written behind the run (flush_seconds 0.01: the writer's thread writes them and the
// timer flushes them while the run goes on, so kills land in background writes and flushes):
// every file a kill leaves opens, in pairmd's reader and h5py, with whole frames in order.
TEST(KillLoop, H5mdTrajectoryWrittenBehindTheRunStaysWholeWhereverAKillLands) {
  const int kills = static_cast<int>(env_long("PAIRMD_KILL_LOOP_KILLS", 20));
  const LoopResult r =
      kill_loop("  trajectory: {every: 2, velocities_every: 2, observables_every: 2, flush_seconds: 0.01}\n", "run.h5",
                "h5md", kills, pairmd_h5md_check, false);
  EXPECT_GT(r.checked, kills / 2) << "too few kills landed after the first frame";
  EXPECT_GT(r.most_frames, 10) << "the killed files held almost no frames";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

TEST(KillLoop, H5mdTrajectoryKeepsEveryFlushedFrameWhereverAWriteIsCut) {
  const LoopResult r = cut_loop(kH5mdOutput, "run.h5", "h5md", 61, false, pairmd_h5md_check);
  EXPECT_GT(r.checked, r.kills / 2) << "too few cuts after the first frame";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

TEST(KillLoop, GsdTrajectoryKeepsEveryFlushedFrameWhereverAKillLands) {
  const int kills = static_cast<int>(env_long("PAIRMD_KILL_LOOP_KILLS", 10));
  const LoopResult r = kill_loop(kGsdOutput, "run.gsd", "gsd", kills, pairmd_gsd_check);
  EXPECT_GT(r.checked, kills / 2) << "too few kills landed after the first frame";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

TEST(KillLoop, GsdTrajectoryKeepsEveryFlushedFrameWhereverAWriteIsCut) {
  const LoopResult r = cut_loop(kGsdOutput, "run.gsd", "gsd", 1, true, pairmd_gsd_check);
  EXPECT_GT(r.checked, r.kills / 2) << "too few cuts after the first frame";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace pairmd
