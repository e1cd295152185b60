// The CUDA backend: the whole timestep loop on the GPU. Particles stay on the device in
// structure-of-arrays form and in cell order (kernels/device_particles.cuh); forces are fp32
// per pair and summed in 64-bit fixed point by the deterministic strategies; energies are
// exact fixed-point sums.
//
// The loop runs in chunks of k steps, each step an integrate kernel (ending step n with F(x_n)
// and beginning step n + 1) followed by the force kernels for F(x_{n+1}). A chunk is one CUDA
// graph launch (kernels/step_graphs.cuh). The integrate kernel decides on the GPU whether the
// step counts or the chunk halts, because a list rebuild is due or the run blew up
// (kernels/step_control.cuh); the host reads that once per chunk, rebuilds the lists if asked,
// and launches the next chunk. k follows the observed interval between rebuilds, so few steps
// of a chunk are spent halted.
//
// advance_async() need not wait: it queues its steps, reads back the chunks that have finished
// (without waiting), and launches queued steps when fewer than two chunks are in flight, so a
// caller that asks for a step at a time (a Python run(1) loop) keeps the GPU fed, and when the
// host is faster than the GPU the queued steps go out as longer chunks. Chunks never clear the
// halt (only the host does, after a rebuild), so a chunk launched behind one that halted takes
// no step: the host reads both and launches those steps again. No chunk is launched behind one
// that is expected to halt for a rebuild (it would be wasted). Each chunk copies its control
// block to its own pinned slot, with an event; step counts are running totals, so the chunk
// needs no clearing.
//
// The backend is written in four files by concern, around this declaration (kernels-internal;
// the engine reaches it only through make_cuda_backend, backends/backend.h):
//   cuda_backend_setup.cu   the device side of a run: exclusions, pair and bond terms, the state
//   cuda_backend.cu         the step loop: list builds, forces of each strategy, the integrate
//                           kernels, chunks of steps, and what the loop reports (state, forces,
//                           observables); the one file that includes integrate_kernel.cuh
//   cuda_backend_timing.cu  phase timing (profiling mode) and the statistics line
//   cuda_factory.cu         make_cuda_backend (the strategy and skin, tuned for auto) and the device probe
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/ensemble.h"
#include "backends/strategies.h"
#include "backends/tuning.h"
#include "base/work_key.h"
#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/launcher.cuh"
#include "kernels/bonded_kernels.cuh"
#include "kernels/box_update.cuh"
#include "kernels/device_particles.cuh"
#include "kernels/force_kernels.cuh"
#include "kernels/force_sources.cuh"
#include "kernels/pme_gpu.cuh"
#include "kernels/step_control.cuh"
#include "kernels/step_graphs.cuh"
#include "neighbor/gpu_cell_order.cuh"
#include "neighbor/gpu_pair_list.cuh"
#include "potentials/param_table.h"

namespace pairmd {

// The strategies and their properties (and parse_strategy): backends/strategies.h.
inline bool uses_slots(Strategy s) { return strategy_info(s).slots; }

// The control block, the flags and the box travel together, so one copy brings them to the host
// (the box: a barostat changes it on the device, kernels/box_update.cuh).
struct ChunkState {
  StepControl ctrl;
  DeviceFlags flags;
  DeviceBox box;
};

// integrate_slots_kernel's blocks that fit on one multiprocessor (defined beside it, in
// cuda_backend.cu); `box`: its barostat variant's.
int fused_blocks_per_sm(bool box = false);

// The longest chunk, in steps: a longer one would only add halted steps when a rebuild comes.
constexpr int kMaxChunk = 32;

// Chunks launched and not yet read back: at most the one an advance_async() left running and
// the first of the next call.
constexpr int kChunksInFlight = 2;

inline DeviceBuffer<unsigned char> upload_table(const ParamTable& t) {
  DeviceBuffer<unsigned char> d(std::max<size_t>(t.bytes(), 1));
  if (t.bytes()) PAIRMD_CUDA_CHECK(cudaMemcpy(d.data(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
DeviceBuffer<T> upload_vector(const std::vector<T>& v) {
  DeviceBuffer<T> d;
  d.upload(v);
  if (v.empty()) d.resize(1);  // a valid pointer for kernels that read nothing
  return d;
}

struct GpuPairTerm {
  PairKind kind;
  int ntypes;
  DeviceBuffer<unsigned char> table;
  std::unique_ptr<GpuPairList> list;
  DeviceBuffer<float> slots;     // F/r of each pair (slot strategies)
  DeviceBuffer<int> exclusions;  // partners left out of this term: a fixed-width table by tag
  int exclusion_width = 0;
  float skip_sq = 0;  // all_pairs: beyond this squared distance no pair of the term has a force
};

// Bonds of one kind, static and indexed by tag: bond b joins tags bi[b] < bj[b], sorted by
// (bi, bj). Tag t's bonds as i are [row_start[t], + row_count[t]) (partner bj); as j they are
// listed in col_bond / col_partner; atom_gather reads both sides from g_*. A pair list
// (force_field.pair_lists) is a term of the same kind whose table holds one parameter record per
// pair and whose btype is each pair's own index: per-pair parameters through the same kernels.
struct GpuBondTerm {
  BondKind kind;
  std::vector<Bond> bonds;
  DeviceBuffer<unsigned char> table;
  DeviceBuffer<unsigned> bi, bj;
  DeviceBuffer<int> btype, row_start, row_count, col_start, col_count, col_bond;
  DeviceBuffer<unsigned> col_partner;
  DeviceBuffer<int> g_start, g_type, g_index;
  DeviceBuffer<unsigned> g_partner;
  DeviceBuffer<float> slots;
};

// Angles, dihedrals or impropers of one kind (kernels/bonded_kernels.cuh): static, by tag, with
// the table of every type of the family (index by type).
struct GpuBondedTerm {
  enum Family { kAngle, kDihedral, kImproper } family;
  int kind;  // AngleKind, DihedralKind or ImproperKind
  int count = 0;
  DeviceBuffer<unsigned char> table;
  DeviceBuffer<uint4> atoms;  // tags i, j, k (, l)
  DeviceBuffer<int> type;
};

// The scaled 1-2/1-3/1-4 pairs of one pair term (ForceField::special).
struct GpuScaledPairs {
  size_t term;
  int count = 0;
  DeviceBuffer<unsigned> i, j;
  DeviceBuffer<float> weight;
};

class CudaBackend final : public Backend {
 public:
  // `systems` > 1: an ensemble of that many systems of initial.size() / systems particles each,
  // concatenated in `initial` (system k's particle i has tag k s + i) and in `model` (whose
  // topology and pair lists hold every system's, backends/ensemble.h): one set of kernel
  // launches steps them all, and no pair joins two systems (neighbor/cell_runs.h).
  CudaBackend(const Model& model, const SystemState& initial, Strategy strategy, int systems = 1);
  ~CudaBackend() override;

  std::string name() const override { return std::string("cuda:") + strategy_name(strategy_); }
  void set_state(const SystemState& state) override;
  void get_state(SystemState& state) override;
  void advance(int64_t nsteps) override;
  void advance_async(int64_t nsteps) override;
  void wait() override;
  Observables observables() override;
  std::vector<Vec3d> forces() override;
  BackendStats stats() const override;
  void set_temperature(double temperature) override;
  void scale_velocities(double f) override { scale_system_velocities(-1, f); }
  // The ensemble's systems (1 for a single system), each with its own thermostat temperature and
  // noise seed (set_temperature() sets every system's), and the observables of each.
  int systems() const override { return systems_; }
  int system_size() const { return system_size_; }
  void set_system_temperature(int k, double temperature);
  void set_system_seed(int k, uint64_t seed);
  // System k's velocities (every system's for k < 0) times f, on the device: each rounded to
  // float from the double product, as the host's get_state / scale / set_state would.
  void scale_system_velocities(int k, double f);
  // Several systems' new temperatures and velocity factors (backends/ensemble.h), as the two
  // calls above per system would leave them, in one upload and one kernel.
  void change_system_temperatures(const std::vector<TemperatureChange>& changes);
  std::vector<Observables> system_observables();
  void set_profiling(bool on) override {
    if (!on) resolve_phases();
    profile_ = on;
  }

 private:
  void construct(const SystemState& initial);  // the constructor's work (it frees what this made if it throws)
  void release();                              // frees the stream, events, pinned slots and graphs
  struct LaunchedChunk {
    int steps;          // launched; fewer are taken if the chunk (or one before it) halted
    int slot;           // its pinned copy of the control block and its event
    bool expects_halt;  // it reaches the step the rebuild interval predicts a rebuild at
  };

  void make_pair_terms(const SystemState& initial);
  void make_bond_terms();
  void setup_barostat(const SystemState& initial);
  void make_bonded_terms();             // angles, dihedrals, impropers, scaled pairs, the extra-force buffer
  void make_pme(const SystemState& s);  // the reciprocal-space solver (electrostatics)

  // Cells, renumbering and every list's search. With `wait` the lists are complete on return;
  // without, the searches are only enqueued (the step loop checks them at the chunk's end).
  void rebuild_lists(bool wait);
  void enqueue_rebuild(Launcher& launcher, bool wait);
  // After a synchronisation: reads what the enqueued searches found; false if one did not fit
  // (its buffers have grown, and the lists must be built again).
  bool settle_lists();
  // Makes sure the lists are complete: settles them and, if one did not fit, builds them again.
  void ensure_lists(bool synchronised);
  void enqueue_forces(Launcher& launcher, int buffer);
  void enqueue_slot_forces(Launcher& launcher, int buffer);
  void enqueue_atomic_forces(Launcher& launcher, int buffer);
  void enqueue_gather_forces(Launcher& launcher, int buffer);
  void enqueue_all_pairs_forces(Launcher& launcher, int buffer);
  void enqueue_gather_bond_forces(Launcher& launcher, const ParticleData& pd);
  // Whether the strategy searches pair lists (all_pairs does not, and never renumbers the
  // particles: particle p stays tag p).
  bool has_lists() const { return strategy_info(strategy_).list; }
  // The strategy sums the forces in a fixed-point array: the deterministic ones without slots
  // (atom_gather, all_pairs).
  bool fixed_array_forces() const { return strategy_info(strategy_).deterministic && !uses_slots(strategy_); }
  AllPairsView all_pairs_view(const GpuPairTerm& t) const;
  // The extra force (cleared, then the bonded terms' and PME's reciprocal-space forces), before
  // the strategy's forces.
  void enqueue_extra_forces(Launcher& launcher, int buffer);
  void enqueue_bonded_forces(Launcher& launcher, int buffer, FixedVec* extra);
  void enqueue_bonded_energies(Launcher& launcher, const ParticleData& pd, size_t first_slot, int stride);
  // PME's reciprocal-space forces and its excluded pairs' corrections into the extra force.
  void enqueue_pme_forces(Launcher& launcher, int buffer, FixedVec* extra);
  void enqueue_pme_energies(Launcher& launcher, const ParticleData& pd, int stride);
  // The per-particle extra force that every integrate kernel adds (null without bonded terms or
  // PME: the integrate kernels then add nothing).
  FixedVec* extra_force() {
    return bonded_terms_.empty() && scaled_pairs_.empty() && !pme_ ? nullptr : extra_force_.data();
  }
  void enqueue_integrate(Launcher& launcher, int buffer, bool begin, bool write_force);
  // `steps` steps from position buffer `parity`, then the control block into read-back `slot`.
  void enqueue_steps(Launcher& launcher, int steps, int parity, int slot);
  void enqueue_step(Launcher& launcher, int buffer);
  void enqueue_publish(Launcher& launcher, int slot);
  // Queues `steps` more steps and launches them; with `leave_running`, returns without waiting
  // for the GPU (steps may still be queued or running), else once all are taken.
  void run_steps(int64_t steps, bool leave_running);
  void launch_chunk(int64_t queued);
  // Reads the oldest chunk in flight back (and, if it halted, every later one, which took no
  // step): books its steps, rebuilds the lists if asked. Returns the steps to launch again.
  int64_t retire_chunks();
  bool chunk_finished(const LaunchedChunk& c) const;
  int chunk_length(int64_t left, bool* expects_halt = nullptr) const;
  // The control block into read-back slot 0, waited for (outside the step loop).
  void read_chunk_state();
  void clear_halt();
  [[noreturn]] void throw_blowup(const DeviceFlags& f, int64_t step, const DeviceBox* box = nullptr) const;
  // "particle 7", or in an ensemble "system 2, particle 7" (its tag within its system).
  std::string particle_label(int tag) const;
  void upload_system_params();
  // The barostat's virial pass (strategies other than pair_slots_fused; kernels/box_update.cuh).
  void enqueue_virial(Launcher& launcher, int buffer);
  // The box's part of the step: the particles scaled by the update the step's decision made.
  void enqueue_box_stage(Launcher& launcher, int buffer);
  void enqueue_energies(Launcher& now, int stride);
  void complete_step();
  ParticleData particles(int buffer) { return {particles_.pos(buffer), particles_.charge(), n_, &device_box()->box}; }
  SlotForce slot_source(int buffer);
  BondListView bond_view(GpuBondTerm& t) {
    return {t.bi.data(), t.bj.data(), t.btype.data(), static_cast<int>(t.bonds.size()), particles_.rank()};
  }
  BondedListView bonded_view(GpuBondedTerm& t) { return {t.atoms.data(), t.type.data(), t.count, particles_.rank()}; }
  ScaledPairView scaled_view(GpuScaledPairs& s) {
    return {s.i.data(), s.j.data(), s.weight.data(), s.count, particles_.rank()};
  }
  StepControl* ctrl() { return &state_.data()->ctrl; }
  unsigned* tickets() { return tickets_.data(); }
  DeviceFlags* flags() { return &state_.data()->flags; }
  // The box in device memory: what every kernel reads (kernels/box_update.cuh).
  DeviceBox* device_box() { return &state_.data()->box; }

  // Phase timing for profiling mode: events around each phase, read back in batches, so the
  // host does not wait between phases. Profiling launches kernels one by one (no graphs).
  void phase_begin();
  void phase_end(double& seconds);
  int take_event();
  void resolve_phases();
  struct PhaseMark {
    double* seconds;
    int start, stop;
  };

  Model model_;
  Strategy strategy_;
  int systems_ = 1;
  int system_size_ = 0;                      // particles per system
  std::vector<SystemParams> system_params_;  // per system: k_B T (m v^2 units) and seed
  DeviceBuffer<SystemParams> device_params_;
  DeviceBuffer<double> velocity_factors_;  // per system, for change_system_temperatures
  cudaStream_t stream_ = nullptr;
  int n_ = 0;
  SystemState host_;
  BoxGeometry<float> box_{};  // the box as the host last read it (the cell grid's size)
  StepConstants<float> c_{};
  float half_skin_sq_ = 0.f;
  double grid_width_ = 1.0;  // the cell grid's smallest cell width (neighbor/cell_runs.h, shared_cell_width)
  DeviceParticles particles_;
  GpuCellOrder cells_;
  std::vector<std::unique_ptr<GpuPairTerm>> pair_terms_;
  std::vector<std::unique_ptr<GpuBondTerm>> bond_terms_;
  std::vector<std::unique_ptr<GpuBondedTerm>> bonded_terms_;
  std::vector<std::unique_ptr<GpuScaledPairs>> scaled_pairs_;
  std::unique_ptr<PmeGpu> pme_;                   // particle-mesh Ewald (null without electrostatics)
  std::unique_ptr<GpuScaledPairs> pme_excluded_;  // its pairs whose mesh part is taken out (or null)
  DeviceBuffer<FixedVec> extra_force_;
  DeviceBuffer<ChunkState> state_;
  DeviceBuffer<unsigned> tickets_;        // the integrate kernels' first-level block tickets
  ChunkState* host_state_ = nullptr;      // read-back slots, one per chunk in flight: pinned host
                                          // memory mapped for the device (written by a kernel)
  std::vector<LaunchedChunk> in_flight_;  // oldest first
  int64_t queued_ = 0;                    // steps asked for and not yet launched
  unsigned steps_seen_ = 0;               // the control block's running step count, last read
  cudaEvent_t chunk_done_[kChunksInFlight] = {};
  PullParams<float> pull_{};        // the pulling's external forces (mode None: off)
  DeviceBuffer<float4> force_out_;  // forces() with the pulling added, when the run pulls
  DeviceBuffer<long long> energy_;
  DeviceBuffer<double> parts_, sums_;
  // The barostat (model_.barostat): its stage's settings, the sums of the pressure's parts and
  // the particle update's ticket (kernels/box_update.cuh).
  bool barostat_ = false;
  BoxStage stage_{};
  DeviceBuffer<unsigned long long> box_sums_;
  DeviceBuffer<unsigned> rescale_ticket_;
  StepGraphs graphs_;
  WorkKey chunk_key_;        // the key of the chunk being launched (kept to reuse its memory)
  StepGraphs build_graphs_;  // list builds, by starting position buffer
  WorkKey build_seen_[2];    // the key of the last build from each position buffer
  bool use_graphs_ = true;
  int stride_blocks_ = 1;        // grid of the grid-stride kernels: a few blocks per multiprocessor
  int all_pairs_lanes_ = 4;      // all_pairs: threads per particle (all_pairs_lanes())
  int fused_wave_blocks_ = 1;    // integrate_slots_kernel blocks the GPU holds at once
  int64_t decide_launches_ = 0;  // decide_step_kernel launches enqueued (captured ones once)
  // pair_slots_fused with more blocks than that: the step is decided by a kernel after it.
  bool decide_after_summation() const { return slot_blocks(n_) > fused_wave_blocks_; }
  int64_t halted_steps_ = 0;     // launched in chunks after a halt (they returned at once)
  double seconds_chunks_ = 0;    // host time launching chunks and waiting for them
  double seconds_rebuilds_ = 0;  // host time in list builds and the forces after them
  bool pending_finish_ = false;  // mirrors ctrl.pending
  double rebuild_interval_ = 4;  // steps between list builds, smoothed
  int64_t steps_since_build_ = 0;
  int64_t chunks_ = 0;
  std::vector<cudaEvent_t> events_;
  size_t next_event_ = 0;
  int open_phase_ = -1;
  std::vector<PhaseMark> pending_phases_;
  bool profile_ = false;
  BackendStats stats_;
};

// Defined with the step loop (cuda_backend.cu): sums of per-block parts (kinetic energy, momentum).
__global__ void sum_block_parts(const double* parts, int nparts, int stride, int nout, double* out);

// Start-up tuning (backends/tuning.h; kernels/cuda_factory.cu): times `make`'s backends of the
// model's candidate strategies and skins (none where the config names both), prints the report,
// and returns the choice (with_tuned_settings, backends/tuning.h, writes it into a model).
// `system_size` particles in each of `systems` systems (all_pairs is a candidate for small ones).
TuneResult tune_cuda_settings(const Model& model, const Box& box, int system_size, int systems,
                              const std::function<std::unique_ptr<CudaBackend>(const Model&, Strategy)>& make);

}  // namespace pairmd
