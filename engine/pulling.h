// The pulling of a run (config `pulling`, potentials/pulling.h): the config's settings with the
// points it leaves out taken from the system the config builds.
#pragma once

#include "base/system_state.h"
#include "engine/config.h"
#include "potentials/pulling.h"

namespace pairmd {

// The pulling settings of `cfg` for the start state `start` (the system the config builds, at
// its first step): the anchor defaults to the pulled particle's position, the tether point to
// the tethered particle's, the direction to the unit vector from the tethered to the pulled
// particle. Positions are unwrapped. Throws ConfigError for a particle the system does not have
// or a direction of length zero. Off (mode None) when the config has no `pulling`.
PullSettings resolve_pulling(const RunConfig& cfg, const SystemState& start);

// What a pulling experiment records at a state: the anchor's shift v dt (step - s0) (ramp; 0
// for a constant force), the end-to-end distance |x_p - x_t| and the extension (x_p - x_t) . n
// (without a tethered particle: from the anchor point A), and the pulling force along n
// (potentials/pulling.h, pull_force_along). Unwrapped positions, in double.
struct PullReading {
  double anchor_shift = 0, end_to_end = 0, extension = 0, force = 0;
};
PullReading read_pull(const PullSettings& pull, const SystemState& state);

// Whether resolve_pulling reads the start state (some point or the direction left out): a
// restart must then build the config's system again to find them.
bool pulling_needs_start(const RunConfig& cfg);

}  // namespace pairmd
