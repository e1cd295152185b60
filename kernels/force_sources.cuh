// Where the integrate kernels (kernels/integrate_kernel.cuh) get each particle's force from:
//
//   SlotForce        pair_slots_fused / pair_slots: the sum of the particle's slots. Each pair k
//                    = (i, j) of a half list holds s_k = F/r in its own slot, written once by the
//                    pair kernel; i adds s_k (x_i - x_j) and j subtracts it, the vector rebuilt
//                    here from the positions the pair kernel read. A block sums kSumParticles
//                    particles, kSumLanes threads each: the lanes of a particle take every
//                    kSumLanes-th entry of its column (pairs in which it is j) and then of its
//                    row (pairs in which it is i), so all lanes run the same loop, neighbouring
//                    lanes read neighbouring entries, and many loads are in flight.
//   FixedArrayForce  atom_gather: a fixed-point force per particle, summed by the gather kernels.
//   ArrayForce       pair_atomic / pair_warp: a float force per particle (float atomics).
//
// Each adds the particle's extra force where the run has one (angles, dihedrals, impropers,
// scaled bonded pairs: kernels/bonded_kernels.cuh; the reciprocal-space forces of particle-mesh
// Ewald: kernels/pme_gpu.cuh), in fixed point before the conversion to float for the first two
// (so the deterministic strategies stay bitwise equal), as a float for the third; `extra` is
// null otherwise, and costs a predicted branch.
//
// The first two add in 64-bit fixed point (kernels/fixed_point.h), so the force does not depend
// on the order of the pairs, the numbering of the particles or when the list was built, and
// the slot and gather strategies give bitwise the same forces. Both sides of a pair add
// s_k * separation(own, partner): separation(j, i) is exactly -separation(i, j) and the
// fixed-point conversion is odd, so that is exactly "j subtracts what i adds".
#pragma once

#include <cuda_runtime.h>

#include "base/work_key.h"
#include "kernels/fixed_point.h"
#include "kernels/pair_physics.cuh"
#include "kernels/step_control.cuh"
#include "neighbor/gpu_pair_list.cuh"

namespace pairmd {

constexpr int kMaxPairTerms = 4;
constexpr int kMaxBondTerms = 4;
constexpr int kSumLanes = 8;                          // threads per particle in the slot sums
constexpr int kSumParticles = 32;                     // particles per block: one warp integrates them
constexpr int kSumBlock = kSumLanes * kSumParticles;  // threads per block

// Slot-summation blocks for n particles.
inline int slot_blocks(int n) { return (n + kSumParticles - 1) / kSumParticles; }

// One nonbonded term: the slots and the list's rows and columns (current numbering).
struct PairSlots {
  const float* slot;  // F/r of pair k
  const int* pj;      // row: pairs [row_start[p], + row_count[p]) have i = p, partner pj[k]
  const int* row_start;
  const int* row_count;
  int col_width;  // column: entries [p * col_width, + col_count[p]) of cols have j = p
  const int* col_count;
  const ColumnEntry* cols;
};

// One bond kind: static, indexed by tag. Bond b = (i, j) with tag i < tag j.
struct BondSlots {
  const float* slot;     // F/r of bond b
  const int* row_start;  // bonds of tag t as i: [row_start[t], + row_count[t]), partner tag partner[b]
  const int* row_count;
  const unsigned* partner;
  const int* col_start;  // bonds of tag t as j: col_bond[e], partner tag col_partner[e]
  const int* col_count;
  const int* col_bond;
  const unsigned* col_partner;
};

struct SlotForce {
  KernelArray<PairSlots, kMaxPairTerms> pairs;
  int npairs;
  KernelArray<BondSlots, kMaxBondTerms> bonds;
  int nbonds;
  const float4* pos;                     // the positions the pair kernels read
  const unsigned* tag;                   // tag of each particle
  const unsigned* rank;                  // particle of each tag
  BoxGeometry<float> box;                // the box (without a barostat: it never changes)
  const BoxGeometry<float>* device_box;  // the box in device memory, which a barostat changes
                                         // (read by the kernels' kDeviceBox variants)
  const FixedVec* extra;                 // the extra force per particle (current numbering), or null

  // Lane `lane`'s share (of kSumLanes) of the force on particle p at xp, in `box`.
  __device__ __forceinline__ FixedVec partial(int p, int lane, float4 xp, const BoxGeometry<float>& box,
                                              bool& clamped) const {
    FixedVec f;
    for (int v = 0; v < npairs; ++v) {
      const PairSlots& s = pairs[v];
      const int ncol = s.col_count[p], nrow = s.row_count[p];
      const int cb = p * s.col_width, rb = s.row_start[p] - ncol;
#pragma unroll 2
      for (int e = lane; e < ncol + nrow; e += kSumLanes) {
        int q;
        float sk;
        if (e < ncol) {
          const ColumnEntry c = s.cols[cb + e];
          q = c.partner;
          sk = __ldg(s.slot + c.pair);
        } else {
          q = __ldg(s.pj + rb + e);
          sk = __ldg(s.slot + rb + e);
        }
        const Vec3<float> d = separation(xp, __ldg(pos + q), box);
        add_scaled(f, sk, d.x, d.y, d.z, clamped);
      }
    }
    if (nbonds > 0) {
      const unsigned t = tag[p];
      for (int v = 0; v < nbonds; ++v) {
        const BondSlots& s = bonds[v];
        const int ncol = s.col_count[t], nrow = s.row_count[t];
        for (int e = lane; e < ncol + nrow; e += kSumLanes) {
          int b, q;
          if (e < ncol) {
            b = s.col_bond[s.col_start[t] + e];
            q = rank[s.col_partner[s.col_start[t] + e]];
          } else {
            b = s.row_start[t] + e - ncol;
            q = rank[s.partner[b]];
          }
          const Vec3<float> d = separation(xp, pos[q], box);
          add_scaled(f, s.slot[b], d.x, d.y, d.z, clamped);
        }
      }
    }
    return f;
  }
};

// The block's share of the slot summation: the forces of particles [first, first +
// kSumParticles) into out[] (shared memory). Launch with kSumBlock threads per block; every
// thread must call it (the lanes of a particle meet by shuffles). kDeviceBox: the box is read in
// device memory (s.device_box, which a barostat changes), not from s.box.
template <bool kDeviceBox = false>
__device__ __forceinline__ void sum_slots_block(const SlotForce& s, int first, int n, FixedVec* out,
                                                DeviceFlags* flags) {
  const int local = threadIdx.x / kSumLanes, lane = threadIdx.x % kSumLanes, p = first + local;
  bool clamped = false;
  const BoxGeometry<float> box = kDeviceBox ? *s.device_box : s.box;
  FixedVec f = p < n ? s.partial(p, lane, s.pos[p], box, clamped) : FixedVec{};
#pragma unroll
  for (int o = 1; o < kSumLanes; o <<= 1) {  // integer sums: the order of the lanes does not matter
    f.x += __shfl_xor_sync(0xffffffffu, f.x, o);
    f.y += __shfl_xor_sync(0xffffffffu, f.y, o);
    f.z += __shfl_xor_sync(0xffffffffu, f.z, o);
  }
  if (lane == 0) {
    if (s.extra && p < n) {
      const FixedVec e = s.extra[p];
      f.x += e.x;
      f.y += e.y;
      f.z += e.z;
    }
    out[local] = f;
  }
  if (clamped) {
    report_lowest(&flags->bad_force, static_cast<int>(s.tag[p]));
    __threadfence();  // in before the integrate kernel's ticket (kernels/integrate_kernel.cuh)
  }
}

struct FixedArrayForce {
  const FixedVec* force;
  const FixedVec* extra;  // or null
  __device__ __forceinline__ float3 operator()(int p) const {
    FixedVec f = force[p];
    if (extra) {
      const FixedVec e = extra[p];
      f.x += e.x;
      f.y += e.y;
      f.z += e.z;
    }
    return make_float3(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z));
  }
};

struct ArrayForce {
  const float4* force;
  const FixedVec* extra;  // or null
  __device__ __forceinline__ float3 operator()(int p) const {
    const float4 f = force[p];
    if (!extra) return make_float3(f.x, f.y, f.z);
    const FixedVec e = extra[p];
    return make_float3(f.x + fixed_to_float(e.x), f.y + fixed_to_float(e.y), f.z + fixed_to_float(e.z));
  }
};

}  // namespace pairmd
