#include "cli/commands.h"

#include <stdexcept>

namespace pairmd::cli {

bool OptionReader::value(const char* name, std::string& out) {
  const std::string& a = args[i];
  const std::string n(name);
  if (a == n) {
    if (i + 1 >= args.size()) throw std::invalid_argument(n + " needs a value");
    out = args[i + 1];
    i += 2;
    return true;
  }
  if (a.rfind(n + "=", 0) == 0) {
    out = a.substr(n.size() + 1);
    ++i;
    return true;
  }
  return false;
}

bool OptionReader::flag(const char* name) {
  if (args[i] != name) return false;
  ++i;
  return true;
}

}  // namespace pairmd::cli
