#include "backends/lockstep_ensemble.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace pairmd {

class LockstepEnsemble::Member final : public Backend {
 public:
  Member(LockstepEnsemble& owner, int k) : owner_(owner), k_(k) {}
  ~Member() override { owner_.leave(k_); }
  std::string name() const override {
    return owner_.ensemble_->name() + ", system " + std::to_string(k_) + " of " +
           std::to_string(owner_.ensemble_->size());
  }
  void set_state(const SystemState& s) override {
    owner_.locked([&](Ensemble& e) {
      e.set_state(k_, s);
      return 0;
    });
  }
  void get_state(SystemState& s) override {
    owner_.locked([&](Ensemble& e) {
      e.get_state(k_, s);
      return 0;
    });
  }
  // The minimiser's moves of this system alone (an ensemble's systems are minimised one by one).
  void move_to(const std::vector<Vec3d>& x, const std::vector<Int3>& image) override {
    owner_.locked([&](Ensemble& e) {
      e.move_to(k_, x, image);
      return 0;
    });
  }
  void advance(int64_t n) override {
    int64_t step;
    {
      std::lock_guard<std::mutex> l(owner_.mutex_);
      step = owner_.step_;
    }
    owner_.advance_to(k_, step + n);
  }
  Observables observables() override {
    return owner_.locked([&](Ensemble& e) { return e.observables(k_); });
  }
  std::vector<Vec3d> forces() override {
    return owner_.locked([&](Ensemble& e) { return e.forces(k_); });
  }
  BackendStats stats() const override {
    return owner_.locked([&](Ensemble& e) { return e.stats(); });
  }
  void scale_velocities(double f) override { owner_.change(k_, std::nan(""), f); }
  void set_temperature(double t) override { owner_.change(k_, t, 1.0); }

 private:
  LockstepEnsemble& owner_;
  int k_;
};

LockstepEnsemble::LockstepEnsemble(std::unique_ptr<Ensemble> ensemble, int64_t step)
    : ensemble_(std::move(ensemble)), step_(step) {
  const int k = ensemble_->size();
  target_.assign(k, step);
  active_.assign(k, 1);
  waiting_.assign(k, 0);
}

std::unique_ptr<Backend> LockstepEnsemble::member(int k) {
  if (k < 0 || k >= ensemble_->size()) throw std::out_of_range("no system " + std::to_string(k) + " in the ensemble");
  return std::make_unique<Member>(*this, k);
}

// Member k's change joins the pending ones; a second scaling of the same system first applies
// the pending ones (two roundings of the velocities, as two calls would make).
void LockstepEnsemble::change(int k, double temperature, double velocity_factor) {
  std::lock_guard<std::mutex> l(mutex_);
  auto mine = std::find_if(changes_.begin(), changes_.end(), [&](const TemperatureChange& c) { return c.system == k; });
  if (mine != changes_.end() && velocity_factor != 1.0 && mine->velocity_factor != 1.0) {
    apply_changes();
    mine = changes_.end();
  }
  if (mine == changes_.end()) {
    changes_.push_back(TemperatureChange{k, temperature, velocity_factor});
    return;
  }
  if (!std::isnan(temperature)) mine->temperature = temperature;
  if (velocity_factor != 1.0) mine->velocity_factor = velocity_factor;
}

// A failure here fails every member, as a failed step does: the other members' swaps are lost
// with the ensemble's state, and none of them may run on at a temperature it has left.
void LockstepEnsemble::apply_changes() {
  if (changes_.empty()) return;
  std::vector<TemperatureChange> changes;
  changes.swap(changes_);
  try {
    ensemble_->change_temperatures(changes);
  } catch (...) {
    failure_ = std::current_exception();
    moved_.notify_all();
    throw;
  }
}

void LockstepEnsemble::advance_to(int k, int64_t target) {
  std::unique_lock<std::mutex> l(mutex_);
  target_[k] = target;
  waiting_[k] = 1;
  for (;;) {
    if (failure_) {
      waiting_[k] = 0;
      std::rethrow_exception(failure_);
    }
    if (step_ >= target) {
      waiting_[k] = 0;
      return;
    }
    // A member whose target is reached but that has not woken yet is not asking to move (it
    // comes back with its next target); counting it would move by zero steps, forever, with the
    // lock held so that it never wakes.
    bool all = true;
    int64_t next = std::numeric_limits<int64_t>::max();
    for (size_t j = 0; j < active_.size(); ++j) {
      if (!active_[j]) continue;
      if (!waiting_[j] || target_[j] <= step_) {
        all = false;
        break;
      }
      next = std::min(next, target_[j]);
    }
    if (all) {
      // Every active member waits: move the ensemble (under the lock: nobody reads meanwhile).
      try {
        apply_changes();
        ensemble_->advance(next - step_);
        step_ = next;
      } catch (...) {
        failure_ = std::current_exception();
      }
      moved_.notify_all();
      continue;
    }
    moved_.wait(l);
  }
}

void LockstepEnsemble::leave(int k) {
  std::lock_guard<std::mutex> l(mutex_);
  active_[k] = 0;
  waiting_[k] = 0;
  // The others may all be waiting for this one.
  moved_.notify_all();
}

}  // namespace pairmd
