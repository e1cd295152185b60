// The registries are the one list of their kind (docs/extending.md): the docs tables name
// exactly the registered items, the command line offers them, the tests cover them. A registry
// line without its docs row, help text or test fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/strategies.h"
#include "engine/map_registry.h"
#include "integrators/registry.h"
#include "potentials/registry.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

std::string doc(const std::string& name) { return test::read_text(std::string(PAIRMD_SOURCE_DIR) + "/docs/" + name); }

// The lines of `text` from the heading that starts with `heading` to the next heading.
std::vector<std::string> section(const std::string& text, const std::string& heading) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      if (inside) break;
      inside = line.rfind(heading, 0) == 0;
      continue;
    }
    if (inside) lines.push_back(line);
  }
  EXPECT_FALSE(lines.empty()) << "no section '" << heading << "'";
  return lines;
}

// The cells of a table row ("\|" inside a cell is not a separator).
std::vector<std::string> cells(std::string row) {
  for (size_t p; (p = row.find("\\|")) != std::string::npos;) row.replace(p, 2, "\x01");
  std::vector<std::string> out;
  std::istringstream in(row);
  for (std::string c; std::getline(in, c, '|');) out.push_back(c);
  if (!out.empty()) out.erase(out.begin());  // before the first '|'
  return out;
}

// Every `name` in backticks.
std::vector<std::string> backticked(const std::string& text) {
  std::vector<std::string> names;
  for (size_t a = text.find('`'); a != std::string::npos; a = text.find('`', a + 1)) {
    const size_t b = text.find('`', a + 1);
    if (b == std::string::npos) break;
    names.push_back(text.substr(a + 1, b - a - 1));
    a = b;
  }
  return names;
}

// The names in column `column` of the row whose first cell is `key` (in backticks).
std::vector<std::string> row_names(const std::vector<std::string>& lines, const std::string& key, size_t column) {
  for (const std::string& line : lines) {
    const std::vector<std::string> c = cells(line);
    if (c.size() > column && c[0].find("`" + key + "`") != std::string::npos) return backticked(c[column]);
  }
  ADD_FAILURE() << "no table row for `" << key << "`";
  return {};
}

template <typename Registry>
std::vector<std::string> names_of(const Registry& registry) {
  std::vector<std::string> n;
  for (const auto& entry : registry) n.push_back(entry.name);
  return n;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Registries, NamesAreUnique) {
  for (const std::vector<std::string>& names :
       {names_of(kPairPotentials), names_of(kBondPotentials), names_of(kAnglePotentials), names_of(kDihedralPotentials),
        names_of(kImproperPotentials), names_of(kIntegrators), names_of(kStrategies), names_of(kMapKernels),
        names_of(kMapMethods)}) {
    const std::set<std::string> unique(names.begin(), names.end());
    EXPECT_EQ(unique.size(), names.size());
  }
}

// docs/config.md: the choices of each key are the registered names, in registry order, and every
// potential has its formula line.
TEST(Registries, ConfigDocsListExactlyTheRegisteredNames) {
  const std::string config = doc("config.md");
  EXPECT_EQ(row_names(section(config, "### Pair terms"), "potential", 1), names_of(kPairPotentials));
  EXPECT_EQ(row_names(section(config, "### Bond types"), "potential", 1), names_of(kBondPotentials));
  EXPECT_EQ(row_names(section(config, "## `integrator`"), "kind", 1), names_of(kIntegrators));
  EXPECT_EQ(row_names(section(config, "## `force`"), "strategy", 1), strategy_names(true));
  const std::vector<std::string> map = section(config, "## `analysis.potential_map`");
  EXPECT_EQ(row_names(map, "kernel", 1), names_of(kMapKernels));
  EXPECT_EQ(row_names(map, "method", 1), names_of(kMapMethods));
  EXPECT_EQ(row_names(section(config, "### Angle types"), "potential", 1), names_of(kAnglePotentials));
  EXPECT_EQ(row_names(section(config, "### Dihedral types"), "potential", 1), names_of(kDihedralPotentials));
  EXPECT_EQ(row_names(section(config, "### Improper types"), "potential", 1), names_of(kImproperPotentials));
  const std::pair<const char*, std::vector<std::string>> families[] = {
      {"### Pair terms", names_of(kPairPotentials)},
      {"### Bond types", names_of(kBondPotentials)},
      {"### Angle types", names_of(kAnglePotentials)},
      {"### Dihedral types", names_of(kDihedralPotentials)},
      {"### Improper types", names_of(kImproperPotentials)}};
  for (const auto& [heading, names] : families) {
    const std::vector<std::string> lines = section(config, heading);
    std::vector<std::string> formulas;
    for (const std::string& line : lines)
      if (line.rfind("- `", 0) == 0) formulas.push_back(backticked(line)[0]);
    EXPECT_EQ(formulas, names) << heading << ": one '- `name`: formula' line per registered potential";
  }
}

// docs/strategies.md: the table of strategies has one row per registered strategy, and auto.
TEST(Registries, StrategyDocsHaveARowPerRegisteredStrategy) {
  const std::vector<std::string> lines = section(doc("strategies.md"), "# Force-summation strategies");
  std::vector<std::string> rows;
  bool table = false;
  for (const std::string& line : lines) {
    if (line.rfind("| strategy |", 0) == 0)
      table = true;
    else if (table && line.rfind("| `", 0) == 0)
      rows.push_back(backticked(cells(line)[0])[0]);
    else if (table && line.rfind("|", 0) != 0)
      table = false;
  }
  EXPECT_EQ(rows, strategy_names(true));
}

// The GPU tests run every registered strategy: their targets are the registry.
TEST(Registries, GpuTestTargetsAreTheRegisteredStrategies) {
  std::vector<std::string> targets;
  for (const test::Target& t : test::gpu_targets()) targets.push_back(t.strategy);
  EXPECT_EQ(targets, strategy_names());
  for (const test::Target& t : test::gpu_targets())
    EXPECT_EQ(t.deterministic, find_strategy(t.strategy)->deterministic);
}

// The physics tests (tests/test_physics.cpp) have a test for each integrator; a new integrator
// needs one there (and its name here).
TEST(Registries, EveryIntegratorHasPhysicsTests) {
  const std::set<std::string> tested = {"nve", "langevin", "brownian"};
  for (const IntegratorInfo& i : kIntegrators) EXPECT_TRUE(tested.count(i.name)) << i.name << " has no physics test";
  for (const IntegratorInfo& i : kIntegrators) EXPECT_EQ(find_integrator(i.name)->kind, i.kind);
}

}  // namespace
}  // namespace pairmd
