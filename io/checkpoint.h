// Checkpoints: everything a run needs to continue exactly where it was (docs/output.md).
//
// An HDF5 file with the state in double precision (bit for bit), the topology, the step, the
// integrator seed (the thermostat noise is Philox keyed by seed, step and particle tag, so seed
// and step are the whole "RNG position"), and the config text with its --set overrides.
// Neighbour lists are not stored: the CPU backend's forces do not depend on when its list was
// built. The file is written to PATH.tmp.PID, given a trailer with its length and a 64-bit
// FNV-1a checksum, fsynced and renamed over PATH, so a crash mid-write leaves the previous
// checkpoint intact and a damaged file is recognised before HDF5 parses it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/system_state.h"
#include "base/topology.h"
#include "engine/config.h"
#include "engine/run_observer.h"
#include "potentials/pulling.h"

namespace pairmd {

struct Checkpoint {
  SystemState state;
  Topology topology;
  int64_t first_step = 0;  // step the original run started at (steps counts from there)
  int64_t last_step = -1;  // step the run was to end at (-1: not stored, older checkpoint)
  std::string prefix;      // output prefix of the run ("": not stored, older checkpoint)
  std::string run_id;      // identifies the run's files ("": not stored, older checkpoint)
  uint64_t seed = 0;       // integrator seed (Philox key)
  double dt = 0.0;
  std::string integrator;  // integrator kind name
  std::string backend;     // backend that wrote it (bitwise continuation needs the same)
  std::string config_text, config_path;
  std::vector<std::string> overrides;  // "key.path=value" as --set takes them, in order
  std::string pairmd_version;
  std::string time_unit;  // unit of dt and velocities ("": not stored, older checkpoint)
  std::string ensemble;   // a replica's ensemble state (replicas/ensemble.h; "": not a replica)
  // The run's pulling as its start resolved it (engine/pulling.h: the points the config leaves
  // out come from the start state), so that a restart needs no start file. Mode None: the run
  // does not pull, or the checkpoint is older than this field.
  PullSettings pulling;
};

// Throws std::runtime_error naming the path and the problem; PATH is untouched on failure.
// `prefix` and `last_step` (the run's output prefix and the step it is to end at) let a restart
// continue the same run into the same files.
void write_checkpoint(const std::string& path, const SystemState& state, const Topology& topology,
                      const RunConfig& config, int64_t first_step, const std::string& backend,
                      const std::string& prefix = "", int64_t last_step = -1, const std::string& ensemble = "",
                      const PullSettings& pulling = PullSettings());
// Throws std::runtime_error for a missing, truncated, corrupted or foreign file.
Checkpoint read_checkpoint(const std::string& path);

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
