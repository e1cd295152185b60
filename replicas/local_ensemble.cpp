#include "replicas/local_ensemble.h"

#include <stdexcept>

namespace pairmd {

// Replica k's backend until the ensemble exists: every call but name() waits for it, then goes to
// system k's member.
class EnsembleRendezvous::Pending final : public Backend {
 public:
  Pending(EnsembleRendezvous& owner, int k, std::string name) : owner_(owner), k_(k), name_(std::move(name)) {}
  // The replica's run is over: it no longer holds the others back (LockstepEnsemble).
  ~Pending() override { owner_.leave(k_); }
  std::string name() const override { return name_; }
  void set_state(const SystemState& s) override { owner_.member(k_).set_state(s); }
  void get_state(SystemState& s) override { owner_.member(k_).get_state(s); }
  void move_to(const std::vector<Vec3d>& x, const std::vector<Int3>& image) override {
    owner_.member(k_).move_to(x, image);
  }
  void advance(int64_t n) override { owner_.member(k_).advance(n); }
  Observables observables() override { return owner_.member(k_).observables(); }
  std::vector<Vec3d> forces() override { return owner_.member(k_).forces(); }
  BackendStats stats() const override { return owner_.member(k_).stats(); }
  void set_temperature(double t) override { owner_.member(k_).set_temperature(t); }
  // Passed on, not Backend's host default: that moves every system's state both ways.
  void scale_velocities(double f) override { owner_.member(k_).scale_velocities(f); }

 private:
  EnsembleRendezvous& owner_;
  int k_;
  std::string name_;
};

std::unique_ptr<Backend> EnsembleRendezvous::join(int replica, const std::string& backend, const Model& model,
                                                  const SystemState& start, std::string* why) {
  std::lock_guard<std::mutex> l(mutex_);
  const int k = replica - first_;
  backend_ = backend;
  if (k == 0) model_ = model;
  states_.at(k) = start;
  systems_.at(k) = {model.integrator.temperature, model.integrator.seed};
  if (!joined_[k]) ++count_joined_;
  joined_[k] = 1;
  all_in_.notify_all();
  const std::string name = "cuda ensemble, system " + std::to_string(k) + " of " + std::to_string(states_.size());
  if (why)
    *why = "cuda: the " + std::to_string(states_.size()) + " replicas of this process in one set of kernels on one GPU";
  return std::make_unique<Pending>(*this, k, name);
}

void EnsembleRendezvous::leave(int k) {
  std::lock_guard<std::mutex> l(mutex_);
  if (static_cast<size_t>(k) < members_.size()) members_[k].reset();
}

void EnsembleRendezvous::cancel(const std::string& why) {
  std::lock_guard<std::mutex> l(mutex_);
  if (cancelled_.empty()) cancelled_ = why.empty() ? "a replica could not start" : why;
  all_in_.notify_all();
}

Backend& EnsembleRendezvous::member(int k) {
  std::unique_lock<std::mutex> l(mutex_);
  all_in_.wait(l, [&] { return count_joined_ == static_cast<int>(states_.size()) || !cancelled_.empty(); });
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (!ensemble_) {
    if (!cancelled_.empty()) throw std::runtime_error("the ensemble was not made: " + cancelled_);
    try {
      const int64_t step = states_[0].step;
      ensemble_ = std::make_unique<LockstepEnsemble>(make_ensemble(backend_, model_, states_, systems_), step);
      for (int j = 0; j < static_cast<int>(states_.size()); ++j) members_.push_back(ensemble_->member(j));
    } catch (const std::exception& e) {
      failure_ = std::string("the replicas' GPU ensemble could not be made: ") + e.what();
      all_in_.notify_all();
      throw std::runtime_error(failure_);
    }
  }
  return *members_.at(k);
}

}  // namespace pairmd
