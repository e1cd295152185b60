// Ensembles: K independent copies of one system advanced together (replicas on one GPU, many
// copies of a protein for pulling statistics; docs/ensembles.md). Every system has its own
// particles, thermostat temperature and noise seed; they share the model (potentials, topology,
// integrator, box), the step counter and, on the GPU, one set of kernel launches per step.
//
// The CUDA ensemble is one CudaBackend over the K systems concatenated (system k's particle i
// has tag k n + i; the model's topology and pair lists are repeated per system): the cell grid
// keeps every system in layers of its own (neighbor/cell_runs.h), so no pair joins two systems,
// and the integrate kernels step particle i of system k with system k's temperature, with the
// seed and the tag it has alone. So system k runs bit for bit the trajectory it runs as a single
// system with that seed and temperature (tests/test_ensemble.cpp). The CPU ensemble is K CPU
// backends (the oracle), stepped in parallel over the systems.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace pairmd {

// What differs between the systems.
struct EnsembleSystem {
  double temperature = 0;
  uint64_t seed = 0;
};

// A new thermostat temperature for one system of an ensemble and its velocities scaled (a replica
// exchange's swap): what set_temperature(system, temperature) and scale_velocities(system,
// velocity_factor) do, either left out (a NaN temperature, a factor of 1).
struct TemperatureChange {
  int system = 0;
  double temperature = std::numeric_limits<double>::quiet_NaN();
  double velocity_factor = 1;
};

// The model of `systems` systems of `n` particles as one: bonds and pair lists repeated with
// their particles shifted by k n; pulling and everything else as they are (they name particles
// by their tag within a system).
Model replicate_model(const Model& m, int systems, int n);
// The states one after another (system k's particle i at k n + i); the box and step are the
// first's, which every state must share (std::invalid_argument otherwise).
SystemState concatenate_states(const std::vector<SystemState>& states);
// System k of a concatenation of systems of n particles.
SystemState system_state(const SystemState& all, int k, int n);

class Ensemble {
 public:
  virtual ~Ensemble() = default;
  virtual std::string name() const = 0;
  virtual int size() const = 0;  // K
  // Every system by `n` steps (SimulationBlowup names the system that blew up; the ensemble is
  // then unusable until its states are set again).
  virtual void advance(int64_t n) = 0;
  virtual void get_state(int k, SystemState& state) = 0;
  // Replaces system k's state (its step must be the ensemble's).
  virtual void set_state(int k, const SystemState& state) = 0;
  // Every system's state at once (one upload on the GPU rather than one per system).
  virtual void set_states(const std::vector<SystemState>& states) {
    for (size_t k = 0; k < states.size(); ++k) set_state(static_cast<int>(k), states[k]);
  }
  // New positions and images for system k alone (Backend::move_to: the energy minimiser's moves
  // of one system; the others are left as they are). The default goes through get_state and
  // set_state.
  virtual void move_to(int k, const std::vector<Vec3d>& position, const std::vector<Int3>& image);
  virtual Observables observables(int k) = 0;
  virtual std::vector<Vec3d> forces(int k) = 0;
  virtual void set_temperature(int k, double temperature) = 0;
  // System k's velocities times f (Backend::scale_velocities); the other systems keep theirs.
  virtual void scale_velocities(int k, double f) = 0;
  // Several systems' changes at once (an exchange meeting's, at most one per system), as the
  // calls above one by one would leave them: the CUDA ensemble makes one upload and one kernel of
  // them, not a synchronised pair per system.
  virtual void change_temperatures(const std::vector<TemperatureChange>& changes);
  virtual BackendStats stats() const = 0;
};

// Why `systems` copies of `one` cannot fit in the GPU's free memory (the estimate per system of
// backends/backend.h times the copies, and the largest number that fits); "" when they fit or the
// GPU's memory is not known. make_ensemble refuses such an ensemble before it allocates anything.
std::string ensemble_memory_problem(const Model& model, const SystemState& one, int64_t systems);

// "cpu", "cuda" or "auto", as make_backend. All states have the same particles, box and step;
// `systems` gives each its temperature and seed (the model's integrator settings are the rest).
std::unique_ptr<Ensemble> make_ensemble(const std::string& backend, const Model& model,
                                        const std::vector<SystemState>& states,
                                        const std::vector<EnsembleSystem>& systems, std::string* why = nullptr);

}  // namespace pairmd
