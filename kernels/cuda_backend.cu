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
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/backend.h"
#include "backends/strategies.h"
#include "cuda/cuda_check.h"
#include "cuda/device_query.h"
#include "cuda/device_buffer.h"
#include "kernels/device_particles.cuh"
#include "kernels/force_kernels.cuh"
#include "kernels/integrate_kernel.cuh"
#include "kernels/step_graphs.cuh"
#include "neighbor/gpu_cell_order.cuh"
#include "neighbor/gpu_pair_list.cuh"
#include "potentials/param_table.h"

namespace pairmd {

__global__ void sum_block_parts(const double* parts, int nparts, int stride, int nout, double* out) {
  // One block per output: thread t adds parts t, t + blockDim, ... in order, then a block
  // reduction with a fixed tree. The order depends on nothing but nparts: deterministic.
  const int k = blockIdx.x;
  if (k >= nout) return;  // the whole block
  double s = 0.0;
  for (int b = threadIdx.x; b < nparts; b += blockDim.x) s += parts[static_cast<size_t>(k) * stride + b];
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) out[k] = s;
}

namespace {

// The strategies and their properties: backends/strategies.h.
Strategy parse_strategy(const std::string& s) {
  if (const StrategyInfo* i = find_strategy(s)) return i->id;
  throw std::runtime_error("unknown force strategy '" + s + "'");
}

bool uses_slots(Strategy s) { return strategy_info(s).slots; }

// The control block and the flags travel together, so one copy brings both to the host.
struct ChunkState {
  StepControl ctrl;
  DeviceFlags flags;
};

// The longest chunk, in steps: a longer one would only add halted steps when a rebuild comes.
constexpr int kMaxChunk = 32;

DeviceBuffer<unsigned char> upload_table(const ParamTable& t) {
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
  DeviceBuffer<float> slots;  // F/r of each pair (slot strategies)
};

// Bonds of one kind, static and indexed by tag: bond b joins tags bi[b] < bj[b], sorted by
// (bi, bj). Tag t's bonds as i are [row_start[t], + row_count[t]) (partner bj); as j they are
// listed in col_bond / col_partner; atom_gather reads both sides from g_*.
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

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Model& model, const SystemState& initial, Strategy strategy);
  ~CudaBackend() override;

  std::string name() const override { return std::string("cuda:") + strategy_name(strategy_); }
  void set_state(const SystemState& state) override;
  void get_state(SystemState& state) override;
  void advance(int64_t nsteps) override;
  Observables observables() override;
  std::vector<Vec3d> forces() override;
  BackendStats stats() const override;
  void set_profiling(bool on) override {
    if (!on) resolve_phases();
    profile_ = on;
  }

 private:
  void make_exclusions();
  void make_pair_terms(const SystemState& initial);
  void make_bond_terms();

  void rebuild_lists();
  void enqueue_forces(int buffer);
  void enqueue_integrate(int buffer, bool begin, bool write_force);
  void enqueue_steps(int steps, int parity);
  void run_chunk(int steps);
  int chunk_length(int64_t left) const;
  void read_chunk_state();
  void clear_halt();
  [[noreturn]] void throw_blowup(const DeviceFlags& f, int64_t step) const;
  void complete_step();
  std::vector<uintptr_t> step_signature();
  ParticleData particles(int buffer) { return {particles_.pos(buffer), particles_.charge(), n_, box_}; }
  SlotForce slot_source(int buffer);
  BondListView bond_view(GpuBondTerm& t) { return {t.bi.data(), t.bj.data(), t.btype.data(), static_cast<int>(t.bonds.size()), particles_.rank()}; }
  StepControl* ctrl() { return &state_.data()->ctrl; }
  DeviceFlags* flags() { return &state_.data()->flags; }

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
  cudaStream_t stream_ = nullptr;
  int n_ = 0;
  SystemState host_;
  BoxGeometry<float> box_{};
  StepConstants<float> c_{};
  float half_skin_sq_ = 0.f;
  double grid_width_ = 1.0;  // the cell grid's smallest cell width: the shortest list radius
  DeviceParticles particles_;
  GpuCellOrder cells_;
  DeviceBuffer<int> exclusions_;
  int exclusion_width_ = 0;
  std::vector<std::unique_ptr<GpuPairTerm>> pair_terms_;
  std::vector<std::unique_ptr<GpuBondTerm>> bond_terms_;
  DeviceBuffer<ChunkState> state_;
  ChunkState* host_state_ = nullptr;  // pinned
  DeviceBuffer<long long> energy_;
  DeviceBuffer<double> parts_, sums_;
  StepGraphs graphs_;
  bool use_graphs_ = true;
  int stride_blocks_ = 1;  // grid of the grid-stride kernels: a few blocks per multiprocessor
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

CudaBackend::CudaBackend(const Model& model, const SystemState& initial, Strategy strategy)
    : model_(model), strategy_(strategy) {
  PAIRMD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_state_, sizeof(ChunkState)));
  state_.resize(1);
  sums_.resize(8);
  // Graphs need launches that neither synchronise nor change between chunks.
  use_graphs_ = !sync_launches();
  int device = 0, sms = 1;
  PAIRMD_CUDA_CHECK(cudaGetDevice(&device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  stride_blocks_ = 8 * sms;


  n_ = static_cast<int>(initial.size());
  c_ = make_step_constants<float>(model_.integrator, model_.units.kB, model_.units.force_to_accel);
  const float skin = static_cast<float>(model_.neighbor.skin);
  half_skin_sq_ = 0.25f * skin * skin;
  make_exclusions();
  make_pair_terms(initial);
  make_bond_terms();
  set_state(initial);
}

// Exclusions as a fixed-width table by tag.
void CudaBackend::make_exclusions() {
  const auto excl = model_.topology.exclusions(n_, model_.force_field.exclusions);
  for (const auto& e : excl) exclusion_width_ = std::max(exclusion_width_, static_cast<int>(e.size()));
  if (exclusion_width_ > 0) {
    std::vector<int> table(static_cast<size_t>(n_) * exclusion_width_, -1);
    for (int i = 0; i < n_; ++i)
      for (size_t k = 0; k < excl[i].size(); ++k) table[static_cast<size_t>(i) * exclusion_width_ + k] = excl[i][k];
    exclusions_.upload(table);
  }
}

// A parameter table and a list per pair term (half lists with columns for the slots, full for
// atom_gather). One cell grid serves every term: cells as wide as the shortest list radius.
void CudaBackend::make_pair_terms(const SystemState& initial) {
  const ForceField& ff = model_.force_field;
  if (ff.pair_terms.size() > static_cast<size_t>(kMaxPairTerms))
    throw std::runtime_error("the CUDA backend supports at most " + std::to_string(kMaxPairTerms) + " pair terms");
  const double volume = initial.box.periodic ? initial.box.volume() : 0.0;
  const double density = volume > 0 ? n_ / volume : 1.0;
  const bool full = strategy_info(strategy_).full_list;
  grid_width_ = 0;
  for (const PairTerm& t : ff.pair_terms) {
    auto g = std::make_unique<GpuPairTerm>();
    g->kind = t.kind;
    g->ntypes = ff.ntypes;
    g->table = dispatch_pair<float>(t.kind, [&](auto eval) { return upload_table(make_pair_table<decltype(eval)>(t)); });
    const double rl = t.max_cutoff() + model_.neighbor.skin;
    const double per_particle = model_.neighbor.initial_capacity_per_particle > 0
                                    ? model_.neighbor.initial_capacity_per_particle
                                    : 1.3 * (4.0 / 3.0) * M_PI * rl * rl * rl * density * (full ? 1.0 : 0.5) + 8;
    g->list = std::make_unique<GpuPairList>(static_cast<float>(t.max_cutoff()), static_cast<float>(model_.neighbor.skin),
                                            full, uses_slots(strategy_), per_particle, n_);
    grid_width_ = grid_width_ > 0 ? std::min(grid_width_, rl) : rl;
    pair_terms_.push_back(std::move(g));
  }
  if (grid_width_ <= 0) grid_width_ = 1.0;
}

// Bond terms, one per bond kind in order of first appearance (as the CPU backend does).
void CudaBackend::make_bond_terms() {
  const ForceField& ff = model_.force_field;
  for (const Bond& b : model_.topology.bonds) {
    const BondKind kind = ff.bond_types.at(b.type).kind;
    GpuBondTerm* term = nullptr;
    for (auto& t : bond_terms_)
      if (t->kind == kind) term = t.get();
    if (!term) {
      bond_terms_.push_back(std::make_unique<GpuBondTerm>());
      term = bond_terms_.back().get();
      term->kind = kind;
      term->table = dispatch_bond<float>(kind, [&](auto eval) { return upload_table(make_bond_table<decltype(eval)>(ff)); });
    }
    term->bonds.push_back({std::min(b.i, b.j), std::max(b.i, b.j), b.type});
  }
  if (bond_terms_.size() > static_cast<size_t>(kMaxBondTerms))
    throw std::runtime_error("the CUDA backend supports at most " + std::to_string(kMaxBondTerms) + " bond kinds");
  for (auto& t : bond_terms_) {
    std::stable_sort(t->bonds.begin(), t->bonds.end(),
                     [](const Bond& a, const Bond& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; });
    const int nb = static_cast<int>(t->bonds.size());
    std::vector<unsigned> bi(nb), bj(nb);
    std::vector<int> bt(nb), rs(n_ + 1, 0), rc(n_, 0), cc(n_, 0), cs(n_ + 1, 0);
    for (int k = 0; k < nb; ++k) {
      bi[k] = static_cast<unsigned>(t->bonds[k].i);
      bj[k] = static_cast<unsigned>(t->bonds[k].j);
      bt[k] = t->bonds[k].type;
      ++rc[t->bonds[k].i];
      ++cc[t->bonds[k].j];
    }
    for (int i = 0; i < n_; ++i) {
      rs[i + 1] = rs[i] + rc[i];
      cs[i + 1] = cs[i] + cc[i];
    }
    std::vector<int> col_bond(nb), fill(cs.begin(), cs.end() - 1);
    std::vector<unsigned> col_partner(nb);
    for (int k = 0; k < nb; ++k) {
      const int e = fill[t->bonds[k].j]++;
      col_bond[e] = k;
      col_partner[e] = bi[k];
    }
    t->bi = upload_vector(bi);
    t->bj = upload_vector(bj);
    t->btype = upload_vector(bt);
    t->row_start = upload_vector(rs);
    t->row_count = upload_vector(rc);
    t->col_start = upload_vector(cs);
    t->col_count = upload_vector(cc);
    t->col_bond = upload_vector(col_bond);
    t->col_partner = upload_vector(col_partner);
    t->slots.resize(std::max(nb, 1));
    if (strategy_ == Strategy::Gather) {
      // Every bond listed under both partners, by tag.
      std::vector<std::vector<std::array<int, 3>>> rows(n_);
      for (int k = 0; k < nb; ++k) {
        const Bond& b = t->bonds[k];
        rows[b.i].push_back(std::array<int, 3>{b.j, b.type, k});
        rows[b.j].push_back(std::array<int, 3>{b.i, b.type, k});
      }
      std::vector<int> gs(n_ + 1, 0), gt, gi;
      std::vector<unsigned> gp;
      for (int i = 0; i < n_; ++i) {
        std::sort(rows[i].begin(), rows[i].end());
        for (const auto& r : rows[i]) {
          gp.push_back(static_cast<unsigned>(r[0]));
          gt.push_back(r[1]);
          gi.push_back(r[2]);
        }
        gs[i + 1] = static_cast<int>(gp.size());
      }
      t->g_start = upload_vector(gs);
      t->g_partner = upload_vector(gp);
      t->g_type = upload_vector(gt);
      t->g_index = upload_vector(gi);
    }
  }
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  graphs_.clear();
  cudaFreeHost(host_state_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  cudaStreamDestroy(stream_);
}

void CudaBackend::set_state(const SystemState& s) {
  host_ = s;
  n_ = static_cast<int>(s.size());
  box_.lo = {static_cast<float>(s.box.lo.x), static_cast<float>(s.box.lo.y), static_cast<float>(s.box.lo.z)};
  box_.L = {static_cast<float>(s.box.L.x), static_cast<float>(s.box.L.y), static_cast<float>(s.box.L.z)};
  box_.periodic = s.box.periodic;
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  particles_.upload(s);
  ChunkState init{};
  init.ctrl.step = static_cast<unsigned long long>(s.step);
  PAIRMD_CUDA_CHECK(cudaMemcpy(state_.data(), &init, sizeof init, cudaMemcpyHostToDevice));
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());  // the uploads above ran on the default stream
  pending_finish_ = false;
  steps_since_build_ = 0;
  rebuild_lists();
  enqueue_forces(particles_.current());
  read_chunk_state();
  // A huge force is reported by the first step (every strategy alike); a broken bond now.
  const DeviceFlags f = host_state_->flags;
  if (f.broken_bond != 0) throw_blowup(f, s.step);
}

int CudaBackend::take_event() {
  if (next_event_ == events_.size()) {
    cudaEvent_t e;
    PAIRMD_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return static_cast<int>(next_event_++);
}

void CudaBackend::phase_begin() {
  if (!profile_) return;
  if (open_phase_ >= 0) throw std::logic_error("CudaBackend: timing phases must not nest");
  open_phase_ = take_event();
  PAIRMD_CUDA_CHECK(cudaEventRecord(events_[open_phase_], stream_));
}

void CudaBackend::phase_end(double& seconds) {
  if (!profile_ || open_phase_ < 0) return;
  const int stop = take_event();
  PAIRMD_CUDA_CHECK(cudaEventRecord(events_[stop], stream_));
  pending_phases_.push_back({&seconds, open_phase_, stop});
  open_phase_ = -1;
  if (next_event_ >= 4096) resolve_phases();
}

void CudaBackend::resolve_phases() {
  if (!pending_phases_.empty()) {
    PAIRMD_CUDA_CHECK(cudaEventSynchronize(events_[pending_phases_.back().stop]));
    for (const PhaseMark& m : pending_phases_) {
      float ms = 0.f;
      PAIRMD_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[m.start], events_[m.stop]));
      *m.seconds += 1e-3 * ms;
    }
    pending_phases_.clear();
  }
  next_event_ = 0;
  open_phase_ = -1;
}

// Sort the particles into cells, renumber them in that order, and search every term's list.
// The forces do not depend on the numbering (fixed-point sums), only the speed does.
void CudaBackend::rebuild_lists() {
  phase_begin();
  cells_.build(particles_.pos(), n_, box_, grid_width_, stream_);
  particles_.renumber(cells_.order(), stream_);
  const CellGridView grid = cells_.view();
  const PairListInput in{particles_.pos(), particles_.tag(), n_, box_, exclusion_width_ ? exclusions_.data() : nullptr,
                         exclusion_width_};
  for (auto& t : pair_terms_) {
    const int64_t growths = t->list->growths();
    t->list->build(in, grid, stream_);
    stats_.list_capacity_growths += t->list->growths() - growths;
    if (uses_slots(strategy_)) t->slots.resize(t->list->capacity());
  }
  ++stats_.list_builds;
  phase_end(stats_.seconds_list);
}

SlotForce CudaBackend::slot_source(int buffer) {
  SlotForce s{};
  for (auto& t : pair_terms_) {
    const GpuPairList& l = *t->list;
    s.pairs[s.npairs++] = {t->slots.data(), l.j(), l.row_start(), l.row_count(), l.col_start(), l.col_count(), l.cols()};
  }
  for (auto& t : bond_terms_)
    s.bonds[s.nbonds++] = {t->slots.data(),     t->row_start.data(), t->row_count.data(), t->bj.data(),
                           t->col_start.data(), t->col_count.data(), t->col_bond.data(),  t->col_partner.data()};
  s.pos = particles_.pos(buffer);
  s.tag = particles_.tag();
  s.rank = particles_.rank();
  s.box = box_;
  return s;
}

// F(x) of the positions in `buffer`, for the strategy: slots (and, unfused, their sum), float
// atomics, or the atom-parallel gather.
void CudaBackend::enqueue_forces(int buffer) {
  if (n_ == 0) return;
  phase_begin();
  const ParticleData pd = particles(buffer);
  StepControl* ctl = ctrl();
  int* broken = &flags()->broken_bond;
  switch (strategy_) {
    case Strategy::SlotsFused:
    case Strategy::Slots: {
      for (auto& t : pair_terms_) {
        const PairListView lv{t->list->i(), t->list->j(), t->list->device_count()};
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          slots_pair_kernel<Eval><<<std::min(blocks_for(t->list->capacity()), stride_blocks_), kBlockSize, 0, stream_>>>(
              lv, pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->ntypes, t->slots.data(), ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          slots_bond_kernel<Eval><<<blocks_for(t->bonds.size()), kBlockSize, 0, stream_>>>(
              bond_view(*t), pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->slots.data(), broken,
              ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      if (strategy_ == Strategy::Slots) {
        sum_slots_kernel<<<slot_blocks(n_), kSumBlock, 0, stream_>>>(slot_source(buffer), n_, particles_.force(), flags(), ctl);
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
    case Strategy::Atomic:
    case Strategy::Warp: {
      PAIRMD_CUDA_CHECK(cudaMemsetAsync(particles_.force(), 0, n_ * sizeof(float4), stream_));
      for (auto& t : pair_terms_) {
        const PairListView lv{t->list->i(), t->list->j(), t->list->device_count()};
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
          if (strategy_ == Strategy::Atomic)
            atomic_pair_kernel<Eval><<<blocks_for(t->list->capacity()), kBlockSize, 0, stream_>>>(
                lv, pd, table, t->ntypes, particles_.force(), ctl);
          else
            warp_pair_kernel<Eval><<<blocks_for(t->list->capacity()), kBlockSize, 0, stream_>>>(
                lv, pd, table, t->ntypes, particles_.force(), ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          atomic_bond_kernel<Eval><<<blocks_for(t->bonds.size()), kBlockSize, 0, stream_>>>(
              bond_view(*t), pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), particles_.force(), broken,
              ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
    case Strategy::Gather: {
      if (pair_terms_.empty()) PAIRMD_CUDA_CHECK(cudaMemsetAsync(particles_.fixed_force(), 0, n_ * sizeof(FixedVec), stream_));
      for (size_t k = 0; k < pair_terms_.size(); ++k) {
        auto& t = pair_terms_[k];
        const GpuPairList& l = *t->list;
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
          if (k == 0)
            gather_pair_kernel<Eval, false><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
                l.row_start(), l.row_count(), l.j(), pd, table, t->ntypes, particles_.fixed_force(), particles_.tag(),
                flags(), ctl);
          else
            gather_pair_kernel<Eval, true><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
                l.row_start(), l.row_count(), l.j(), pd, table, t->ntypes, particles_.fixed_force(), particles_.tag(),
                flags(), ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          gather_bond_kernel<Eval><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
              t->g_start.data(), t->g_partner.data(), t->g_type.data(), t->g_index.data(), particles_.tag(),
              particles_.rank(), pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()),
              particles_.fixed_force(), broken, flags(), ctl);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
  }
  phase_end(stats_.seconds_force);
}

// The integrate kernel on the positions in `buffer` (x_n); with `begin`, x_{n+1} goes to the
// other buffer.
void CudaBackend::enqueue_integrate(int buffer, bool begin, bool write_force) {
  if (n_ == 0) return;
  phase_begin();
  IntegrateArgs a{};
  a.pos_in = particles_.pos(buffer);
  a.pos_out = particles_.pos(buffer ^ 1);
  a.vel = particles_.vel();
  a.image = particles_.image();
  a.tag = particles_.tag();
  a.pos_at_build = particles_.pos_at_build();
  a.force_out = nullptr;
  a.n = n_;
  a.c = c_;
  a.box = box_;
  a.kind = model_.integrator.kind;
  a.begin = begin;
  const float lim = static_cast<float>(model_.max_step_displacement);
  a.max_move_sq = lim * lim;
  a.half_skin_sq = half_skin_sq_;
  a.flags = flags();
  a.ctrl = ctrl();
  switch (strategy_) {
    case Strategy::SlotsFused:
      // The summation of the slots happens inside the integrate kernel.
      if (write_force) a.force_out = particles_.force();
      integrate_slots_kernel<<<slot_blocks(n_), kSumBlock, 0, stream_>>>(a, slot_source(buffer));
      break;
    case Strategy::Gather:
      integrate_kernel<FixedArrayForce><<<blocks_for(n_), kBlockSize, 0, stream_>>>(a, FixedArrayForce{particles_.fixed_force()});
      break;
    default:
      integrate_kernel<ArrayForce><<<blocks_for(n_), kBlockSize, 0, stream_>>>(a, ArrayForce{particles_.force()});
  }
  PAIRMD_CHECK_LAUNCH();
  phase_end(stats_.seconds_integrate);
}

// A chunk: clear the halt and the step count, then `steps` times integrate and forces, the
// positions alternating between the two buffers from `parity` on.
void CudaBackend::enqueue_steps(int steps, int parity) {
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(&ctrl()->halt, 0, 2 * sizeof(int), stream_));  // halt, steps_done
  static_assert(offsetof(StepControl, steps_done) == offsetof(StepControl, halt) + sizeof(int), "halt, steps_done adjacent");
  for (int s = 0; s < steps; ++s) {
    const int buffer = parity ^ (s & 1);
    enqueue_integrate(buffer, true, false);
    enqueue_forces(buffer ^ 1);
  }
}

// Every pointer and launch size a chunk's kernels use: a captured graph stays valid while this
// does not change.
std::vector<uintptr_t> CudaBackend::step_signature() {
  std::vector<uintptr_t> s = {reinterpret_cast<uintptr_t>(particles_.pos(0)), reinterpret_cast<uintptr_t>(particles_.pos(1)),
                              reinterpret_cast<uintptr_t>(particles_.vel()), reinterpret_cast<uintptr_t>(particles_.image()),
                              reinterpret_cast<uintptr_t>(particles_.tag()), reinterpret_cast<uintptr_t>(particles_.rank()),
                              reinterpret_cast<uintptr_t>(particles_.force()),
                              reinterpret_cast<uintptr_t>(particles_.fixed_force()),
                              reinterpret_cast<uintptr_t>(particles_.pos_at_build()), static_cast<uintptr_t>(n_)};
  for (auto& t : pair_terms_) {
    const GpuPairList& l = *t->list;
    for (const void* p : {static_cast<const void*>(l.i()), static_cast<const void*>(l.j()),
                          static_cast<const void*>(l.row_start()), static_cast<const void*>(l.row_count()),
                          static_cast<const void*>(l.col_start()), static_cast<const void*>(l.col_count()),
                          static_cast<const void*>(l.cols()), static_cast<const void*>(t->slots.data())})
      s.push_back(reinterpret_cast<uintptr_t>(p));
    s.push_back(static_cast<uintptr_t>(l.capacity()));
  }
  return s;
}

void CudaBackend::read_chunk_state() {
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_state_, state_.data(), sizeof(ChunkState), cudaMemcpyDeviceToHost, stream_));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::clear_halt() { PAIRMD_CUDA_CHECK(cudaMemsetAsync(&ctrl()->halt, 0, sizeof(int), stream_)); }

void CudaBackend::run_chunk(int steps) {
  const int parity = particles_.current();
  if (use_graphs_ && !profile_) {
    graphs_.launch(steps, parity, step_signature(), stream_, [&](int k, int p) { enqueue_steps(k, p); });
  } else {
    enqueue_steps(steps, parity);
  }
  ++chunks_;
  read_chunk_state();
}

// Steps for the next chunk: up to the rebuild the observed interval predicts, and a little
// past it (a halted step costs a few microseconds, a chunk that ends too early a host round trip).
int CudaBackend::chunk_length(int64_t left) const {
  const double predicted = rebuild_interval_ - static_cast<double>(steps_since_build_);
  const int k = std::max(2, static_cast<int>(std::ceil(predicted)) + 1);
  return static_cast<int>(std::min<int64_t>({left, static_cast<int64_t>(k), kMaxChunk}));
}

void CudaBackend::throw_blowup(const DeviceFlags& f, int64_t step) const {
  std::ostringstream m;
  if (f.broken_bond != 0) {
    m << "step " << step << ": a bond stretched beyond its maximum extension (bond #" << reported_index(f.broken_bond)
      << " of its kind); is the time step too large, or do particles overlap in the start configuration?";
  } else if (f.bad_force != 0) {
    m << "step " << step << ": the force on particle " << reported_index(f.bad_force) << " is not finite or larger than "
      << kMaxFixedForce << " in a single pair; do particles overlap in the start configuration?";
  } else {
    m << "step " << step + 1 << ": particle " << reported_index(f.bad_particle)
      << " moved farther than max_step_displacement = " << model_.max_step_displacement
      << " in one step or is no longer finite. Is the time step too large, or do particles overlap in the start "
         "configuration?";
  }
  throw SimulationBlowup(m.str());
}

void CudaBackend::advance(int64_t nsteps) {
  const auto t0 = std::chrono::steady_clock::now();
  if (n_ == 0) {
    host_.step += nsteps;
    return;
  }
  int64_t left = nsteps;
  while (left > 0) {
    const int k = chunk_length(left);
    const auto c0 = std::chrono::steady_clock::now();
    run_chunk(k);
    const auto c1 = std::chrono::steady_clock::now();
    seconds_chunks_ += std::chrono::duration<double>(c1 - c0).count();
    const StepControl c = host_state_->ctrl;
    if (c.halt != kRunning) halted_steps_ += k - c.steps_done;
    left -= c.steps_done;
    host_.step += c.steps_done;
    steps_since_build_ += c.steps_done;
    if (c.steps_done & 1) particles_.flip();
    if (c.steps_done > 0) pending_finish_ = true;
    if (c.halt == kHaltBlowup) throw_blowup(host_state_->flags, static_cast<int64_t>(c.step));
    if (c.halt == kHaltRebuild) {
      clear_halt();
      rebuild_interval_ = 0.7 * rebuild_interval_ + 0.3 * static_cast<double>(steps_since_build_);
      steps_since_build_ = 0;
      rebuild_lists();
      enqueue_forces(particles_.current());
      seconds_rebuilds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - c1).count();
    }
  }
  resolve_phases();
  stats_.steps += nsteps;
  stats_.seconds_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CudaBackend::complete_step() {
  if (!pending_finish_) return;
  enqueue_integrate(particles_.current(), false, true);
  pending_finish_ = false;
}

void CudaBackend::get_state(SystemState& s) {
  complete_step();
  s = host_;
  particles_.download(s, stream_);
}

std::vector<Vec3d> CudaBackend::forces() {
  const int cur = particles_.current();
  if (uses_slots(strategy_)) {
    sum_slots_kernel<<<slot_blocks(n_), kSumBlock, 0, stream_>>>(slot_source(cur), n_, particles_.force(), flags(), ctrl());
    PAIRMD_CHECK_LAUNCH();
  } else if (strategy_ == Strategy::Gather) {
    fixed_to_float_kernel<<<blocks_for(n_), kBlockSize, 0, stream_>>>(particles_.fixed_force(), n_, particles_.force());
    PAIRMD_CHECK_LAUNCH();
  }
  const std::vector<float4> f = particles_.in_user_order(particles_.force(), stream_);
  std::vector<Vec3d> out(n_);
  for (int i = 0; i < n_; ++i) out[i] = {f[i].x, f[i].y, f[i].z};
  return out;
}

Observables CudaBackend::observables() {
  complete_step();
  Observables o;
  o.step = host_.step;
  const size_t nterms = pair_terms_.size() + bond_terms_.size();
  if (n_ == 0) {
    o.potential_by_term.assign(nterms, 0.0);
    return o;
  }
  const ParticleData pd = particles(particles_.current());
  energy_.resize(kEnergyWords * std::max<size_t>(nterms, 1));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(energy_.data(), 0, energy_.size() * sizeof(long long), stream_));
  for (size_t k = 0; k < pair_terms_.size(); ++k) {
    auto& t = pair_terms_[k];
    const PairListView lv{t->list->i(), t->list->j(), t->list->device_count()};
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      pair_energy_kernel<Eval><<<blocks_for(t->list->capacity()), kBlockSize, 0, stream_>>>(
          lv, pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->ntypes,
          t->list->full() ? 0.5f : 1.0f, energy_.data() + kEnergyWords * k);
    });
    PAIRMD_CHECK_LAUNCH();
  }
  for (size_t k = 0; k < bond_terms_.size(); ++k) {
    auto& t = bond_terms_[k];
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      bond_energy_kernel<Eval><<<blocks_for(t->bonds.size()), kBlockSize, 0, stream_>>>(
          bond_view(*t), pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()),
          energy_.data() + kEnergyWords * (pair_terms_.size() + k));
    });
    PAIRMD_CHECK_LAUNCH();
  }
  const int blocks = blocks_for(n_);
  parts_.reserve_grow(4 * static_cast<size_t>(blocks));
  kinetic_kernel<<<blocks, kBlockSize, 0, stream_>>>(particles_.vel(), particles_.rank(), n_, parts_.data());
  PAIRMD_CHECK_LAUNCH();
  sum_block_parts<<<4, kBlockSize, 0, stream_>>>(parts_.data(), blocks, blocks, 4, sums_.data());
  PAIRMD_CHECK_LAUNCH();
  std::vector<long long> e(energy_.size());
  double kin[4];
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(e.data(), energy_.data(), e.size() * sizeof(long long), cudaMemcpyDeviceToHost, stream_));
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(kin, sums_.data(), sizeof kin, cudaMemcpyDeviceToHost, stream_));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (size_t k = 0; k < nterms; ++k) {
    const long long* w = e.data() + kEnergyWords * k;
    const SplitSum energy{w[0], w[1], w[4]}, virial{w[2], w[3], w[4]};
    o.potential_by_term.push_back(energy.value());
    o.potential += energy.value();
    o.virial += virial.value();
  }
  o.kinetic = kin[0] / model_.units.force_to_accel;
  for (int d = 0; d < 3; ++d) o.momentum[d] = kin[1 + d];
  return o;
}

BackendStats CudaBackend::stats() const {
  BackendStats s = stats_;
  s.device_bytes = device_bytes_in_use();
  std::ostringstream d;
  d << "strategy " << strategy_name(strategy_);
  for (const auto& t : pair_terms_) d << ", " << pair_kind_name(t->kind) << " list " << t->list->count() << " pairs";
  if (stats_.steps > 0 && chunks_ > 0)
    d << ", " << std::fixed << std::setprecision(1) << static_cast<double>(stats_.steps) / chunks_ << " steps per "
      << (use_graphs_ ? "graph launch" : "host sync") << " (" << graphs_.captures() << " graphs captured, "
      << halted_steps_ << " halted steps launched; host " << std::setprecision(1) << 1e6 * seconds_chunks_ / stats_.steps
      << " us/step in chunks, " << 1e6 * seconds_rebuilds_ / stats_.steps << " in list builds)";
  d << ", GPU memory " << std::fixed << std::setprecision(1) << s.device_bytes / 1048576.0 << " MiB";
  if (stats_.list_capacity_growths) d << ", list grew " << stats_.list_capacity_growths << "x";
  s.detail = d.str();
  return s;
}

}  // namespace

bool cuda_device_present(std::string* reason) { return probe_cuda_device(reason); }

bool cuda_device_free_memory(double* free_bytes, double* total_bytes) {
  return probe_cuda_free_memory(free_bytes, total_bytes);
}

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial) {
  if (model.strategy != kAutoStrategy) return std::make_unique<CudaBackend>(model, initial, parse_strategy(model.strategy));
  // auto: time each deterministic strategy for a few steps on this very system and keep the
  // fastest; the chosen backend starts again from the initial state.
  std::ostringstream log;
  Strategy best = kDefaultStrategy;
  double best_ms = 1e300;
  for (const StrategyInfo& info : kStrategies) {
    if (!info.deterministic) continue;
    const Strategy s = info.id;
    CudaBackend b(model, initial, s);
    b.advance(10);  // warm-up, including list builds
    const auto t0 = std::chrono::steady_clock::now();
    b.advance(50);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 50;
    log << " " << strategy_name(s) << " " << std::setprecision(4) << ms << " ms/step;";
    if (ms < best_ms) {
      best_ms = ms;
      best = s;
    }
  }
  std::cout << "force.strategy auto: chose " << strategy_name(best) << " (timed 50 steps each:" << log.str() << ")\n";
  return std::make_unique<CudaBackend>(model, initial, best);
}

}  // namespace pairmd
