// The options the front ends share: each one's name on the command line (cli/) and in the Python
// module (python/module/), its help line, and what it accepts, written and checked here once.
// The pairmd program turns each rule into a CLI11 validator (cli/options.h), so that a bad value
// stops the command line before anything runs; the Python module checks its arguments with the
// same rules; session/ checks them again where it applies them (resolve_compare, apply_map_options),
// naming the option as the front end that gave it does.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace pairmd {

enum class FrontEndKind { CommandLine, Python };

// What a number option accepts: a number (or a whole number) from lo (above it where lo_open) to hi.
struct NumberRule {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool whole = false;

  static NumberRule at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false, false}; }
  static NumberRule above(double lo) { return {lo, std::numeric_limits<double>::infinity(), true, false}; }
  static NumberRule whole_from(double lo, double hi = 9.2e18) { return {lo, hi, false, true}; }
  // "a number > 0", "a whole number >= 1", "a number >= 0 and <= 5".
  std::string expected() const;
  // "" where v is accepted, else "expected a number > 0, got -1".
  std::string check(double v) const;
  // The whole of `text` as such a number: "" and v, else "expected a number > 0, got 'x'".
  std::string parse(const std::string& text, double& v) const;
};

// "" where `value` is one of `names`, else "expected a or b, got 'x'" (two names) or "expected
// one of: a, b, c; got 'x'".
std::string check_choice(const std::string& value, const std::vector<std::string>& names);

// "a, b or c" of names, for help texts.
std::string choice_list(const std::vector<std::string>& names, const char* last = " or ");

// One option of both front ends.
struct OptionSpec {
  std::string cli;                                    // "--spacing"
  std::string python;                                 // "spacing"
  std::string help;                                   // one line (the command line's --help)
  NumberRule number;                                  // what a number option accepts
  std::function<std::vector<std::string>()> choices;  // an enumeration's names (empty: any text)

  const std::string& name(FrontEndKind k) const { return k == FrontEndKind::CommandLine ? cli : python; }
  // Throw std::invalid_argument "NAME: expected ..., got ..." where the value is not accepted.
  double checked(double v, FrontEndKind k) const;
  const std::string& checked(const std::string& v, FrontEndKind k) const;
};

// The options of a run (`pairmd run`, `check`, `minimize`; pairmd.Simulation, pairmd.Ensemble).
// Both go into the config as overrides (backend=B, force.strategy=S), which checks them again.
extern const OptionSpec kBackendOption;
extern const OptionSpec kStrategyOption;

// The options of `pairmd compare` and pairmd.compare (session/compare.h).
extern const OptionSpec kCompareStepsOption;
extern const OptionSpec kCompareRepeatsOption;
extern const OptionSpec kCompareWarmupOption;
extern const OptionSpec kCompareSizesOption;
extern const OptionSpec kCompareStrategiesOption;

// The options of a potential map (`pairmd potential-map`, `place-ions`; pairmd.potential_map):
// session/map_options.h applies them over the config's analysis.potential_map.
extern const OptionSpec kMapSpacingOption;
extern const OptionSpec kMapPaddingOption;
extern const OptionSpec kMapMinDistanceOption;
extern const OptionSpec kMapRegionOption;
extern const OptionSpec kMapKernelOption;
extern const OptionSpec kMapMethodOption;
extern const OptionSpec kMapBoundaryOption;
extern const OptionSpec kMapUnitsOption;
extern const OptionSpec kMapFramesOption;

}  // namespace pairmd
