// The one place where GPU strategies touch the physics: evaluate one pair (or bond) with the
// shared evaluators of potentials/, in float, under minimum image. Strategies differ only in
// how pairs are mapped to threads and how the forces are summed.
#pragma once

#include "engine/box.h"
#include "potentials/registry.h"

namespace pairmd {

struct PairResult {
  float3 f;     // force on i (the force on j is -f)
  float e;      // pair energy
  float w;      // virial r . f
};

__device__ __forceinline__ int type_of(float4 p) { return __float_as_int(p.w); }

// Pair (i, j) of a nonbonded term: zero force (and energy) beyond the cutoff.
template <typename Eval>
__device__ __forceinline__ PairResult eval_pair(float4 pi, float4 pj, float qi, float qj,
                                                const typename Eval::Params* __restrict__ table, int ntypes,
                                                const BoxGeometry<float>& box) {
  const Vec3<float> d = box.min_image(Vec3<float>{pi.x - pj.x, pi.y - pj.y, pi.z - pj.z});
  const float rsq = dot(d, d);
  const typename Eval::Params p = table[type_of(pi) * ntypes + type_of(pj)];
  float fdivr = 0.f, e = 0.f;
  if (!Eval::eval(rsq, qi * qj, p, fdivr, e)) {
    fdivr = 0.f;
    e = 0.f;
  }
  return {make_float3(fdivr * d.x, fdivr * d.y, fdivr * d.z), e, fdivr * rsq};
}

// Bond (i, j) with its own parameters; `ok` turns false if the bond broke (FENE beyond R0).
template <typename Eval>
__device__ __forceinline__ PairResult eval_bond(float4 pi, float4 pj, const typename Eval::Params& p,
                                                const BoxGeometry<float>& box, bool& ok) {
  const Vec3<float> d = box.min_image(Vec3<float>{pi.x - pj.x, pi.y - pj.y, pi.z - pj.z});
  const float rsq = dot(d, d);
  float fdivr = 0.f, e = 0.f;
  ok = Eval::eval(rsq, p, fdivr, e);
  if (!ok) fdivr = e = 0.f;
  return {make_float3(fdivr * d.x, fdivr * d.y, fdivr * d.z), e, fdivr * rsq};
}

}  // namespace pairmd
