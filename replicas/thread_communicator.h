// The replicas of an ensemble as threads of one process (no MPI launcher): one Communicator per
// thread over a shared ThreadGroup, so every replica runs the very code an MPI rank runs
// (replicas/ensemble.h: meetings, exchanges, stops), its allgather a barrier that collects each
// thread's values. On a GPU the replicas share one ensemble backend (backends/lockstep_ensemble.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "replicas/communicator.h"

namespace pairmd {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  int size() const { return size_; }
  // Every thread's values, in rank order, once all `size` threads have called it.
  std::vector<double> allgather(int rank, const std::vector<double>& values);

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::vector<double>> parts_;
  std::vector<double> result_;
  int arrived_ = 0;
  int64_t round_ = 0;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  int local_rank() const override { return 0; }  // every replica on the same GPU
  std::string describe() const override;
  std::vector<double> allgather(const std::vector<double>& values) override { return group_.allgather(rank_, values); }
  // A thread that cannot take part in collectives any more ends the process, as MPI_Abort ends
  // the job.
  [[noreturn]] void abort(int code) override;

 private:
  ThreadGroup& group_;
  int rank_;
};

}  // namespace pairmd
