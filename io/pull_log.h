// The record of a pulling experiment (config `pulling`, docs/proteins.md): PREFIX.pull.csv with
// a row every pulling.every steps (default thermo_every),
//
//   step,time,anchor_shift,end_to_end,extension,force
//
// (engine/pulling.h, read_pull: the anchor's shift v t, the end-to-end distance, the extension
// along the pulling direction, the pulling force along it), and the same values as time
// series of the trajectory (observables/pull_force, pull_extension, pull_end_to_end,
// pull_anchor_shift) when there is one. At the end of a run (completed or stopped) the whole CSV,
// a restart's earlier rows included, is drawn as the force-extension curve PREFIX.pull.svg
// (io/svg_plot.h; written to a temporary and renamed, so a plot is never half-written).
#pragma once

#include <cstdio>
#include <string>

#include "engine/run_observer.h"
#include "potentials/pulling.h"

namespace pairmd {

class H5mdWriter;

// Draws the pulling CSV `csv_path` (force against extension) as an SVG at `svg_path`, through a
// temporary SVG_PATH.tmp.PID renamed into place. Throws std::runtime_error when it cannot.
void write_pull_plot(const std::string& csv_path, const std::string& svg_path, const std::string& title,
                     const std::string& length_unit, const std::string& force_unit);

class PullLog final : public RunObserver {
 public:
  // `append`: add rows to an existing CSV (a restart); otherwise it is created and must not exist.
  // `trajectory` (may be null) gets the values as observables too.
  // `svg_path` (may be empty: none) gets the force-extension plot at finish().
  PullLog(const RunConfig& cfg, const PullSettings& pull, const std::string& csv_path, bool append,
          H5mdWriter* trajectory, const std::string& svg_path = "");
  ~PullLog() override;
  PullLog(const PullLog&) = delete;
  PullLog& operator=(const PullLog&) = delete;

  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext& ctx, const Frame& frame) override;
  void finish(const RunContext& ctx, const Frame& frame) override;

 private:
  void write(const Frame& frame);
  PullSettings pull_;
  int64_t every_;
  std::string path_, svg_path_, title_;
  std::FILE* csv_ = nullptr;
  H5mdWriter* trajectory_;
  std::string length_unit_, force_unit_;
  int64_t last_step_ = -1;
};

}  // namespace pairmd
