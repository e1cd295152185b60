// pairmd check CONFIG: everything `run` validates, and the system it would build, without
// running or writing anything.
#include <iostream>

#include "engine/cli/run_setup.h"

namespace pairmd::cli {

int cmd_check(const Args& args) {
  ConfigOptions o;
  OptionReader r{args};
  try {
    while (!r.done()) {
      if (read_config_option(r, o)) continue;
      if (r.peek().rfind("--", 0) == 0 || !o.config_path.empty()) {
        std::cerr << "pairmd check: unexpected argument '" << r.peek() << "'\n";
        return kExitUsage;
      }
      o.config_path = args[r.i++];
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd check: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.config_path.empty()) {
    std::cerr << "pairmd check: usage: pairmd check CONFIG [--set key.path=value]...\n";
    return kExitUsage;
  }
  try {
    const RunConfig cfg = load_with_options(o);
    const BuiltSystem sys = build_system(cfg);
    std::cout << o.config_path << ": ok\n" << describe_system(cfg, sys) << "steps: " << cfg.steps << "\n";
    return kExitOk;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace pairmd::cli
