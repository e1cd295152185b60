// pairmd run CONFIG: build the system, pick the backend, run with thermo output, trajectory
// and checkpoints; stop cleanly on signals and blow-ups.
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "analysis/potential_map_observer.h"
#include "engine/cli/run_setup.h"
#include "engine/simulation.h"
#include "engine/version.h"

namespace pairmd::cli {

int cmd_run(const Args& args) {
  ConfigOptions o;
  std::string restart, prefix_override;
  OptionReader r{args};
  try {
    while (!r.done()) {
      if (read_config_option(r, o)) continue;
      if (r.value("--restart", restart)) continue;
      if (r.value("--output", prefix_override)) continue;
      if (r.peek().rfind("--", 0) == 0 || !o.config_path.empty()) {
        std::cerr << "pairmd run: unexpected argument '" << r.peek() << "'\n";
        return kExitUsage;
      }
      o.config_path = args[r.i++];
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd run: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.config_path.empty()) {
    std::cerr << "pairmd run: usage: pairmd run CONFIG [--backend cpu|cuda|auto] [--steps N] [--set key.path=value]...\n";
    return kExitUsage;
  }

  // Everything that can be wrong with the input is found before any file is written.
  RunConfig cfg;
  BuiltSystem sys;
  try {
    cfg = load_with_options(o);
    if (!prefix_override.empty()) cfg.output.prefix = prefix_override;
    if (!restart.empty()) {
      std::cerr << "pairmd run: --restart is not available yet\n";
      return kExitUsage;
    }
    sys = build_system(cfg);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }

  Model model = cfg.model;
  model.topology = sys.topology;
  std::string why;
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(cfg.backend, model, sys.state, &why);
  } catch (const std::exception& e) {
    std::cerr << "pairmd run: " << e.what() << "\n";
    return kExitUsage;
  }

  std::cout << "pairmd " << PAIRMD_VERSION << ": " << (cfg.title.empty() ? cfg.path : cfg.title) << "\n"
            << describe_system(cfg, sys) << "backend: " << why << "\n";
  const std::string prefix = output_prefix(cfg);
  const int64_t first = sys.state.step, last = first + cfg.steps;
  std::cout << "steps: " << cfg.steps << " (" << first << " -> " << last << "), output: " << prefix << ".*\n" << std::flush;

  // analysis.potential_map (its kernel is checked before any file is written).
  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0) {
    try {
      potential_map = std::make_unique<PotentialMapObserver>(cfg, prefix + ".potential.dx", nullptr);
    } catch (const std::exception& e) {
      std::cerr << "pairmd run: analysis.potential_map: " << e.what() << "\n";
      return kExitUsage;
    }
    std::cout << "potential map: every " << cfg.potential_map.every << " steps, kernel "
              << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
  }

  const bool progress = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  Simulation sim(cfg, sys.topology, std::move(backend));
  auto thermo = std::make_unique<ThermoLog>(cfg, prefix + ".thermo.csv", progress,
                                            degrees_of_freedom(cfg, sys.state.size()), false);
  sim.set_progress(thermo.get());
  sim.add_observer(std::move(thermo));
  if (potential_map) sim.add_observer(std::move(potential_map));

  install_stop_handlers();
  const RunResult result = sim.run(last);
  const BackendStats st = sim.backend().stats();
  std::ostringstream summary;
  summary << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) summary << " = " << st.steps / st.seconds_total << " steps/s";
  summary << ", " << st.list_builds << " neighbour-list builds";
  if (!st.detail.empty()) summary << " (" << st.detail << ")";
  std::cout << summary.str() << "\n";
  switch (result.outcome) {
    case RunOutcome::Completed:
      return kExitOk;
    case RunOutcome::Interrupted:
      std::cerr << "pairmd run: " << result.message << "; output flushed\n";
      return kExitInterrupted;
    case RunOutcome::BlewUp:
      std::cerr << "pairmd run: error: " << result.message << "\n"
                << "  the last good state is step " << result.last_good_step << "\n";
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace pairmd::cli
