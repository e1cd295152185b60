// The systems of an ensemble (backends/ensemble.h) as Backends of their own, for a driver that
// runs one Simulation per system, each in a thread of its own (the replicas of an ensemble run
// in one process: replicas/thread_communicator.h). A member's advance() waits until every
// active member has asked to move; then the ensemble moves, once for all, to the nearest step
// any of them asked for, and the members that asked for it go on. So the ensemble never runs
// ahead of a member, and what a member reads (its state, observables, forces) is its system at
// the step its Simulation is at. A member that leaves (its run ended) no longer holds the
// others back.
//
// A member's new temperature and velocity scaling (replica exchange's swap) wait until the
// ensemble is next used (moved or read), and all members' go to the ensemble together
// (Ensemble::change_temperatures): at a meeting of K replicas one upload and one kernel, not K
// synchronised pairs one after another under the lock.
//
// A failed step (a blow-up names the system) fails every member's advance with the message: the
// ensemble's state is lost for all systems, and each Simulation falls back to its last good state.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/ensemble.h"

namespace pairmd {

class LockstepEnsemble {
 public:
  // `step`: the step every system is at.
  LockstepEnsemble(std::unique_ptr<Ensemble> ensemble, int64_t step);
  // System k as a Backend (once per system; the member leaves when it is destroyed).
  std::unique_ptr<Backend> member(int k);

 private:
  class Member;
  void advance_to(int k, int64_t target);
  void leave(int k);
  // Under the lock, with the members' pending changes applied first.
  template <typename F>
  auto locked(F&& f) {
    std::lock_guard<std::mutex> l(mutex_);
    apply_changes();
    return f(*ensemble_);
  }
  void change(int k, double temperature, double velocity_factor);
  void apply_changes();  // with the lock held

  std::unique_ptr<Ensemble> ensemble_;
  std::mutex mutex_;
  std::condition_variable moved_;
  int64_t step_;
  std::vector<int64_t> target_;
  std::vector<char> active_, waiting_;
  std::exception_ptr failure_;
  std::vector<TemperatureChange> changes_;  // pending, at most one per system
};

}  // namespace pairmd
