#include "session/options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "backends/strategies.h"
#include "engine/config.h"
#include "engine/map_registry.h"

namespace pairmd {

namespace {

// A number as a message writes it: whole numbers in full (100000000, not 1e+08).
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<long long>(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

std::string NumberRule::expected() const {
  std::string e = whole ? "a whole number" : "a number";
  if (std::isfinite(lo)) e += (lo_open ? " > " : " >= ") + number_text(lo);
  if (hi < 1e12) e += (std::isfinite(lo) ? " and <= " : " <= ") + number_text(hi);
  return e;
}

std::string NumberRule::check(double v) const {
  if (std::isfinite(v) && v >= lo && !(lo_open && v == lo) && v <= hi && (!whole || v == std::floor(v))) return "";
  return "expected " + expected() + ", got " + number_text(v);
}

std::string NumberRule::parse(const std::string& text, double& v) const {
  char* end = nullptr;
  errno = 0;
  // A whole number is written as one ("1e3" and "10.0" are not).
  v = whole ? static_cast<double>(std::strtoll(text.c_str(), &end, 10)) : std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !check(v).empty())
    return "expected " + expected() + ", got '" + text + "'";
  return "";
}

std::string choice_list(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

std::string check_choice(const std::string& value, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (value == n) return "";
  if (names.size() == 2) return "expected " + names[0] + " or " + names[1] + ", got '" + value + "'";
  return "expected one of: " + choice_list(names, ", ") + "; got '" + value + "'";
}

double OptionSpec::checked(double v, FrontEndKind k) const {
  const std::string why = number.check(v);
  if (!why.empty()) throw std::invalid_argument(name(k) + ": " + why);
  return v;
}

const std::string& OptionSpec::checked(const std::string& v, FrontEndKind k) const {
  const std::string why = choices ? check_choice(v, choices()) : "";
  if (!why.empty()) throw std::invalid_argument(name(k) + ": " + why);
  return v;
}

namespace {

OptionSpec text_option(const char* cli, const char* python, const std::string& help,
                       std::function<std::vector<std::string>()> choices = {}) {
  return {cli, python, help, NumberRule{}, std::move(choices)};
}

OptionSpec number_option(const char* cli, const char* python, const std::string& help, const NumberRule& rule) {
  return {cli, python, help, rule, {}};
}

std::vector<std::string> compare_strategy_names() {
  std::vector<std::string> names = strategy_names(true);  // auto: the tuned choice (backends/tuning.h)
  names.push_back("cpu");
  return names;
}

}  // namespace

const OptionSpec kBackendOption =
    text_option("--backend", "backend", "cpu, cuda or auto (--set backend=B)", [] { return backend_names(); });
const OptionSpec kStrategyOption =
    text_option("--strategy", "strategy",
                "GPU force-summation strategy (--set force.strategy=S): " + choice_list(strategy_names(true)) +
                    "; default " + strategy_name(kDefaultStrategy) + " (docs/strategies.md)",
                [] { return strategy_names(true); });

const OptionSpec kCompareStepsOption =
    number_option("--steps", "steps", "timed steps per repeat (default 500)", NumberRule::whole_from(1));
const OptionSpec kCompareRepeatsOption =
    number_option("--repeats", "repeats", "timed repeats per strategy, the median is reported (default 5)",
                  NumberRule::whole_from(1));
const OptionSpec kCompareWarmupOption =
    number_option("--warmup", "warmup", "steps of the first strategy to equilibrate the common start (default 1000)",
                  NumberRule::whole_from(0));
const OptionSpec kCompareSizesOption =
    number_option("--sizes", "sizes", "comma-separated particle counts to scale the system to (default: the config's)",
                  NumberRule::whole_from(1));
const OptionSpec kCompareStrategiesOption = text_option(
    "--strategies", "strategies",
    "comma-separated strategies to time, auto for the tuned choice, or cpu for the CPU reference; default every "
    "registered strategy: " +
        choice_list(strategy_names(), ", "),
    compare_strategy_names);

const OptionSpec kMapSpacingOption =
    number_option("--spacing", "spacing", "lattice spacing (default the config's, else 1)", NumberRule::above(0));
const OptionSpec kMapPaddingOption = number_option(
    "--padding", "padding", "padding around the particles for --region particles (default 5)", NumberRule::at_least(0));
const OptionSpec kMapMinDistanceOption =
    number_option("--min-distance", "min_distance", "distance floor against the 1/r singularity (default spacing/2)",
                  NumberRule::at_least(0));
const OptionSpec kMapRegionOption = text_option(
    "--region", "region", "box (the simulation box) or particles (their bounding box + padding)", map_region_names);
const OptionSpec kMapKernelOption =
    text_option("--kernel", "kernel", choice_list(map_kernel_names()) + " (default auto)", map_kernel_names);
const OptionSpec kMapMethodOption =
    text_option("--method", "method", choice_list(map_method_names()) + " (default exact)", map_method_names);
const OptionSpec kMapBoundaryOption =
    text_option("--boundary", "boundary", "open or periodic (every image; needs msm or auto)", map_boundary_names);
const OptionSpec kMapUnitsOption =
    text_option("--units", "units", "lj or real: the trajectory's units, where the file does not store them",
                [] { return unit_system_names(); });
const OptionSpec kMapFramesOption = text_option(
    "--frames", "frames", "a:b:s as in Python (b exclusive, default all frames), a single index, or -1 (the last)");

}  // namespace pairmd
