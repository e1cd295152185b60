// analysis.potential_map during a run: every `every` steps the map of the current frame goes to
// the trajectory (time series "potential_map") and into a running mean; at the end the mean is
// written to <prefix>.potential.dx and to the trajectory ("potential_map_average").
#pragma once

#include <memory>
#include <string>

#include "analysis/grid_sink.h"
#include "analysis/potential_map.h"
#include "engine/run_observer.h"

namespace pairmd {

class PotentialMapObserver : public RunObserver {
 public:
  // `sink` (may be null) must outlive finish(). Throws (like PotentialMapSeries) when the
  // requested kernel cannot run here.
  PotentialMapObserver(const RunConfig& cfg, std::string dx_path, GridSink* sink = nullptr);
  // Where maps go besides the .dx file; set before the run starts (may be null).
  void set_sink(GridSink* sink) { sink_ = sink; }

  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext& ctx, const Frame& frame) override;
  void finish(const RunContext& ctx, const Frame& frame) override;

  const PotentialMapSeries& series() const { return series_; }
  const std::string& dx_path() const { return dx_path_; }

 private:
  int64_t every_;
  std::string dx_path_;
  GridSink* sink_;
  PotentialMapSeries series_;
  int64_t last_step_ = -1;
};

}  // namespace pairmd
