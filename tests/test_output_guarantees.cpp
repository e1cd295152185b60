// What pairmd promises about the files a user already has (docs/output.md, issue #13), tried
// with the real binary as a child process: a second run on a prefix in use is refused at once
// and the first run's files stay whole; a repeated run refuses to replace an earlier run's
// files unless --overwrite; an interrupted run continues with its own prefix, overrides and
// end step through the command it prints; kills at random moments leave every frame older
// than flush_seconds; a full disk stops the run and damages nothing written before. Every test
// checks that earlier outputs still open and hold what they held.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <regex>

#include "io/checkpoint.h"
#include "io/h5md.h"
#include "io/hdf5_util.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;
using Clock = std::chrono::steady_clock;

// The steps of a time series of an H5MD file (e.g. "particles/all/position"), read in this
// process. Throws when the file does not open or the series is missing.
std::vector<int64_t> series_steps(const std::string& path, const std::string& series) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("'" + path + "' does not open (" + h5::last_error() + ")");
  h5::Handle file(f);
  if (!h5::exists(file, series + "/step")) throw std::runtime_error("'" + path + "' has no " + series);
  h5::Handle d(h5::check_id(H5Dopen2(file, (series + "/step").c_str(), H5P_DEFAULT), "cannot open " + series));
  const auto dims = h5::dims_of(d);
  std::vector<int64_t> steps(dims.at(0));
  if (!steps.empty()) h5::check(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data()), "read");
  return steps;
}
std::vector<int64_t> frame_steps(const std::string& path) { return series_steps(path, "particles/all/position"); }

// The rows of a thermo CSV: their steps, and whether every line is a whole row (the header's
// number of fields, steps increasing).
struct Table {
  std::vector<int64_t> steps;
  bool whole = true;
};
Table read_table(const std::string& path) {
  Table t;
  std::istringstream in(test::read_text(path));
  std::string line;
  size_t fields = 0;
  bool header = true;
  while (std::getline(in, line)) {
    const size_t n = std::count(line.begin(), line.end(), ',') + 1;
    if (header) {
      fields = n;
      header = false;
      t.whole = t.whole && line.rfind("step,", 0) == 0;
      continue;
    }
    const int64_t step = std::atoll(line.c_str());
    t.whole = t.whole && n == fields && (t.steps.empty() || step > t.steps.back());
    t.steps.push_back(step);
  }
  t.whole = t.whole && !header;
  return t;
}

// The bytes of every file a run with `prefix` writes that exists.
std::map<std::string, std::string> snapshot(const ScratchDir& dir, const std::string& prefix) {
  std::map<std::string, std::string> s;
  for (const char* ext : {".h5", ".gsd", ".thermo.csv", ".checkpoint.h5", ".potential.dx", ".log"})
    if (test::file_exists(dir / (prefix + ext))) s[prefix + ext] = test::read_text(dir / (prefix + ext));
  return s;
}

// When each thermo row was first seen: a row at step S is written after the trajectory frame of
// step S, so the frame existed (in the writer) by then.
class RowClock {
 public:
  explicit RowClock(std::string path) : path_(std::move(path)) {}
  void poll() {
    const std::string text = test::read_text(path_);
    const auto now = Clock::now();
    size_t start = text.find('\n');  // after the header
    while (start != std::string::npos && start + 1 < text.size()) {
      const size_t end = text.find('\n', start + 1);
      if (end == std::string::npos) break;  // a row still being written
      const int64_t step = std::atoll(text.c_str() + start + 1);
      seen_.emplace(step, now);
      start = end;
    }
  }
  // Polls until a row at step >= `step` is seen or `max_s` passed.
  bool wait_for(int64_t step, double max_s) {
    const auto until = Clock::now() + std::chrono::duration<double>(max_s);
    while (Clock::now() < until) {
      poll();
      if (!seen_.empty() && seen_.rbegin()->first >= step) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void poll_until(Clock::time_point t) {
    while (Clock::now() < t) {
      poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  const std::map<int64_t, Clock::time_point>& seen() const { return seen_; }

 private:
  std::string path_;
  std::map<int64_t, Clock::time_point> seen_;
};

std::string config(int64_t steps, const std::string& trajectory, int64_t checkpoint_every = 0, int cells = 4,
                   int64_t thermo_every = 100) {
  std::ostringstream s;
  s << "title: output guarantees\nunits: lj\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: A, mass: 1.0}]\n  lattice: {kind: fcc, cells: " << cells << ", density: 0.8442}\n"
    << "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n      coeffs: [{types: [A, A], epsilon: 1.0, "
       "sigma: 1.0}]\n"
    << "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}\n"
    << "output:\n  thermo_every: " << thermo_every << "\n  progress: off\n  checkpoint_every: " << checkpoint_every
    << "\n  trajectory: " << trajectory << "\n";
  return s.str();
}

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// ---- concurrent runs -------------------------------------------------------------------------

// The issue's first data loss: a second run on a prefix in use truncated the first run's .h5 (or,
// without a trajectory, interleaved its thermo CSV). Now the second run is refused before it
// touches anything, whatever it asks for, and even with HDF5's own file locking switched off.
TEST(OutputGuarantees, SecondRunOnAPrefixInUseIsRefusedAndTheFirstRunsFilesStayWhole) {
  for (const char* trajectory : {"{every: 100, velocities_every: 100, flush_seconds: 0.2}", "{every: 0}"}) {
    SCOPED_TRACE(trajectory);
    ScratchDir dir;
    test::write_text(dir / "run.yaml", config(1000000000, trajectory, 200));
    test::Child first({PAIRMD_BINARY, "run", "run.yaml", "--backend", "cpu"}, dir.path);
    RowClock rows(dir / "run.thermo.csv");
    ASSERT_TRUE(rows.wait_for(300, 60)) << "the first run did not start: " << first.err();
    ASSERT_TRUE(test::file_exists(dir / "run.checkpoint.h5"));
    const std::vector<std::vector<std::string>> seconds = {
        {"run", "run.yaml", "--backend", "cpu"},
        {"run", "run.yaml", "--backend", "cpu", "--overwrite"},
        {"run", "run.yaml", "--backend", "cpu", "--restart", "run.checkpoint.h5"},
        {"run", "--restart", "run.checkpoint.h5", "--steps", "5"},
    };
    for (const auto& args : seconds) {
      const auto t0 = Clock::now();
      const test::ChildResult r = test::run_pairmd(args, dir.path, 60, 0, 0, {"HDF5_USE_FILE_LOCKING=FALSE"});
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
      EXPECT_NE(
          r.err.find("the output prefix 'run' is in use by another pairmd run (pid " + std::to_string(first.pid())),
          std::string::npos)
          << r.err;
      EXPECT_LT(secs, 10.0) << "the refusal must come at once";
    }
    first.signal(SIGINT);
    const test::ChildResult r = first.wait(60);
    ASSERT_EQ(r.exit_code, 130) << r.err;
    const Checkpoint ck = read_checkpoint(dir / "run.checkpoint.h5");
    if (std::string(trajectory) != "{every: 0}") {
      const std::vector<int64_t> steps = frame_steps(dir / "run.h5");
      ASSERT_FALSE(steps.empty());
      for (size_t k = 0; k < steps.size(); ++k) EXPECT_EQ(steps[k], int64_t(100) * k);
      EXPECT_EQ(steps.back(), ck.state.step / 100 * 100);
      EXPECT_EQ(read_h5md_frame(dir / "run.h5", -1).state.size(), 256u);
    }
    const Table t = read_table(dir / "run.thermo.csv");
    EXPECT_TRUE(t.whole) << test::read_text(dir / "run.thermo.csv");
    EXPECT_EQ(t.steps.back(), ck.state.step);
    EXPECT_FALSE(test::file_exists(dir / "run.lock")) << "the claim is released at the end";
  }
}

// ---- repeated runs ---------------------------------------------------------------------------

TEST(OutputGuarantees, RepeatedRunRefusesToReplaceAnEarlierRunsFilesUnlessAskedTo) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", config(300, "{every: 100, flush_seconds: 1}"));
  ASSERT_EQ(test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  const auto before = snapshot(dir, "run");
  ASSERT_EQ(before.size(), 4u);  // trajectory, thermo table, checkpoint, log

  const test::ChildResult again = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("the output prefix 'run' holds files of an earlier run (run.h5, run.thermo.csv, "
                           "run.checkpoint.h5, run.log); nothing was written"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("to continue that run:  pairmd run run.yaml --restart run.checkpoint.h5"),
            std::string::npos);
  EXPECT_NE(again.err.find("add --overwrite"), std::string::npos);
  EXPECT_EQ(snapshot(dir, "run"), before) << "a refused run changed the earlier files";
  EXPECT_FALSE(test::file_exists(dir / "run.lock"));

  // Any one file of the set is enough to refuse (a new run would mix with it).
  ASSERT_EQ(std::rename((dir / "run.h5").c_str(), (dir / "kept.h5").c_str()), 0);
  ASSERT_EQ(std::rename((dir / "run.checkpoint.h5").c_str(), (dir / "kept.checkpoint.h5").c_str()), 0);
  const test::ChildResult csv_only = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(csv_only.exit_code, 2) << csv_only.err;
  EXPECT_EQ(test::read_text(dir / "run.thermo.csv"), before.at("run.thermo.csv"));
  ASSERT_EQ(std::rename((dir / "kept.h5").c_str(), (dir / "run.h5").c_str()), 0);
  ASSERT_EQ(std::rename((dir / "kept.checkpoint.h5").c_str(), (dir / "run.checkpoint.h5").c_str()), 0);

  // Another prefix is another run; the first one's files stay as they were.
  ASSERT_EQ(test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--output", "other"}, dir.path).exit_code, 0);
  EXPECT_EQ(snapshot(dir, "run"), before);

  // --overwrite replaces them on purpose: a run with another seed writes other numbers.
  const test::ChildResult over =
      test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--overwrite", "--set", "integrator.seed=99"}, dir.path);
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.out.find("overwrite: removed run.h5 (--overwrite)"), std::string::npos) << over.out;
  EXPECT_NE(test::read_text(dir / "run.h5"), before.at("run.h5"));
  EXPECT_EQ(frame_steps(dir / "run.h5"), (std::vector<int64_t>{0, 100, 200, 300}));
  EXPECT_EQ(read_checkpoint(dir / "run.checkpoint.h5").seed, 99u);
  EXPECT_EQ(read_table(dir / "run.thermo.csv").steps, (std::vector<int64_t>{0, 100, 200, 300}));
}

// A copy of an old checkpoint restarted after its prefix was reused (--overwrite) by another
// run: the other run's files are not continued, truncated or touched.
TEST(OutputGuarantees, AStaleCheckpointDoesNotContinueFilesAnotherRunTookOver) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", config(300, "{every: 100, flush_seconds: 1}", 100));
  ASSERT_EQ(test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--steps", "200"}, dir.path).exit_code, 0);
  test::write_text(dir / "stale.h5", test::read_text(dir / "run.checkpoint.h5"));
  ASSERT_EQ(
      test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--overwrite", "--set", "integrator.seed=5"}, dir.path)
          .exit_code,
      0);
  const auto theirs = snapshot(dir, "run");
  const test::ChildResult r = test::run_pairmd({"run", "--restart", "stale.h5"}, dir.path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the files run.* belong to another run than stale.h5"), std::string::npos) << r.err;
  EXPECT_EQ(snapshot(dir, "run"), theirs);
  // Without the other run's checkpoint, the trajectory's own run id stops it.
  ASSERT_EQ(std::remove((dir / "run.checkpoint.h5").c_str()), 0);
  const test::ChildResult r2 = test::run_pairmd({"run", "--restart", "stale.h5", "--steps", "300"}, dir.path);
  EXPECT_EQ(r2.exit_code, 1) << r2.err;
  EXPECT_NE(r2.err.find("it belongs to another run"), std::string::npos) << r2.err;
  EXPECT_EQ(test::read_text(dir / "run.h5"), theirs.at("run.h5"));
  EXPECT_EQ(test::read_text(dir / "run.thermo.csv"), theirs.at("run.thermo.csv"));
  // Going on from the old checkpoint into new files works.
  const test::ChildResult r3 =
      test::run_pairmd({"run", "--restart", "stale.h5", "--output", "old", "--steps", "300"}, dir.path);
  EXPECT_EQ(r3.exit_code, 0) << r3.err;
  EXPECT_EQ(frame_steps(dir / "old.h5"), (std::vector<int64_t>{200, 300}));
}

// ---- interrupted, then continued -------------------------------------------------------------

// The issue's third data loss: the printed "continue with:" command dropped --output, --set and
// --steps. The command printed now is followed word for word; it continues into the same
// prefix, at the same temperature, to the same end (beyond the config's own `steps`), and ends
// bit for bit where an uninterrupted run with the same settings ends.
TEST(OutputGuarantees, InterruptedRunContinuesWithItsOwnPrefixOverridesAndEnd) {
  ScratchDir dir;
  // 864 particles: slow enough (a few thousand steps/s) that the interrupt comes mid-run.
  test::write_text(dir / "run.yaml", config(500, "{every: 200, velocities_every: 200, flush_seconds: 1}", 1000, 6));
  const std::vector<std::string> settings = {"--set", "integrator.temperature=1.5", "--steps", "4000"};
  std::vector<std::string> args = {PAIRMD_BINARY, "run", "run.yaml", "--backend", "cpu", "--output", "custom"};
  args.insert(args.end(), settings.begin(), settings.end());
  test::Child c(args, dir.path);
  RowClock rows(dir / "custom.thermo.csv");
  ASSERT_TRUE(rows.wait_for(700, 60)) << c.err();  // past the config's own 500 steps
  c.signal(SIGINT);
  const test::ChildResult r = c.wait(60);
  ASSERT_EQ(r.exit_code, 130) << "the run ended before the interrupt:\n" << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("continue with: (.*)\n"))) << r.err;
  EXPECT_EQ(m[1].str(), "pairmd run run.yaml --restart custom.checkpoint.h5");
  const int64_t stopped = read_checkpoint(dir / "custom.checkpoint.h5").state.step;
  EXPECT_GT(stopped, 500);
  EXPECT_LT(stopped, 4000);
  const auto frames_before = frame_steps(dir / "custom.h5");

  std::vector<std::string> words = split_words(m[1].str());
  ASSERT_EQ(words.at(0), "pairmd");
  words.erase(words.begin());
  const test::ChildResult cont = test::run_pairmd(words, dir.path);
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  EXPECT_NE(cont.out.find("restart: same config and --set overrides as the run that wrote custom.checkpoint.h5"),
            std::string::npos)
      << cont.out;
  EXPECT_NE(cont.out.find("so it ends at step 4000"), std::string::npos) << cont.out;
  EXPECT_NE(cont.out.find("integrator: langevin, dt 0.005, T 1.5"), std::string::npos) << cont.out;
  EXPECT_FALSE(test::file_exists(dir / "run.h5")) << "the continuation went to the config's default prefix";
  EXPECT_FALSE(test::file_exists(dir / "run.thermo.csv"));

  // The frames before the interrupt are kept, the rest follow without gap or repeat.
  const std::vector<int64_t> frames = frame_steps(dir / "custom.h5");
  ASSERT_EQ(frames.size(), 21u);
  for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ(frames[k], int64_t(200) * k);
  for (size_t k = 0; k < frames_before.size(); ++k) EXPECT_EQ(frames[k], frames_before[k]);
  // Rows every 100 steps, and one at the restart step (docs/output.md): the run advances in
  // chunks of about a quarter second, so on a busy machine the interrupt can stop it between two
  // rows, and that step's row is part of the table.
  std::vector<int64_t> expected_rows;
  for (int64_t s = 0; s <= 4000; s += 100) {
    if (stopped % 100 != 0 && stopped > s - 100 && stopped < s) expected_rows.push_back(stopped);
    expected_rows.push_back(s);
  }
  const Table t = read_table(dir / "custom.thermo.csv");
  EXPECT_TRUE(t.whole);
  EXPECT_EQ(t.steps, expected_rows) << "stopped at step " << stopped;

  // The same settings without the interrupt end in the same state, bit for bit.
  std::vector<std::string> full = {"run", "run.yaml", "--backend", "cpu", "--output", "full"};
  full.insert(full.end(), settings.begin(), settings.end());
  ASSERT_EQ(test::run_pairmd(full, dir.path).exit_code, 0);
  const Checkpoint a = read_checkpoint(dir / "custom.checkpoint.h5"), b = read_checkpoint(dir / "full.checkpoint.h5");
  ASSERT_EQ(a.state.step, 4000);
  ASSERT_EQ(b.state.step, 4000);
  EXPECT_EQ(std::memcmp(a.state.position.data(), b.state.position.data(), a.state.size() * sizeof(Vec3d)), 0);
  EXPECT_EQ(std::memcmp(a.state.velocity.data(), b.state.velocity.data(), a.state.size() * sizeof(Vec3d)), 0);

  // Overriding again: the run says what differs from the one it continues, and goes on.
  const auto kept = snapshot(dir, "full");
  const test::ChildResult more = test::run_pairmd({"run", "run.yaml", "--restart", "custom.checkpoint.h5", "--set",
                                                   "integrator.temperature=1.0", "--steps", "4400"},
                                                  dir.path);
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_NE(more.out.find("restart: differs from the run that wrote custom.checkpoint.h5:\n"), std::string::npos)
      << more.out;
  EXPECT_NE(more.out.find("  steps: 4000 -> 4400\n"), std::string::npos) << more.out;
  EXPECT_NE(more.out.find("  integrator.temperature: 1.5 -> 1.0\n"), std::string::npos) << more.out;
  EXPECT_EQ(frame_steps(dir / "custom.h5").back(), 4400);
  EXPECT_EQ(snapshot(dir, "full"), kept);

  // A restart into a new prefix starts new files there and leaves the run's files alone.
  const auto custom = snapshot(dir, "custom");
  const test::ChildResult branch =
      test::run_pairmd({"run", "--restart", "custom.checkpoint.h5", "--output", "branch", "--steps", "4600"}, dir.path);
  ASSERT_EQ(branch.exit_code, 0) << branch.err;
  EXPECT_NE(branch.out.find("restart: output prefix custom -> branch (--output): new files, starting at step 4400"),
            std::string::npos)
      << branch.out;
  EXPECT_EQ(frame_steps(dir / "branch.h5"), (std::vector<int64_t>{4400, 4600}));
  EXPECT_EQ(snapshot(dir, "custom"), custom);
  // ... but not over files that are there: those belong to another run.
  const test::ChildResult onto =
      test::run_pairmd({"run", "--restart", "custom.checkpoint.h5", "--output", "full", "--steps", "4600"}, dir.path);
  EXPECT_EQ(onto.exit_code, 2) << onto.err;
  EXPECT_EQ(snapshot(dir, "full"), kept);
}

// ---- kills and flush_seconds -----------------------------------------------------------------

// The issue's fourth data loss: with flush_seconds 1, a frame written 3 s before a SIGKILL was
// lost because nothing flushed it until the next frame. Here no later frame ever comes: the
// writer's timer must flush it. The same run with flush_seconds 1000 shows what the test sees
// when the promise is not kept (the frame is not in the file).
TEST(OutputGuarantees, AFrameOlderThanFlushSecondsSurvivesASigkillWithoutALaterFrame) {
  for (const double flush : {1.0, 1000.0}) {
    SCOPED_TRACE(flush);
    ScratchDir dir;
    std::ostringstream traj;
    traj << "{every: 1000000000, observables_every: 1000000000, flush_seconds: " << flush << "}";
    test::write_text(dir / "run.yaml", config(1000000000, traj.str()));
    test::Child c({PAIRMD_BINARY, "run", "run.yaml", "--backend", "cpu"}, dir.path);
    RowClock rows(dir / "run.thermo.csv");
    ASSERT_TRUE(rows.wait_for(0, 60)) << c.err();
    rows.poll_until(rows.seen().at(0) + std::chrono::seconds(3));
    ASSERT_TRUE(c.running()) << c.err();
    c.signal(SIGKILL);
    EXPECT_EQ(c.wait(30).signal, SIGKILL);
    if (flush == 1.0) {
      EXPECT_EQ(frame_steps(dir / "run.h5"), std::vector<int64_t>{0});
      EXPECT_EQ(series_steps(dir / "run.h5", "observables/temperature"), std::vector<int64_t>{0});
      EXPECT_EQ(read_h5md_frame(dir / "run.h5", 0).state.size(), 256u);
    } else {
      EXPECT_THROW(frame_steps(dir / "run.h5"), std::runtime_error) << "frame 0 was flushed without the timer";
    }
  }
}

// Kills at random moments: every frame whose thermo row was seen flush_seconds (plus a margin
// for the flush itself and a loaded machine) before the kill is in the file; the file opens and
// its frames run without gaps from step 0.
TEST(OutputGuarantees, KillsAtRandomMomentsKeepEveryFrameOlderThanFlushSeconds) {
  const double flush_seconds = 1.0, margin = 1.0;
  std::mt19937_64 rng(1313);
  std::uniform_real_distribution<double> delay(2.0, 4.5);
  for (int k = 0; k < 3; ++k) {
    ScratchDir dir;
    test::write_text(
        dir / "run.yaml",
        config(1000000000, "{every: 100, velocities_every: 100, observables_every: 100, flush_seconds: 1}"));
    test::Child c({PAIRMD_BINARY, "run", "run.yaml", "--backend", "cpu"}, dir.path);
    RowClock rows(dir / "run.thermo.csv");
    ASSERT_TRUE(rows.wait_for(0, 60)) << c.err();
    const auto kill_at =
        rows.seen().at(0) + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay(rng)));
    rows.poll_until(kill_at);
    c.signal(SIGKILL);
    const auto killed = Clock::now();
    EXPECT_EQ(c.wait(30).signal, SIGKILL);
    const std::vector<int64_t> frames = frame_steps(dir / "run.h5");
    for (size_t f = 0; f < frames.size(); ++f) ASSERT_EQ(frames[f], int64_t(100) * f) << "frames out of order";
    size_t required = 0;
    for (const auto& [step, when] : rows.seen())
      if (std::chrono::duration<double>(killed - when).count() > flush_seconds + margin) {
        ++required;
        EXPECT_TRUE(std::binary_search(frames.begin(), frames.end(), step)) << "frame " << step << " is lost";
      }
    EXPECT_GT(required, 0u);
    EXPECT_GE(frames.size(), required);
    EXPECT_EQ(read_h5md_frame(dir / "run.h5", -1).state.step, frames.back());
    std::printf("kill %d: %zu frames in the file, %zu of them older than %.1f s at the kill\n", k, frames.size(),
                required, flush_seconds + margin);
  }
}

// ---- memory ----------------------------------------------------------------------------------

// A run that cannot fit is refused with its estimate before anything is allocated or written
// (here under ulimit -v of 1.5 GiB); one that fits runs under the same limit; around the limit the
// estimate decides, and no run ends in an allocation failure.
TEST(OutputGuarantees, RunsThatCannotFitAreRefusedWithTheEstimateAndWriteNothing) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", config(200, "{every: 100}"));
  ASSERT_EQ(test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--output", "earlier"}, dir.path).exit_code, 0);
  const auto earlier = snapshot(dir, "earlier");
  const long limit = 1536L << 20;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--set", "system.lattice.cells=100"},
       R"(^--set system\.lattice\.cells=100: system\.lattice\.cells: a run of 4000000 particles needs about [0-9.]+ GiB of host memory, )"
       R"(but only [0-9.]+ [GM]iB can be had here \(the address-space limit, ulimit -v\); nothing was started)"},
      {{"--set", "analysis.potential_map={every: 10, spacing: 0.001}"},
       R"(--set analysis\.potential_map=.*: analysis\.potential_map\.spacing: a spacing of 0\.001 over the region .* gives )"
       R"(more than 1073741824 lattice points; use a larger spacing)"},
  };
  for (const auto& [extra, expected] : cases) {
    for (const char* cmd : {"check", "run"}) {
      std::vector<std::string> args = {cmd, "run.yaml", "--backend", "cpu"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto t0 = Clock::now();
      const test::ChildResult r = test::run_pairmd(args, dir.path, 60, 0, limit);
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << extra.back() << ": " << r.err;
      EXPECT_TRUE(std::regex_search(r.err, std::regex(expected))) << cmd << ": " << r.err;
      EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0);
      EXPECT_TRUE(snapshot(dir, "run").empty()) << cmd << " wrote output files";
      EXPECT_FALSE(test::file_exists(dir / "run.lock"));
    }
  }
  EXPECT_EQ(snapshot(dir, "earlier"), earlier);

  const test::ChildResult fits = test::run_pairmd(
      {"run", "run.yaml", "--backend", "cpu", "--set", "system.lattice.cells=8"}, dir.path, 120, 0, limit);
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.out.find("memory: about "), std::string::npos) << fits.out;
  for (const int cells : {56, 62, 68}) {
    const std::string prefix = "size" + std::to_string(cells);
    const test::ChildResult r =
        test::run_pairmd({"run", "run.yaml", "--backend", "cpu", "--steps", "2", "--output", prefix, "--set",
                          "system.lattice.cells=" + std::to_string(cells), "--set", "output.trajectory.every=1"},
                         dir.path, 300, 0, limit);
    EXPECT_EQ(r.signal, 0) << cells;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << cells << " cells: exit " << r.exit_code << "\n" << r.err;
    if (r.exit_code == 2) EXPECT_NE(r.err.find("of host memory"), std::string::npos) << r.err;
    if (r.exit_code == 0) EXPECT_EQ(frame_steps(dir / (prefix + ".h5")), (std::vector<int64_t>{0, 1, 2}));
    std::printf("%d cells (%d particles) under ulimit -v 1.5 GiB: %s\n", cells, 4 * cells * cells * cells,
                r.exit_code == 0 ? "ran" : "refused with the estimate");
  }
}

// ---- a full disk ------------------------------------------------------------------------------

// The scenario, as a shell script that runs on the small disk DISK (a tmpfs mounted in a mount
// namespace of its own, or a directory the preload library makes small), copying what is there
// to OUT after each stage: an earlier run completes; a filler leaves ~1.5 MB of room; a run with
// frames every 10 steps runs out of it; the filler goes and the run continues with the command
// it printed.
const char* kFullDiskScenario = R"(set -u
DISK=$1 OUT=$2 PAIRMD=$3 MOUNT=$4
if [ "$MOUNT" = yes ]; then mount -t tmpfs -o size=8m tmpfs "$DISK" || exit 99; fi
cd "$DISK" || exit 98
cp "$OUT/run.yaml" .
"$PAIRMD" run run.yaml --backend cpu --output earlier --steps 200 > "$OUT/earlier.out" 2>&1; echo $? > "$OUT/earlier.rc"
mkdir -p "$OUT/before" "$OUT/after" "$OUT/final"
cp earlier.* "$OUT/before/"
dd if=/dev/zero of=filler bs=65536 count=96 2> /dev/null
"$PAIRMD" run run.yaml --backend cpu --output full > "$OUT/full.out" 2> "$OUT/full.err"; echo $? > "$OUT/full.rc"
cp -a . "$OUT/after/"
rm -f filler
again=$(sed -n 's/^  once the cause is fixed, continue with: pairmd //p' "$OUT/full.err")
"$PAIRMD" $again > "$OUT/continued.out" 2>&1; echo $? > "$OUT/continued.rc"
cp -a . "$OUT/final/"
)";

class FullDisk : public ::testing::TestWithParam<const char*> {};

// A full disk during a run: the run stops with an error naming the file (exit 1), its
// trajectory opens and holds every frame up to the failure, its checkpoint is whole, another
// run's files on the same disk are untouched, and once there is room the printed command
// continues the run to its end without gaps. With frames written and flushed in the run's
// thread (flush_seconds 0) and written behind it ("-behind": flush_seconds 2, the disk found
// full by a flush on the writer's thread and reported at the next frame).
TEST_P(FullDisk, StopsTheRunAndDamagesNothingWrittenBefore) {
  const std::string param = GetParam();
  const std::string mode = param.substr(0, param.find('-'));
  const bool behind = param.find("-behind") != std::string::npos;
  ScratchDir out;
  ScratchDir disk_dir;
  const std::string disk = disk_dir / "disk";
  ASSERT_EQ(mkdir(disk.c_str(), 0755), 0);
  test::write_text(out / "run.yaml", config(3000,
                                            behind ? "{every: 10, velocities_every: 10, flush_seconds: 2}"
                                                   : "{every: 10, velocities_every: 10, flush_seconds: 0}",
                                            500, 4, 50));
  test::write_text(out / "scenario.sh", kFullDiskScenario);
  std::vector<std::string> argv, env;
  if (mode == std::string("tmpfs")) {
    // An unprivileged user may mount a tmpfs in a user and mount namespace of its own, where the
    // kernel allows those (many CI containers do not).
    const std::string probe = "unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs " + disk + "' > /dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) GTEST_SKIP() << "no tmpfs can be mounted here (unshare -rm failed)";
    argv = {"/usr/bin/unshare", "-rm", "/bin/sh", out / "scenario.sh", disk, out.path, PAIRMD_BINARY, "yes"};
  } else {
    argv = {"/bin/sh", out / "scenario.sh", disk, out.path, PAIRMD_BINARY, "no"};
    env = {std::string("LD_PRELOAD=") + PAIRMD_SMALL_DISK_LIBRARY, "PAIRMD_TEST_DISK_DIR=" + disk,
           "PAIRMD_TEST_DISK_BYTES=" + std::to_string(8 << 20)};
  }
  test::Child c(argv, out.path, 0, 0, env);
  const test::ChildResult r = c.wait(240);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_EQ(test::read_text(out / "earlier.rc"), "0\n") << test::read_text(out / "earlier.out");

  // The run that filled the disk.
  const std::string err = test::read_text(out / "full.err");
  EXPECT_EQ(test::read_text(out / "full.rc"), "1\n") << err;
  EXPECT_NE(err.find("full.h5"), std::string::npos) << err;
  EXPECT_TRUE(err.find("No space left on device") != std::string::npos || err.find("no room") != std::string::npos)
      << err;
  const std::vector<int64_t> frames = frame_steps(out / "after/full.h5");
  ASSERT_GT(frames.size(), 3u);
  for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ(frames[k], int64_t(10) * k);
  EXPECT_LT(frames.back(), 3000);
  const Checkpoint ck = read_checkpoint(out / "after/full.checkpoint.h5");
  EXPECT_LE(ck.state.step, frames.back() + 10);
  EXPECT_EQ(read_h5md_frame(out / "after/full.h5", -1).state.step, frames.back());

  // The earlier run's files, on the same full disk, are as they were.
  for (const char* f : {"earlier.h5", "earlier.thermo.csv", "earlier.checkpoint.h5"}) {
    EXPECT_EQ(test::read_text(out / (std::string("after/") + f)), test::read_text(out / (std::string("before/") + f)))
        << f;
    EXPECT_EQ(test::read_text(out / (std::string("final/") + f)), test::read_text(out / (std::string("before/") + f)))
        << f;
  }

  // With room again, the printed command finishes the run: frames 0..3000 without gaps.
  EXPECT_EQ(test::read_text(out / "continued.rc"), "0\n") << test::read_text(out / "continued.out");
  const std::vector<int64_t> all = frame_steps(out / "final/full.h5");
  ASSERT_EQ(all.size(), 301u);
  for (size_t k = 0; k < all.size(); ++k) EXPECT_EQ(all[k], int64_t(10) * k);
  // Rows every 50 steps, and the row of the step the continuation started from.
  const Table t = read_table(out / "final/full.thermo.csv");
  EXPECT_TRUE(t.whole);
  std::vector<int64_t> rows;
  for (int64_t step = 0; step <= 3000; step += 50) {
    if (step > ck.state.step && step - 50 < ck.state.step) rows.push_back(ck.state.step);
    rows.push_back(step);
  }
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  EXPECT_EQ(t.steps, rows);
  EXPECT_EQ(read_checkpoint(out / "final/full.checkpoint.h5").state.step, 3000);
  std::printf("%s: the run stopped at frame %lld with %s", param.c_str(), static_cast<long long>(frames.back()),
              err.substr(0, err.find('\n') + 1).c_str());
}

INSTANTIATE_TEST_SUITE_P(OutputGuarantees, FullDisk,
                         ::testing::Values("tmpfs", "preload", "tmpfs-behind", "preload-behind"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string name = i.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---- exit codes ------------------------------------------------------------------------------

// Bad input is exit 2 with a message in every command, found before anything is written or
// allocated (here under ulimit -v of 1.5 GiB, so a .dx header promising a huge lattice would
// fail to allocate if it were believed); no input file is ever overwritten.
TEST(OutputGuarantees, BadInputIsExitTwoInEveryCommand) {
  ScratchDir dir;
  test::write_text(dir / "charged.yaml",
                   "units: lj\nsteps: 10\nsystem:\n  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, "
                   "charge: 1.0}]\n"
                   "  chains: {count: 4, length: 5, density: 0.05, bond: fene, counterion_type: C, monomer_type: M}\n"
                   "force_field:\n  bonds: [{name: fene, potential: fene, k: 30, r0: 1.5}]\n"
                   "  pair:\n    - {potential: wca, coeffs: [{types: [M, M]}, {types: [M, C]}, {types: [C, C]}]}\n"
                   "  exclusions: none\nintegrator: {kind: langevin, dt: 0.005, temperature: 1.0}\n"
                   "output: {progress: off, trajectory: {every: 5}}\n");
  ASSERT_EQ(test::run_pairmd({"run", "charged.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  test::write_text(
      dir / "huge.dx",
      "object 1 class gridpositions counts 100000 100000 100000\norigin 0 0 0\ndelta 1 0 0\n"
      "delta 0 1 0\ndelta 0 0 1\nobject 3 class array type double rank 0 items 1000000000000000 data follows\n1 2 3\n");
  test::write_text(
      dir / "short.dx",
      "object 1 class gridpositions counts 1000 1000 1000\norigin 0 0 0\ndelta 1 0 0\n"
      "delta 0 1 0\ndelta 0 0 1\nobject 3 class array type double rank 0 items 1000000000 data follows\n1 2 3\n");
  const std::string config_text = test::read_text(dir / "charged.yaml");
  const auto outputs = snapshot(dir, "charged");
  const std::vector<std::string> ions = {"place-ions", "--config", "charged.yaml",   "--count", "2",
                                         "--type",     "C",        "--min-distance", "1"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"potential-map", "nothere.h5", "--units", "lj"}, "cannot open 'nothere.h5'"},
      {{"potential-map", "charged.yaml", "--units", "lj"}, "'charged.yaml' is not an HDF5 file"},
      {{"potential-map", "charged.h5", "--units", "lj", "--frames", "50"}, "frame 50 is out of range"},
      {{"potential-map", "charged.h5", "--units", "lj", "--spacing", "0.0001"}, "more than 1073741824 lattice points"},
      {{"potential-map", "--config", "charged.yaml", "--spacing", "0.0001"}, "more than 1073741824 lattice points"},
      {with(ions, {"--map", "nothere.dx"}), "--map: nothere.dx: cannot open"},
      {with(ions, {"--map", "huge.dx"}), "the lattice has more than 1073741824 points"},
      {with(ions, {"--map", "short.dx"}), "the data array ends early"},
      {with(ions, {"--trajectory", "nothere.h5"}), "--trajectory: cannot open 'nothere.h5'"},
      {with(ions, {"--spacing", "0.0001"}), "more than 1073741824 lattice points"},
      {{"place-ions", "--config", "charged.yaml", "--count", "100000", "--type", "C", "--min-distance", "3"},
       "ions fit"},
      {with(ions, {"--out", "charged.yaml"}), "--out charged.yaml is the input charged.yaml"},
      {with(ions, {"--out", "./charged.yaml"}), "--out ./charged.yaml is the input charged.yaml"},
      {{"compare", "charged.yaml", "--strategies", "cpu", "--steps", "10x"}, "--steps: expected a whole number >= 1"},
      {{"compare", "charged.yaml", "--strategies", "cpu", "--sizes", "0"}, "--sizes: expected a whole number >= 1"},
      {{"check", "charged.yaml", "--set", "system.chains.count=100000000", "--set", "system.chains.length=100"},
       "more than the 1073741824 particles"},
      {{"run", "charged.yaml", "--set", "system.chains.min_distance=5"}, "no arrangement keeps beads 5 apart"},
      {{"check", "charged.yaml", "--set", "system.types.1.charge=1e-9"}, "particles (counterions included), more than"},
      {{"run", "charged.yaml", "--output", "relaxed", "--set", "system.relax.max_move=1e300"},
       "system.relax.max_move: 1e+300 is not less than half the smallest box edge"},
  };
  for (const auto& [args, expected] : cases) {
    const test::ChildResult r = test::run_pairmd(args, dir.path, 60, 0, 1536L << 20);
    std::string line;
    for (const std::string& a : args) line += a + " ";
    EXPECT_EQ(r.exit_code, 2) << line << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << line << "\n" << r.err;
  }
  EXPECT_EQ(test::read_text(dir / "charged.yaml"), config_text);
  EXPECT_EQ(snapshot(dir, "charged"), outputs);
  EXPECT_FALSE(test::file_exists(dir / "charged.ions.yaml"));
}

}  // namespace
}  // namespace pairmd
