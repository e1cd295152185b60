// The options both front ends take (session/options.h): one rule per option, which the pairmd
// program checks through CLI11 when it reads the command line (cli/options.h) and the Python
// module when it reads the arguments (tests/python/test_module.py checks that side). Here: the
// rules' words, the command line's refusal of a bad value in the rule's words (exit 2, the
// command's usage line, nothing written), and the help, which is CLI11's, generated from the
// same options.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "session/options.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

TEST(Options, NumberRulesSayWhatTheyExpect) {
  double v = 0;
  EXPECT_EQ(NumberRule::above(0).parse("0", v), "expected a number > 0, got '0'");
  EXPECT_EQ(NumberRule::above(0).parse("0.25", v), "");
  EXPECT_EQ(v, 0.25);
  EXPECT_EQ(NumberRule::at_least(0).parse("-1", v), "expected a number >= 0, got '-1'");
  EXPECT_EQ(NumberRule::at_least(0).parse("nan", v), "expected a number >= 0, got 'nan'");
  EXPECT_EQ(NumberRule::at_least(0).parse("", v), "expected a number >= 0, got ''");
  // A whole number is written as one: "1e3", "2.5" and "10x" are not.
  const NumberRule count = NumberRule::whole_from(1, 100000000);
  for (const char* bad : {"1e3", "2.5", "10x", "0", "100000001"})
    EXPECT_EQ(count.parse(bad, v), std::string("expected a whole number >= 1 and <= 100000000, got '") + bad + "'");
  EXPECT_EQ(count.parse("100000000", v), "");
  EXPECT_EQ(v, 1e8);
  EXPECT_EQ(NumberRule::whole_from(-1).parse("-1", v), "");
  EXPECT_EQ(NumberRule::whole_from(1).check(0), "expected a whole number >= 1, got 0");
}

TEST(Options, ChoicesSayWhatTheyExpect) {
  EXPECT_EQ(check_choice("box", {"box", "particles"}), "");
  EXPECT_EQ(check_choice("x", {"box", "particles"}), "expected box or particles, got 'x'");
  EXPECT_EQ(check_choice("fast", {"exact", "msm", "auto"}), "expected one of: exact, msm, auto; got 'fast'");
  EXPECT_THROW(kMapKernelOption.checked(std::string("x"), FrontEndKind::CommandLine), std::invalid_argument);
  try {
    kMapMethodOption.checked(std::string("fast"), FrontEndKind::Python);
    FAIL() << "method fast was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "method: expected one of: exact, msm, auto; got 'fast'");
  }
}

// The files in `dir` but the config and the children's captured output.
std::vector<std::string> written(const test::ScratchDir& dir) {
  std::vector<std::string> out;
  for (const std::string& f : dir.files())
    if (f != "lj.yaml" && f.rfind("child.", 0) != 0) out.push_back(f);
  return out;
}

// What the rule of `spec` says of `value`.
std::string rule_message(const OptionSpec& spec, const std::string& value) {
  if (spec.choices) return check_choice(value, spec.choices());
  double v = 0;
  return spec.number.parse(value, v);
}

TEST(Options, TheCommandLineRefusesABadValueInTheWordsOfItsRule) {
  test::ScratchDir dir("options");
  test::write_text(dir / "lj.yaml", test::small_lj_config(10));
  struct Case {
    std::vector<std::string> command;
    const OptionSpec* spec;
    std::string value;
  };
  const std::vector<Case> cases = {
      {{"run", "lj.yaml"}, &kBackendOption, "gpu"},
      {{"check", "lj.yaml"}, &kStrategyOption, "fastest"},
      {{"minimize", "lj.yaml"}, &kBackendOption, "tpu"},
      {{"compare", "lj.yaml"}, &kCompareStepsOption, "0"},
      {{"compare", "lj.yaml"}, &kCompareRepeatsOption, "2.5"},
      {{"compare", "lj.yaml"}, &kCompareWarmupOption, "-1"},
      {{"compare", "lj.yaml"}, &kCompareSizesOption, "1e3"},
      {{"compare", "lj.yaml"}, &kCompareStrategiesOption, "nope"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapSpacingOption, "0"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapPaddingOption, "-1"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapMinDistanceOption, "x"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapRegionOption, "sphere"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapKernelOption, "fastest"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapMethodOption, "fmm"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapBoundaryOption, "closed"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapUnitsOption, "si"},
      {{"potential-map", "--config", "lj.yaml"}, &kMapFramesOption, "a:b"},
      {{"place-ions", "--config", "lj.yaml", "--count", "1", "--type", "A", "--min-distance", "1"},
       &kMapSpacingOption,
       "-2"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.command;
    args.push_back(c.spec->cli);
    args.push_back(c.value);
    const test::ChildResult r = test::run_pairmd(args, dir.path, 60);
    const std::string expected =
        c.spec == &kMapFramesOption ? c.spec->cli + ": " : c.spec->cli + ": " + rule_message(*c.spec, c.value);
    const std::string command = "pairmd " + c.command[0];
    EXPECT_EQ(r.exit_code, 2) << command << " " << c.spec->cli << " " << c.value << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(command + ": " + expected, 0), 0u) << r.err;
    EXPECT_NE(r.err.find("Usage: " + command + " [OPTIONS]"), std::string::npos) << r.err;
    EXPECT_TRUE(written(dir).empty()) << command << " wrote files";
  }
}

TEST(Options, TheHelpOfEachCommandListsItsSharedOptionsWithTheirLines) {
  test::ScratchDir dir("options");
  const std::vector<std::pair<std::string, std::vector<const OptionSpec*>>> commands = {
      {"run", {&kBackendOption, &kStrategyOption}},
      {"check", {&kBackendOption, &kStrategyOption}},
      {"minimize", {&kBackendOption, &kStrategyOption}},
      {"compare",
       {&kBackendOption, &kCompareStepsOption, &kCompareRepeatsOption, &kCompareWarmupOption, &kCompareSizesOption,
        &kCompareStrategiesOption}},
      {"potential-map",
       {&kMapSpacingOption, &kMapPaddingOption, &kMapMinDistanceOption, &kMapRegionOption, &kMapKernelOption,
        &kMapMethodOption, &kMapBoundaryOption, &kMapUnitsOption, &kMapFramesOption}},
      {"place-ions",
       {&kMapSpacingOption, &kMapPaddingOption, &kMapRegionOption, &kMapKernelOption, &kMapMethodOption,
        &kMapBoundaryOption}},
      {"sop-build", {}},
      {"demux", {}},
  };
  const test::ChildResult top = test::run_pairmd({"--help"}, dir.path, 60);
  EXPECT_EQ(top.exit_code, 0) << top.err;
  for (const auto& [command, specs] : commands) {
    EXPECT_NE(top.out.find("\n  " + command + " "), std::string::npos) << command << " in:\n" << top.out;
    const test::ChildResult r = test::run_pairmd({command, "--help"}, dir.path, 60);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
    EXPECT_NE(r.out.find("Usage: pairmd " + command + " [OPTIONS]"), std::string::npos) << r.out;
    for (const OptionSpec* spec : specs) {
      EXPECT_NE(r.out.find("  " + spec->cli + " "), std::string::npos) << command << " " << spec->cli;
      EXPECT_NE(r.out.find(spec->help), std::string::npos) << command << " " << spec->cli << ":\n" << r.out;
    }
  }
  const test::ChildResult none = test::run_pairmd({}, dir.path, 60);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("Usage: pairmd [OPTIONS] [SUBCOMMAND]"), std::string::npos) << none.err;
  const test::ChildResult unknown = test::run_pairmd({"rn", "lj.yaml"}, dir.path, 60);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err.rfind("pairmd: unknown command 'rn'", 0), 0u) << unknown.err;
}

TEST(Options, AnOptionWithoutItsValueOrAnExtraWordIsRefused) {
  test::ScratchDir dir("options");
  test::write_text(dir / "lj.yaml", test::small_lj_config(10));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "lj.yaml", "--output"}, "pairmd run: --output needs a value"},
      {{"run", "lj.yaml", "--output", ""}, "pairmd run: --output: needs a prefix"},
      {{"run", "lj.yaml", "other.yaml"}, "pairmd run: The following argument was not expected: other.yaml"},
      {{"run", "lj.yaml", "--frobnicate"}, "pairmd run: The following argument was not expected: --frobnicate"},
      {{"run"}, "pairmd run: give a CONFIG, or --restart CHECKPOINT"},
      {{"check"}, "pairmd check: CONFIG is required"},
      {{"place-ions", "--config", "lj.yaml", "--count", "1", "--type", "A"},
       "pairmd place-ions: --min-distance is "
       "required"},
      {{"place-ions", "--config", "lj.yaml", "--count", "1", "--type", "A", "--min-distance", "1", "--lowest",
        "--highest"},
       "pairmd place-ions: --highest excludes --lowest"},
      {{"sop-build", "p.pdb"}, "pairmd sop-build: --out is required"},
      {{"sop-build", "p.pdb", "-o", "p.yaml", "--gaps", "join"},
       "pairmd sop-build: --gaps: expected error or split, "
       "got 'join'"},
      {{"potential-map"}, "pairmd potential-map: give a trajectory or --config"},
      {{"demux"}, "pairmd demux: PREFIX is required"},
  };
  for (const auto& [args, expected] : cases) {
    const test::ChildResult r = test::run_pairmd(args, dir.path, 60);
    EXPECT_EQ(r.exit_code, 2) << expected << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(expected, 0), 0u) << r.err;
    EXPECT_TRUE(written(dir).empty()) << expected << ": files written";
  }
}

}  // namespace
}  // namespace pairmd
