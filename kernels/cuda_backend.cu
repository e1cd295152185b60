// The CUDA backend's step loop: list builds, the forces of each strategy, the integrate kernels,
// chunks of steps as CUDA graphs, and what the loop reports (state, forces, observables). The
// design and the other parts: kernels/cuda_backend.cuh.
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

#include "kernels/cuda_backend.cuh"
#include "kernels/integrate_kernel.cuh"

namespace pairmd {

namespace {

// Two threads per system: the pulled particle and the tethered one (tags within the system).
// Adds their pulling forces to force[] (if given; the integrate kernels add them themselves, this
// is for outputs) and the pulling energy to system k's acc + k * stride (if given, one term's
// kEnergyWords).
__global__ void pull_force_kernel(const float4* pos, const int3* image, const unsigned* rank, int system_size,
                                  int systems, const BoxGeometry<float>* device_box, PullParams<float> pull,
                                  long long step, float4* force, long long* acc, int stride) {
  const BoxGeometry<float> box = *device_box;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int k = t / 2;
  if (k >= systems) return;
  const int64_t tag = t % 2 == 0 ? pull.pulled : pull.tethered;
  if (tag < 0 || tag >= system_size) return;
  const unsigned p = rank[static_cast<int64_t>(k) * system_size + tag];
  float e = 0.f;
  const Vec3<float> f = pull_force<float>(pull, tag, unwrapped_position(pos[p], image[p], box), step, &e);
  if (force) {
    force[p].x += f.x;
    force[p].y += f.y;
    force[p].z += f.z;
  }
  if (acc) {
    int64_t ew = 0, ef = 0, bad = 0;
    split_add(e, ew, ef, bad);
    auto* a = reinterpret_cast<unsigned long long*>(acc + static_cast<int64_t>(k) * stride);
    if (ew) atomicAdd(a + 0, static_cast<unsigned long long>(ew));
    if (ef) atomicAdd(a + 1, static_cast<unsigned long long>(ef));
    if (bad) atomicAdd(a + 4, static_cast<unsigned long long>(bad));
  }
}

// The float strategies' forces() with the extra force added as their integrate kernel adds it
// (outputs, tests).
__global__ void add_extra_force_kernel(const FixedVec* extra, int n, float4* force) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const FixedVec f = extra[p];
  force[p].x += fixed_to_float(f.x);
  force[p].y += fixed_to_float(f.y);
  force[p].z += fixed_to_float(f.z);
}

// The chunk's last kernel: its control block and flags into its read-back slot, host memory
// mapped into the device's address space (a kernel in the chunk's graph, not a copy after it:
// a copy-engine transfer between two graphs costs the stream several microseconds).
__global__ void publish_chunk_state(const ChunkState* state, ChunkState* slot) {
  constexpr int kWords = sizeof(ChunkState) / sizeof(unsigned);
  static_assert(sizeof(ChunkState) % sizeof(unsigned) == 0, "ChunkState in words");
  for (int t = threadIdx.x; t < kWords; t += blockDim.x)
    reinterpret_cast<volatile unsigned*>(slot)[t] = reinterpret_cast<const volatile unsigned*>(state)[t];
}

}  // namespace

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

// Sort the particles into cells, renumber them in that order, and search every term's list.
// The forces do not depend on the numbering (fixed-point sums), only the speed does.
//
// A build the host does not wait for is some twenty launches (the cell sort's, the renumbering's
// copies, each search's clearing, search and count read-back); small systems run them faster
// than the host can launch them, so it is kept as a plan (its host side, the renumbering's
// buffer flip and the lists' build counts, done once, here) and issued by the graph of the same
// work when there is one (kernels/step_graphs.cuh). A graph is captured for work seen twice in a
// row from the same position buffer: a build whose buffers grew is launched directly. Open boxes
// are never planned: their grid follows the particles' bounding box, which the host reads back.
void CudaBackend::rebuild_lists(bool wait) {
  if (!has_lists()) return;  // all_pairs: nothing to build, and the particles keep their order
  phase_begin();
  const bool capturable = !wait && use_graphs_ && !profile_ && box_.periodic && n_ > 0;
  if (capturable) {
    const int current = particles_.current();
    std::vector<std::pair<int64_t, bool>> lists;  // builds and unsettled, to take back
    for (auto& t : pair_terms_) lists.emplace_back(t->list->builds(), t->list->unsettled());
    WorkPlan plan;
    Launcher planner = Launcher::planning(plan);
    try {
      enqueue_rebuild(planner, false);
      if (plan.key == build_seen_[current])
        build_graphs_.launch(1, current, plan.key, stream_, [&](Launcher&) { plan.issue(stream_); });
      else
        plan.issue(stream_);
    } catch (...) {
      // The plan's host side ran (the renumbering's buffer flip, the lists' build counts) but its
      // work may not have reached the GPU: take the host side back. The chunk that halted for
      // this build is retired and no forces were computed for the new positions, so the backend
      // needs set_state() before it steps again (Simulation ends the run at the last good state
      // on any exception).
      if (particles_.current() != current) particles_.flip();
      for (size_t k = 0; k < pair_terms_.size(); ++k)
        if (pair_terms_[k]->list->builds() != lists[k].first) pair_terms_[k]->list->abandon_build(lists[k].second);
      throw;
    }
    build_seen_[current] = std::move(plan.key);
  } else {
    Launcher now(stream_);
    enqueue_rebuild(now, wait);
  }
  ++stats_.list_builds;
  phase_end(stats_.seconds_list);
}

void CudaBackend::enqueue_rebuild(Launcher& launcher, bool wait) {
  // The box in device memory is box_ now (the host read it back with the chunk that halted for
  // this build); the kernels read it there, so that the work's key does not change with it.
  cells_.build(launcher, particles_.pos(), particles_.tag(), n_, system_size_, box_, &device_box()->box, grid_width_);
  particles_.renumber(launcher, cells_.order());
  if (barostat_) enqueue_box_build_reset(launcher, device_box(), half_skin_sq_);
  const CellGridView grid = cells_.view();
  for (auto& t : pair_terms_) {
    const PairListInput in{particles_.pos(),
                           particles_.tag(),
                           n_,
                           &device_box()->box,
                           t->exclusion_width ? t->exclusions.data() : nullptr,
                           t->exclusion_width};
    const int64_t growths = t->list->growths();
    if (wait)
      t->list->build(launcher, in, grid);
    else
      t->list->enqueue_build(launcher, in, grid, &ctrl()->list_short);
    stats_.list_capacity_growths += t->list->growths() - growths;
    if (uses_slots(strategy_)) t->slots.resize(t->list->capacity());
  }
}

bool CudaBackend::settle_lists() {
  bool fits = true;
  for (auto& t : pair_terms_) {
    if (!t->list) continue;
    const int64_t growths = t->list->growths();
    fits = t->list->settle() && fits;
    stats_.list_capacity_growths += t->list->growths() - growths;
  }
  return fits;
}

void CudaBackend::ensure_lists(bool synchronised) {
  const bool any = std::any_of(pair_terms_.begin(), pair_terms_.end(),
                               [](const auto& t) { return t->list && t->list->unsettled(); });
  if (!any) return;
  if (!synchronised) PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  if (settle_lists()) return;
  // A search did not fit, so no step has been taken since: grow (done), search again and wait,
  // then redo the forces of the current positions.
  Launcher now(stream_);
  now.memset(PAIRMD_HERE, &ctrl()->list_short, 0, sizeof(int));
  --stats_.list_builds;  // the same build, done again
  rebuild_lists(true);
  enqueue_forces(now, particles_.current());
}

SlotForce CudaBackend::slot_source(int buffer) {
  SlotForce s{};
  for (auto& t : pair_terms_) {
    const GpuPairList& l = *t->list;
    s.pairs[s.npairs++] = {t->slots.data(), l.j(),         l.row_start(), l.row_count(),
                           l.col_width(),   l.col_count(), l.cols()};
  }
  for (auto& t : bond_terms_)
    s.bonds[s.nbonds++] = {t->slots.data(),     t->row_start.data(), t->row_count.data(), t->bj.data(),
                           t->col_start.data(), t->col_count.data(), t->col_bond.data(),  t->col_partner.data()};
  s.pos = particles_.pos(buffer);
  s.tag = particles_.tag();
  s.rank = particles_.rank();
  // With a barostat the kernels read the box in device memory, and the argument stays the same
  // (so the graphs' keys do; kernels/box_update.cuh).
  s.box = barostat_ ? BoxGeometry<float>{} : box_;
  s.device_box = &device_box()->box;
  s.extra = extra_force();
  return s;
}

// F(x) of the positions in `buffer`, for the strategy: slots (and, unfused, their sum), float
// atomics, or the atom-parallel gather.
void CudaBackend::enqueue_forces(Launcher& launcher, int buffer) {
  if (n_ == 0) return;
  phase_begin();
  enqueue_extra_forces(launcher, buffer);
  switch (strategy_) {
    case Strategy::SlotsFused:
    case Strategy::Slots:
      enqueue_slot_forces(launcher, buffer);
      break;
    case Strategy::Atomic:
    case Strategy::Warp:
      enqueue_atomic_forces(launcher, buffer);
      break;
    case Strategy::Gather:
      enqueue_gather_forces(launcher, buffer);
      break;
    case Strategy::AllPairs:
      enqueue_all_pairs_forces(launcher, buffer);
      break;
  }
  // The barostat's virial: the slot strategies' pair kernels sum it, the others need a pass.
  if (barostat_ && !uses_slots(strategy_)) enqueue_virial(launcher, buffer);
  phase_end(stats_.seconds_force);
}

// The virial per direction of the positions in `buffer`, for the barostat's next box update
// (its kernels return at once unless that update is due): a pass of its own over the pairs and
// bonds, for the strategies without slots (the slot strategies' pair kernels sum it).
void CudaBackend::enqueue_virial(Launcher& launcher, int buffer) {
  const ParticleData pd = particles(buffer);
  const bool full = strategy_info(strategy_).full_list;
  for (auto& t : pair_terms_) {
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
      if (!t->list) {
        launcher.kernel(PAIRMD_HERE, all_pairs_virial_kernel<Eval>,
                        blocks_for(static_cast<size_t>(n_) * all_pairs_lanes_), kBlockSize, 0, pd, table, t->ntypes,
                        all_pairs_view(*t), model_.barostat, box_sums_.data(), ctrl());
        return;
      }
      launcher.kernel(PAIRMD_HERE, pair_virial_kernel<Eval>, std::min(blocks_for(t->list->capacity()), stride_blocks_),
                      kBlockSize, 0, t->list->view(), pd, table, t->ntypes, full, model_.barostat, box_sums_.data(),
                      ctrl());
    });
  }
  for (auto& t : bond_terms_) {
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, bond_virial_kernel<Eval>, blocks_for(std::max<size_t>(t->bonds.size(), 1)),
                      kBlockSize, 0, bond_view(*t), pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()),
                      model_.barostat, box_sums_.data(), ctrl());
    });
  }
}

// After the integrate launch that begins a step from `buffer`: the particles, now at x_{n+1} in
// the other buffer, scaled by the box update the step's decision made (if it made one).
void CudaBackend::enqueue_box_stage(Launcher& launcher, int buffer) {
  RescaleArgs r{};
  r.pos = particles_.pos(buffer ^ 1);
  r.vel = particles_.vel();
  r.image = particles_.image();
  r.pos_at_build = particles_.pos_at_build();
  r.n = n_;
  r.box = device_box();
  r.ticket = rescale_ticket_.data();
  phase_begin();
  enqueue_rescale(launcher, r);
  phase_end(stats_.seconds_integrate);
}

void CudaBackend::enqueue_slot_forces(Launcher& launcher, int buffer) {
  const ParticleData pd = particles(buffer);
  for (auto& t : pair_terms_) {
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, barostat_ ? slots_pair_kernel<Eval, true> : slots_pair_kernel<Eval, false>,
                      std::min(blocks_for(t->list->capacity()), stride_blocks_), kBlockSize, 0, t->list->view(), pd,
                      reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->ntypes, t->slots.data(),
                      ctrl(), model_.barostat, box_sums_.data());
    });
  }
  for (auto& t : bond_terms_) {
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, barostat_ ? slots_bond_kernel<Eval, true> : slots_bond_kernel<Eval, false>,
                      blocks_for(t->bonds.size()), kBlockSize, 0, bond_view(*t), pd,
                      reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->slots.data(),
                      &flags()->broken_bond, ctrl(), model_.barostat, box_sums_.data());
    });
  }
  if (strategy_ == Strategy::Slots)
    launcher.kernel(PAIRMD_HERE, barostat_ ? sum_slots_kernel<true> : sum_slots_kernel<false>, slot_blocks(n_),
                    kSumBlock, 0, slot_source(buffer), n_, particles_.force(), flags(), ctrl());
}

void CudaBackend::enqueue_atomic_forces(Launcher& launcher, int buffer) {
  const ParticleData pd = particles(buffer);
  launcher.memset(PAIRMD_HERE, particles_.force(), 0, n_ * sizeof(float4));
  for (auto& t : pair_terms_) {
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
      auto* kernel = strategy_ == Strategy::Atomic ? atomic_pair_kernel<Eval> : warp_pair_kernel<Eval>;
      launcher.kernel(PAIRMD_HERE, kernel, blocks_for(t->list->capacity()), kBlockSize, 0, t->list->view(), pd, table,
                      t->ntypes, particles_.force(), ctrl());
    });
  }
  for (auto& t : bond_terms_) {
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, atomic_bond_kernel<Eval>, blocks_for(t->bonds.size()), kBlockSize, 0, bond_view(*t),
                      pd, reinterpret_cast<const typename Eval::Params*>(t->table.data()), particles_.force(),
                      &flags()->broken_bond, ctrl());
    });
  }
}

AllPairsView CudaBackend::all_pairs_view(const GpuPairTerm& t) const {
  return {system_size_, all_pairs_lanes_, t.exclusion_width ? t.exclusions.data() : nullptr, t.exclusion_width,
          t.skip_sq};
}

// Every pair of each system, a group of threads per particle (force_kernels.cuh): fixed-point
// forces in the array atom_gather writes, then its bond kernel.
void CudaBackend::enqueue_all_pairs_forces(Launcher& launcher, int buffer) {
  const ParticleData pd = particles(buffer);
  if (pair_terms_.empty()) launcher.memset(PAIRMD_HERE, particles_.fixed_force(), 0, n_ * sizeof(FixedVec));
  for (size_t k = 0; k < pair_terms_.size(); ++k) {
    auto& t = pair_terms_[k];
    const AllPairsView v = all_pairs_view(*t);
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
      // The first term writes the force, the others add to it.
      launcher.kernel(PAIRMD_HERE, all_pairs_kernel<Eval>, blocks_for(static_cast<size_t>(n_) * v.lanes), kBlockSize, 0,
                      pd, table, t->ntypes, v, k > 0, particles_.fixed_force(), flags(), ctrl());
    });
  }
  enqueue_gather_bond_forces(launcher, pd);
}

void CudaBackend::enqueue_gather_forces(Launcher& launcher, int buffer) {
  const ParticleData pd = particles(buffer);
  if (pair_terms_.empty()) launcher.memset(PAIRMD_HERE, particles_.fixed_force(), 0, n_ * sizeof(FixedVec));
  for (size_t k = 0; k < pair_terms_.size(); ++k) {
    auto& t = pair_terms_[k];
    const GpuPairList& l = *t->list;
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
      // The first term writes the force, the others add to it.
      auto* kernel = k == 0 ? gather_pair_kernel<Eval, false> : gather_pair_kernel<Eval, true>;
      launcher.kernel(PAIRMD_HERE, kernel, blocks_for(n_), kBlockSize, 0, l.row_start(), l.row_count(), l.j(), pd,
                      table, t->ntypes, particles_.fixed_force(), particles_.tag(), flags(), ctrl());
    });
  }
  enqueue_gather_bond_forces(launcher, pd);
}

// Bonds atom-parallel, added to the fixed-point forces (atom_gather, all_pairs).
void CudaBackend::enqueue_gather_bond_forces(Launcher& launcher, const ParticleData& pd) {
  for (auto& t : bond_terms_) {
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, gather_bond_kernel<Eval>, blocks_for(n_), kBlockSize, 0, t->g_start.data(),
                      t->g_partner.data(), t->g_type.data(), t->g_index.data(), particles_.tag(), particles_.rank(), pd,
                      reinterpret_cast<const typename Eval::Params*>(t->table.data()), particles_.fixed_force(),
                      &flags()->broken_bond, flags(), ctrl());
    });
  }
}

// The extra force, cleared, then the bonded terms' and PME's reciprocal-space forces; the same
// for every strategy. Nothing for runs without them.
void CudaBackend::enqueue_extra_forces(Launcher& launcher, int buffer) {
  FixedVec* extra = extra_force();
  if (!extra) return;
  launcher.memset(PAIRMD_HERE, extra, 0, n_ * sizeof(FixedVec));
  enqueue_bonded_forces(launcher, buffer, extra);
  if (pme_) enqueue_pme_forces(launcher, buffer, extra);
}

void CudaBackend::enqueue_pme_forces(Launcher& launcher, int buffer, FixedVec* extra) {
  const ParticleData pd = particles(buffer);
  const BondedVirial bv{model_.barostat, barostat_ ? box_sums_.data() : nullptr};
  pme_->enqueue_forces(launcher, pd, particles_.tag(), extra, flags(), ctrl(), bv);
  if (!pme_excluded_) return;
  using Excluded = CoulombLongExcluded<float>;
  const GpuPairTerm& pt = *pair_terms_[pme_excluded_->term];
  launcher.kernel(PAIRMD_HERE, scaled_pair_force_kernel<Excluded>, blocks_for(pme_excluded_->count), kBlockSize, 0,
                  scaled_view(*pme_excluded_), pd, reinterpret_cast<const Excluded::Params*>(pt.table.data()),
                  pt.ntypes, extra, flags(), ctrl(), bv);
}

// The reciprocal energy and virial, and the excluded pairs', into the coulomb_long term's slot.
void CudaBackend::enqueue_pme_energies(Launcher& launcher, const ParticleData& pd, int stride) {
  long long* acc = energy_.data() + kEnergyWords * model_.electrostatics.term;
  pme_->enqueue_energy(launcher, pd, acc);
  if (!pme_excluded_) return;
  using Excluded = CoulombLongExcluded<float>;
  const GpuPairTerm& pt = *pair_terms_[pme_excluded_->term];
  launcher.kernel(PAIRMD_HERE, scaled_pair_energy_kernel<Excluded>, blocks_for(pme_excluded_->count), kBlockSize, 0,
                  scaled_view(*pme_excluded_), pd, reinterpret_cast<const Excluded::Params*>(pt.table.data()),
                  pt.ntypes, system_size_, acc, stride);
}

// Angles, dihedrals, impropers and scaled pairs into the extra force.
void CudaBackend::enqueue_bonded_forces(Launcher& launcher, int buffer, FixedVec* extra) {
  const ParticleData pd = particles(buffer);
  const BondedVirial bv{model_.barostat, barostat_ ? box_sums_.data() : nullptr};
  for (auto& t : bonded_terms_) {
    const BondedListView v = bonded_view(*t);
    auto quad = [&](auto eval) {  // dihedrals and impropers
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, dihedral_force_kernel<Eval>, blocks_for(t->count), kBlockSize, 0, v, pd,
                      reinterpret_cast<const typename Eval::Params*>(t->table.data()), extra, flags(), ctrl(), bv);
    };
    if (t->family == GpuBondedTerm::kAngle)
      dispatch_bonded<float>(static_cast<AngleKind>(t->kind), [&](auto eval) {
        using Eval = decltype(eval);
        launcher.kernel(PAIRMD_HERE, angle_force_kernel<Eval>, blocks_for(t->count), kBlockSize, 0, v, pd,
                        reinterpret_cast<const typename Eval::Params*>(t->table.data()), extra, flags(), ctrl(), bv);
      });
    else if (t->family == GpuBondedTerm::kDihedral)
      dispatch_bonded<float>(static_cast<DihedralKind>(t->kind), quad);
    else
      dispatch_bonded<float>(static_cast<ImproperKind>(t->kind), quad);
  }
  for (auto& sp : scaled_pairs_) {
    const GpuPairTerm& pt = *pair_terms_[sp->term];
    dispatch_pair<float>(pt.kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, scaled_pair_force_kernel<Eval>, blocks_for(sp->count), kBlockSize, 0,
                      scaled_view(*sp), pd, reinterpret_cast<const typename Eval::Params*>(pt.table.data()), pt.ntypes,
                      extra, flags(), ctrl(), bv);
    });
  }
}

// Their energies and virials: the k-th bonded term into slot first_slot + k, scaled pairs into
// their pair term's slot, each in its system's accumulators (stride words apart).
void CudaBackend::enqueue_bonded_energies(Launcher& launcher, const ParticleData& pd, size_t first_slot, int stride) {
  for (size_t k = 0; k < bonded_terms_.size(); ++k) {
    GpuBondedTerm& t = *bonded_terms_[k];
    long long* acc = energy_.data() + kEnergyWords * (first_slot + k);
    const BondedListView v = bonded_view(t);
    auto quad = [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, dihedral_energy_kernel<Eval>, blocks_for(t.count), kBlockSize, 0, v, pd,
                      reinterpret_cast<const typename Eval::Params*>(t.table.data()), system_size_, acc, stride);
    };
    if (t.family == GpuBondedTerm::kAngle)
      dispatch_bonded<float>(static_cast<AngleKind>(t.kind), [&](auto eval) {
        using Eval = decltype(eval);
        launcher.kernel(PAIRMD_HERE, angle_energy_kernel<Eval>, blocks_for(t.count), kBlockSize, 0, v, pd,
                        reinterpret_cast<const typename Eval::Params*>(t.table.data()), system_size_, acc, stride);
      });
    else if (t.family == GpuBondedTerm::kDihedral)
      dispatch_bonded<float>(static_cast<DihedralKind>(t.kind), quad);
    else
      dispatch_bonded<float>(static_cast<ImproperKind>(t.kind), quad);
  }
  for (auto& sp : scaled_pairs_) {
    const GpuPairTerm& pt = *pair_terms_[sp->term];
    dispatch_pair<float>(pt.kind, [&](auto eval) {
      using Eval = decltype(eval);
      launcher.kernel(PAIRMD_HERE, scaled_pair_energy_kernel<Eval>, blocks_for(sp->count), kBlockSize, 0,
                      scaled_view(*sp), pd, reinterpret_cast<const typename Eval::Params*>(pt.table.data()), pt.ntypes,
                      system_size_, energy_.data() + kEnergyWords * sp->term, stride);
    });
  }
}

int fused_blocks_per_sm(bool box) {
  int blocks = 0;
  PAIRMD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, box ? integrate_slots_kernel<true> : integrate_slots_kernel<false>, kSumBlock, 0));
  return std::max(1, blocks);
}

// The integrate kernel on the positions in `buffer` (x_n); with `begin`, x_{n+1} goes to the
// other buffer.
void CudaBackend::enqueue_integrate(Launcher& launcher, int buffer, bool begin, bool write_force) {
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
  a.system_size = system_size_;
  a.systems = device_params_.data();
  a.c = c_;
  a.c.kT_mvv = NAN;  // the kernels read k_B T and the seed from systems[]: a use of these shows
  a.c.seed = 0;
  a.box = barostat_ ? BoxGeometry<float>{} : box_;  // with a barostat: device_box
  a.device_box = device_box();
  a.kind = model_.integrator.kind;
  a.begin = begin;
  const float lim = static_cast<float>(model_.max_step_displacement);
  a.max_move_sq = lim * lim;
  a.half_skin_sq = half_skin_sq_;
  a.flags = flags();
  a.ctrl = ctrl();
  a.tickets = tickets();
  a.pull = pull_;
  a.last_block_decides = true;
  a.stage = stage_;
  a.box_sums = box_sums_.data();
  // The barostat's variants sum the pressure's parts and make the box update in the step's
  // decision (kernels/box_update.cuh); without one, the kernels have none of that code.
  const bool box = barostat_;
  switch (strategy_) {
    case Strategy::SlotsFused:
      // The summation of the slots happens inside the integrate kernel.
      if (write_force) a.force_out = particles_.force();
      // More blocks than the GPU holds at once: each block's ticket (the last one decides the
      // step) would keep the block, and the room it takes, waiting at its end; a one-thread
      // kernel after it decides instead (1M particles: 4 % faster; docs/benchmarks.md). In one
      // wave that tail delays nothing, and the extra launch would cost more. With a barostat
      // that kernel decides at every size (integrate_slots_kernel says why; on the H100 NPT
      // every step went from 0.63 to 0.73 of NVT at 4,000 particles: docs/barostat.md).
      a.last_block_decides = !box && !decide_after_summation();  // with box the kernel cannot decide
      launcher.kernel(PAIRMD_HERE, box ? integrate_slots_kernel<true> : integrate_slots_kernel<false>, slot_blocks(n_),
                      kSumBlock, 0, a, slot_source(buffer));
      if (!a.last_block_decides) {
        launcher.kernel(PAIRMD_HERE, box ? decide_step_kernel<true> : decide_step_kernel<false>, 1, 1, 0, a);
        if (launcher.issuing()) ++decide_launches_;
      }
      break;
    case Strategy::Gather:
    case Strategy::AllPairs:
      launcher.kernel(PAIRMD_HERE,
                      box ? integrate_kernel<FixedArrayForce, true> : integrate_kernel<FixedArrayForce, false>,
                      blocks_for(n_), kBlockSize, 0, a, FixedArrayForce{particles_.fixed_force(), extra_force()});
      break;
    default:
      // The slot summation (sum_slots_kernel) has added the extra force already, in fixed point
      // as the fused kernel adds it; the float-atomic forces have not.
      launcher.kernel(PAIRMD_HERE, box ? integrate_kernel<ArrayForce, true> : integrate_kernel<ArrayForce, false>,
                      blocks_for(n_), kBlockSize, 0, a,
                      ArrayForce{particles_.force(), uses_slots(strategy_) ? nullptr : extra_force()});
  }
  phase_end(stats_.seconds_integrate);
}

// A chunk: `steps` times integrate and forces, the positions alternating between the two
// buffers from `parity` on. Nothing is cleared: the step count is a running total, and only the
// host clears the halt, so a chunk launched behind one that halted takes no step.
void CudaBackend::enqueue_steps(Launcher& launcher, int steps, int parity, int slot) {
  for (int s = 0; s < steps; ++s) enqueue_step(launcher, parity ^ (s & 1));
  enqueue_publish(launcher, slot);
}

// One step from the positions in `buffer`: every step of a chunk is this, from one of the two
// buffers, so the key of a chunk's work is that of its two kinds of step and its publication
// (launch_chunk).
void CudaBackend::enqueue_step(Launcher& launcher, int buffer) {
  enqueue_integrate(launcher, buffer, true, false);
  if (barostat_ && n_ > 0) enqueue_box_stage(launcher, buffer);
  enqueue_forces(launcher, buffer ^ 1);
}

void CudaBackend::enqueue_publish(Launcher& launcher, int slot) {
  launcher.kernel(PAIRMD_HERE, publish_chunk_state, 1, 32, 0, state_.data(), host_state_ + slot);
}

void CudaBackend::read_chunk_state() {
  Launcher now(stream_);
  enqueue_publish(now, 0);
  PAIRMD_CUDA_CHECK(cudaEventRecord(chunk_done_[0], stream_));
  PAIRMD_CUDA_CHECK(cudaEventSynchronize(chunk_done_[0]));
}

void CudaBackend::clear_halt() { Launcher(stream_).memset(PAIRMD_HERE, &ctrl()->halt, 0, sizeof(int)); }

// Launches the next chunk of the `queued` steps, from where the chunks in flight will have left
// the positions if they take all their steps (if one halts, this one takes none).
void CudaBackend::launch_chunk(int64_t queued) {
  bool expects_halt = false;
  const int steps = chunk_length(queued, &expects_halt);
  int parity = particles_.current();
  for (const LaunchedChunk& c : in_flight_) parity ^= c.steps & 1;
  const int slot = static_cast<int>(chunks_ % kChunksInFlight);
  if (use_graphs_ && !profile_) {
    // One graph per length, starting buffer and read-back slot, replayed while the work of its
    // steps and publication has the key it was captured from.
    chunk_key_.clear();
    Launcher keying = Launcher::keying(chunk_key_);
    enqueue_step(keying, parity);
    enqueue_step(keying, parity ^ 1);
    enqueue_publish(keying, slot);
    graphs_.launch(steps, parity + 2 * slot, chunk_key_, stream_,
                   [&](Launcher& capture) { enqueue_steps(capture, steps, parity, slot); });
  } else {
    Launcher now(stream_);
    enqueue_steps(now, steps, parity, slot);
  }
  PAIRMD_CUDA_CHECK(cudaEventRecord(chunk_done_[slot], stream_));
  in_flight_.push_back({steps, slot, expects_halt});
  queued_ -= steps;
  ++chunks_;
}

// Steps for the next chunk: up to the rebuild the observed interval predicts, and a little
// past it (a halted step costs a few microseconds, a chunk that ends too early a host round trip).
// Not with particle-mesh Ewald: its FFTs run in a halted step too (a cuFFT call in the graph
// cannot return early), a millisecond at 64k particles, so its chunks stop at the prediction.
int CudaBackend::chunk_length(int64_t left, bool* expects_halt) const {
  int64_t since = steps_since_build_;
  for (const LaunchedChunk& c : in_flight_) since += c.steps;
  const double predicted = rebuild_interval_ - static_cast<double>(since);
  // Steps to the predicted rebuild (all_pairs predicts none: 1e18).
  const int due = static_cast<int>(std::ceil(std::min(predicted, 1e9)));
  const int wanted = pme_ ? std::max(1, due) : std::max(2, due + 1);
  const int k = static_cast<int>(std::min<int64_t>({left, static_cast<int64_t>(wanted), kMaxChunk}));
  if (expects_halt) *expects_halt = k >= due;
  return k;
}

void CudaBackend::throw_blowup(const DeviceFlags& f, int64_t step, const DeviceBox* box) const {
  std::ostringstream m;
  if (box && box->too_small) {
    // The update of the step not taken (its positions were not scaled): as the CPU backend says it.
    m << "step " << step + 1 << ": the barostat would shrink the box to " << box->L[0] * box->mu[0] << " x "
      << box->L[1] * box->mu[1] << " x " << box->L[2] * box->mu[2]
      << ", half of whose smallest edge is below the largest cutoff plus the skin or "
         "integrator.max_step_displacement ("
      << stage_.min_half_edge
      << "). The system is too small for this pressure (or collapsing): use more particles, a shorter cutoff or "
         "skin, or check barostat.pressure";
  } else if (f.broken_bond != 0) {
    m << "step " << step << ": a bond stretched beyond its maximum extension (bond #" << reported_index(f.broken_bond)
      << " of its kind); is the time step too large, or do particles overlap in the start configuration?";
  } else if (f.bad_force != 0) {
    m << "step " << step << ": the force on " << particle_label(reported_index(f.bad_force))
      << " is not finite or larger than " << kMaxFixedForce
      << " in a single pair; do particles overlap in the start configuration?";
  } else {
    m << "step " << step + 1 << ": " << particle_label(reported_index(f.bad_particle))
      << " moved farther than max_step_displacement = " << model_.max_step_displacement
      << " in one step or is no longer finite. Is the time step too large, or do particles overlap in the start "
         "configuration?";
  }
  throw SimulationBlowup(m.str());
}

std::string CudaBackend::particle_label(int tag) const {
  if (systems_ == 1 || tag < 0) return "particle " + std::to_string(tag);
  return "system " + std::to_string(tag / system_size_) + ", particle " + std::to_string(tag % system_size_);
}

int64_t CudaBackend::retire_chunks() {
  const auto c0 = std::chrono::steady_clock::now();
  const LaunchedChunk chunk = in_flight_.front();
  in_flight_.erase(in_flight_.begin());
  PAIRMD_CUDA_CHECK(cudaEventSynchronize(chunk_done_[chunk.slot]));
  const ChunkState got = host_state_[chunk.slot];
  const StepControl& c = got.ctrl;
  const int done = static_cast<int>(c.steps_done - steps_seen_);  // running totals: wrap-around safe
  steps_seen_ = c.steps_done;
  int64_t again = chunk.steps - done;
  if (c.halt != kRunning || c.list_short) {
    // Every chunk launched after this one returned at once: take their steps again.
    for (const LaunchedChunk& later : in_flight_) {
      PAIRMD_CUDA_CHECK(cudaEventSynchronize(chunk_done_[later.slot]));
      if (host_state_[later.slot].ctrl.steps_done != c.steps_done)
        throw std::logic_error("CudaBackend: a chunk launched after a halt took steps");
      again += later.steps;
    }
    in_flight_.clear();
  }
  halted_steps_ += again;
  const auto c1 = std::chrono::steady_clock::now();
  seconds_chunks_ += std::chrono::duration<double>(c1 - c0).count();
  if (c.list_short) {  // the last build's search did not fit: the chunk took no step
    ensure_lists(true);
    return again;
  }
  // A chunk that neither halted nor took all its steps: nobody decided its steps (a launch
  // missing from the step); taking it again would loop forever.
  if (c.halt == kRunning && done != chunk.steps)
    throw std::logic_error("CudaBackend: a chunk took " + std::to_string(done) + " of its " +
                           std::to_string(chunk.steps) + " steps without halting");
  // The search raises list_short exactly when settle() finds something short; were the two ever
  // to disagree, a short list would be used silently.
  if (!settle_lists()) throw std::logic_error("CudaBackend: a list search did not fit but did not halt the chunk");
  host_.step += done;
  steps_since_build_ += done;
  if (done & 1) particles_.flip();
  if (done > 0) pending_finish_ = true;
  if (barostat_) {  // the box the chunk left (the barostat changes it on the device)
    host_.box.L = {got.box.L[0], got.box.L[1], got.box.L[2]};
    box_ = got.box.box;
  }
  if (c.halt == kHaltBlowup) throw_blowup(got.flags, static_cast<int64_t>(c.step), &got.box);
  if (c.halt == kHaltRebuild) {
    clear_halt();
    rebuild_interval_ = 0.7 * rebuild_interval_ + 0.3 * static_cast<double>(steps_since_build_);
    steps_since_build_ = 0;
    rebuild_lists(false);  // the next chunk's end tells whether the search fit
    Launcher now(stream_);
    enqueue_forces(now, particles_.current());
    seconds_rebuilds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - c1).count();
  }
  return again;
}

bool CudaBackend::chunk_finished(const LaunchedChunk& c) const {
  const cudaError_t e = cudaEventQuery(chunk_done_[c.slot]);
  if (e == cudaErrorNotReady) return false;
  PAIRMD_CUDA_CHECK(e);
  return true;
}

void CudaBackend::run_steps(int64_t steps, bool leave_running) {
  if (n_ == 0) {
    host_.step += steps;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  queued_ += steps;
  for (;;) {
    // What has finished is read back without waiting.
    while (!in_flight_.empty() && chunk_finished(in_flight_.front())) queued_ += retire_chunks();
    // Launch behind the chunks in flight, unless one of them is expected to halt.
    const bool room = in_flight_.size() < static_cast<size_t>(kChunksInFlight) &&
                      (in_flight_.empty() || !in_flight_.back().expects_halt);
    if (queued_ > 0 && room) {
      launch_chunk(queued_);
      continue;
    }
    if (in_flight_.empty()) break;  // nothing queued, nothing running
    // The GPU has work: a caller that does not wait may go, unless it has queued a chunk's worth.
    if (leave_running && queued_ < kMaxChunk) break;
    queued_ += retire_chunks();  // waits for the oldest chunk
  }
  if (in_flight_.empty()) ensure_lists(false);  // a build enqueued after the last chunk: complete it
  resolve_phases();
  stats_.steps += steps;
  stats_.seconds_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CudaBackend::advance(int64_t nsteps) { run_steps(nsteps, false); }
void CudaBackend::advance_async(int64_t nsteps) { run_steps(nsteps, true); }
void CudaBackend::wait() {
  if (!in_flight_.empty() || queued_ > 0) run_steps(0, false);
}

void CudaBackend::complete_step() {
  wait();
  if (!pending_finish_) return;
  Launcher now(stream_);
  enqueue_integrate(now, particles_.current(), false, true);
  pending_finish_ = false;
}

void CudaBackend::get_state(SystemState& s) {
  complete_step();
  // The host's copy for what does not change; positions, velocities and images from the device
  // (every entry written there, so host_'s are not copied first).
  s.box = host_.box;
  s.step = host_.step;
  s.type = host_.type;
  s.mass = host_.mass;
  s.charge = host_.charge;
  s.type_names = host_.type_names;
  s.position.resize(host_.position.size());
  s.velocity.resize(host_.velocity.size());
  s.image.resize(host_.image.size());
  particles_.download(s, stream_);
}

std::vector<Vec3d> CudaBackend::forces() {
  wait();
  const int cur = particles_.current();
  Launcher now(stream_);
  if (uses_slots(strategy_))
    now.kernel(PAIRMD_HERE, barostat_ ? sum_slots_kernel<true> : sum_slots_kernel<false>, slot_blocks(n_), kSumBlock, 0,
               slot_source(cur), n_, particles_.force(), flags(), ctrl());
  else if (fixed_array_forces())
    now.kernel(PAIRMD_HERE, fixed_to_float_kernel, blocks_for(n_), kBlockSize, 0, particles_.fixed_force(),
               static_cast<const FixedVec*>(extra_force()), n_, particles_.force());
  float4* forces = particles_.force();
  const bool float_extra = extra_force() && !uses_slots(strategy_) && !fixed_array_forces();
  if (pull_.mode != static_cast<int>(PullMode::None) || float_extra) {
    // A copy with the pulling (and the float strategies' extra force) added: those integrate
    // from force() itself.
    force_out_.reserve_grow(n_);
    now.copy(PAIRMD_HERE, force_out_.data(), forces, n_ * sizeof(float4), cudaMemcpyDeviceToDevice);
    forces = force_out_.data();
    if (float_extra)
      now.kernel(PAIRMD_HERE, add_extra_force_kernel, blocks_for(n_), kBlockSize, 0,
                 static_cast<const FixedVec*>(extra_force()), n_, forces);
  }
  if (pull_.mode != static_cast<int>(PullMode::None)) {
    now.kernel(PAIRMD_HERE, pull_force_kernel, blocks_for(2 * systems_), kBlockSize, 0, particles_.pos(cur),
               particles_.image(), particles_.rank(), system_size_, systems_, &device_box()->box, pull_, host_.step,
               forces, static_cast<long long*>(nullptr), 0);
  }
  const std::vector<float4> f = particles_.in_user_order(forces, stream_);
  std::vector<Vec3d> out(n_);
  for (int i = 0; i < n_; ++i) out[i] = {f[i].x, f[i].y, f[i].z};
  return out;
}

Observables CudaBackend::observables() {
  std::vector<Observables> all = system_observables();
  if (systems_ == 1) return all[0];
  // The ensemble as one system: its terms and kinetic energy summed (the per-system values are
  // in system_observables()).
  Observables o = all[0];
  for (size_t k = 1; k < all.size(); ++k) {
    for (size_t t = 0; t < o.potential_by_term.size(); ++t) o.potential_by_term[t] += all[k].potential_by_term[t];
    o.potential += all[k].potential;
    o.virial += all[k].virial;
    o.kinetic += all[k].kinetic;
    for (int d = 0; d < 3; ++d) o.momentum[d] += all[k].momentum[d];
  }
  return o;
}

// Every system's energies by term and virial (exact fixed-point sums, in the accumulators of
// their system: energy_[k * stride + t * kEnergyWords]) and kinetic energy and momentum (summed
// per system in tag order).
std::vector<Observables> CudaBackend::system_observables() {
  complete_step();
  const bool pulling = pull_.mode != static_cast<int>(PullMode::None);
  const size_t nterms = pair_terms_.size() + bond_terms_.size() + bonded_terms_.size() + (pulling ? 1 : 0);
  std::vector<Observables> out(systems_);
  for (Observables& o : out) {
    o.step = host_.step;
    o.potential_by_term.assign(nterms, 0.0);
  }
  if (n_ == 0) return out;
  const int stride = kEnergyWords * static_cast<int>(std::max<size_t>(nterms, 1));
  energy_.resize(static_cast<size_t>(stride) * systems_);
  Launcher now(stream_);
  now.memset(PAIRMD_HERE, energy_.data(), 0, energy_.size() * sizeof(long long));
  enqueue_energies(now, stride);
  const int blocks = blocks_for(system_size_);  // per system
  parts_.reserve_grow(4 * static_cast<size_t>(blocks) * systems_);
  sums_.reserve_grow(4 * static_cast<size_t>(systems_));
  now.kernel(PAIRMD_HERE, kinetic_kernel, blocks * systems_, kBlockSize, 0, particles_.vel(), particles_.rank(),
             system_size_, systems_, parts_.data());
  now.kernel(PAIRMD_HERE, sum_block_parts, 4 * systems_, kBlockSize, 0, parts_.data(), blocks, blocks, 4 * systems_,
             sums_.data());
  std::vector<long long> e(energy_.size());
  std::vector<double> kin(4 * static_cast<size_t>(systems_));
  now.copy(PAIRMD_HERE, e.data(), energy_.data(), e.size() * sizeof(long long), cudaMemcpyDeviceToHost);
  now.copy(PAIRMD_HERE, kin.data(), sums_.data(), kin.size() * sizeof(double), cudaMemcpyDeviceToHost);
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (int s = 0; s < systems_; ++s) {
    Observables& o = out[s];
    for (size_t k = 0; k < nterms; ++k) {
      const long long* w = e.data() + static_cast<size_t>(s) * stride + kEnergyWords * k;
      const SplitSum energy{w[0], w[1], w[4]}, virial{w[2], w[3], w[4]};
      o.potential_by_term[k] = energy.value();
      o.potential += energy.value();
      o.virial += virial.value();
    }
    if (pme_) {  // E_self and E_background of the box now (the reciprocal sum is in the term's words)
      const double volume = host_.box.volume();
      o.potential_by_term[model_.electrostatics.term] += pme_->constant_energy(volume);
      o.potential += pme_->constant_energy(volume);
      o.virial += pme_->constant_virial(volume);
    }
    o.kinetic = kin[s] / model_.units.force_to_accel;
    for (int d = 0; d < 3; ++d) o.momentum[d] = kin[(1 + d) * systems_ + s];
  }
  return out;
}

// The energy kernels of every term into the accumulators of each system (stride words apart).
// A single system keeps the grid-stride pair kernel; an ensemble sums rows, so that each block
// adds to the few systems its particles belong to.
void CudaBackend::enqueue_energies(Launcher& now, int stride) {
  const ParticleData pd = particles(particles_.current());
  for (size_t k = 0; k < pair_terms_.size(); ++k) {
    auto& t = pair_terms_[k];
    if (!t->list) {
      dispatch_pair<float>(t->kind, [&](auto eval) {
        using Eval = decltype(eval);
        now.kernel(PAIRMD_HERE, all_pairs_energy_kernel<Eval>, blocks_for(n_), kBlockSize, 0, pd,
                   reinterpret_cast<const typename Eval::Params*>(t->table.data()), t->ntypes, all_pairs_view(*t),
                   energy_.data() + kEnergyWords * k, stride);
      });
      continue;
    }
    const GpuPairList& l = *t->list;
    dispatch_pair<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto* table = reinterpret_cast<const typename Eval::Params*>(t->table.data());
      const float scale = l.full() ? 0.5f : 1.0f;
      if (systems_ == 1)
        now.kernel(PAIRMD_HERE, pair_energy_kernel<Eval>, std::min(blocks_for(l.capacity()), stride_blocks_),
                   kBlockSize, 0, l.view(), pd, table, t->ntypes, scale, energy_.data() + kEnergyWords * k);
      else
        now.kernel(PAIRMD_HERE, pair_energy_rows_kernel<Eval>, blocks_for(n_), kBlockSize, 0, l.row_start(),
                   l.row_count(), l.j(), pd, table, t->ntypes, scale, system_size_, energy_.data() + kEnergyWords * k,
                   stride);
    });
  }
  if (pme_) enqueue_pme_energies(now, pd, stride);
  for (size_t k = 0; k < bond_terms_.size(); ++k) {
    auto& t = bond_terms_[k];
    dispatch_bond<float>(t->kind, [&](auto eval) {
      using Eval = decltype(eval);
      now.kernel(PAIRMD_HERE, bond_energy_kernel<Eval>, blocks_for(t->bonds.size()), kBlockSize, 0, bond_view(*t), pd,
                 reinterpret_cast<const typename Eval::Params*>(t->table.data()), system_size_,
                 energy_.data() + kEnergyWords * (pair_terms_.size() + k), stride);
    });
  }
  const size_t first_bonded = pair_terms_.size() + bond_terms_.size();
  enqueue_bonded_energies(now, pd, first_bonded, stride);
  if (pull_.mode != static_cast<int>(PullMode::None))
    now.kernel(PAIRMD_HERE, pull_force_kernel, blocks_for(2 * systems_), kBlockSize, 0, pd.pos, particles_.image(),
               particles_.rank(), system_size_, systems_, pd.box, pull_, host_.step, static_cast<float4*>(nullptr),
               energy_.data() + kEnergyWords * (first_bonded + bonded_terms_.size()), stride);
}

}  // namespace pairmd
