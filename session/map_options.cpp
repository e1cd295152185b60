#include "session/map_options.h"

#include <stdexcept>

namespace pairmd {

const MapOptionNames kCommandLineMapNames{"--spacing", "--padding", "--min-distance", "--region",
                                          "--kernel",  "--method",  "--boundary",     "--units"};
const MapOptionNames kPythonMapNames{"spacing", "padding", "min_distance", "region",
                                     "kernel",  "method",  "boundary",     "units"};

void apply_map_options(const MapOptions& o, MapSettings& s, const MapOptionNames& n) {
  if (o.spacing) s.spacing = *o.spacing;
  if (o.padding) s.padding = *o.padding;
  if (o.min_distance) s.min_distance = *o.min_distance;
  if (!o.region.empty()) s.region = o.region;
  if (!o.kernel.empty()) s.kernel = o.kernel;
  if (!o.method.empty()) s.method = o.method;
  if (!o.boundary.empty()) s.boundary = o.boundary;
  if (!(s.spacing > 0)) throw std::invalid_argument(n.spacing + ": expected a number > 0");
  if (!(s.padding >= 0)) throw std::invalid_argument(n.padding + ": expected a number >= 0");
  if (!(s.min_distance >= 0)) throw std::invalid_argument(n.min_distance + ": expected a number >= 0");
  if (s.region != "box" && s.region != "particles")
    throw std::invalid_argument(n.region + ": expected box or particles, got '" + s.region + "'");
  if (s.boundary != "open" && s.boundary != "periodic")
    throw std::invalid_argument(n.boundary + ": expected open or periodic, got '" + s.boundary + "'");
  try {
    parse_map_kernel(s.kernel);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(n.kernel + ": " + e.what());
  }
  try {
    parse_map_method(s.method);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(n.method + ": " + e.what());
  }
}

bool map_units(const RunConfig* cfg, const std::string& named, const MapOptionNames& n, Units& units) {
  if (cfg) units = cfg->model.units;
  if (named.empty()) return cfg != nullptr;
  if (named != "lj" && named != "real")
    throw std::invalid_argument(n.units + ": expected lj or real, got '" + named + "'");
  if (cfg && named != units.name)
    throw std::invalid_argument(n.units + " " + named + " contradicts the config's units " + units.name);
  units = named == "real" ? Units::real() : Units::lj();
  return true;
}

}  // namespace pairmd
