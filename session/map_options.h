// The options of a potential map as the front ends give them (`pairmd potential-map`, `pairmd
// place-ions`, the Python module's potential_map): applied over the config's
// analysis.potential_map and checked here, once, with the option names each front end uses.
#pragma once

#include <optional>
#include <string>

#include "analysis/potential_map.h"
#include "base/units.h"
#include "engine/config.h"

namespace pairmd {

// What a front end was given (unset: keep the config's or the default).
struct MapOptions {
  std::optional<double> spacing, padding, min_distance;
  std::string region, kernel, method, boundary;
};

// How a front end names them in messages.
struct MapOptionNames {
  std::string spacing, padding, min_distance, region, kernel, method, boundary, units;
};
extern const MapOptionNames kCommandLineMapNames;  // --spacing, --min-distance, ...
extern const MapOptionNames kPythonMapNames;       // spacing, min_distance, ...

// `o` over `settings`, then every value checked (spacing > 0, padding and min_distance >= 0, the
// region, a registered kernel and method). Throws std::invalid_argument naming the option.
void apply_map_options(const MapOptions& o, MapSettings& settings, const MapOptionNames& names);

// The units of a map: the config's (`cfg`, may be null), or the named ones ("lj", "real"; "":
// none named), which must agree with the config's. Returns false when neither gives them.
// Throws std::invalid_argument naming the option.
bool map_units(const RunConfig* cfg, const std::string& named, const MapOptionNames& names, Units& units);

}  // namespace pairmd
