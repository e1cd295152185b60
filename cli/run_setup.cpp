#include "cli/run_setup.h"

#include <CLI/CLI.hpp>

#include "backends/strategies.h"

namespace pairmd::cli {

void add_config_options(CLI::App& app, ConfigOptions& o, bool steps) {
  app.add_option("CONFIG", o.config_path, "the run's YAML config (docs/config.md)");
  app.add_option_function<std::string>(
         "--set", [&o](const std::string& v) { o.sets.push_back(v); },
         "override a config key: --set key.path=value (repeatable, applied in order)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  if (steps)
    app.add_option_function<std::string>(
           "--steps",
           // Routed through the config's own validation so messages look alike.
           [&o](const std::string& v) { o.sets.push_back("steps=" + v); }, "number of steps (--set steps=N)")
        ->trigger_on_parse();
  app.add_option("--backend", o.backend, "cpu, cuda or auto (--set backend=B)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--strategy", o.strategy,
                 "GPU force-summation strategy (--set force.strategy=S): " + choices(strategy_names(true)) +
                     "; default " + strategy_name(kDefaultStrategy) + " (docs/strategies.md)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

std::vector<std::string> command_line_overrides(const ConfigOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (!o.backend.empty()) sets.push_back("backend=" + o.backend);
  if (!o.strategy.empty()) sets.push_back("force.strategy=" + o.strategy);
  return sets;
}

RunConfig load_with_options(const ConfigOptions& o) { return load_config(o.config_path, command_line_overrides(o)); }

}  // namespace pairmd::cli
