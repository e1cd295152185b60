// Config validation: each class of bad input gives one message naming file:line:column, the
// key and what was expected; `pairmd check` and `pairmd run` exit with 2 and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "io/hdf5_util.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

const char* kGood = R"(title: small LJ
system:
  types: [{name: A}]
  lattice: {kind: fcc, cells: 4, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator:
  kind: langevin
  dt: 0.005
  temperature: 1.2
steps: 10
output: {thermo_every: 5}
)";

// A barostat section for kGood (line 16).
const char* kBarostat = "barostat: {kind: c_rescale, pressure: 1.0, tau_p: 1.0, compressibility: 0.05}\n";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// One class of bad input: the config text, and what its message must contain.
struct BadInput {
  const char* name;
  std::string text;
  std::vector<std::string> overrides;
  std::string expected;  // a regular expression the whole message must match
};

std::vector<BadInput> bad_inputs() {
  return {
      {"unknown_key",
       replace(kGood, "  temperature: 1.2", "  temperature: 1.2\n  temprature: 1.0"),
       {},
       R"(^cfg\.yaml:14:3: integrator\.temprature: unknown key \(expected one of: kind, dt, temperature, friction, seed, max_step_displacement\)$)"},
      {"wrong_type",
       replace(kGood, "dt: 0.005", "dt: fast"),
       {},
       R"(^cfg\.yaml:12:7: integrator\.dt: expected a time step > 0, got 'fast'$)"},
      {"negative_dt",
       replace(kGood, "dt: 0.005", "dt: -0.005"),
       {},
       R"(^cfg\.yaml:12:7: integrator\.dt: expected a time step > 0, got -0\.005$)"},
      {"list_for_number",
       replace(kGood, "cutoff: 2.5", "cutoff: [2.5]"),
       {},
       R"(^cfg\.yaml:8:15: force_field\.pair\[0\]\.cutoff: expected a number > 0, got a list$)"},
      {"out_of_range",
       replace(kGood, "cells: 4", "cells: 0"),
       {},
       R"(^cfg\.yaml:4:31: system\.lattice\.cells: expected an integer in \[1, 4096\], got 0$)"},
      {"unknown_choice",
       replace(kGood, "kind: langevin", "kind: leapfrog"),
       {},
       R"(^cfg\.yaml:11:9: integrator\.kind: expected one of langevin, nve, brownian, got 'leapfrog'$)"},
      {"missing_key",
       replace(kGood, "  dt: 0.005\n", ""),
       {},
       R"(^cfg\.yaml:11:3: integrator: missing required key 'dt' \(a time step > 0\)$)"},
      {"max_step_displacement_beyond_half_box",
       replace(kGood, "  temperature: 1.2", "  temperature: 1.2\n  max_step_displacement: 1e10"),
       {},
       R"(^cfg\.yaml:14:26: integrator\.max_step_displacement: 1e\+10 is not less than half the smallest box edge \(3\.3.*\); a particle that moves that far in one step is a blow-up the run could not detect$)"},
      {"cutoff_beyond_half_box",
       replace(kGood, "cutoff: 2.5", "cutoff: 3.5"),
       {},
       R"(^cfg\.yaml:8:15: force_field\.pair\[0\]\.cutoff: cutoff 3\.5 plus skin 0\.3 is larger than half the smallest box edge \(3\.3.*\); .*$)"},
      {"bad_override",
       kGood,
       {"integrator.dt=-1"},
       R"(^--set integrator\.dt=-1: integrator\.dt: expected a time step > 0, got -1$)"},
      {"override_unknown_key",
       kGood,
       {"integrator.tau=3"},
       R"(^--set integrator\.tau=3: integrator\.tau: unknown key \(expected one of: .*\)$)"},
      {"yaml_syntax",
       replace(kGood, "temperature: 1.2", "temperature: [1.2"),
       {},
       R"(^cfg\.yaml:\d+:\d+: YAML syntax error: .*$)"},
      // yaml-cpp reads the first of two equal keys; the second must not be ignored silently.
      {"duplicate_key",
       replace(kGood, "  temperature: 1.2", "  temperature: 1.2\n  dt: 0.5"),
       {},
       R"(^cfg\.yaml:14:3: integrator\.dt: duplicate key \(already given at line 12\)$)"},
      {"duplicate_key_in_flow_mapping",
       replace(kGood, "cells: 4,", "cells: 4, cells: 5,"),
       {},
       R"(^cfg\.yaml:4:34: system\.lattice\.cells: duplicate key \(already given at line 4\)$)"},
      // yaml-cpp lets an unclosed quote run to the end of the file, swallowing every key after it.
      {"unterminated_string",
       replace(kGood, "title: small LJ", "title: \"small LJ"),
       {},
       R"(^cfg\.yaml:1:8: YAML syntax error: the string opened by " here is never closed$)"},
      // Sizes are bounded while parsing, before any product of them is formed or allocated.
      {"too_many_particles",
       replace(kGood, "cells: 4,", "cells: 4096,"),
       {},
       R"(^cfg\.yaml:4:31: system\.lattice\.cells: 4096 x 4096 x 4096 cells make 274877906944 particles, more than the 1073741824 pairmd can hold$)"},
      // A barostat (docs/config.md "barostat"): its numbers, and what it cannot run with.
      {"barostat_zero_compressibility",
       std::string(kGood) + kBarostat,
       {"barostat.compressibility=0"},
       R"(^--set barostat\.compressibility=0: barostat\.compressibility: expected the isothermal compressibility > 0 \(sigma\^3/epsilon\), got 0$)"},
      {"barostat_negative_tau_p",
       replace(std::string(kGood) + kBarostat, "tau_p: 1.0", "tau_p: -1"),
       {},
       R"(^cfg\.yaml:16:51: barostat\.tau_p: expected the volume's relaxation time > 0 \(time units\), got -1$)"},
      {"barostat_tau_p_within_few_steps",
       replace(std::string(kGood) + kBarostat, "tau_p: 1.0", "tau_p: 0.01"),
       {},
       R"(^cfg\.yaml:16:51: barostat\.tau_p: expected a relaxation time of at least 5 x every x integrator\.dt = 0\.025, got 0\.01 .*$)"},
      {"barostat_unknown_coupling",
       std::string(kGood) + kBarostat,
       {"barostat.couple=xy"},
       R"(^--set barostat\.couple=xy: barostat\.couple: expected one of iso, semi_iso, aniso, got 'xy'$)"},
      {"barostat_without_kind",
       replace(std::string(kGood) + kBarostat, "kind: c_rescale, ", ""),
       {},
       R"(^cfg\.yaml:16:11: barostat: missing required key 'kind' \(c_rescale: stochastic cell rescaling\)$)"},
      {"barostat_open_boundary",
       replace(std::string(kGood) + kBarostat, "  types: [{name: A}]", "  types: [{name: A}]\n  boundary: open"),
       {},
       R"(^cfg\.yaml:17:11: barostat: a barostat needs a periodic box; this system has system\.boundary: open$)"},
      {"barostat_nve",
       replace(std::string(kGood) + kBarostat, "kind: langevin", "kind: nve"),
       {},
       R"(^cfg\.yaml:16:11: barostat: a barostat needs a thermostat .*nve has none$)"},
      {"unterminated_single_quoted_string",
       replace(kGood, "title: small LJ", "title: 'it''s small"),
       {},
       R"(^cfg\.yaml:1:8: YAML syntax error: the string opened by ' here is never closed$)"},
  };
}

// Validation through the library: parse_config, then build_system for the checks that need
// the box.
TEST(Config, EachClassOfBadInputNamesFileLineKeyAndExpectation) {
  for (const BadInput& b : bad_inputs()) {
    std::string message;
    try {
      const RunConfig cfg = parse_config(b.text, "cfg.yaml", b.overrides);
      build_system(cfg);
    } catch (const ConfigError& e) {
      message = e.what();
    }
    EXPECT_TRUE(std::regex_match(message, std::regex(b.expected))) << b.name << ": got '" << message << "'";
  }
}

TEST(Config, GoodConfigParses) {
  const RunConfig cfg = parse_config(kGood, "cfg.yaml", {"force_field.pair.0.cutoff=3", "steps=1e3"});
  EXPECT_EQ(cfg.steps, 1000);
  ASSERT_EQ(cfg.model.force_field.pair_terms.size(), 1u);
  EXPECT_EQ(cfg.model.force_field.pair_terms[0].max_cutoff(), 3.0);
  EXPECT_EQ(cfg.model.integrator.dt, 0.005);
  EXPECT_EQ(cfg.model.neighbor.skin, 0.3);  // default
}

TEST(Config, MissingFile) {
  try {
    load_config("/nonexistent/dir/run.yaml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open config file '/nonexistent/dir/run.yaml': No such file or directory");
  }
}

// The same through the binary: `pairmd check` and `pairmd run` print the message on stderr,
// exit with 2, and `run` writes nothing (it is started in an empty directory).
TEST(Config, BinaryRejectsBadInputWithExitCode2AndWritesNothing) {
  for (const BadInput& b : bad_inputs()) {
    test::ScratchDir dir("config");
    { std::ofstream(dir / "cfg.yaml") << b.text; }
    std::string sets;
    for (const std::string& o : b.overrides) sets += " --set '" + o + "'";
    for (const char* cmd : {"check", "run"}) {
      const test::ChildResult r = test::run_pairmd_shell(std::string(cmd) + " cfg.yaml --backend cpu" + sets, dir.path);
      EXPECT_EQ(r.exit_code, 2) << b.name << " " << cmd << ": " << r.err;
      std::string err = r.err;
      while (!err.empty() && err.back() == '\n') err.pop_back();
      EXPECT_TRUE(std::regex_match(err, std::regex(b.expected))) << b.name << " " << cmd << ": got '" << err << "'";
      const std::vector<std::string> files = dir.files();
      EXPECT_EQ(files.size(), 1u) << b.name << " " << cmd << " wrote files";
    }
  }
}

TEST(Config, BinaryMissingFile) {
  test::ScratchDir dir("config");
  for (const char* cmd : {"check", "run"}) {
    const test::ChildResult r = test::run_pairmd_shell(std::string(cmd) + " nothere.yaml", dir.path);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("cannot open config file 'nothere.yaml'"), std::string::npos) << r.err;
    EXPECT_TRUE(dir.files().empty()) << cmd << " wrote files";
  }
}

TEST(Config, DirectoryAsConfigIsNamedAsSuch) {
  test::ScratchDir dir("config");
  std::filesystem::create_directory(dir / "cfgdir");
  try {
    load_config((dir / "cfgdir"));
    FAIL() << "a directory was read as a config";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
  for (const char* cmd : {"check", "run"}) {
    const test::ChildResult r = test::run_pairmd_shell(std::string(cmd) + " cfgdir", dir.path);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.err, "cannot read config file 'cfgdir': it is a directory\n") << cmd;
    EXPECT_EQ(dir.files().size(), 1u) << cmd << " wrote files";
  }
}

TEST(Config, QuotedStringsThatCloseAreAccepted) {
  // Escaped quotes inside quoted strings do not end them; neither check must trip on them.
  const RunConfig a = parse_config(replace(kGood, "title: small LJ", "title: \"a \\\" b\""), "cfg.yaml");
  EXPECT_EQ(a.title, "a \" b");
  const RunConfig b = parse_config(replace(kGood, "title: small LJ", "title: 'it''s'"), "cfg.yaml");
  EXPECT_EQ(b.title, "it's");
}

// A minimal H5MD start file: one frame of `positions` (any count, any values) in a cubic box of
// edge `edge`, at time `time`.
void write_start_file(const std::string& path, const std::vector<Vec3d>& positions, double edge, double time = 0.0) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(f.valid());
  const hsize_t n = positions.size();
  const int64_t step = 0;
  const double box[9] = {edge, 0, 0, 0, edge, 0, 0, 0, edge};
  h5::write_dataset(f, "particles/all/position/value", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1, n, 3}, positions.data());
  h5::write_dataset(f, "particles/all/position/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
  h5::write_dataset(f, "particles/all/position/time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1}, &time);
  h5::write_dataset(f, "particles/all/box/edges/value", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1, 3, 3}, box);
  h5::write_dataset(f, "particles/all/box/edges/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
}

const char* kFromFile = R"(system:
  types: [{name: A}]
  file: {path: start.h5}
force_field:
  pair:
    - {potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]}
integrator: {kind: langevin, dt: 0.005, temperature: 1.2}
steps: 10
)";

// `check` and `run` on cfg.yaml in `dir` both exit 2 with a message matching `expected`, and
// `run` writes nothing.
void expect_refused(const test::ScratchDir& dir, const std::string& expected) {
  const std::vector<std::string> before = dir.files();
  for (const char* cmd : {"check", "run"}) {
    const test::ChildResult r = test::run_pairmd_shell(std::string(cmd) + " cfg.yaml --backend cpu", dir.path);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(expected))) << cmd << ": got '" << r.err << "'";
    EXPECT_EQ(dir.files().size(), before.size()) << cmd << " wrote files";
  }
}

TEST(Config, StartFileWithoutParticlesIsRefused) {
  test::ScratchDir dir("config");
  std::ofstream(dir / "cfg.yaml") << kFromFile;
  write_start_file((dir / "start.h5"), {}, 10.0);
  expect_refused(dir, R"(^cfg\.yaml:3:16: system\.file\.path: 'start\.h5' holds no particles\n$)");
}

TEST(Config, NonFiniteValuesOfAStartFileAreNamed) {
  test::ScratchDir dir("config");
  std::ofstream(dir / "cfg.yaml") << kFromFile;
  const std::vector<Vec3d> grid = {{1, 1, 1}, {3, 3, 3}, {5, 5, 5}, {7, 7, 7}};
  std::vector<Vec3d> bad = grid;
  bad[2].y = NAN;
  write_start_file((dir / "start.h5"), bad, 10.0);
  expect_refused(dir,
                 "system\\.file\\.path: 'start\\.h5': frame 0, particle 2: the position \\(5, nan, 5\\) is not finite");
  write_start_file((dir / "start.h5"), grid, INFINITY);
  expect_refused(dir, "system\\.file\\.path: 'start\\.h5': the box's edge inf is not a number > 0");
  write_start_file((dir / "start.h5"), grid, 10.0, NAN);
  expect_refused(dir, "system\\.file\\.path: 'start\\.h5': the time of frame 0 is not finite");
}

// Two particles on the same spot give a NaN force before any step: the message says so instead
// of blaming the time step (which the first step's blow-up used to do).
TEST(Config, NonFiniteStartForcesBlameTheStartNotTheTimeStep) {
  test::ScratchDir dir("config");
  std::ofstream(dir / "cfg.yaml") << replace(
      kGood, "  lattice: {kind: fcc, cells: 4, density: 0.8442}\n",
      "  lattice: {kind: fcc, cells: 4, density: 0.8442}\n  add_particles:\n"
      "    - {type: A, position: [1, 1, 1]}\n    - {type: A, position: [1, 1, 1]}\n");
  expect_refused(dir,
                 R"(^cfg\.yaml: system: the force on particle 25[67] is not finite before the first step )"
                 R"(\(F = \(.*\)\); particle 25[67] is 0 away\. The start configuration has overlapping particles )"
                 R"(\(or non-finite values\); the time step is not the cause\n$)");
}

TEST(Config, BinaryCheckAcceptsTheExamples) {
  test::ScratchDir dir("config");
  for (const char* name : {"lj_liquid", "kremer_grest", "polyelectrolyte"}) {
    const std::string path = std::string(PAIRMD_SOURCE_DIR) + "/configs/" + name + ".yaml";
    const test::ChildResult r = test::run_pairmd_shell("check '" + path + "'", dir.path);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;
    EXPECT_TRUE(dir.files().empty()) << "check wrote files";
  }
}

}  // namespace
}  // namespace pairmd
