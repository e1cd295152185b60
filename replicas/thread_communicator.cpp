#include "replicas/thread_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace pairmd {

ThreadGroup::ThreadGroup(int size) : size_(size), parts_(size) {}

std::vector<double> ThreadGroup::allgather(int rank, const std::vector<double>& values, const Across& across) {
  std::unique_lock<std::mutex> l(mutex_);
  parts_.at(rank) = values;
  const int64_t round = round_;
  if (++arrived_ == size_) {
    // The last one in puts the round together. result_ is replaced only when every thread has
    // come to the next round, by when each has taken its copy of this one.
    result_.clear();
    for (const std::vector<double>& p : parts_) result_.insert(result_.end(), p.begin(), p.end());
    error_.clear();
    if (across) {
      // Under the lock: the next round's `across` waits for this one (one MPI call at a time).
      try {
        result_ = across(result_);
      } catch (const std::exception& e) {
        error_ = e.what();
      }
    }
    arrived_ = 0;
    ++round_;
    done_.notify_all();
  } else {
    done_.wait(l, [&] { return round_ != round; });
  }
  if (!error_.empty()) throw std::runtime_error(error_);
  return result_;
}

std::string ThreadCommunicator::describe() const {
  return "threads of one process (" + std::to_string(size()) + " replicas, no MPI)";
}

void ThreadCommunicator::abort(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

std::string RankThreadCommunicator::describe() const {
  return std::to_string(group_.size()) + " threads in each of " + ranks_.describe();
}

std::vector<double> RankThreadCommunicator::allgather(const std::vector<double>& values) {
  return group_.allgather(thread_, values,
                          [this](const std::vector<double>& rank_values) { return ranks_.allgather(rank_values); });
}

void RankThreadCommunicator::abort(int code) {
  std::fflush(nullptr);
  ranks_.abort(code);
  std::_Exit(code);  // not reached
}

}  // namespace pairmd
