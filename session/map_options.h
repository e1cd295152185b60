// The options of a potential map as the front ends give them (`pairmd potential-map`, `pairmd
// place-ions`, the Python module's potential_map): applied over the config's
// analysis.potential_map and checked here, once, by the rules of session/options.h, naming each
// option as the front end that gave it does.
#pragma once

#include <optional>
#include <string>

#include "analysis/potential_map.h"
#include "base/units.h"
#include "engine/config.h"
#include "session/options.h"

namespace pairmd {

// What a front end was given (unset: keep the config's or the default).
struct MapOptions {
  std::optional<double> spacing, padding, min_distance;
  std::string region, kernel, method, boundary;
};

// `o` over `settings`, then every value checked (kMapSpacingOption ... kMapBoundaryOption).
// Throws std::invalid_argument naming the option.
void apply_map_options(const MapOptions& o, MapSettings& settings, FrontEndKind front_end);

// The units of a map: the config's (`cfg`, may be null), or the named ones ("lj", "real"; "":
// none named), which must agree with the config's. Returns false when neither gives them.
// Throws std::invalid_argument naming the option.
bool map_units(const RunConfig* cfg, const std::string& named, FrontEndKind front_end, Units& units);

}  // namespace pairmd
