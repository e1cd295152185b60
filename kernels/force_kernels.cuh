// Force kernels of the force-summation strategies. All of them evaluate pairs through
// eval_pair / eval_bond (kernels/pair_physics.cuh); they differ only in the thread mapping
// and in how the per-pair forces reach the per-particle totals:
//
//   pair_slots[_fused]  one thread per pair of the half list; the pair's force goes to its own
//                       slot, which i adds and j subtracts (kernels/slot_layout.cuh), summed
//                       later without atomics. Deterministic.
//   pair_atomic         one thread per pair; float atomicAdd of +f and -f (scatter).
//   pair_warp           one thread per pair of the sorted list; the contributions to the same
//                       i are summed in the warp by a segmented shuffle reduction, so one
//                       atomicAdd per segment (and one per pair for j) reaches memory.
//   atom_gather         one thread per particle over a full list: each pair computed twice,
//                       the sum kept in registers, one plain store. Deterministic.
#pragma once

#include <cuda_runtime.h>

#include "kernels/block_reduce.cuh"
#include "integrators/gpu_integrate.cuh"
#include "kernels/pair_physics.cuh"

namespace pairmd {

struct ParticleData {
  const float4* pos;     // xyz + type bits
  const float* charge;
  int n;
  BoxGeometry<float> box;
};

// ---- pair_slots ----------------------------------------------------------------------------

// Pair k = (pi[k], pj[k]) writes its force on i into slot k; j reads it negated
// (kernels/slot_layout.cuh). One coalesced 16-byte store per pair.
template <typename Eval>
__global__ void slots_pair_kernel(const int* __restrict__ pi, const int* __restrict__ pj, int count, ParticleData pd,
                                  const typename Eval::Params* __restrict__ table, int ntypes, float4* __restrict__ slots) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const int i = pi[k], j = pj[k];
  const PairResult p = eval_pair<Eval>(__ldg(pd.pos + i), __ldg(pd.pos + j), Eval::kUsesCharge ? __ldg(pd.charge + i) : 0.f,
                                       Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table, ntypes, pd.box);
  slots[k] = make_float4(p.f.x, p.f.y, p.f.z, 0.f);
}

template <typename Eval>
__global__ void slots_bond_kernel(const int* __restrict__ bi, const int* __restrict__ bj, const int* __restrict__ type,
                                  int count, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                  float4* __restrict__ slots, int* broken) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  bool ok;
  const PairResult p = eval_bond<Eval>(pd.pos[bi[k]], pd.pos[bj[k]], table[type[k]], pd.box, ok);
  if (!ok) report_lowest(broken, k);
  slots[k] = make_float4(p.f.x, p.f.y, p.f.z, 0.f);
}

// ---- pair_atomic -------------------------------------------------------------------------

__device__ __forceinline__ void atomic_add3(float4* f, int i, float3 v) {
  atomicAdd(&f[i].x, v.x);
  atomicAdd(&f[i].y, v.y);
  atomicAdd(&f[i].z, v.z);
}

template <typename Eval>
__global__ void atomic_pair_kernel(const int* __restrict__ pi, const int* __restrict__ pj, int count, ParticleData pd,
                                   const typename Eval::Params* __restrict__ table, int ntypes, float4* force) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const int i = pi[k], j = pj[k];
  const PairResult p = eval_pair<Eval>(__ldg(pd.pos + i), __ldg(pd.pos + j), Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                       Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, pd.box);
  if (p.f.x == 0.f && p.f.y == 0.f && p.f.z == 0.f) return;  // beyond the cutoff: nothing to add
  atomic_add3(force, i, p.f);
  atomic_add3(force, j, make_float3(-p.f.x, -p.f.y, -p.f.z));
}

template <typename Eval>
__global__ void atomic_bond_kernel(const int* __restrict__ bi, const int* __restrict__ bj, const int* __restrict__ type,
                                   int count, ParticleData pd, const typename Eval::Params* __restrict__ table, float4* force,
                                   int* broken) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  bool ok;
  const PairResult p = eval_bond<Eval>(pd.pos[bi[k]], pd.pos[bj[k]], table[type[k]], pd.box, ok);
  if (!ok) report_lowest(broken, k);
  atomic_add3(force, bi[k], p.f);
  atomic_add3(force, bj[k], make_float3(-p.f.x, -p.f.y, -p.f.z));
}

// ---- pair_warp -----------------------------------------------------------------------------

template <typename Eval>
__global__ void warp_pair_kernel(const int* __restrict__ pi, const int* __restrict__ pj, int count, ParticleData pd,
                                 const typename Eval::Params* __restrict__ table, int ntypes, float4* force) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  int i = -1, j = -1;
  float3 f = make_float3(0.f, 0.f, 0.f);
  if (k < count) {
    i = pi[k];
    j = pj[k];
    f = eval_pair<Eval>(__ldg(pd.pos + i), __ldg(pd.pos + j), Eval::kUsesCharge ? pd.charge[i] : 0.f,
                        Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, pd.box).f;
  }
  if (j >= 0 && (f.x != 0.f || f.y != 0.f || f.z != 0.f)) atomic_add3(force, j, make_float3(-f.x, -f.y, -f.z));
  // Segmented suffix sums over lanes with the same i (the list is sorted by i, so a segment is
  // a run of lanes): after the loop the first lane of each run holds the run's total.
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

template <typename Eval, bool kAccumulate>
__global__ void gather_pair_kernel(const int* __restrict__ row_start, const int* __restrict__ row_count,
                                   const int* __restrict__ pj, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   int ntypes, float4* force) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pd.n) return;
  const float4 xi = pd.pos[i];
  const float qi = Eval::kUsesCharge ? pd.charge[i] : 0.f;
  float3 sum = make_float3(0.f, 0.f, 0.f);
  const int start = row_start[i], end = start + row_count[i];
  for (int k = start; k < end; ++k) {
    const int j = __ldg(pj + k);
    const float3 f = eval_pair<Eval>(xi, __ldg(pd.pos + j), qi, Eval::kUsesCharge ? __ldg(pd.charge + j) : 0.f, table,
                                     ntypes, pd.box).f;
    sum.x += f.x;
    sum.y += f.y;
    sum.z += f.z;
  }
  if (kAccumulate) {
    const float4 old = force[i];
    sum.x += old.x;
    sum.y += old.y;
    sum.z += old.z;
  }
  force[i] = make_float4(sum.x, sum.y, sum.z, 0.f);
}

// Bonds of one kind, atom-parallel: row p of (partner, type) lists every bond of p.
template <typename Eval>
__global__ void gather_bond_kernel(const int* __restrict__ row_start, const int* __restrict__ partner,
                                   const int* __restrict__ type, const int* __restrict__ bond_index, ParticleData pd,
                                   const typename Eval::Params* __restrict__ table, float4* force, int* broken) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pd.n) return;
  const float4 xi = pd.pos[i];
  float4 sum = force[i];
  for (int k = row_start[i]; k < row_start[i + 1]; ++k) {
    bool ok;
    const float3 f = eval_bond<Eval>(xi, pd.pos[partner[k]], table[type[k]], pd.box, ok).f;
    if (!ok) report_lowest(broken, bond_index[k]);
    sum.x += f.x;
    sum.y += f.y;
    sum.z += f.z;
  }
  force[i] = sum;
}

// ---- energies and virial (thermo steps; the same for every strategy) ------------------------

// parts[blockIdx.x] = energy, parts[gridDim.x + blockIdx.x] = virial of this block's pairs,
// scaled by `scale` (0.5 for full lists, which hold every pair twice).
template <typename Eval>
__global__ void pair_energy_kernel(const int* __restrict__ pi, const int* __restrict__ pj, int count, ParticleData pd,
                                   const typename Eval::Params* __restrict__ table, int ntypes, double scale, double* parts) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  double e = 0.0, w = 0.0;
  if (k < count) {
    const int i = pi[k], j = pj[k];
    const PairResult p = eval_pair<Eval>(pd.pos[i], pd.pos[j], Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                         Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, pd.box);
    e = scale * p.e;
    w = scale * p.w;
  }
  e = block_reduce(e, SumOp{}, 0.0);
  w = block_reduce(w, SumOp{}, 0.0);
  if (threadIdx.x == 0) {
    parts[blockIdx.x] = e;
    parts[gridDim.x + blockIdx.x] = w;
  }
}

template <typename Eval>
__global__ void bond_energy_kernel(const int* __restrict__ bi, const int* __restrict__ bj, const int* __restrict__ type,
                                   int count, ParticleData pd, const typename Eval::Params* __restrict__ table, double* parts) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  double e = 0.0, w = 0.0;
  if (k < count) {
    bool ok;
    const PairResult p = eval_bond<Eval>(pd.pos[bi[k]], pd.pos[bj[k]], table[type[k]], pd.box, ok);
    e = p.e;
    w = p.w;
  }
  e = block_reduce(e, SumOp{}, 0.0);
  w = block_reduce(w, SumOp{}, 0.0);
  if (threadIdx.x == 0) {
    parts[blockIdx.x] = e;
    parts[gridDim.x + blockIdx.x] = w;
  }
}

}  // namespace pairmd
