// Force kernels of the force-summation strategies. All of them evaluate pairs through
// kernels/pair_physics.cuh; they differ only in the thread mapping and in how the per-pair
// forces reach the per-particle totals:
//
//   pair_slots[_fused]  one thread per pair of the half list; the pair's F/r goes to its own
//                       slot, which i adds and j subtracts (kernels/force_sources.cuh), summed
//                       later in fixed point without atomics. Deterministic.
//   pair_atomic         one thread per pair; float atomicAdd of +f and -f (scatter).
//   pair_warp           one thread per pair of the row-ordered list; the contributions to the
//                       same i are summed in the warp by a segmented shuffle reduction, so one
//                       atomicAdd per segment (and one per pair for j) reaches memory.
//   atom_gather         one thread per particle over a full list: each pair computed twice,
//                       the sum kept in fixed point in registers, one plain store. Deterministic,
//                       and bitwise the same forces as the slots.
//   all_pairs           a few threads per particle over every particle of its system, no list
//                       (small systems); fixed-point sums, atom_gather's bits.
//
// Every kernel is launched over a size that stays fixed between list builds (the list's
// capacity), reads the current pair count on the device, and does nothing once the step chunk
// has halted (kernels/step_control.cuh), so a chunk of steps can be one CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include "cuda/block_reduce.cuh"
#include "kernels/box_update.cuh"
#include "kernels/fixed_point.h"
#include "kernels/pair_physics.cuh"
#include "kernels/step_control.cuh"
#include "neighbor/gpu_pair_list.cuh"
#include "potentials/pulling.h"

namespace pairmd {

// Bonds of one kind (static, by tag): bond b joins the particles of tags bi[b] < bj[b].
struct BondListView {
  const unsigned* bi;
  const unsigned* bj;
  const int* type;
  int count;
  const unsigned* rank;  // particle of each tag
};

// ---- pair_slots ----------------------------------------------------------------------------

// Pair k = (i, j) writes its F/r into slot k: one coalesced 4-byte store per pair (pads are
// skipped: their slots are never read). A grid of a few blocks per multiprocessor strides over
// the entries, so the launch costs little when the chunk has halted. Most of its traffic is
// the list, 5 bytes and a chunk's share per entry (neighbor/gpu_pair_list.cuh), and the slot.
// kVirial (a barostat's run): when the next step's box update is due, the pairs' virial per
// direction (F/r) d_a d_a too, each pair once, into the barostat's sums (kernels/box_update.cuh).
// Launched as 8 blocks of kBlockSize per multiprocessor (CudaBackend::stride_blocks_): the bounds
// keep the virial variant at the 32 registers that lets all 8 stay resident (at 39, a third of
// the grid waited for a second wave and the kernel took 1.9x as long).
template <typename Eval, bool kVirial = false>
__global__ void __launch_bounds__(kBlockSize, 8)
    slots_pair_kernel(PairListView list, ParticleData pd, const typename Eval::Params* __restrict__ table, int ntypes,
                      float* __restrict__ slots, const StepControl* ctrl, BarostatSettings barostat,
                      unsigned long long* box_sums) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const bool virial = kVirial && barostat.due(static_cast<int64_t>(ctrl->step));
  long long w[3] = {0, 0, 0};
  const long long count = static_cast<long long>(*list.entries);
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = __ldg(list.j + k), i = list.i(k);
    if (j < 0) continue;
    const float4 xi = __ldg(pd.pos + i), xj = __ldg(pd.pos + j);
    const Vec3<float> d = separation(xi, xj, box);
    float e;
    const float s = pair_force_divr<Eval>(dot(d, d), xi, xj, Eval::kUsesCharge ? __ldg(pd.charge + i) : 0.f,
                                          Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table, ntypes, e);
    slots[k] = s;
    if (kVirial && virial) {
      w[0] += box_fixed((s * d.x) * d.x);
      w[1] += box_fixed((s * d.y) * d.y);
      w[2] += box_fixed((s * d.z) * d.z);
    }
  }
  if (kVirial && virial) add_box_words(box_sums, w, 0, 3);  // the same in every thread of the block
}

template <typename Eval, bool kVirial = false>
__global__ void slots_bond_kernel(BondListView bonds, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                  float* __restrict__ slots, int* broken, const StepControl* ctrl,
                                  BarostatSettings barostat, unsigned long long* box_sums) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  long long w[3] = {0, 0, 0};
  if (b < bonds.count) {
    const Vec3<float> d = separation(pd.pos[bonds.rank[bonds.bi[b]]], pd.pos[bonds.rank[bonds.bj[b]]], box);
    float e;
    bool ok;
    const float s = bond_force_divr<Eval>(dot(d, d), table[bonds.type[b]], e, ok);
    slots[b] = s;
    if (!ok) report_lowest(broken, b);
    if (kVirial) {
      w[0] = box_fixed((s * d.x) * d.x);
      w[1] = box_fixed((s * d.y) * d.y);
      w[2] = box_fixed((s * d.z) * d.z);
    }
  }
  if (kVirial && barostat.due(static_cast<int64_t>(ctrl->step))) add_box_words(box_sums, w, 0, 3);
}

// ---- pair_atomic -------------------------------------------------------------------------

__device__ __forceinline__ void atomic_add3(float4* f, int i, float3 v) {
  atomicAdd(&f[i].x, v.x);
  atomicAdd(&f[i].y, v.y);
  atomicAdd(&f[i].z, v.z);
}

template <typename Eval>
__global__ void atomic_pair_kernel(PairListView list, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   int ntypes, float4* force, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= static_cast<long long>(*list.entries)) return;
  const int j = list.j[k];
  if (j < 0) return;  // a pad
  const int i = list.i(k);
  const PairResult p = eval_pair<Eval>(__ldg(pd.pos + i), __ldg(pd.pos + j), Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                       Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, box);
  if (p.f.x == 0.f && p.f.y == 0.f && p.f.z == 0.f) return;  // beyond the cutoff: nothing to add
  atomic_add3(force, i, p.f);
  atomic_add3(force, j, make_float3(-p.f.x, -p.f.y, -p.f.z));
}

template <typename Eval>
__global__ void atomic_bond_kernel(BondListView bonds, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   float4* force, int* broken, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= bonds.count) return;
  const int i = bonds.rank[bonds.bi[b]], j = bonds.rank[bonds.bj[b]];
  bool ok;
  const PairResult p = eval_bond<Eval>(pd.pos[i], pd.pos[j], table[bonds.type[b]], box, ok);
  if (!ok) report_lowest(broken, b);
  atomic_add3(force, i, p.f);
  atomic_add3(force, j, make_float3(-p.f.x, -p.f.y, -p.f.z));
}

// ---- pair_warp -----------------------------------------------------------------------------

template <typename Eval>
__global__ void warp_pair_kernel(PairListView list, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                 int ntypes, float4* force, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const long long count = static_cast<long long>(*list.entries);
  int i = -1, j = -1;
  float3 f = make_float3(0.f, 0.f, 0.f);
  if (k < count) j = list.j[k];
  if (j >= 0) {  // a pair, not a pad: pads (i = -1) end a claim, a run of their own
    i = list.i(k);
    f = eval_pair<Eval>(__ldg(pd.pos + i), __ldg(pd.pos + j), Eval::kUsesCharge ? pd.charge[i] : 0.f,
                        Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, box)
            .f;
  }
  if (j >= 0 && (f.x != 0.f || f.y != 0.f || f.z != 0.f)) atomic_add3(force, j, make_float3(-f.x, -f.y, -f.z));
  // Segmented suffix sums over lanes with the same i (a row is contiguous, so a segment is a
  // run of lanes): after the loop the first lane of each run holds the run's total.
  float3 s = f;
  for (int o = 1; o < 32; o <<= 1) {
    const float x = __shfl_down_sync(0xffffffffu, s.x, o);
    const float y = __shfl_down_sync(0xffffffffu, s.y, o);
    const float z = __shfl_down_sync(0xffffffffu, s.z, o);
    const int other = __shfl_down_sync(0xffffffffu, i, o);
    if (lane + o < 32 && other == i) {
      s.x += x;
      s.y += y;
      s.z += z;
    }
  }
  const int prev = __shfl_up_sync(0xffffffffu, i, 1);
  const bool head = lane == 0 || prev != i;
  if (i >= 0 && head) atomic_add3(force, i, s);
}

// ---- atom_gather ---------------------------------------------------------------------------

// Particle i over its full row: the force in fixed point, written once (added to what earlier
// terms wrote when kAccumulate).
template <typename Eval, bool kAccumulate>
__global__ void gather_pair_kernel(const int* __restrict__ row_start, const int* __restrict__ row_count,
                                   const int* __restrict__ pj, ParticleData pd,
                                   const typename Eval::Params* __restrict__ table, int ntypes, FixedVec* force,
                                   const unsigned* tag, DeviceFlags* flags, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pd.n) return;
  const float4 xi = pd.pos[i];
  const float qi = Eval::kUsesCharge ? pd.charge[i] : 0.f;
  FixedVec sum = kAccumulate ? force[i] : FixedVec{};
  bool clamped = false;
  const int start = row_start[i], end = start + row_count[i];
  for (int k = start; k < end; ++k) {
    const int j = __ldg(pj + k);
    const float4 xj = __ldg(pd.pos + j);
    const Vec3<float> d = separation(xi, xj, box);
    float e;
    const float s =
        pair_force_divr<Eval>(dot(d, d), xi, xj, qi, Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table, ntypes, e);
    add_scaled(sum, s, d.x, d.y, d.z, clamped);
  }
  if (clamped) report_lowest(&flags->bad_force, static_cast<int>(tag[i]));
  force[i] = sum;
}

// Bonds of one kind, atom-parallel: tag t's bonds are [start[t], start[t + 1]) of (partner tag,
// type, bond index); added to the particle's fixed-point force.
template <typename Eval>
__global__ void gather_bond_kernel(const int* __restrict__ start, const unsigned* __restrict__ partner,
                                   const int* __restrict__ type, const int* __restrict__ bond_index,
                                   const unsigned* tag, const unsigned* rank, ParticleData pd,
                                   const typename Eval::Params* __restrict__ table, FixedVec* force, int* broken,
                                   DeviceFlags* flags, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pd.n) return;
  const unsigned t = tag[i];
  const float4 xi = pd.pos[i];
  FixedVec sum = force[i];
  bool clamped = false;
  for (int k = start[t]; k < start[t + 1]; ++k) {
    const Vec3<float> d = separation(xi, pd.pos[rank[partner[k]]], box);
    float e;
    bool ok;
    const float s = bond_force_divr<Eval>(dot(d, d), table[type[k]], e, ok);
    if (!ok) report_lowest(broken, bond_index[k]);
    add_scaled(sum, s, d.x, d.y, d.z, clamped);
  }
  if (clamped) report_lowest(&flags->bad_force, static_cast<int>(t));
  force[i] = sum;
}

// ---- energies and virial (thermo steps; the same for every strategy) ------------------------

// Accumulators of one term's energy and virial, in split fixed point (kernels/fixed_point.h):
// [0, 1] energy whole and fraction, [2, 3] virial, [4] terms that were not finite.
constexpr int kEnergyWords = 5;

// The block's sums of the five words, added to acc by its first threads: one atomic per word and
// block.
// (An atomic per word and warp, 43M pairs at 1M particles, serialised at L2 on five addresses
// and made an energy evaluation 4 ms, 26 times the force kernel.) Call from every thread.
__device__ __forceinline__ void add_energy_words(long long* acc, long long ew, long long ef, long long ww, long long wf,
                                                 long long bad) {
  __shared__ long long warp_sums[kBlockSize / 32][kEnergyWords];
  long long v[kEnergyWords] = {ew, ef, ww, wf, bad};
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int q = 0; q < kEnergyWords; ++q) {
    for (int o = 16; o > 0; o >>= 1) v[q] += __shfl_down_sync(0xffffffffu, v[q], o);
    if (lane == 0) warp_sums[warp][q] = v[q];
  }
  __syncthreads();
  if (threadIdx.x < kEnergyWords) {
    long long total = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += warp_sums[w][threadIdx.x];
    if (total)
      atomicAdd(reinterpret_cast<unsigned long long*>(acc + threadIdx.x), static_cast<unsigned long long>(total));
  }
}

// Energy and virial of the pairs, scaled by `scale` (0.5 for full lists, which hold every pair
// twice). Exact, so the sum does not depend on the order of the pairs. A grid of a few blocks
// per multiprocessor strides over the pairs (launch blocks of kBlockSize threads).
template <typename Eval>
__global__ void pair_energy_kernel(PairListView list, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   int ntypes, float scale, long long* acc) {
  const BoxGeometry<float> box = *pd.box;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  const long long count = static_cast<long long>(*list.entries);
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = __ldg(list.j + k), i = list.i(k);  // both loads in flight before the branch
    if (j < 0) continue;                             // a pad
    const PairResult p = eval_pair<Eval>(pd.pos[i], pd.pos[j], Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                         Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, box);
    split_add(scale * p.e, ew, ef, bad);
    split_add(scale * p.w, ww, wf, bad);
  }
  add_energy_words(acc, ew, ef, ww, wf, bad);
}

// The words of the block's items, each of the system `mine` (-1: no item), added to system k's
// accumulators at acc + k * stride for every system k of the block's items: one block
// reduction per system (a single system: one). Call from every thread.
__device__ __forceinline__ void add_energy_words_by_system(long long* acc, int stride, int mine, long long ew,
                                                           long long ef, long long ww, long long wf, long long bad) {
  __shared__ int span[2];
  const int lo = block_reduce(mine < 0 ? INT_MAX : mine, MinOp{}, INT_MAX);
  const int hi = block_reduce(mine, MaxOp{}, -1);
  if (threadIdx.x == 0) {
    span[0] = lo;
    span[1] = hi;
  }
  __syncthreads();
  const int first = span[0], last = span[1];
  for (int k = first; k <= last; ++k) {
    const bool in = mine == k;
    add_energy_words(acc + static_cast<size_t>(k) * stride, in ? ew : 0, in ? ef : 0, in ? ww : 0, in ? wf : 0,
                     in ? bad : 0);
    __syncthreads();  // the shared sums are reused for the next system
  }
}

// Energy and virial of the pairs of each system of an ensemble: a thread per particle i sums its
// row (the pairs listed with i as their home; `scale` 0.5 for full lists), and the block adds
// them to the accumulators of the systems its particles belong to (particles [k s, (k + 1) s) of
// the current numbering are system k's). Exact, as pair_energy_kernel.
template <typename Eval>
__global__ void pair_energy_rows_kernel(const int* __restrict__ row_start, const int* __restrict__ row_count,
                                        const int* __restrict__ pj, ParticleData pd,
                                        const typename Eval::Params* __restrict__ table, int ntypes, float scale,
                                        int system_size, long long* acc, int stride) {
  const BoxGeometry<float> box = *pd.box;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  if (i < pd.n) {
    const int start = row_start[i], count = row_count[i];
    for (int e = start; e < start + count; ++e) {
      const int j = pj[e];
      const PairResult p = eval_pair<Eval>(pd.pos[i], pd.pos[j], Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                           Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, box);
      split_add(scale * p.e, ew, ef, bad);
      split_add(scale * p.w, ww, wf, bad);
    }
  }
  add_energy_words_by_system(acc, stride, i < pd.n ? i / system_size : -1, ew, ef, ww, wf, bad);
}

// System k holds tags [k s, (k + 1) s): a bond's system is its first tag's (a single system: s is
// every tag).
template <typename Eval>
__global__ void bond_energy_kernel(BondListView bonds, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   int system_size, long long* acc, int stride) {
  const BoxGeometry<float> box = *pd.box;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  if (b < bonds.count) {
    bool ok;
    const PairResult p = eval_bond<Eval>(pd.pos[bonds.rank[bonds.bi[b]]], pd.pos[bonds.rank[bonds.bj[b]]],
                                         table[bonds.type[b]], box, ok);
    split_add(p.e, ew, ef, bad);
    split_add(p.w, ww, wf, bad);
  }
  add_energy_words_by_system(acc, stride, b < bonds.count ? static_cast<int>(bonds.bi[b] / system_size) : -1, ew, ef,
                             ww, wf, bad);
}

// ---- all_pairs -------------------------------------------------------------------------------

// Every pair of each system, no list: for small systems (a 500-particle liquid's list costs more
// to search and sort than its N^2 pairs cost to evaluate). all_pairs never renumbers the
// particles, so particle p is tag p and system s is particles [s S, (s + 1) S).
struct AllPairsView {
  int system_size;        // S
  int lanes;              // threads per particle: a power of two up to 32
  const int* exclusions;  // the term's partners left out, by tag (ascending, -1 after the last); or null
  int exclusion_width;
  float skip_sq;  // pairs at least this far apart (squared) are not evaluated: a little beyond the
                  // term's largest cutoff, where every force is exactly 0
  // Particle i's row of exclusions (tag i: all_pairs never renumbers), or null without any.
  __device__ const int* exclusion_row(int i) const {
    return exclusions ? exclusions + static_cast<size_t>(i) * exclusion_width : nullptr;
  }
};

// Whether partner j is one of i's exclusions. The partners come in ascending order, so a cursor
// k into i's ascending row moves forward only.
__device__ __forceinline__ bool excluded_partner(const int* row, int width, int& k, int j) {
  while (k < width) {
    const int e = row[k];
    if (e < 0 || e > j) return false;
    ++k;
    if (e == j) return true;
  }
  return false;
}

// A group of `lanes` threads per particle i (aligned in the warp): lane l takes partners
// first + l, first + l + lanes, ... of i's system, and the group adds its fixed-point sums by
// shuffles. Integer sums do not depend on the order, so the force has atom_gather's bits: the
// same pairs (each beyond the cutoff adds exactly 0), each evaluated as atom_gather evaluates it.
// Every thread of the grid reaches the shuffles (the groups beyond n add zeros).
template <typename Eval>
__global__ void all_pairs_kernel(ParticleData pd, const typename Eval::Params* __restrict__ table, int ntypes,
                                 AllPairsView v, bool accumulate, FixedVec* force, DeviceFlags* flags,
                                 const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = t / v.lanes, lane = t % v.lanes;
  const bool mine = i < pd.n;
  FixedVec sum{};
  bool clamped = false;
  if (mine) {
    const float4 xi = pd.pos[i];
    const float qi = Eval::kUsesCharge ? pd.charge[i] : 0.f;
    const int first = (i / v.system_size) * v.system_size, end = first + v.system_size;
    // Partner j as atom_gather evaluates and adds it (separation() is the one minimum image of
    // every strategy).
    auto evaluate = [&](int j, const float4 xj) {
      const Vec3<float> d = separation(xi, xj, box);
      float e;
      const float s = pair_force_divr<Eval>(dot(d, d), xi, xj, qi, Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f,
                                            table, ntypes, e);
      add_scaled(sum, s, d.x, d.y, d.z, clamped);  // as atom_gather: a NaN separation clamps and reports
    };
    if (v.exclusions) {
      const int* row = v.exclusion_row(i);
      int k = 0;
      for (int j = first + lane; j < end; j += v.lanes) {
        if (j == i || excluded_partner(row, v.exclusion_width, k, j)) continue;
        const float4 xj = __ldg(pd.pos + j);
        const Vec3<float> d = separation(xi, xj, box);
        if (!(dot(d, d) >= v.skip_sq)) evaluate(j, xj);  // beyond: force 0 (a NaN is evaluated: it reports)
      }
    } else {
      // Without exclusions, four partners per pass, each screened with a cheaper minimum image
      // (x - L rint(x / L)); only those within skip_sq are evaluated, with separation(). The two
      // images agree on every pair within the cutoff (their components are below L / 2), and
      // skip_sq's margin of 1e-4 exceeds the screen's rounding, so no pair with a force is left
      // out. The loop is bound by issuing these tests (~20 instructions per partner).
      const bool p = box.periodic;  // open: no image (whatever the edges hold)
      const float lx = p ? box.L.x : 0.f, ly = p ? box.L.y : 0.f, lz = p ? box.L.z : 0.f;
      const float ix = p ? 1.f / lx : 0.f, iy = p ? 1.f / ly : 0.f, iz = p ? 1.f / lz : 0.f;
      for (int j0 = first + lane; j0 < end; j0 += 4 * v.lanes) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int j = j0 + u * v.lanes;
          if (j >= end || j == i) continue;
          const float4 xj = __ldg(pd.pos + j);
          float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
          dx -= lx * rintf(dx * ix);
          dy -= ly * rintf(dy * iy);
          dz -= lz * rintf(dz * iz);
          if (!(dx * dx + dy * dy + dz * dz >= v.skip_sq)) evaluate(j, xj);
        }
      }
    }
  }
  int any_clamped = clamped;
  for (int off = v.lanes >> 1; off > 0; off >>= 1) {
    sum.x += __shfl_xor_sync(0xffffffffu, sum.x, off);
    sum.y += __shfl_xor_sync(0xffffffffu, sum.y, off);
    sum.z += __shfl_xor_sync(0xffffffffu, sum.z, off);
    any_clamped |= __shfl_xor_sync(0xffffffffu, any_clamped, off);
  }
  if (!mine || lane != 0) return;
  if (accumulate) {
    const FixedVec before = force[i];
    sum.x += before.x;
    sum.y += before.y;
    sum.z += before.z;
  }
  if (any_clamped) report_lowest(&flags->bad_force, i);  // particle i is tag i
  force[i] = sum;
}

// Energy and virial of every pair of each system (each pair from both sides, halved, as a full
// list's rows are summed): a thread per particle, then per system as pair_energy_rows_kernel.
template <typename Eval>
__global__ void all_pairs_energy_kernel(ParticleData pd, const typename Eval::Params* __restrict__ table, int ntypes,
                                        AllPairsView v, long long* acc, int stride) {
  const BoxGeometry<float> box = *pd.box;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  if (i < pd.n) {
    const int first = (i / v.system_size) * v.system_size, end = first + v.system_size;
    const int* row = v.exclusion_row(i);
    int k = 0;
    for (int j = first; j < end; ++j) {
      if (j == i || (row && excluded_partner(row, v.exclusion_width, k, j))) continue;
      const PairResult p = eval_pair<Eval>(pd.pos[i], pd.pos[j], Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                           Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, box);
      split_add(0.5f * p.e, ew, ef, bad);
      split_add(0.5f * p.w, ww, wf, bad);
    }
  }
  add_energy_words_by_system(acc, stride, i < pd.n ? i / v.system_size : -1, ew, ef, ww, wf, bad);
}

// ---- the virial per direction for the barostat (kernels/box_update.cuh) ------------------------

// The virial per direction W_aa = sum over pairs of (F/r) d_a d_a of the positions the last forces
// were computed for, into the barostat's sums, when the next step's box update is due (the
// strategies without slots; the slot strategies' pair kernels sum it with the slots). Each
// pair once: a full list's (i, j) with j > i, which is the half list's pair, in the same order,
// so every deterministic strategy sums the same bits. A grid of a few blocks per multiprocessor
// strides over the entries.
template <typename Eval>
__global__ void __launch_bounds__(kBlockSize, 8)
    pair_virial_kernel(PairListView list, ParticleData pd, const typename Eval::Params* __restrict__ table, int ntypes,
                       bool full, BarostatSettings settings, unsigned long long* sums, const StepControl* ctrl) {
  if (halted(ctrl) || !settings.due(static_cast<int64_t>(ctrl->step))) return;
  const BoxGeometry<float> box = *pd.box;
  long long w[3] = {0, 0, 0};
  const long long count = static_cast<long long>(*list.entries);
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = __ldg(list.j + k), i = list.i(k);
    if (j < 0 || (full && j < i)) continue;
    const float4 xi = __ldg(pd.pos + i), xj = __ldg(pd.pos + j);
    const Vec3<float> d = separation(xi, xj, box);
    float e;
    const float s = pair_force_divr<Eval>(dot(d, d), xi, xj, Eval::kUsesCharge ? __ldg(pd.charge + i) : 0.f,
                                          Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table, ntypes, e);
    w[0] += box_fixed((s * d.x) * d.x);
    w[1] += box_fixed((s * d.y) * d.y);
    w[2] += box_fixed((s * d.z) * d.z);
  }
  add_box_words(sums, w, 0, 3);
}

// all_pairs' virial per direction, each pair once: `lanes` threads per particle a (as
// all_pairs_kernel) take the partners b = a + k (mod S), k = 1 .. (S - 1) / 2 (and S / 2 for the
// first half of an even S), which is every pair of the system once, with the same work for every
// particle. The fixed-point words do not depend on the order (and (s (-d)) (-d) is (s d) d), so
// the bits are every strategy's; pairs beyond skip_sq add 0.
template <typename Eval>
__global__ void all_pairs_virial_kernel(ParticleData pd, const typename Eval::Params* __restrict__ table, int ntypes,
                                        AllPairsView v, BarostatSettings settings, unsigned long long* sums,
                                        const StepControl* ctrl) {
  if (halted(ctrl) || !settings.due(static_cast<int64_t>(ctrl->step))) return;
  const BoxGeometry<float> box = *pd.box;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = t / v.lanes, lane = t % v.lanes;
  long long w[3] = {0, 0, 0};
  if (i < pd.n) {
    const int S = v.system_size, first = (i / S) * S, a = i - first;
    const int K = (S - 1) / 2 + (S % 2 == 0 && a < S / 2 ? 1 : 0);
    const float4 xi = pd.pos[i];
    const float qi = Eval::kUsesCharge ? pd.charge[i] : 0.f;
    const int* row = v.exclusion_row(i);
    int cursor = 0;
    bool wrapped = false;
    for (int k = 1 + lane; k <= K; k += v.lanes) {
      int b = a + k;
      if (b >= S) {
        b -= S;
        if (!wrapped) wrapped = true, cursor = 0;  // ascending again from the system's start
      }
      const int j = first + b;
      if (row && excluded_partner(row, v.exclusion_width, cursor, j)) continue;
      const float4 xj = __ldg(pd.pos + j);
      const Vec3<float> d = separation(xi, xj, box);
      const float rsq = dot(d, d);
      if (rsq >= v.skip_sq) continue;  // adds 0 (a NaN goes on, as in the list strategies)
      float e;
      const float s =
          pair_force_divr<Eval>(rsq, xi, xj, qi, Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table, ntypes, e);
      w[0] += box_fixed((s * d.x) * d.x);
      w[1] += box_fixed((s * d.y) * d.y);
      w[2] += box_fixed((s * d.z) * d.z);
    }
  }
  add_box_words(sums, w, 0, 3);
}

template <typename Eval>
__global__ void bond_virial_kernel(BondListView bonds, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   BarostatSettings settings, unsigned long long* sums, const StepControl* ctrl) {
  if (halted(ctrl) || !settings.due(static_cast<int64_t>(ctrl->step))) return;
  const BoxGeometry<float> box = *pd.box;
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  long long w[3] = {0, 0, 0};
  if (b < bonds.count) {
    const Vec3<float> d = separation(pd.pos[bonds.rank[bonds.bi[b]]], pd.pos[bonds.rank[bonds.bj[b]]], box);
    float e;
    bool ok;
    const float s = bond_force_divr<Eval>(dot(d, d), table[bonds.type[b]], e, ok);
    w[0] = box_fixed((s * d.x) * d.x);
    w[1] = box_fixed((s * d.y) * d.y);
    w[2] = box_fixed((s * d.z) * d.z);
  }
  add_box_words(sums, w, 0, 3);
}

// ---- the pulling's external forces (potentials/pulling.h) --------------------------------------

// Position of particle p with its box crossings: the pulling's springs act on unwrapped positions.
__device__ __forceinline__ Vec3<float> unwrapped_position(float4 x, int3 image, const BoxGeometry<float>& box) {
  return {x.x + image.x * box.L.x, x.y + image.y * box.L.y, x.z + image.z * box.L.z};
}

// The pulling's forces for outputs: pull_force_kernel in cuda_backend.cu (its one user).

}  // namespace pairmd
