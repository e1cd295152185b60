// A sanity look at integrator.dt against the fastest motion of the system, in the run's units:
// `pairmd check` and `pairmd run` print what it finds as warnings (they never refuse a run).
// It catches a time step given in the wrong unit (dt: 2.0 meant as fs in a run whose time is
// tau, or dt: 0.002 meant as ps now that `real` time is fs) before the run blows up or crawls.
#pragma once

#include <string>
#include <vector>

#include "base/system_state.h"
#include "base/topology.h"
#include "engine/config.h"

namespace pairmd {

// The two time scales of the estimate: t_pair, the time a particle of the lightest type takes to
// cross the smallest LJ/WCA sigma at the speed sqrt(max(k_B T, epsilon) / m) (about tau in LJ
// units, ~2 ps for argon in real units), and t_bond, the period of the stiffest bond
// (harmonic: 2 pi sqrt(mu / k); FENE: its curvature at half its maximum extension).
struct TimeScales {
  double pair = 0;                   // 0: no LJ/WCA term, or nothing moves
  double bond = 0;                   // 0: no bonds
  std::string pair_what, bond_what;  // what each came from, for the message
};
TimeScales time_scales(const RunConfig& cfg, const SystemState& state, const Topology& topology);

// Warnings about dt (none when it looks fine): larger than t_pair / 50 or t_bond / 10 (where
// velocity Verlet's error grows quickly and the run may blow up), or smaller than t_pair / 1e5
// (a run that would take ~1e5 steps per collision: a dt in ps where the unit is fs?).
// Brownian dynamics has no inertia and is not looked at.
std::vector<std::string> time_step_warnings(const RunConfig& cfg, const SystemState& state, const Topology& topology);

}  // namespace pairmd
