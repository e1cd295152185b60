// The checkpoints of an ensemble as one set (docs/replicas.md, "Checkpoints, restart, signals
// and faults").
//
// Every replica writes its own checkpoint (PREFIX.rNN.checkpoint.h5) at the same steps, each
// atomically; but a replica that fails (a full disk) or is killed stops writing them, so the
// newest checkpoints of the replicas can be of different steps, which no restart continues. Each
// replica therefore also keeps PREFIX.rNN.checkpoint.common.h5: its newest checkpoint of a step
// that every replica is known to have written (the ranks say so at their meetings). It is a hard
// link to the checkpoint file (no room taken; a copy where the file system has no links), and
// the checkpoint writer replaces its file by a rename, which leaves the linked file as it was.
// A replica links its checkpoint only after every replica reported that step, and before it
// writes a newer one, so at any moment the last step that all reported is in every replica's
// pair of files, however the ranks stop. A restart whose checkpoints are of different steps goes
// on from the newest step that every replica has in one of its two files.
#pragma once

#include <cstdint>
#include <string>

#include "replicas/communicator.h"

namespace pairmd {

// PREFIX.rNN.checkpoint.common.h5 for PREFIX.rNN.checkpoint.h5 (another name: NAME.common.h5);
// "" for a name that is already a common checkpoint's.
std::string common_checkpoint_path(const std::string& checkpoint);

class CommonCheckpoint {
 public:
  // `checkpoint`: the file this replica's checkpoint writer writes.
  explicit CommonCheckpoint(std::string checkpoint);
  const std::string& path() const { return common_; }
  // The step of the common checkpoint this run kept or started from (-1: none).
  int64_t step() const { return step_; }
  // The run continues its files from `restart` at `step`, a step every replica starts from: that
  // file becomes the common one (a common checkpoint of a later step, from a timeline the restart
  // leaves, would otherwise stay). Returns "" or why it could not.
  std::string start(const std::string& restart, int64_t step);
  // Every replica's newest checkpoint is of `step`: keep this replica's (or `source`) as the
  // common one. Returns "" or why it could not (the previous common checkpoint is then unchanged).
  std::string keep(int64_t step, const std::string& source = "");

 private:
  std::string checkpoint_, common_;
  int64_t step_ = -1;
};

// The checkpoint each rank of an ensemble restarts from, given PREFIX.rNN.checkpoint.h5: that
// file when every rank's is of one step; else, when the ranks' checkpoints and common
// checkpoints hold a step that every rank has, the newest such step's file (with a note for the
// log saying so); else the given file (the restart then refuses the set). Collective.
struct RestartSet {
  std::string path;
  std::string note;  // "" when every rank restarts from the file given
};
RestartSet choose_restart_set(Communicator& comm, const std::string& given);

}  // namespace pairmd
