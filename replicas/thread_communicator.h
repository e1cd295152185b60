// The replicas of an ensemble as threads of one process (no MPI launcher): one Communicator per
// thread over a shared ThreadGroup, so every replica runs the very code an MPI rank runs
// (replicas/ensemble.h: meetings, exchanges, stops), its allgather a barrier that collects each
// thread's values. On a GPU the replicas share one ensemble backend (backends/lockstep_ensemble.h).
//
// Under mpirun with more replicas than ranks, each rank runs K of them as threads
// (RankThreadCommunicator): replica r = rank K + thread, and an allgather of the replicas is the
// threads' barrier inside each rank, then one allgather of the ranks (by the thread that comes
// last to the barrier), so only the replicas' scalars cross ranks, as with one replica per rank.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "replicas/communicator.h"

namespace pairmd {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size);
  int size() const { return size_; }
  // Every thread's values, in rank order, once all `size` threads have called it. With `across`,
  // the last thread in gives it those values and every thread gets what it returns (an allgather
  // of the ranks: one call per round, by one thread at a time); what it throws, every thread
  // throws.
  using Across = std::function<std::vector<double>(const std::vector<double>&)>;
  std::vector<double> allgather(int rank, const std::vector<double>& values, const Across& across = nullptr);

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::vector<double>> parts_;
  std::vector<double> result_;
  std::string error_;  // what `across` threw this round
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

// Replica `rank K + thread` of an ensemble of `ranks.size() K` replicas, K = group.size() threads
// in each rank of `ranks` (MPI: mpi_serves_threads() must hold). Its node's GPU is its rank's.
class RankThreadCommunicator final : public Communicator {
 public:
  RankThreadCommunicator(ThreadGroup& group, int thread, Communicator& ranks)
      : group_(group), thread_(thread), ranks_(ranks) {}
  int rank() const override { return ranks_.rank() * group_.size() + thread_; }
  int size() const override { return ranks_.size() * group_.size(); }
  int local_rank() const override { return ranks_.local_rank(); }
  std::string describe() const override;
  // The rank's threads' values, then the ranks' blocks: in replica order.
  std::vector<double> allgather(const std::vector<double>& values) override;
  // Ends every rank of the job (MPI_Abort), this process's threads with it.
  [[noreturn]] void abort(int code) override;

 private:
  ThreadGroup& group_;
  int thread_;
  Communicator& ranks_;
};

}  // namespace pairmd
