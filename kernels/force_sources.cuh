// Where the integrate kernel (kernels/integrate_kernel.cuh) gets each particle's force from:
//
//   SlotForce        pair_slots_fused / pair_slots: the sum of the particle's slots. Each pair k
//                    = (i, j) of a half list holds s_k = F/r in its own slot, written once by the
//                    pair kernel; i adds s_k (x_i - x_j), j subtracts the same vector, rebuilt
//                    here from the positions the pair kernel read. Two neighbouring threads per
//                    particle: part 0 the pairs in which it is j (its column), part 1 those in
//                    which it is i (its row); bonds likewise, by tag.
//   FixedArrayForce  atom_gather: a fixed-point force per particle, summed by the gather kernels.
//   ArrayForce       pair_atomic / pair_warp: a float force per particle (float atomics).
//
// The first two add in 64-bit fixed point (kernels/fixed_point.h), so the force does not depend
// on the order of the pairs, the numbering of the particles or when the list was built, and
// the slot and gather strategies give bitwise the same forces.
#pragma once

#include <cuda_runtime.h>

#include "kernels/fixed_point.h"
#include "kernels/pair_physics.cuh"

namespace pairmd {

constexpr int kMaxPairTerms = 4;
constexpr int kMaxBondTerms = 4;

// One nonbonded term: the slots and the list's rows and columns (current numbering).
struct PairSlots {
  const float* slot;        // F/r of pair k
  const int* pj;            // row side: pairs [row_start[p], + row_count[p]) have i = p, partner pj[k]
  const int* row_start;
  const int* row_count;
  const int* col_start;     // column side: entries [col_start[p], + col_count[p]) have j = p,
  const int* col_count;     //   pair col_pair[e] and partner col_partner[e]
  const int* col_pair;
  const int* col_partner;
};

// One bond kind: static, indexed by tag. Bond b = (i, j) with tag i < tag j.
struct BondSlots {
  const float* slot;            // F/r of bond b
  const int* row_start;         // bonds of tag t as i: [row_start[t], + row_count[t]), partner tag partner[b]
  const int* row_count;
  const unsigned* partner;
  const int* col_start;         // bonds of tag t as j: col_bond[e], partner tag col_partner[e]
  const int* col_count;
  const int* col_bond;
  const unsigned* col_partner;
};

struct SlotForce {
  static constexpr int kParts = 2;
  PairSlots pairs[kMaxPairTerms];
  int npairs;
  BondSlots bonds[kMaxBondTerms];
  int nbonds;
  const float4* pos;        // the positions the pair kernels read
  const unsigned* tag;      // tag of each particle
  const unsigned* rank;     // particle of each tag
  BoxGeometry<float> box;

  // Part `part` of the force on particle p at xp.
  __device__ __forceinline__ FixedVec partial(int p, int part, float4 xp, bool& clamped) const {
    FixedVec f;
    for (int v = 0; v < npairs; ++v) {
      const PairSlots& s = pairs[v];
      if (part == 0) {
        const int b = s.col_start[p], e = b + s.col_count[p];
#pragma unroll 4
        for (int k = b; k < e; ++k) {
          const int q = __ldg(s.col_partner + k);
          const float sk = __ldg(s.slot + __ldg(s.col_pair + k));
          const Vec3<float> d = separation(__ldg(pos + q), xp, box);  // x_i - x_j, i = q
          sub_scaled(f, sk, d.x, d.y, d.z, clamped);
        }
      } else {
        const int b = s.row_start[p], e = b + s.row_count[p];
#pragma unroll 4
        for (int k = b; k < e; ++k) {
          const int q = __ldg(s.pj + k);
          const float sk = __ldg(s.slot + k);
          const Vec3<float> d = separation(xp, __ldg(pos + q), box);
          add_scaled(f, sk, d.x, d.y, d.z, clamped);
        }
      }
    }
    if (nbonds > 0) {
      const unsigned t = tag[p];
      for (int v = 0; v < nbonds; ++v) {
        const BondSlots& s = bonds[v];
        if (part == 0) {
          const int b = s.col_start[t], e = b + s.col_count[t];
          for (int k = b; k < e; ++k) {
            const Vec3<float> d = separation(pos[rank[s.col_partner[k]]], xp, box);
            sub_scaled(f, s.slot[s.col_bond[k]], d.x, d.y, d.z, clamped);
          }
        } else {
          const int b = s.row_start[t], e = b + s.row_count[t];
          for (int k = b; k < e; ++k) {
            const Vec3<float> d = separation(xp, pos[rank[s.partner[k]]], box);
            add_scaled(f, s.slot[k], d.x, d.y, d.z, clamped);
          }
        }
      }
    }
    return f;
  }
};

struct FixedArrayForce {
  static constexpr int kParts = 1;
  const FixedVec* force;
};

struct ArrayForce {
  static constexpr int kParts = 1;
  const float4* force;
};

// Threads to launch for n particles.
template <typename Source>
inline size_t force_threads(int n) { return static_cast<size_t>(n) * Source::kParts; }

// The force on particle t / kParts at xp, the same in every thread of the particle. Every lane
// of the warp must call it (the parts meet by shuffles); p >= n gives zero.
__device__ __forceinline__ float3 particle_force(const SlotForce& s, int t, int n, float4 xp, bool& clamped) {
  const int p = t / SlotForce::kParts;
  FixedVec f = p < n ? s.partial(p, t % SlotForce::kParts, xp, clamped) : FixedVec{};
  f.x += __shfl_xor_sync(0xffffffffu, f.x, 1);
  f.y += __shfl_xor_sync(0xffffffffu, f.y, 1);
  f.z += __shfl_xor_sync(0xffffffffu, f.z, 1);
  return make_float3(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z));
}

__device__ __forceinline__ float3 particle_force(const FixedArrayForce& s, int t, int n, float4, bool&) {
  if (t >= n) return make_float3(0.f, 0.f, 0.f);
  const FixedVec f = s.force[t];
  return make_float3(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z));
}

__device__ __forceinline__ float3 particle_force(const ArrayForce& s, int t, int n, float4, bool&) {
  if (t >= n) return make_float3(0.f, 0.f, 0.f);
  const float4 f = s.force[t];
  return make_float3(f.x, f.y, f.z);
}

}  // namespace pairmd
