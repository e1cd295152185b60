// Whose files a command may write, replace or remove (docs/output.md, issue #29), tried with the
// real binary as a child process: no command writes over one of its inputs or a file of a run; a
// run whose files were moved is continued where they are; only pairmd's own leftovers are
// removed, links are never followed; a run that cannot start leaves nothing behind; a checkpoint
// restarts without the start file; an interrupt before the run began says so; a shell redirect
// to the run's own log is the log. Also potential-map's units from the trajectory and
// place-ions' refusal of another system's map (issue #28 item 9, #29 item 14).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <map>
#include <regex>

#include "io/checkpoint_run.h"
#include "io/csv_rows.h"
#include "io/dx_writer.h"
#include "io/h5md.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

// A charged bead-spring system (40 particles) with a short relaxation, frames and checkpoints
// every 50 steps.
std::string charged_config(int64_t steps = 100) {
  return "units: lj\nsteps: " + std::to_string(steps) +
         "\n"
         "system:\n"
         "  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]\n"
         "  chains: {count: 4, length: 5, density: 0.05, bond: fene, counterion_type: C, monomer_type: M}\n"
         "  relax: {steps: 10}\n"
         "force_field:\n"
         "  bonds: [{name: fene, potential: fene, k: 30, r0: 1.5}]\n"
         "  pair:\n"
         "    - {potential: wca, coeffs: [{types: [M, M]}, {types: [M, C]}, {types: [C, C]}]}\n"
         "  exclusions: none\n"
         "integrator: {kind: langevin, dt: 0.005, temperature: 1.0}\n"
         "output: {progress: off, trajectory: {every: 50}, checkpoint_every: 50}\n";
}

std::vector<int64_t> frame_steps(const std::string& path) { return h5md_position_steps(path); }

// The bytes of every file in `dir` (but the children's captured output).
std::map<std::string, std::string> contents(const ScratchDir& dir) {
  std::map<std::string, std::string> c;
  for (const std::string& f : dir.files())
    if (f.rfind("child.", 0) != 0) c[f] = test::read_text(dir / f);
  return c;
}

// The names of the files that differ between two snapshots (contents() of one directory).
std::string changed(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::string names;
  for (const auto& [name, text] : a)
    if (!b.count(name) || b.at(name) != text) names += name + " ";
  for (const auto& [name, text] : b)
    if (!a.count(name)) names += name + " ";
  return names;
}

std::string args_text(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += a + " ";
  return s;
}

// Runs a shell command line in `dir` with one OpenMP thread; returns its exit status.
int shell(const std::string& dir, const std::string& line) {
  const std::string cmd = "cd '" + dir + "' && OMP_NUM_THREADS=1 " + line;
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- outputs that are inputs or files of a run (#29 item 1) ---------------------------------

// potential-map --out TRAJ replaced the trajectory it read with the .dx text (exit 0), and --out
// naming a run's checkpoint replaced that. No command writes over its inputs or a run's files;
// each refusal comes before anything is computed and leaves every file as it was.
TEST(OwnFiles, NoCommandWritesOverItsInputsOrAFileOfARun) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config());
  ASSERT_EQ(test::run_pairmd({"run", "c.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  ASSERT_EQ(symlink("c.h5", (dir / "link.dx").c_str()), 0);
  test::write_text(dir / "start.yaml",
                   "units: lj\nsteps: 10\nsystem:\n  types: [{name: M, mass: 1.0, charge: -1.0}, "
                   "{name: C, mass: 1.0, charge: 1.0}]\n  file: {path: c.h5}\n" +
                       charged_config().substr(charged_config().find("force_field:")));
  const auto before = contents(dir);
  const std::vector<std::string> ions = {"place-ions", "--config", "c.yaml",         "--count", "1",
                                         "--type",     "C",        "--min-distance", "1"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"potential-map", "c.h5", "--units", "lj", "--out", "c.h5"}, "--out c.h5 is the input c.h5 of this command"},
      {{"potential-map", "c.h5", "--units", "lj", "--out", "link.dx"}, "--out link.dx is the input c.h5"},
      {{"potential-map", "c.h5", "--units", "lj", "--out", "c.checkpoint.h5"},
       "--out c.checkpoint.h5 is a file of the pairmd run with prefix 'c'"},
      {{"potential-map", "c.h5", "--units", "lj", "--out", "c.potential.dx"},
       "--out c.potential.dx is a file of the pairmd run with prefix 'c'"},
      {{"potential-map", "--config", "c.yaml", "--out", "c.log"}, "--out c.log is a file of the pairmd run"},
      {{"potential-map", "--config", "c.yaml", "--out", "c.yaml"}, "--out c.yaml is the input c.yaml"},
      {with(ions, {"--out", "c.thermo.csv"}), "--out c.thermo.csv is a file of the pairmd run with prefix 'c'"},
      {with(ions, {"--out", "c.lock"}), "--out c.lock is a file of the pairmd run with prefix 'c'"},
      {with(ions, {"--map-out", "c.checkpoint.h5"}), "--map-out c.checkpoint.h5 is a file of the pairmd run"},
      {with(ions, {"--out", "x.yaml", "--map-out", "./x.yaml"}), "--map-out ./x.yaml is the file --out writes"},
      {{"compare", "c.yaml", "--strategies", "cpu", "--steps", "1", "--out", "c.thermo"},
       "--out c.thermo.csv is a file of the pairmd run with prefix 'c'"},
      // A run's files must not be its start file, nor another run's files, --overwrite or not.
      {{"run", "start.yaml", "--backend", "cpu", "--output", "c", "--overwrite"},
       "'c.h5' is the start file (system.file) of this run"},
      {{"run", "c.yaml", "--backend", "cpu", "--output", "c.checkpoint", "--overwrite"},
       "'c.checkpoint.h5' is a file of the pairmd run with prefix 'c'"},
  };
  for (const auto& [args, expected] : cases) {
    const test::ChildResult r = test::run_pairmd(args, dir.path, 60);
    EXPECT_EQ(r.exit_code, 2) << args_text(args) << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args_text(args) << "\n" << r.err;
    EXPECT_EQ(changed(contents(dir), before), "") << args_text(args);
  }
  // The default name of potential-map's output is none of a run's.
  const test::ChildResult r = test::run_pairmd({"potential-map", "c.h5"}, dir.path, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote c.map.dx"), std::string::npos) << r.out;
  EXPECT_EQ(read_dx(dir / "c.map.dx").unit, "epsilon/q*");
}

// ---- a run whose files were moved (#29 item 3) ----------------------------------------------

// The checkpoint keeps the prefix as its run gave it (out/run, relative to where it ran). Once the
// files are moved, the restart continues them where the checkpoint is, and --output naming them
// continues them too; pairmd never advises --overwrite for the files of the run being continued.
TEST(OwnFiles, AMovedRunIsContinuedWhereItsFilesAre) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config(400));
  ASSERT_EQ(mkdir((dir / "out").c_str(), 0755), 0);
  ASSERT_EQ(test::run_pairmd({"run", "c.yaml", "--backend", "cpu", "--output", "out/run", "--steps", "100"}, dir.path)
                .exit_code,
            0);
  ASSERT_EQ(std::rename((dir / "out").c_str(), (dir / "moved").c_str()), 0);

  // Without the run's checkpoint beside them pairmd cannot tell whose files they are: refused,
  // and --overwrite (which would delete the run's history) is not offered.
  ASSERT_EQ(std::rename((dir / "moved/run.checkpoint.h5").c_str(), (dir / "kept.h5").c_str()), 0);
  const auto kept = contents(dir);
  const test::ChildResult r0 =
      test::run_pairmd({"run", "--restart", "kept.h5", "--output", "moved/run", "--steps", "200"}, dir.path);
  EXPECT_EQ(r0.exit_code, 2) << r0.err;
  EXPECT_NE(r0.err.find("holds files of an earlier run"), std::string::npos) << r0.err;
  EXPECT_EQ(r0.err.find("--overwrite"), std::string::npos) << r0.err;
  EXPECT_EQ(changed(contents(dir), kept), "");
  ASSERT_EQ(std::rename((dir / "kept.h5").c_str(), (dir / "moved/run.checkpoint.h5").c_str()), 0);

  const test::ChildResult r =
      test::run_pairmd({"run", "--restart", "moved/run.checkpoint.h5", "--steps", "200"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("it continues them beside its checkpoint: moved/run.*"), std::string::npos) << r.out;
  EXPECT_EQ(frame_steps(dir / "moved/run.h5"), (std::vector<int64_t>{0, 50, 100, 150, 200}));
  EXPECT_FALSE(test::file_exists(dir / "out")) << "the restart wrote at the old place";

  // --output naming the run's own (moved) files continues them, history and all.
  ASSERT_EQ(std::rename((dir / "moved").c_str(), (dir / "again").c_str()), 0);
  const test::ChildResult r2 = test::run_pairmd(
      {"run", "--restart", "again/run.checkpoint.h5", "--output", "again/run", "--steps", "300"}, dir.path);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(frame_steps(dir / "again/run.h5"), (std::vector<int64_t>{0, 50, 100, 150, 200, 250, 300}));
}

// ---- leftovers, links and locks (#29 items 4, 5) --------------------------------------------

// A new run removed every file whose name began with P.checkpoint.h5.tmp. or P.thermo.csv.tmp.
// Only the exact names pairmd writes (PID digits) of files that are pairmd's are removed.
TEST(OwnFiles, OnlyPairmdsOwnLeftoverTemporariesAreRemoved) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", charged_config(10));
  test::write_text(dir / "victim", "precious\n");
  const std::map<std::string, std::string> users = {{"run.checkpoint.h5.tmp.notes", "mine\n"},
                                                    {"run.thermo.csv.tmp.12x", "mine\n"},
                                                    {"run.thermo.csv.tmp.123", "my own table\n"},
                                                    {"run.checkpoint.h5.tmp.456", "not HDF5\n"}};
  for (const auto& [name, text] : users) test::write_text(dir / name, text);
  ASSERT_EQ(symlink("victim", (dir / "run.gsd.tmp.789").c_str()), 0);
  test::write_text(dir / "run.thermo.csv.tmp.1000", "step,time,T\n0,0,1\n");
  test::write_text(dir / "run.checkpoint.h5.tmp.1001", std::string("\x89HDF\r\n\x1a\n", 8) + "rest");
  const test::ChildResult r = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("removed run.thermo.csv.tmp.1000, left by a run that was killed"), std::string::npos) << r.out;
  EXPECT_FALSE(test::file_exists(dir / "run.thermo.csv.tmp.1000"));
  EXPECT_FALSE(test::file_exists(dir / "run.checkpoint.h5.tmp.1001"));
  for (const auto& [name, text] : users) EXPECT_EQ(test::read_text(dir / name), text) << name;
  struct stat st;
  EXPECT_EQ(lstat((dir / "run.gsd.tmp.789").c_str(), &st), 0);
  EXPECT_EQ(test::read_text(dir / "victim"), "precious\n");
}

// A P.lock that is a symlink made the run truncate and overwrite the link's target. Lock and
// temporary files are created without following links: the run is refused and the target kept.
TEST(OwnFiles, ALockOrTemporaryThatIsALinkIsNeverFollowed) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", charged_config(10));
  test::write_text(dir / "victim", "precious\n");
  ASSERT_EQ(symlink("victim", (dir / "run.lock").c_str()), 0);
  const test::ChildResult r = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the lock file 'run.lock' that claims the output prefix 'run' is a symbolic link"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::read_text(dir / "victim"), "precious\n");
  EXPECT_FALSE(test::file_exists(dir / "run.h5"));
  ASSERT_EQ(std::remove((dir / "run.lock").c_str()), 0);
  ASSERT_EQ(mkdir((dir / "run.lock").c_str(), 0755), 0);
  const test::ChildResult d = test::run_pairmd({"run", "run.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_NE(d.err.find("'run.lock' that claims the output prefix 'run' is a directory"), std::string::npos) << d.err;

  // The temporaries this process writes: a link of that name is an error, never followed.
  const test::TestSystem sys = test::make_system(test::lj_yaml(4, 0.8442, "langevin", 1.0));
  const std::string tmp = dir / ("ck.h5.tmp." + std::to_string(getpid()));
  ASSERT_EQ(symlink((dir / "victim").c_str(), tmp.c_str()), 0);
  EXPECT_THROW(write_checkpoint(dir / "ck.h5", sys.built.state, sys.built.topology, sys.cfg, 0, "cpu"),
               std::runtime_error);
  EXPECT_EQ(test::read_text(dir / "victim"), "precious\n");
  test::write_text(dir / "t.csv", "step,x\n0,1\n5,2\n");
  const std::string csv_tmp = dir / ("t.csv.tmp." + std::to_string(getpid()));
  ASSERT_EQ(symlink((dir / "victim").c_str(), csv_tmp.c_str()), 0);
  EXPECT_THROW(drop_csv_rows(dir / "t.csv",
                             [](const std::string& row) { return row[0] == '5' ? RowFate::Drop : RowFate::Keep; }),
               std::runtime_error);
  EXPECT_EQ(test::read_text(dir / "victim"), "precious\n");
  EXPECT_EQ(test::read_text(dir / "t.csv"), "step,x\n0,1\n5,2\n");
}

// ---- a run that cannot start (#29 item 7) ---------------------------------------------------

// On a disk without room the run left a 0-byte c.h5 (an empty c.gsd), which then blocked every
// rerun as "files of an earlier run"; a 1 MB type name passed validation and failed creating
// the trajectory, leaving c.h5; the GSD writer reserved 1 MiB whatever the run needed.
TEST(OwnFiles, ARunThatCannotStartLeavesNothingBehind) {
  ScratchDir dir;
  const std::string disk = dir / "disk";
  ASSERT_EQ(mkdir(disk.c_str(), 0755), 0);
  test::write_text(disk + "/c.yaml", charged_config());
  auto on_disk = [&](long bytes, const std::vector<std::string>& args) {
    return test::run_pairmd(args, disk, 60, 0, 0,
                            {std::string("LD_PRELOAD=") + PAIRMD_SMALL_DISK_LIBRARY, "PAIRMD_TEST_DISK_DIR=" + disk,
                             "PAIRMD_TEST_DISK_BYTES=" + std::to_string(bytes)});
  };
  const std::vector<std::string> h5 = {"run", "c.yaml", "--backend", "cpu", "--set", "output.gsd.every=50"};
  for (const long bytes : {4096L, 20000L}) {
    const test::ChildResult r = on_disk(bytes, h5);
    EXPECT_EQ(r.exit_code, 1) << bytes << ": " << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(disk))
      if (e.path().filename() != "c.yaml" && e.path().filename().string().rfind("child.", 0) != 0)
        left.push_back(e.path().filename());
    EXPECT_TRUE(left.empty()) << bytes << " bytes: left " << args_text(left);
  }
  // A GSD-only run of ~20 KiB starts on 300 KiB of room.
  const test::ChildResult gsd = on_disk(300 << 10, {"run", "c.yaml", "--backend", "cpu", "--set", "output.gsd.every=50",
                                                    "--set", "output.trajectory={every: 0, observables_every: 0}"});
  EXPECT_EQ(gsd.exit_code, 0) << gsd.err;
  EXPECT_TRUE(test::file_exists(disk + "/c.gsd"));

  // Names HDF5 cannot store in one attribute are refused before anything is written.
  const std::string name(70000, 'A');
  std::string big = charged_config();
  for (const std::string& from : {"{name: M,", "[M, M]", "[M, C]", "monomer_type: M"}) {
    std::string to = from;
    to.replace(to.find('M'), 1, name);
    if (from == std::string("[M, M]")) to = "[" + name + ", " + name + "]";
    big.replace(big.find(from), from.size(), to);
  }
  test::write_text(dir / "big.yaml", big);
  for (const char* cmd : {"check", "run"}) {
    const test::ChildResult r = test::run_pairmd({cmd, "big.yaml", "--backend", "cpu"}, dir.path);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("big.yaml: system.types: the names (2, the longest 70000 characters) take 140002 bytes"),
              std::string::npos)
        << r.err.substr(0, 300);
    EXPECT_FALSE(test::file_exists(dir / "big.h5"));
    EXPECT_FALSE(test::file_exists(dir / "big.lock"));
  }
}

// ---- a checkpoint is the whole start of its restart (#29 item 13) ----------------------------

// A restart read the start file of system.file (to compare the system and to find the pulling's
// points) and failed without it. Now it reads only the checkpoint, and continues bit for bit.
TEST(OwnFiles, ARestartNeedsNoStartFile) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config());
  ASSERT_EQ(test::run_pairmd({"run", "c.yaml", "--backend", "cpu", "--output", "start"}, dir.path).exit_code, 0);
  std::string f = charged_config(300);
  f.replace(f.find("  chains:"), f.find("force_field:") - f.find("  chains:"), "  file: {path: start.h5}\n");
  f += "pulling: {mode: ramp, pulled: 4, tethered: 0, spring: 10, speed: 0.1, tether_spring: 10}\n";
  test::write_text(dir / "f.yaml", f);
  ASSERT_EQ(test::run_pairmd({"run", "f.yaml", "--backend", "cpu", "--steps", "100"}, dir.path).exit_code, 0);
  ASSERT_EQ(test::run_pairmd({"run", "f.yaml", "--backend", "cpu", "--output", "full"}, dir.path).exit_code, 0);
  ASSERT_EQ(std::rename((dir / "start.h5").c_str(), (dir / "elsewhere.h5").c_str()), 0);
  const test::ChildResult r = test::run_pairmd({"run", "--restart", "f.checkpoint.h5", "--steps", "300"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Checkpoint a = read_checkpoint(dir / "f.checkpoint.h5"), b = read_checkpoint(dir / "full.checkpoint.h5");
  ASSERT_EQ(a.state.step, 400);
  ASSERT_EQ(b.state.step, 400);
  EXPECT_EQ(std::memcmp(a.state.position.data(), b.state.position.data(), a.state.size() * sizeof(Vec3d)), 0);
  EXPECT_EQ(std::memcmp(a.state.velocity.data(), b.state.velocity.data(), a.state.size() * sizeof(Vec3d)), 0);
  EXPECT_EQ(test::read_text(dir / "f.pull.csv"), test::read_text(dir / "full.pull.csv"));
}

// ---- interrupted before the run; a directory of an output's name (#29 item 15) --------------

// SIGINT during system.relax ended the process without a word (exit 130 from the signal) and
// left the lock file. Now the run says it was interrupted before it began and leaves nothing.
TEST(OwnFiles, AnInterruptDuringTheRelaxationSaysSoAndLeavesNothing) {
  ScratchDir dir;
  std::string cfg = charged_config();
  cfg.replace(cfg.find("relax: {steps: 10}"), 18, "relax: {steps: 100000000}");
  cfg.replace(cfg.find("count: 4, length: 5"), 19, "count: 20, length: 50");
  test::write_text(dir / "r.yaml", cfg);
  test::Child c({test::pairmd_binary(), "run", "r.yaml", "--backend", "cpu"}, dir.path);
  for (int k = 0; k < 600 && !test::file_exists(dir / "r.lock"); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(test::file_exists(dir / "r.lock")) << c.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the relaxation
  c.signal(SIGINT);
  const test::ChildResult r = c.wait(60);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("pairmd run: interrupted (signal 2) during system.relax, before the run began; nothing was "
                       "written"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(test::file_exists(dir / "r.lock"));
  for (const char* f : {"r.h5", "r.thermo.csv", "r.checkpoint.h5", "r.log"}) EXPECT_FALSE(test::file_exists(dir / f));
}

// A directory named like an output was called "files of an earlier run" and --overwrite offered
// (which then failed, or removed an empty directory). It is named as a directory and refused.
TEST(OwnFiles, ADirectoryNamedLikeAnOutputIsRefusedAsADirectory) {
  ScratchDir dir;
  test::write_text(dir / "run.yaml", charged_config(10));
  ASSERT_EQ(mkdir((dir / "run.h5").c_str(), 0755), 0);
  for (const bool overwrite : {false, true}) {
    std::vector<std::string> args = {"run", "run.yaml", "--backend", "cpu"};
    if (overwrite) args.push_back("--overwrite");
    const test::ChildResult r = test::run_pairmd(args, dir.path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("'run.h5' is a directory, not a file of an earlier run; the run writes its trajectory there"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("add --overwrite"), std::string::npos) << r.err;
    struct stat st;
    EXPECT_TRUE(stat((dir / "run.h5").c_str(), &st) == 0 && S_ISDIR(st.st_mode));
    EXPECT_FALSE(test::file_exists(dir / "run.lock"));
  }
}

// ---- a shell redirect to the run's own log (#29 item 16) ------------------------------------

// `pairmd run c.yaml --output r > r.log` was refused: the shell's empty r.log counted as an
// earlier run's file. That file is the log: pairmd does not open it again (which would write
// over what the shell writes), and adds what the terminal's other stream shows.
TEST(OwnFiles, ARedirectToTheRunsOwnLogIsTheLog) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config());
  const std::string pairmd = "'" + test::pairmd_binary() + "'";
  ASSERT_EQ(shell(dir.path, pairmd + " run c.yaml --backend cpu --output r > r.log"), 0)
      << test::read_text(dir / "r.log");
  const std::string log = test::read_text(dir / "r.log");
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(log.rfind("pairmd ", 0), 0u) << log;
  EXPECT_EQ(count(log, ": pairmd run c.yaml --backend cpu --output r\n"), 1u) << log;
  EXPECT_EQ(count(log, "done: step 100"), 1u) << log;
  EXPECT_EQ(count(log, "steps: 100 (0 -> 100)"), 1u) << log;

  // Both streams into it: everything once, in order. A restart appending with >> adds its part.
  ASSERT_EQ(shell(dir.path, pairmd + " run c.yaml --backend cpu --output s > s.log 2>&1"), 0);
  EXPECT_EQ(count(test::read_text(dir / "s.log"), "done: step 100"), 1u);
  ASSERT_EQ(shell(dir.path, pairmd + " run --restart s.checkpoint.h5 --steps 200 >> s.log 2>&1"), 0);
  const std::string s = test::read_text(dir / "s.log");
  EXPECT_EQ(count(s, "done: step 100"), 1u) << s;
  EXPECT_EQ(count(s, "done: step 200"), 1u) << s;
  EXPECT_LT(s.find("done: step 100"), s.find("pairmd run --restart s.checkpoint.h5 --steps 200")) << s;

  // Another file of the run as the redirect is refused, with what to do.
  EXPECT_EQ(shell(dir.path, pairmd + " run c.yaml --backend cpu --output t > t.thermo.csv 2> t.err"), 2);
  EXPECT_NE(test::read_text(dir / "t.err")
                .find("'t.thermo.csv' is this command's standard output (a shell "
                      "redirect); the run writes its thermo table there"),
            std::string::npos)
      << test::read_text(dir / "t.err");
  // --overwrite never removes the file the shell writes into.
  EXPECT_EQ(shell(dir.path, pairmd + " run c.yaml --backend cpu --output s --overwrite >> s.log 2>&1"), 2);
  EXPECT_NE(test::read_text(dir / "s.log").find("removing it would lose what the run prints"), std::string::npos);
  EXPECT_EQ(test::read_text(dir / "s.log").find(s), 0u);
}

// ---- potential-map reads the trajectory's units (#28 item 9) --------------------------------

TEST(OwnFiles, PotentialMapTakesTheUnitsTheTrajectoryStores) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config());
  test::write_text(dir / "real.yaml",
                   "units: real\nsteps: 10\nsystem:\n  types: [{name: Ar, mass: 39.948, charge: 0.1}]\n"
                   "  lattice: {kind: fcc, cells: 4, density: 0.021}\n"
                   "force_field:\n  pair:\n    - {potential: lj, cutoff: 8.5, coeffs: [{types: [Ar, Ar], epsilon: "
                   "0.238, sigma: 3.405}]}\n"
                   "integrator: {kind: langevin, dt: 2.0, temperature: 120, friction: 0.01, seed: 3}\n"
                   "output: {progress: off, trajectory: {every: 10}}\n");
  ASSERT_EQ(test::run_pairmd({"run", "c.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  const test::ChildResult built = test::run_pairmd({"run", "real.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const test::ChildResult lj = test::run_pairmd({"potential-map", "c.h5", "--out", "lj.dx"}, dir.path);
  ASSERT_EQ(lj.exit_code, 0) << lj.err;
  EXPECT_EQ(read_dx(dir / "lj.dx").unit, "epsilon/q*");
  const test::ChildResult r = test::run_pairmd({"potential-map", "real.h5", "--out", "real.dx"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_dx(dir / "real.dx").unit, "kcal/mol/e");
  // Options that contradict the file are refused: k_e would be wrong.
  const test::ChildResult bad = test::run_pairmd({"potential-map", "real.h5", "--units", "lj"}, dir.path);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--units lj contradicts the units of the trajectory real.h5 (real"), std::string::npos)
      << bad.err;
  const test::ChildResult cfg = test::run_pairmd({"potential-map", "real.h5", "--config", "c.yaml"}, dir.path);
  EXPECT_EQ(cfg.exit_code, 2);
  EXPECT_NE(cfg.err.find("--config c.yaml: its units lj contradict the units of the trajectory"), std::string::npos)
      << cfg.err;
}

// ---- place-ions and another system (#29 item 14) --------------------------------------------

// place-ions with a trajectory or a map of another system placed ions from an all-zero map (exit
// 0), and --map with --spacing ignored --spacing. Each is refused with the reason.
TEST(OwnFiles, PlaceIonsRefusesAnotherSystemsTrajectoryOrMap) {
  ScratchDir dir;
  test::write_text(dir / "c.yaml", charged_config());
  test::write_text(dir / "lj.yaml", test::small_lj_config(10, "{every: 10}"));
  std::string small = charged_config();
  small.replace(small.find("count: 4"), 8, "count: 1");
  test::write_text(dir / "small.yaml", small);
  std::string neutral = charged_config();  // chains of neutral beads; C a cation type
  neutral.replace(neutral.find("charge: -1.0"), 12, "charge: 0.0");
  neutral.replace(neutral.find("counterion_type: C, "), 20, "");
  test::write_text(dir / "neutral.yaml", neutral);
  ASSERT_EQ(test::run_pairmd({"run", "lj.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  ASSERT_EQ(test::run_pairmd({"potential-map", "--config", "small.yaml", "--region", "particles", "--padding", "0.5",
                              "--out", "small.dx"},
                             dir.path)
                .exit_code,
            0);
  ASSERT_EQ(test::run_pairmd({"potential-map", "--config", "c.yaml", "--out", "c.dx"}, dir.path).exit_code, 0);
  const std::vector<std::string> ions = {"place-ions", "--config", "c.yaml",         "--count", "1",
                                         "--type",     "C",        "--min-distance", "1"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {with(ions, {"--trajectory", "lj.h5"}),
       "--trajectory lj.h5 frame -1 has particles of type 'A', which c.yaml does not declare"},
      {with(ions, {"--map", "small.dx"}), "--map small.dx does not cover the system: particle"},
      {with(ions, {"--map", "c.dx", "--spacing", "0.5"}),
       "--spacing sets up the map place-ions computes; with --map c.dx the map (its lattice, spacing and method) is "
       "the file's"},
      {{"place-ions", "--config", "neutral.yaml", "--count", "1", "--type", "C", "--min-distance", "1"},
       "is zero everywhere: the system carries no charge"},
  };
  for (const auto& [args, expected] : cases) {
    const test::ChildResult r = test::run_pairmd(args, dir.path, 60);
    EXPECT_EQ(r.exit_code, 2) << args_text(args) << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args_text(args) << "\n" << r.err;
    EXPECT_FALSE(test::file_exists(dir / "c.ions.yaml"));
    EXPECT_FALSE(test::file_exists(dir / "neutral.ions.yaml"));
  }
  // The config's own map and trajectory are fine.
  ASSERT_EQ(test::run_pairmd({"run", "c.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  EXPECT_EQ(test::run_pairmd(with(ions, {"--map", "c.dx", "--out", "a.yaml"}), dir.path).exit_code, 0);
  EXPECT_EQ(test::run_pairmd(with(ions, {"--trajectory", "c.h5", "--out", "b.yaml"}), dir.path).exit_code, 0);
}

}  // namespace
}  // namespace pairmd
