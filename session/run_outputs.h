// The observers that write a run's files (trajectory, GSD, thermo table and CSV, checkpoints,
// the potential map, PREFIX.log), created in the order the run shows them a step, for the
// pairmd program and the Python module alike (docs/output.md).
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "analysis/grid_sink.h"
#include "analysis/potential_map_observer.h"
#include "engine/simulation.h"
#include "io/checkpoint_run.h"
#include "io/h5md_writer.h"
#include "io/thermo_log.h"
#include "session/run_log.h"
#include "session/run_plan.h"

namespace pairmd {

struct Outputs {
  std::unique_ptr<GridSink> grid_sink;  // outlives the simulation's observers
  H5mdWriter* writer = nullptr;
  CheckpointWriter* checkpoints = nullptr;
};

// The potential-map observer of analysis.potential_map (null without one). Throws (as
// PotentialMapSeries) when its kernel cannot run here.
std::unique_ptr<PotentialMapObserver> make_potential_map_observer(const RunPlan& p);

// Creates (or, continuing a run, opens) the output files and adds their observers to `sim`;
// what it does to files (replaced, left over by a killed run, rows dropped) it says on
// log.out(), where the thermo table goes too. If one cannot be created, the files this run
// created are removed again and the error thrown (files of an earlier run that this one
// continues stay as they were). `command` heads the log.
void open_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p,
                  std::unique_ptr<PotentialMapObserver> potential_map, Simulation& sim, Outputs& out, RunLog& log,
                  const std::string& command);

}  // namespace pairmd
