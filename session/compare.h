// What `pairmd compare` measures, for the pairmd program (cli/cmd_compare.cpp prints it, writes
// the CSV and the plot) and the Python module (pairmd.compare returns it as NumPy columns):
// every strategy from one common equilibrated start, its speed, time shares, forces against the
// fp64 CPU reference and measured reproducibility (docs/strategies.md).
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/config.h"
#include "engine/system_builder.h"
#include "session/options.h"

namespace pairmd {

// One strategy ("cpu": the reference backend) at one size.
struct CompareRow {
  long n = 0;
  std::string strategy;
  double ms_per_step = 0, steps_per_s = 0, spread = 0;
  double share_force = 0, share_list = 0, share_integrate = 0, builds_per_step = 0;
  double max_err = NAN, rms_err = NAN;
  std::string reproducible;  // yes | no | error
  double mib = 0;
  double bytes_per_particle = 0;
  std::string detail;  // the backend's own account of the timed runs
  std::string error;   // why the strategy could not be measured ("" when it was)
};

struct CompareSettings {
  long steps = 500, repeats = 5, warmup = 1000;
  std::vector<long> sizes;              // particle counts to scale the system to; empty: the config's
  std::vector<std::string> strategies;  // registered strategies and/or "cpu"
  bool reference = true;                // forces against the fp64 CPU reference
  bool gpu = false;                     // a GPU is there (resolve_compare fills it)
  std::string why;                      // the GPU, or why there is none
};

// The config overrides that scale a lattice or chains system to about n particles. Throws
// std::runtime_error for other systems.
std::vector<std::string> size_overrides(const RunConfig& cfg, long n);

// Fills c.gpu and c.why and checks the settings by the rules of their options
// (session/options.h: kCompareStepsOption ...): throws std::invalid_argument, naming the option as
// `front_end` does ("--steps" or "steps"), for numbers out of range, an unknown strategy, or a GPU
// strategy where there is none.
void resolve_compare(CompareSettings& c, FrontEndKind front_end);

// Runs the comparison. `load(extra)` loads the config with `extra` overrides after the front
// end's own (throws ConfigError). `on_size(n)` is called before the rows of each size, `on_row`
// after each row (either may be empty). Throws ConfigError for configs that cannot be built.
std::vector<CompareRow> compare_strategies(const std::function<RunConfig(const std::vector<std::string>&)>& load,
                                           const CompareSettings& c, const std::function<void(long)>& on_size,
                                           const std::function<void(const CompareRow&)>& on_row);

}  // namespace pairmd
