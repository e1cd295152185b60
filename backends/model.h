// Everything about a run that does not change while it runs: units, force field, topology,
// integrator, barostat and neighbour-list settings, and which GPU force strategy to use.
#pragma once

#include <string>

#include "backends/strategies.h"
#include "base/topology.h"
#include "base/units.h"
#include "integrators/barostat.h"
#include "integrators/registry.h"
#include "potentials/force_field.h"
#include "potentials/pme.h"
#include "potentials/pulling.h"

namespace pairmd {

struct Model {
  Units units = Units::lj();
  ForceField force_field;
  Topology topology;
  IntegratorSettings integrator;
  NeighborSettings neighbor;
  std::string strategy = strategy_name(kDefaultStrategy);  // GPU force-summation strategy (or auto)
  // A particle moving farther than this in one step stops the run (dt too large?).
  double max_step_displacement = 0.5;
  // External forces of a pulling experiment (config `pulling`), resolved against the start
  // state by engine/pulling.h; off by default.
  PullSettings pulling;
  // Pressure control (config `barostat`); off by default.
  BarostatSettings barostat;
  // Particle-mesh Ewald for the coulomb_long term (config `electrostatics`); off by default.
  PmeSettings electrostatics;
};

}  // namespace pairmd
