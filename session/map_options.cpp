#include "session/map_options.h"

#include <stdexcept>

namespace pairmd {

void apply_map_options(const MapOptions& o, MapSettings& s, FrontEndKind k) {
  if (o.spacing) s.spacing = *o.spacing;
  if (o.padding) s.padding = *o.padding;
  if (o.min_distance) s.min_distance = *o.min_distance;
  if (!o.region.empty()) s.region = o.region;
  if (!o.kernel.empty()) s.kernel = o.kernel;
  if (!o.method.empty()) s.method = o.method;
  if (!o.boundary.empty()) s.boundary = o.boundary;
  kMapSpacingOption.checked(s.spacing, k);
  kMapPaddingOption.checked(s.padding, k);
  kMapMinDistanceOption.checked(s.min_distance, k);
  kMapRegionOption.checked(s.region, k);
  kMapBoundaryOption.checked(s.boundary, k);
  kMapKernelOption.checked(s.kernel, k);
  kMapMethodOption.checked(s.method, k);
}

bool map_units(const RunConfig* cfg, const std::string& named, FrontEndKind k, Units& units) {
  if (cfg) units = cfg->model.units;
  if (named.empty()) return cfg != nullptr;
  kMapUnitsOption.checked(named, k);
  if (cfg && named != units.name)
    throw std::invalid_argument(kMapUnitsOption.name(k) + " " + named + " contradicts the config's units " +
                                units.name);
  units = named == "real" ? Units::real() : Units::lj();
  return true;
}

}  // namespace pairmd
