// The CUDA ensemble (backends/ensemble.h): one CudaBackend over the K systems concatenated.
// What it reads back (states, observables, forces) it reads for every system at once, once per
// step, and hands out system by system.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/ensemble.h"
#include "backends/tuning.h"
#include "kernels/cuda_backend.cuh"

namespace pairmd {

namespace {

class CudaEnsemble final : public Ensemble {
 public:
  CudaEnsemble(const Model& model, const std::vector<SystemState>& states, const std::vector<EnsembleSystem>& systems)
      : n_(static_cast<int>(states[0].size())) {
    const Model all = replicate_model(model, static_cast<int>(states.size()), n_);
    const SystemState initial = concatenate_states(states);
    const int count = static_cast<int>(states.size());
    // The whole ensemble is what is tuned (backends/tuning.h): K small systems are one large one.
    auto make = [&](const Model& m, Strategy s) {
      auto b = std::make_unique<CudaBackend>(m, initial, s, count);
      for (size_t k = 0; k < systems.size(); ++k) {
        b->set_system_temperature(static_cast<int>(k), systems[k].temperature);
        b->set_system_seed(static_cast<int>(k), systems[k].seed);
      }
      return b;
    };
    const TuneResult tuned = tune_cuda_settings(all, initial.box, n_, count, make);
    backend_ = make(with_tuned_settings(all, tuned.best), tuned.best.strategy);
  }
  std::string name() const override { return backend_->name() + " ensemble"; }
  int size() const override { return backend_->systems(); }
  void advance(int64_t n) override {
    state_step_ = obs_step_ = force_step_ = -1;
    moved_valid_ = false;
    backend_->advance(n);
  }
  void get_state(int k, SystemState& s) override {
    if (state_step_ < 0) {
      backend_->get_state(all_);
      state_step_ = all_.step;
    }
    s = system_state(all_, k, n_);
  }
  void set_state(int k, const SystemState& s) override {
    SystemState all;
    backend_->get_state(all);
    const size_t a = static_cast<size_t>(k) * n_;
    for (int i = 0; i < n_; ++i) {
      all.position[a + i] = s.position.at(i);
      all.velocity[a + i] = s.velocity.at(i);
      all.image[a + i] = s.image.at(i);
    }
    state_step_ = obs_step_ = force_step_ = -1;
    moved_valid_ = false;
    backend_->set_state(all);
  }
  void set_states(const std::vector<SystemState>& states) override {
    if (static_cast<int>(states.size()) != size())
      throw std::invalid_argument(std::to_string(states.size()) + " states for an ensemble of " +
                                  std::to_string(size()));
    state_step_ = obs_step_ = force_step_ = -1;
    moved_valid_ = false;
    backend_->set_state(concatenate_states(states));
  }
  // The minimiser's move of system k: the others as read once (floats, which go back up exactly)
  // and kept until something else changes the state, so that a move costs one upload, not a
  // read-back too. After a failure (a bond broken in system k) the next move puts system k back.
  void move_to(int k, const std::vector<Vec3d>& x, const std::vector<Int3>& image) override {
    if (!moved_valid_) {
      backend_->get_state(moved_);
      moved_valid_ = true;
    }
    const size_t a = static_cast<size_t>(k) * n_;
    for (int i = 0; i < n_; ++i) {
      moved_.position[a + i] = x.at(i);
      moved_.image[a + i] = image.at(i);
    }
    state_step_ = obs_step_ = force_step_ = -1;
    backend_->set_state(moved_);
  }
  Observables observables(int k) override {
    if (obs_step_ < 0) {
      obs_ = backend_->system_observables();
      obs_step_ = 1;
    }
    return obs_.at(k);
  }
  std::vector<Vec3d> forces(int k) override {
    if (force_step_ < 0) {
      forces_ = backend_->forces();
      force_step_ = 1;
    }
    return std::vector<Vec3d>(forces_.begin() + static_cast<size_t>(k) * n_,
                              forces_.begin() + static_cast<size_t>(k + 1) * n_);
  }
  void scale_velocities(int k, double f) override {
    backend_->scale_system_velocities(k, f);
    state_step_ = obs_step_ = -1;
    moved_valid_ = false;
  }
  void set_temperature(int k, double t) override {
    backend_->set_system_temperature(k, t);
    obs_step_ = -1;
  }
  void change_temperatures(const std::vector<TemperatureChange>& changes) override {
    backend_->change_system_temperatures(changes);
    obs_step_ = -1;
    for (const TemperatureChange& c : changes)
      if (c.velocity_factor != 1) {  // velocities changed: the state read before is stale
        state_step_ = -1;
        moved_valid_ = false;
      }
  }
  BackendStats stats() const override { return backend_->stats(); }

 private:
  int n_;
  std::unique_ptr<CudaBackend> backend_;
  SystemState all_;
  SystemState moved_;         // the state of the last move_to (all systems), while moved_valid_
  bool moved_valid_ = false;  // nothing but move_to() changed the state since it was read
  std::vector<Observables> obs_;
  std::vector<Vec3d> forces_;
  int64_t state_step_ = -1, obs_step_ = -1, force_step_ = -1;  // -1: not read since the last change
};

}  // namespace

std::unique_ptr<Ensemble> make_cuda_ensemble(const Model& model, const std::vector<SystemState>& states,
                                             const std::vector<EnsembleSystem>& systems) {
  return std::make_unique<CudaEnsemble>(model, states, systems);
}

}  // namespace pairmd
