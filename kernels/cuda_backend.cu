// The CUDA backend: the whole timestep loop on the GPU. Particles stay on the device in
// structure-of-arrays form (position + type and velocity + mass as float4); forces are fp32,
// energy and virial sums fp64. The host only decides when to rebuild the pair lists (one small
// flag read per step) and copies data back for output.
//
// Per step, in stream order:
//   integrate    finish step n with F(x_n), begin step n + 1 (force summation fused into it
//                for pair_slots_fused); report the largest displacement since the list build
//   flags        copied to pinned host memory
//   forces       F(x_{n+1}) with the current lists, launched before the host has read the
//                flags (speculative: the GPU stays busy while the host decides)
//   [rebuild]    if some particle moved more than skin/2: rebuild the lists, forces again
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <climits>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/backend.h"
#include "integrators/gpu_integrate.cuh"
#include "kernels/cuda_check.h"
#include "kernels/device_buffer.h"
#include "kernels/force_kernels.cuh"
#include "kernels/slot_layout.cuh"
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

enum class Strategy { SlotsFused, Slots, Atomic, Warp, Gather };

Strategy parse_strategy(const std::string& s) {
  if (s == "pair_slots_fused") return Strategy::SlotsFused;
  if (s == "pair_slots") return Strategy::Slots;
  if (s == "pair_atomic") return Strategy::Atomic;
  if (s == "pair_warp") return Strategy::Warp;
  if (s == "atom_gather") return Strategy::Gather;
  throw std::runtime_error("unknown force strategy '" + s + "'");
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::SlotsFused: return "pair_slots_fused";
    case Strategy::Slots: return "pair_slots";
    case Strategy::Atomic: return "pair_atomic";
    case Strategy::Warp: return "pair_warp";
    case Strategy::Gather: return "atom_gather";
  }
  return "?";
}

bool uses_slots(Strategy s) { return s == Strategy::SlotsFused || s == Strategy::Slots; }

// The pair-list search stencil. A development switch until the half shell has been measured
// on a GPU (docs/gpu.md): PAIRMD_GPU_STENCIL=half_shell, or full (the default).
CellStencil requested_stencil() {
  const char* v = std::getenv("PAIRMD_GPU_STENCIL");
  if (!v || !*v || std::string(v) == "full") return CellStencil::Full;
  if (std::string(v) == "half_shell") return CellStencil::HalfShell;
  throw std::runtime_error(std::string("PAIRMD_GPU_STENCIL: '") + v + "' is not a stencil; expected full or half_shell");
}

// Backends holding the persisting-L2 set-aside, which is per device context (process-wide).
int l2_set_aside_users = 0;

// Keep the slots resident in L2 between the pair kernel that writes them and the summation
// that reads them (an access-policy window on the stream). A development switch until measured
// on a GPU (docs/gpu.md): PAIRMD_GPU_L2_SLOTS=1, or 0 (the default).
bool l2_slots_requested() {
  const char* v = std::getenv("PAIRMD_GPU_L2_SLOTS");
  if (!v || !*v || std::string(v) == "0") return false;
  if (std::string(v) == "1") return true;
  throw std::runtime_error(std::string("PAIRMD_GPU_L2_SLOTS: '") + v + "' is not 0 or 1");
}

template <typename T>
DeviceBuffer<unsigned char> upload_table(const ParamTable& t) {
  DeviceBuffer<unsigned char> d(std::max<size_t>(t.bytes(), 1));
  if (t.bytes()) PAIRMD_CUDA_CHECK(cudaMemcpy(d.data(), t.data(), t.bytes(), cudaMemcpyHostToDevice));
  return d;
}

struct GpuPairTerm {
  PairKind kind;
  int ntypes;
  DeviceBuffer<unsigned char> table;
  std::unique_ptr<GpuPairList> list;
  SlotLayout slots;
};

struct GpuBondTerm {
  BondKind kind;
  std::vector<Bond> bonds;  // i < j, sorted by (i, j)
  DeviceBuffer<unsigned char> table;
  DeviceBuffer<int> bi, bj, btype, row_start, row_count;
  SlotLayout slots;
  // Atom-parallel form: every bond listed under both partners.
  DeviceBuffer<int> g_start, g_partner, g_type, g_index;
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
  void rebuild_lists();
  void keep_slots_in_l2();
  void compute_forces();
  void integrate(bool finish, bool begin, bool write_force);
  void complete_step();
  void read_flags_and_check(int64_t force_step);
  ParticleData particles() const { return {pos_.data(), charge_.data(), n_, box_}; }
  SlotForce slot_source() const;

  // Phase timing for profiling mode: events around each phase, read back in batches, so the
  // host does not wait between phases. A phase's time runs from its first to its last GPU
  // operation; for list builds it includes the GPU's idle time while the host reads the pair
  // count back and grows buffers.
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
  DeviceBuffer<float4> pos_, vel_, pos_build_, force_;
  DeviceBuffer<int3> image_;
  DeviceBuffer<float> charge_;
  DeviceBuffer<unsigned> tag_;
  DeviceBuffer<int> exclusions_;
  int exclusion_width_ = 0;
  std::vector<std::unique_ptr<GpuPairTerm>> pair_terms_;
  std::vector<std::unique_ptr<GpuBondTerm>> bond_terms_;
  DeviceBuffer<DeviceFlags> flags_;
  DeviceFlags* host_flags_ = nullptr;
  cudaEvent_t flags_ready_ = nullptr;
  std::vector<cudaEvent_t> events_;
  size_t next_event_ = 0;
  int open_phase_ = -1;
  std::vector<PhaseMark> pending_phases_;
  DeviceBuffer<double> parts_, sums_;
  bool pending_finish_ = false;
  bool profile_ = false;
  bool l2_slots_ = false;         // PAIRMD_GPU_L2_SLOTS
  size_t l2_persisting_ = 0;      // bytes of L2 set aside for persisting lines (0: none)
  const void* l2_window_ = nullptr;  // the window in place: base and size
  size_t l2_window_bytes_ = 0;
  size_t l2_max_window_ = 0;      // the device's largest access-policy window
  std::string l2_note_;           // why the window could not be set, if it could not
  BackendStats stats_;
};

CudaBackend::CudaBackend(const Model& model, const SystemState& initial, Strategy strategy)
    : model_(model), strategy_(strategy) {
  // Development switches first: a bad value throws before anything is allocated.
  const CellStencil stencil = requested_stencil();
  l2_slots_ = l2_slots_requested();
  if (l2_slots_ && !uses_slots(strategy_)) {
    l2_slots_ = false;
    l2_note_ = "this strategy has no slots";
  }
  PAIRMD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_flags_, sizeof(DeviceFlags)));
  PAIRMD_CUDA_CHECK(cudaEventCreateWithFlags(&flags_ready_, cudaEventDisableTiming));
  flags_.resize(1);
  sums_.resize(64);

  n_ = static_cast<int>(initial.size());
  const ForceField& ff = model_.force_field;
  const Units& u = model_.units;
  c_ = make_step_constants<float>(model_.integrator, u.kB, u.force_to_accel);
  const float skin = static_cast<float>(model_.neighbor.skin);
  half_skin_sq_ = 0.25f * skin * skin;

  // Exclusions as a fixed-width table by tag.
  const auto excl = model_.topology.exclusions(n_, ff.exclusions);
  for (const auto& e : excl) exclusion_width_ = std::max(exclusion_width_, static_cast<int>(e.size()));
  if (exclusion_width_ > 0) {
    std::vector<int> table(static_cast<size_t>(n_) * exclusion_width_, -1);
    for (int i = 0; i < n_; ++i)
      for (size_t k = 0; k < excl[i].size(); ++k) table[static_cast<size_t>(i) * exclusion_width_ + k] = excl[i][k];
    exclusions_.upload(table);
  }

  // Pair terms: a parameter table and a list each (half lists; full for atom_gather).
  const double volume = initial.box.periodic ? initial.box.volume() : 0.0;
  for (const PairTerm& t : ff.pair_terms) {
    auto g = std::make_unique<GpuPairTerm>();
    g->kind = t.kind;
    g->ntypes = ff.ntypes;
    g->table = dispatch_pair<float>(t.kind, [&](auto eval) {
      return upload_table<float>(make_pair_table<decltype(eval)>(t));
    });
    const double rl = t.max_cutoff() + model_.neighbor.skin;
    const double density = volume > 0 ? n_ / volume : 1.0;
    const bool full = strategy_ == Strategy::Gather;
    double per_particle = model_.neighbor.initial_capacity_per_particle > 0
                              ? model_.neighbor.initial_capacity_per_particle
                              : 1.3 * (4.0 / 3.0) * M_PI * rl * rl * rl * density * (full ? 1.0 : 0.5) + 8;
    g->list = std::make_unique<GpuPairList>(static_cast<float>(t.max_cutoff()), skin, full,
                                            static_cast<size_t>(per_particle * std::max(n_, 1)), stencil);
    pair_terms_.push_back(std::move(g));
  }

  // Bond terms, one per bond kind in order of first appearance (as the CPU backend does).
  for (const Bond& b : model_.topology.bonds) {
    const BondKind kind = ff.bond_types.at(b.type).kind;
    GpuBondTerm* term = nullptr;
    for (auto& t : bond_terms_)
      if (t->kind == kind) term = t.get();
    if (!term) {
      bond_terms_.push_back(std::make_unique<GpuBondTerm>());
      term = bond_terms_.back().get();
      term->kind = kind;
      term->table = dispatch_bond<float>(kind, [&](auto eval) { return upload_table<float>(make_bond_table<decltype(eval)>(ff)); });
    }
    term->bonds.push_back({std::min(b.i, b.j), std::max(b.i, b.j), b.type});
  }
  for (auto& t : bond_terms_) {
    std::stable_sort(t->bonds.begin(), t->bonds.end(),
                     [](const Bond& a, const Bond& b) { return a.i != b.i ? a.i < b.i : a.j < b.j; });
    std::vector<int> bi, bj, bt, rs(n_ + 1, 0), rc(n_, 0);
    for (const Bond& b : t->bonds) {
      bi.push_back(b.i);
      bj.push_back(b.j);
      bt.push_back(b.type);
      ++rc[b.i];
    }
    for (int i = 0; i < n_; ++i) rs[i + 1] = rs[i] + rc[i];
    t->bi.upload(bi);
    t->bj.upload(bj);
    t->btype.upload(bt);
    t->row_start.upload(rs);
    t->row_count.upload(rc);
    if (uses_slots(strategy_))
      t->slots.build(t->bj.data(), t->row_start.data(), t->row_count.data(), static_cast<int>(bi.size()), n_,
                     stream_);
    if (strategy_ == Strategy::Gather) {
      std::vector<std::vector<std::array<int, 3>>> rows(n_);
      for (size_t k = 0; k < t->bonds.size(); ++k) {
        const Bond& b = t->bonds[k];
        rows[b.i].push_back(std::array<int, 3>{b.j, b.type, static_cast<int>(k)});
        rows[b.j].push_back(std::array<int, 3>{b.i, b.type, static_cast<int>(k)});
      }
      std::vector<int> gs(n_ + 1, 0), gp, gt, gi;
      for (int i = 0; i < n_; ++i) {
        std::sort(rows[i].begin(), rows[i].end());
        for (const auto& r : rows[i]) {
          gp.push_back(r[0]);
          gt.push_back(r[1]);
          gi.push_back(r[2]);
        }
        gs[i + 1] = static_cast<int>(gp.size());
      }
      t->g_start.upload(gs);
      t->g_partner.upload(gp);
      t->g_type.upload(gt);
      t->g_index.upload(gi);
    }
  }
  if (pair_terms_.size() + bond_terms_.size() > static_cast<size_t>(kMaxSlotViews))
    throw std::runtime_error("the CUDA backend supports at most " + std::to_string(kMaxSlotViews) + " force terms");
  set_state(initial);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  // The set-aside belongs to the device context, shared by every backend of the process: the
  // last backend using it gives it back, so later ones start clean.
  if (l2_persisting_ && --l2_set_aside_users == 0) {
    cudaCtxResetPersistingL2Cache();
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  }
  cudaFreeHost(host_flags_);
  cudaEventDestroy(flags_ready_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  cudaStreamDestroy(stream_);
}

void CudaBackend::set_state(const SystemState& s) {
  host_ = s;
  n_ = static_cast<int>(s.size());
  box_.lo = {static_cast<float>(s.box.lo.x), static_cast<float>(s.box.lo.y), static_cast<float>(s.box.lo.z)};
  box_.L = {static_cast<float>(s.box.L.x), static_cast<float>(s.box.L.y), static_cast<float>(s.box.L.z)};
  box_.periodic = s.box.periodic;
  std::vector<float4> pos(n_), vel(n_);
  std::vector<int3> img(n_);
  std::vector<float> q(n_);
  std::vector<unsigned> tag(n_);
  for (int i = 0; i < n_; ++i) {
    int type_bits;
    const int type = s.type[i];
    std::memcpy(&type_bits, &type, sizeof type);
    float type_float;
    std::memcpy(&type_float, &type_bits, sizeof type_float);
    pos[i] = make_float4(static_cast<float>(s.position[i].x), static_cast<float>(s.position[i].y),
                         static_cast<float>(s.position[i].z), type_float);
    vel[i] = make_float4(static_cast<float>(s.velocity[i].x), static_cast<float>(s.velocity[i].y),
                         static_cast<float>(s.velocity[i].z), static_cast<float>(s.mass[i]));
    img[i] = make_int3(s.image[i].x, s.image[i].y, s.image[i].z);
    q[i] = static_cast<float>(s.charge[i]);
    tag[i] = static_cast<unsigned>(i);
  }
  pos_.upload(pos);
  vel_.upload(vel);
  image_.upload(img);
  charge_.upload(q);
  tag_.upload(tag);
  pos_build_.resize(n_);
  force_.resize(n_);
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(force_.data(), 0, n_ * sizeof(float4), stream_));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(flags_.data(), 0, sizeof(DeviceFlags), stream_));
  pending_finish_ = false;
  rebuild_lists();
  compute_forces();
  read_flags_and_check(s.step);
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

void CudaBackend::rebuild_lists() {
  phase_begin();
  const PairListInput in{pos_.data(), tag_.data(), n_, box_, exclusion_width_ ? exclusions_.data() : nullptr, exclusion_width_};
  for (auto& t : pair_terms_) {
    const int64_t growths = t->list->growths();
    t->list->build(in, stream_);
    stats_.list_capacity_growths += t->list->growths() - growths;
    if (uses_slots(strategy_))
      t->slots.build(t->list->j(), t->list->row_start(), t->list->row_count(), t->list->count(), n_, stream_);
  }
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(pos_build_.data(), pos_.data(), n_ * sizeof(float4), cudaMemcpyDeviceToDevice, stream_));
  if (l2_slots_) keep_slots_in_l2();  // the slots may have moved (grown)
  ++stats_.list_builds;
  phase_end(stats_.seconds_list);
}

void CudaBackend::keep_slots_in_l2() {
  // The largest pair term's slots: the pair kernel writes them, the summation reads them back
  // (i side in order, j side gathered) in the next kernel. Kept in L2, the gathers cost an L2
  // sector each instead of a DRAM one. Where the device has no persisting L2, or the set-aside
  // cannot be changed (MPS, MIG), the run goes on without the window and says so.
  const GpuPairTerm* largest = nullptr;
  for (const auto& t : pair_terms_)
    if (!largest || t->slots.count() > largest->slots.count()) largest = t.get();
  if (!largest || largest->slots.count() == 0) return;
  if (!l2_persisting_) {  // first window: what the device allows, and the set-aside
    int device = 0, max_persisting = 0, max_window = 0;
    PAIRMD_CUDA_CHECK(cudaGetDevice(&device));
    PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, device));
    PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device));
    if (max_persisting <= 0 || max_window <= 0) {
      l2_slots_ = false;
      l2_note_ = "no persisting L2 on this device";
      return;
    }
    l2_max_window_ = static_cast<size_t>(max_window);
    const cudaError_t err = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_persisting));
    if (err != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it so later checks do not report it
      l2_slots_ = false;
      l2_note_ = std::string("the L2 set-aside could not be changed: ") + cudaGetErrorString(err);
      return;
    }
    PAIRMD_CUDA_CHECK(cudaDeviceGetLimit(&l2_persisting_, cudaLimitPersistingL2CacheSize));
    ++l2_set_aside_users;
  }
  const void* base = largest->slots.view().slots;
  const size_t bytes = std::min(static_cast<size_t>(largest->slots.count()) * sizeof(float4), l2_max_window_);
  if (base == l2_window_ && bytes == l2_window_bytes_) return;
  // The old window's lines would stay persisting until pushed out: release them first.
  if (l2_window_) PAIRMD_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  cudaStreamAttrValue attr{};
  attr.accessPolicyWindow.base_ptr = const_cast<void*>(base);
  attr.accessPolicyWindow.num_bytes = bytes;
  // Of a window larger than the set-aside, only that fraction is marked persisting (the rest
  // would evict itself). Windows are capped at the device's largest (the first rows, for big
  // systems).
  attr.accessPolicyWindow.hitRatio = static_cast<float>(std::min(1.0, static_cast<double>(l2_persisting_) / bytes));
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  PAIRMD_CUDA_CHECK(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attr));
  l2_window_ = base;
  l2_window_bytes_ = bytes;
}

SlotForce CudaBackend::slot_source() const {
  SlotForce s{};
  s.nviews = 0;
  for (const auto& t : pair_terms_) s.views[s.nviews++] = t->slots.view();
  for (const auto& t : bond_terms_) s.views[s.nviews++] = t->slots.view();
  return s;
}

void CudaBackend::compute_forces() {
  phase_begin();
  const ParticleData pd = particles();
  int* broken = &flags_.data()->broken_bond;
  switch (strategy_) {
    case Strategy::SlotsFused:
    case Strategy::Slots: {
      for (auto& t : pair_terms_) {
        const int count = t->slots.count();
        if (count == 0) continue;
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          slots_pair_kernel<Eval><<<blocks_for(count), kBlockSize, 0, stream_>>>(
              t->list->i(), t->list->j(), count, pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()),
              t->ntypes, t->slots.slots());
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        const int count = t->slots.count();
        if (count == 0) continue;
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          slots_bond_kernel<Eval><<<blocks_for(count), kBlockSize, 0, stream_>>>(
              t->bi.data(), t->bj.data(), t->btype.data(), count, pd,
              reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->slots.slots(), broken);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      if (strategy_ == Strategy::Slots) {
        sum_slots_kernel<<<blocks_for(force_threads<SlotForce>(n_)), kBlockSize, 0, stream_>>>(slot_source(), n_, force_.data());
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
    case Strategy::Atomic:
    case Strategy::Warp: {
      PAIRMD_CUDA_CHECK(cudaMemsetAsync(force_.data(), 0, n_ * sizeof(float4), stream_));
      for (auto& t : pair_terms_) {
        const int count = t->list->count();
        if (count == 0) continue;
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
          if (strategy_ == Strategy::Atomic)
            atomic_pair_kernel<Eval><<<blocks_for(count), kBlockSize, 0, stream_>>>(t->list->i(), t->list->j(), count, pd,
                                                                                    table, t->ntypes, force_.data());
          else
            warp_pair_kernel<Eval><<<blocks_for(count), kBlockSize, 0, stream_>>>(t->list->i(), t->list->j(), count, pd, table,
                                                                                  t->ntypes, force_.data());
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        const int count = static_cast<int>(t->bonds.size());
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          atomic_bond_kernel<Eval><<<blocks_for(count), kBlockSize, 0, stream_>>>(
              t->bi.data(), t->bj.data(), t->btype.data(), count, pd,
              reinterpret_cast<const typename Eval::Params*>(t->table.data()), force_.data(), broken);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
    case Strategy::Gather: {
      if (pair_terms_.empty()) PAIRMD_CUDA_CHECK(cudaMemsetAsync(force_.data(), 0, n_ * sizeof(float4), stream_));
      for (size_t k = 0; k < pair_terms_.size(); ++k) {
        auto& t = pair_terms_[k];
        dispatch_pair<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
          if (k == 0)
            gather_pair_kernel<Eval, false><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
                t->list->row_start(), t->list->row_count(), t->list->j(), pd, table, t->ntypes, force_.data());
          else
            gather_pair_kernel<Eval, true><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
                t->list->row_start(), t->list->row_count(), t->list->j(), pd, table, t->ntypes, force_.data());
        });
        PAIRMD_CHECK_LAUNCH();
      }
      for (auto& t : bond_terms_) {
        dispatch_bond<float>(t->kind, [&](auto eval) {
          using Eval = decltype(eval);
          gather_bond_kernel<Eval><<<blocks_for(n_), kBlockSize, 0, stream_>>>(
              t->g_start.data(), t->g_partner.data(), t->g_type.data(), t->g_index.data(), pd,
              reinterpret_cast<const typename Eval::Params*>(t->table.data()), force_.data(), broken);
        });
        PAIRMD_CHECK_LAUNCH();
      }
      break;
    }
  }
  phase_end(stats_.seconds_force);
}

void CudaBackend::integrate(bool finish, bool begin, bool write_force) {
  phase_begin();
  IntegrateArgs a{};
  a.pos = pos_.data();
  a.vel = vel_.data();
  a.image = image_.data();
  a.tag = tag_.data();
  a.pos_at_build = pos_build_.data();
  a.force_out = write_force ? force_.data() : nullptr;
  a.n = n_;
  a.step = static_cast<uint64_t>(host_.step);
  a.c = c_;
  a.box = box_;
  a.kind = model_.integrator.kind;
  a.finish = finish;
  a.begin = begin;
  const float lim = static_cast<float>(model_.max_step_displacement);
  a.max_move_sq = lim * lim;
  a.flags = flags_.data();
  if (strategy_ == Strategy::SlotsFused) {
    // The summation of the slots happens inside the integrator kernel.
    integrate_kernel<SlotForce><<<blocks_for(force_threads<SlotForce>(n_)), kBlockSize, 0, stream_>>>(a, slot_source());
  } else {
    if (write_force) a.force_out = nullptr;  // force_ already holds the force
    integrate_kernel<ArrayForce><<<blocks_for(n_), kBlockSize, 0, stream_>>>(a, ArrayForce{force_.data()});
  }
  PAIRMD_CHECK_LAUNCH();
  phase_end(stats_.seconds_integrate);
}

void CudaBackend::complete_step() {
  if (!pending_finish_) return;
  integrate(true, false, true);
  pending_finish_ = false;
}

void CudaBackend::read_flags_and_check(int64_t force_step) {
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_flags_, flags_.data(), sizeof(DeviceFlags), cudaMemcpyDeviceToHost, stream_));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (host_flags_->broken_bond != 0) {
    std::ostringstream m;
    m << "step " << force_step << ": a bond stretched beyond its maximum extension (bond #"
      << reported_index(host_flags_->broken_bond)
      << " of its kind); is the time step too large, or do particles overlap in the start configuration?";
    throw SimulationBlowup(m.str());
  }
}

void CudaBackend::advance(int64_t nsteps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < nsteps; ++s) {
    integrate(pending_finish_, true, false);
    pending_finish_ = true;
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_flags_, flags_.data(), sizeof(DeviceFlags), cudaMemcpyDeviceToHost, stream_));
    PAIRMD_CUDA_CHECK(cudaEventRecord(flags_ready_, stream_));
    PAIRMD_CUDA_CHECK(cudaMemsetAsync(flags_.data(), 0, sizeof(DeviceFlags), stream_));
    ++host_.step;
    compute_forces();  // speculative: valid unless the lists must be rebuilt
    PAIRMD_CUDA_CHECK(cudaEventSynchronize(flags_ready_));
    const DeviceFlags f = *host_flags_;
    if (f.broken_bond != 0) {
      std::ostringstream m;
      m << "step " << host_.step - 1 << ": a bond stretched beyond its maximum extension (bond #"
        << reported_index(f.broken_bond)
        << " of its kind); is the time step too large, or do particles overlap in the start configuration?";
      throw SimulationBlowup(m.str());
    }
    if (f.bad_particle != 0) {
      std::ostringstream m;
      m << "step " << host_.step << ": particle " << reported_index(f.bad_particle) << " moved farther than max_step_displacement = "
        << model_.max_step_displacement << " in one step or is no longer finite. Is the time step too large, or do "
        << "particles overlap in the start configuration?";
      throw SimulationBlowup(m.str());
    }
    float disp_sq;
    std::memcpy(&disp_sq, &f.max_disp_sq, sizeof disp_sq);
    if (disp_sq > half_skin_sq_) {
      rebuild_lists();
      compute_forces();
    }
  }
  read_flags_and_check(host_.step);
  resolve_phases();
  stats_.steps += nsteps;
  stats_.seconds_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CudaBackend::get_state(SystemState& s) {
  complete_step();
  const std::vector<float4> pos = pos_.download(), vel = vel_.download();
  const std::vector<int3> img = image_.download();
  s = host_;
  for (int i = 0; i < n_; ++i) {
    s.position[i] = {pos[i].x, pos[i].y, pos[i].z};
    s.velocity[i] = {vel[i].x, vel[i].y, vel[i].z};
    s.image[i] = {img[i].x, img[i].y, img[i].z};
  }
}

std::vector<Vec3d> CudaBackend::forces() {
  if (uses_slots(strategy_)) {
    sum_slots_kernel<<<blocks_for(force_threads<SlotForce>(n_)), kBlockSize, 0, stream_>>>(slot_source(), n_, force_.data());
    PAIRMD_CHECK_LAUNCH();
  }
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<float4> f = force_.download();
  std::vector<Vec3d> out(n_);
  for (int i = 0; i < n_; ++i) out[i] = {f[i].x, f[i].y, f[i].z};
  return out;
}

Observables CudaBackend::observables() {
  complete_step();
  const ParticleData pd = particles();
  const size_t nterms = pair_terms_.size() + bond_terms_.size();
  sums_.reserve_grow(2 * nterms + 4);
  sums_.resize(2 * nterms + 4);
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(sums_.data(), 0, sums_.size() * sizeof(double), stream_));
  auto reduce_into = [&](int blocks, int nout, double* out) {
    sum_block_parts<<<nout, kBlockSize, 0, stream_>>>(parts_.data(), blocks, blocks, nout, out);
    PAIRMD_CHECK_LAUNCH();
  };
  for (size_t k = 0; k < pair_terms_.size(); ++k) {
    auto& t = pair_terms_[k];
    const int count = t->list->count();
    if (count == 0) continue;
    const int blocks = blocks_for(count);
    parts_.reserve_grow(2 * static_cast<size_t>(blocks));
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      pair_energy_kernel<Eval><<<blocks, kBlockSize, 0, stream_>>>(
          t->list->i(), t->list->j(), count, pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->ntypes,
          t->list->full() ? 0.5 : 1.0, parts_.data());
    });
    PAIRMD_CHECK_LAUNCH();
    reduce_into(blocks, 2, sums_.data() + 2 * k);
  }
  for (size_t k = 0; k < bond_terms_.size(); ++k) {
    auto& t = bond_terms_[k];
    const int count = static_cast<int>(t->bonds.size());
    const int blocks = blocks_for(count);
    parts_.reserve_grow(2 * static_cast<size_t>(blocks));
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      bond_energy_kernel<Eval><<<blocks, kBlockSize, 0, stream_>>>(t->bi.data(), t->bj.data(), t->btype.data(), count, pd,
                                                                   reinterpret_cast<const typename Eval::Params*>(t->table.data()),
                                                                   parts_.data());
    });
    PAIRMD_CHECK_LAUNCH();
    reduce_into(blocks, 2, sums_.data() + 2 * (pair_terms_.size() + k));
  }
  const int blocks = blocks_for(n_);
  parts_.reserve_grow(4 * static_cast<size_t>(blocks));
  kinetic_kernel<<<blocks, kBlockSize, 0, stream_>>>(vel_.data(), n_, parts_.data());
  PAIRMD_CHECK_LAUNCH();
  reduce_into(blocks, 4, sums_.data() + 2 * nterms);
  std::vector<double> h(2 * nterms + 4);
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(h.data(), sums_.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));

  Observables o;
  o.step = host_.step;
  for (size_t k = 0; k < nterms; ++k) {
    o.potential_by_term.push_back(h[2 * k]);
    o.potential += h[2 * k];
    o.virial += h[2 * k + 1];
  }
  o.kinetic = h[2 * nterms] / model_.units.force_to_accel;
  for (int d = 0; d < 3; ++d) o.momentum[d] = h[2 * nterms + 1 + d];
  return o;
}

BackendStats CudaBackend::stats() const {
  BackendStats s = stats_;
  s.device_bytes = device_bytes_in_use();
  std::ostringstream d;
  d << "strategy " << strategy_name(strategy_);
  for (const auto& t : pair_terms_) {
    d << ", " << pair_kind_name(t->kind) << " list " << t->list->count() << " pairs";
    if (t->list->stencil_used() == CellStencil::HalfShell) d << " (half-shell search)";
  }
  if (l2_persisting_)
    d << ", slots kept in L2 (" << l2_window_bytes_ / 1048576 << " MiB window, " << l2_persisting_ / 1048576
      << " MiB set aside)";
  if (!l2_note_.empty()) d << ", no L2 window: " << l2_note_;
  d << ", GPU memory " << std::fixed << std::setprecision(1) << s.device_bytes / 1048576.0 << " MiB";
  if (stats_.list_capacity_growths) d << ", list grew " << stats_.list_capacity_growths << "x";
  s.detail = d.str();
  return s;
}

}  // namespace

bool cuda_device_present(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    if (reason) *reason = std::string("no CUDA device: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    cudaGetLastError();  // clear the sticky-free error so later checks start clean
    return false;
  }
  cudaDeviceProp p{};
  PAIRMD_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  if (reason) *reason = std::string("GPU ") + p.name;
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial) {
  if (model.strategy != "auto") return std::make_unique<CudaBackend>(model, initial, parse_strategy(model.strategy));
  // auto: time each deterministic strategy for a few steps on this very system and keep the
  // fastest; the chosen backend starts again from the initial state.
  std::ostringstream log;
  Strategy best = Strategy::SlotsFused;
  double best_ms = 1e300;
  for (Strategy s : {Strategy::SlotsFused, Strategy::Slots, Strategy::Gather}) {
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
