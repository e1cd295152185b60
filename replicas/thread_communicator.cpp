#include "replicas/thread_communicator.h"

#include <cstdio>
#include <cstdlib>

namespace pairmd {

ThreadGroup::ThreadGroup(int size) : size_(size), parts_(size) {}

std::vector<double> ThreadGroup::allgather(int rank, const std::vector<double>& values) {
  std::unique_lock<std::mutex> l(mutex_);
  parts_.at(rank) = values;
  const int64_t round = round_;
  if (++arrived_ == size_) {
    // The last one in puts the round together. result_ is replaced only when every thread has
    // come to the next round, by when each has taken its copy of this one.
    result_.clear();
    for (const std::vector<double>& p : parts_) result_.insert(result_.end(), p.begin(), p.end());
    arrived_ = 0;
    ++round_;
    done_.notify_all();
  } else {
    done_.wait(l, [&] { return round_ != round; });
  }
  return result_;
}

std::string ThreadCommunicator::describe() const {
  return "threads of one process (" + std::to_string(size()) + " replicas, no MPI)";
}

void ThreadCommunicator::abort(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace pairmd
