#include "cli/run_setup.h"

namespace pairmd::cli {

void add_config_options(CLI::App& app, ConfigOptions& o, bool config_required, bool steps) {
  CLI::Option* config = app.add_option("CONFIG", o.config_path, "the run's YAML config (docs/config.md)");
  if (config_required) config->required();
  app.add_option_function<std::string>(
         "--set", [&o](const std::string& v) { o.sets.push_back(v); },
         "override a config key: --set key.path=value (repeatable, applied in order)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  if (steps)
    app.add_option_function<std::string>(
           "--steps", [&o](const std::string& v) { o.sets.push_back("steps=" + v); }, "number of steps (--set steps=N)")
        ->check(number_check(NumberRule::whole_from(0)))
        ->trigger_on_parse();
  add_option(app, kBackendOption, o.backend);
  add_option(app, kStrategyOption, o.strategy);
}

std::vector<std::string> command_line_overrides(const ConfigOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (!o.backend.empty()) sets.push_back("backend=" + o.backend);
  if (!o.strategy.empty()) sets.push_back("force.strategy=" + o.strategy);
  return sets;
}

RunConfig load_with_options(const ConfigOptions& o) { return load_config(o.config_path, command_line_overrides(o)); }

std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_line(const std::string& command, const Args& words) {
  std::string c = command;
  for (const std::string& w : words) c += " " + shell_word(w);
  return c;
}

}  // namespace pairmd::cli
