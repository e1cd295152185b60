// Commands whose implementation lands with later issues.
#include <iostream>

#include "engine/cli/commands.h"

namespace pairmd::cli {

int cmd_potential_map(const Args&) {
  std::cerr << "pairmd potential-map: not available in this build yet\n";
  return kExitUsage;
}

int cmd_place_ions(const Args&) {
  std::cerr << "pairmd place-ions: not available in this build yet\n";
  return kExitUsage;
}

}  // namespace pairmd::cli
