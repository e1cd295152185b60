// Commands whose implementation lands with later issues.
#include <iostream>

#include "engine/cli/commands.h"

namespace pairmd::cli {

int cmd_compare(const Args&) {
  std::cerr << "pairmd compare: not available in this build yet\n";
  return kExitUsage;
}

}  // namespace pairmd::cli
