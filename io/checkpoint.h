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
#include <string>
#include <vector>

#include "base/system_state.h"
#include "base/topology.h"
#include "potentials/pulling.h"

namespace pairmd {

// What a checkpoint records of its run, beside the state and the topology. A run's config fills
// it (io/checkpoint_run.h: checkpoint_run), so that this file format needs nothing of the config.
struct CheckpointRun {
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

struct Checkpoint : CheckpointRun {
  SystemState state;
  Topology topology;
};

// Throws std::runtime_error naming the path and the problem; PATH is untouched on failure.
// run.prefix and run.last_step (the run's output prefix and the step it is to end at) let a
// restart continue the same run into the same files; run.pairmd_version is this program's.
void write_checkpoint(const std::string& path, const SystemState& state, const Topology& topology,
                      const CheckpointRun& run);
// Throws std::runtime_error for a missing, truncated, corrupted or foreign file.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace pairmd
