#include "analysis/potential_map_observer.h"

#include <sstream>

#include "io/dx_writer.h"

namespace pairmd {

PotentialMapObserver::PotentialMapObserver(const RunConfig& cfg, std::string dx_path, GridSink* sink)
    : every_(cfg.potential_map.every),
      dx_path_(std::move(dx_path)),
      sink_(sink),
      series_(cfg.potential_map.settings, cfg.model.units) {}

void PotentialMapObserver::observe(const RunContext&, const Frame& frame) {
  if (frame.state.step == last_step_) return;  // finish() may show the last frame again
  last_step_ = frame.state.step;
  const Grid3& map = series_.add(frame.state);
  if (sink_) sink_->write_grid_frame("potential_map", frame.state.step, frame.time, map);
}

void PotentialMapObserver::finish(const RunContext& ctx, const Frame& frame) {
  if (series_.frames() == 0) observe(ctx, frame);
  const Grid3 avg = series_.average();
  std::ostringstream title;
  title << "pairmd electrostatic potential map (" << series_.summary() << "), mean of " << series_.frames()
        << " frame(s) up to step " << last_step_ << ", kernel " << map_kernel_name(series_.kernel());
  write_dx(dx_path_, avg, title.str());
  if (sink_) sink_->write_grid("potential_map_average", avg);
}

}  // namespace pairmd
