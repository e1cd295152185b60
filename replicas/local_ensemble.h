// The replicas of an ensemble as threads of one process (pairmd run without an MPI launcher, or
// each rank's replicas under mpirun with more replicas than ranks; one thread per replica, each
// running what an MPI rank of one replica runs: replicas/thread_communicator.h). On a
// GPU they share one ensemble backend (backends/ensemble.h: the K systems in one set of kernel
// launches), which this rendezvous makes once every replica has built its start state: each
// replica's run gets system k of it as its backend (backends/lockstep_ensemble.h). On the CPU
// each replica keeps a CPU backend of its own.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/ensemble.h"
#include "backends/lockstep_ensemble.h"

namespace pairmd {

class EnsembleRendezvous {
 public:
  // The replicas first, ..., first + count - 1 of the ensemble (under mpirun, this rank's).
  explicit EnsembleRendezvous(int count, int first = 0)
      : first_(first), states_(count), systems_(count), joined_(count, 0) {}
  // The replica's backend for the plan's start: system replica - first of the ensemble, made (on
  // the first use of any member) once every replica has joined. A replica that cannot join calls
  // cancel(): the others' backends then fail with the reason instead of waiting.
  std::unique_ptr<Backend> join(int replica, const std::string& backend, const Model& model, const SystemState& start,
                                std::string* why);
  void cancel(const std::string& why);

 private:
  class Pending;
  Backend& member(int k);  // waits for every replica, makes the ensemble once
  void leave(int k);

  int first_;
  std::mutex mutex_;
  std::condition_variable all_in_;
  std::string backend_;
  Model model_;
  std::vector<SystemState> states_;
  std::vector<EnsembleSystem> systems_;
  std::vector<char> joined_;
  int count_joined_ = 0;
  std::string cancelled_;
  std::string failure_;
  std::unique_ptr<LockstepEnsemble> ensemble_;
  std::vector<std::unique_ptr<Backend>> members_;
};

}  // namespace pairmd
