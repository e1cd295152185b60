// PREFIX.log: everything a run prints (header, notes, warnings, the thermo table with its units,
// the performance line, errors and the command that continues a run), in a file that follows the
// output promises: a refused run writes none, an earlier run's log is not replaced silently, a
// restart that continues its files appends to it.
#include <gtest/gtest.h>

#include <regex>

#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

std::string argon(int64_t steps, double dt = 2.0) {
  std::ostringstream s;
  s << "units: real\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: Ar, mass: 39.948}]\n  lattice: {kind: fcc, cells: 4, density: 0.021}\n"
    << "force_field:\n  pair:\n    - {potential: lj, cutoff: 8.5, coeffs: [{types: [Ar, Ar], epsilon: 0.238, sigma: "
       "3.405}]}\n"
    << "integrator: {kind: langevin, dt: " << dt << ", temperature: 120, friction: 0.01, seed: 5}\n"
    << "output: {thermo_every: 50, checkpoint_every: 100, progress: on}\n";
  return s.str();
}

TEST(RunLog, HoldsEverythingTheRunPrinted) {
  ScratchDir dir;
  test::write_text(dir / "ar.yaml", argon(200, 0.002));  // a dt in ps: the run warns
  const test::ChildResult r = test::run_pairmd({"run", "ar.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string log = test::read_text(dir / "ar.log");
  // The command, then stdout and stderr as printed: header, warning, table with units, the end.
  EXPECT_TRUE(std::regex_search(
      log, std::regex("^# \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d on .*: pairmd run ar\\.yaml --backend cpu\n")))
      << log;
  for (const char* line : {"pairmd 0.1.0: ar.yaml\n", "units real (Angstrom, fs, kcal/mol, K, atm)",
                           "pairmd run: warning: integrator.dt 0.002 fs is very small", "[fs]       [K]    [kcal/mol]",
                           "\n       200         0.4", "performance: 200 steps in ",
                           "done: step 200; checkpoint written to ar.checkpoint.h5"})
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
  EXPECT_NE(r.out.find("performance: 200 steps in "), std::string::npos);
  // The progress line (a terminal's carriage returns) stays out of the file.
  EXPECT_EQ(log.find('\r'), std::string::npos);
  EXPECT_EQ(log.find("\n      step"), log.rfind("\n      step")) << "the table header appears once";
}

TEST(RunLog, FollowsTheOutputPromises) {
  ScratchDir dir;
  // A refused run (bad config) writes no log.
  test::write_text(dir / "bad.yaml", argon(100) + "bogus: 1\n");
  EXPECT_EQ(test::run_pairmd({"run", "bad.yaml", "--backend", "cpu"}, dir.path).exit_code, 2);
  EXPECT_FALSE(test::file_exists(dir / "bad.log"));
  // An earlier run's log is a file of that run: a new run refuses it, --overwrite replaces it.
  test::write_text(dir / "ar.yaml", argon(100));
  ASSERT_EQ(test::run_pairmd({"run", "ar.yaml", "--backend", "cpu"}, dir.path).exit_code, 0);
  const std::string first = test::read_text(dir / "ar.log");
  for (const char* f : {"ar.h5", "ar.thermo.csv", "ar.checkpoint.h5"}) std::remove((dir / f).c_str());
  const test::ChildResult again = test::run_pairmd({"run", "ar.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("holds files of an earlier run (ar.log)"), std::string::npos) << again.err;
  EXPECT_EQ(test::read_text(dir / "ar.log"), first);
  const test::ChildResult over = test::run_pairmd({"run", "ar.yaml", "--backend", "cpu", "--overwrite"}, dir.path);
  ASSERT_EQ(over.exit_code, 0) << over.err;
  const std::string replaced = test::read_text(dir / "ar.log");
  EXPECT_NE(replaced.find("overwrite: removed ar.log (--overwrite)"), std::string::npos) << replaced;
  EXPECT_EQ(replaced.find(first.substr(first.find('\n'))), std::string::npos);
  // A restart that continues the run appends: both sessions, each under its command line.
  const test::ChildResult more =
      test::run_pairmd({"run", "ar.yaml", "--restart", "ar.checkpoint.h5", "--steps", "200"}, dir.path);
  ASSERT_EQ(more.exit_code, 0) << more.err;
  const std::string both = test::read_text(dir / "ar.log");
  EXPECT_EQ(both.rfind(replaced, 0), 0u) << "the first session's lines are kept as they were";
  EXPECT_NE(both.find("pairmd run ar.yaml --restart ar.checkpoint.h5 --steps 200\n", replaced.size()),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("restart: from checkpoint 'ar.checkpoint.h5' at step 100", replaced.size()), std::string::npos)
      << both;
  EXPECT_NE(both.find("done: step 200", replaced.size()), std::string::npos) << both;
}

}  // namespace
}  // namespace pairmd
