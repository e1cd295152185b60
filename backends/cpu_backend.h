// The CPU reference backend: double precision everywhere, a Verlet list per pair term, the
// shared evaluators and integrator steps. It is the oracle the GPU backend is tested against,
// so it favours plain loops over tricks; OpenMP threads split the particle loops.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/pme_cpu.h"
#include "neighbor/verlet_list.h"

namespace pairmd {

// A partner within the cutoff, gathered by the pair loop (separation, its square, index).
struct CloseNeighbour {
  Vec3d d;
  double rsq;
  int j;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& model, const SystemState& initial);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  void set_state(const SystemState& state) override;
  void get_state(SystemState& state) override;
  void advance(int64_t nsteps) override;
  // The observables of the last move_to() are kept until the state changes again: the
  // minimiser asks for them after every move, which then costs one force pass, not two.
  Observables observables() override;
  std::vector<Vec3d> forces() override { return force_; }
  BackendStats stats() const override;
  void set_temperature(double temperature) override { model_.integrator.temperature = temperature; }

  // The lists are rebuilt only if the particles moved too far; the energies are computed with
  // the forces (observables() returns them).
  void move_to(const std::vector<Vec3d>& position, const std::vector<Int3>& image) override;

  // Forces without any neighbour list: every pair under minimum image (tests use this as the
  // check of the list itself).
  std::vector<Vec3d> forces_all_pairs() const;

 private:
  struct PairTermData;
  struct BondData;
  struct BondedTerms;  // angles, dihedrals, impropers and scaled 1-2/1-3/1-4 pairs (cpu_backend.cpp)

  // Recomputes force_ (and, if `obs` is given, energies and virial, and virial_diag_) at the
  // current positions.
  void compute_forces(Observables* obs);
  // compute_forces's parts: this thread's share of the pair and bond terms (inside its parallel
  // region), the pulling, a broken bond's report, and the observables.
  void thread_pair_forces(bool with_energy, Vec3d* f, double* energy, double& virial, Vec3d& virial_diag);
  void thread_bond_forces(bool with_energy, Vec3d* f, double* energy, double& virial, Vec3d& virial_diag,
                          int& broken_term, long& broken_bond);
  void add_pulling_forces(double& energy);
  [[noreturn]] void throw_broken_bond(int term, long bond) const;
  void fill_observables(Observables& obs, const std::vector<double>& energy, double virial, Vec3d virial_diag);
  void check_sane(int64_t step) const;
  void make_pme();  // the reciprocal-space solver for the state's box and charges (electrostatics)
  // The barostat's box update during step `step`, after the drift (integrators/barostat.h).
  void update_box(int64_t step);
  std::array<double, 3> barostat_virial() const;
  // Throws SimulationBlowup when `box` is too small for the lists' minimum image.
  void check_box_size(const Box& box, int64_t step) const;
  void bonded_forces(bool with_energy, Vec3d* f, double* energy, size_t first, double& virial,
                     Vec3d& virial_diag) const;

  Model model_;
  int threads_;  // OpenMP threads of every parallel loop (base/host_threads.h)
  SystemState state_;
  std::vector<Vec3d> force_;
  std::vector<double> inv_mass_;
  std::vector<std::unique_ptr<PairTermData>> pair_terms_;
  std::vector<std::unique_ptr<BondData>> bond_terms_;
  std::unique_ptr<BondedTerms> bonded_;
  std::vector<std::vector<Vec3d>> thread_force_;           // per-thread accumulators (Newton's 3rd law)
  std::vector<std::vector<CloseNeighbour>> thread_close_;  // per-thread scratch of the pair loop
  BackendStats stats_;
  double max_step_displacement_;
  std::unique_ptr<PmeCpu> pme_;       // null without electrostatics
  double largest_list_radius_ = 0.0;  // cutoff + skin of the widest pair term
  // The virial per direction (sum over pairs of r_a f_a) at the positions of step virial_step_
  // (-1: none), what the barostat reads.
  double virial_diag_[3] = {0, 0, 0};
  double virial_ = 0.0;  // their sum as every force term adds it (W of Observables)
  int64_t virial_step_ = -1;
  Observables moved_observables_;  // of the state move_to() left, while moved_valid_
  bool moved_valid_ = false;
};

}  // namespace pairmd
