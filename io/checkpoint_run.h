// A checkpoint of a run (io/checkpoint.h is the file format): what it records of the run's
// config, the writer that observes the run, and the check a restart makes of the units.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/run_observer.h"
#include "io/checkpoint.h"

namespace pairmd {

// What a checkpoint of a run of `config` records of the run: its seed, time step and unit,
// integrator, config text, path and overrides, run id; and the arguments.
CheckpointRun checkpoint_run(const RunConfig& config, int64_t first_step, const std::string& backend,
                             const std::string& prefix = "", int64_t last_step = -1, const std::string& ensemble = "",
                             const PullSettings& pulling = PullSettings());

// write_checkpoint of io/checkpoint.h with checkpoint_run(config, first_step, ...).
void write_checkpoint(const std::string& path, const SystemState& state, const Topology& topology,
                      const RunConfig& config, int64_t first_step, const std::string& backend,
                      const std::string& prefix = "", int64_t last_step = -1, const std::string& ensemble = "",
                      const PullSettings& pulling = PullSettings());

// A checkpoint's time unit must be the config's (`real` meant ps before it took LAMMPS's fs):
// throws ConfigError saying what to do otherwise.
void check_checkpoint_units(const Checkpoint& ck, const RunConfig& cfg, const std::string& path);

// Writes a checkpoint every output.checkpoint_every steps and always at the end of the run
// (normal end, interrupt, blow-up: the last good state). `before_write` runs first (the
// trajectory flushes there, so the file on disk covers the checkpoint's step).
class CheckpointWriter final : public RunObserver {
 public:
  CheckpointWriter(std::string path, int64_t every, int64_t first_step, std::string backend, std::string prefix);
  void add_before_write(std::function<void()> f) { before_.push_back(std::move(f)); }
  // Text stored with each checkpoint as run/ensemble (a replica's ladder and exchange state).
  void set_ensemble(std::function<std::string()> f) { ensemble_ = std::move(f); }
  // The run's pulling as its start resolved it, stored with each checkpoint.
  void set_pulling(const PullSettings& pulling) { pulling_ = pulling; }
  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext& ctx, const Frame& frame) override;
  void finish(const RunContext& ctx, const Frame& frame) override;

  const std::string& path() const { return path_; }
  int64_t last_written_step() const { return last_step_; }  // -1: none written
  const std::string& error() const { return error_; }       // of the write at finish, if it failed

 private:
  void write(const RunContext& ctx, const SystemState& state);
  std::string path_;
  int64_t every_, first_step_;
  std::string backend_, prefix_;
  int64_t last_step_ = -1;
  std::string error_;
  std::vector<std::function<void()>> before_;
  std::function<std::string()> ensemble_;
  PullSettings pulling_;
};

}  // namespace pairmd
