// Things that look at a running simulation at chosen steps: the thermo log, trajectory
// writer, checkpoints, on-line analysis. The run loop advances the backend to the next step
// any observer wants and shows it the state there.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "base/system_state.h"
#include "base/topology.h"
#include "engine/config.h"

namespace pairmd {

struct RunContext {
  const RunConfig& config;
  const Topology& topology;
  Backend& backend;
  int64_t first_step;  // step the run (or restart) began at
  int64_t last_step;   // step the run will end at
};

struct Frame {
  const SystemState& state;        // positions, velocities, images at `state.step`
  const Observables& observables;  // energies at that step
  double time;                     // state.step * dt
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // The first step after `step` at which this observer wants a frame (INT64_MAX: none).
  virtual int64_t next_step(int64_t step) const = 0;
  virtual void observe(const RunContext& ctx, const Frame& frame) = 0;
  // The run ends here (normally, interrupted or blown up); `frame` is the last good state.
  virtual void finish(const RunContext& ctx, const Frame& frame) {
    (void)ctx;
    (void)frame;
  }
};

// Shown the run's progress after every chunk of steps (the thermo log's live line). The run loop
// knows only this interface, so the engine needs no header of io/.
class ProgressDisplay {
 public:
  virtual ~ProgressDisplay() = default;
  virtual void progress(const RunContext& ctx, int64_t step) = 0;
};

// Next multiple of `every` after `step` (INT64_MAX when every == 0).
inline int64_t next_multiple(int64_t step, int64_t every) {
  if (every <= 0) return INT64_MAX;
  return (step / every + 1) * every;
}

}  // namespace pairmd
