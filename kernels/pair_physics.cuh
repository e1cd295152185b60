// The one place where GPU strategies touch the physics: the separation of two particles and the
// shared evaluators of potentials/, in float. Strategies differ only in how pairs are mapped to
// threads and how the forces are summed.
#pragma once

#include "base/box.h"
#include "potentials/registry.h"

namespace pairmd {

// What every force kernel reads of the particles (current numbering, current positions).
struct ParticleData {
  const float4* pos;  // xyz + type bits
  const float* charge;
  int n;
  const BoxGeometry<float>* box;  // in device memory: kernels load it once (a barostat changes it,
                                  // and captured graphs keep their arguments)
};

struct PairResult {
  float3 f;  // force on i (the force on j is -f)
  float e;   // pair energy
  float w;   // virial r . f
};

__device__ __forceinline__ int type_of(float4 p) { return __float_as_int(p.w); }

// x_i - x_j under minimum image. Every strategy and the slot summation compute a pair's vector
// with this one function, so the pair kernel and the summation see the same bits; and
// separation(j, i) is exactly -separation(i, j).
__device__ __forceinline__ Vec3<float> separation(float4 pi, float4 pj, const BoxGeometry<float>& box) {
  return box.min_image(Vec3<float>{pi.x - pj.x, pi.y - pj.y, pi.z - pj.z});
}

// F/r of a nonbonded pair at squared distance rsq: zero (and zero energy) beyond the cutoff.
template <typename Eval>
__device__ __forceinline__ float pair_force_divr(float rsq, float4 pi, float4 pj, float qi, float qj,
                                                 const typename Eval::Params* __restrict__ table, int ntypes,
                                                 float& e) {
  const typename Eval::Params p = table[type_of(pi) * ntypes + type_of(pj)];
  float fdivr = 0.f;
  e = 0.f;
  if (!Eval::eval(rsq, qi * qj, p, fdivr, e)) {
    fdivr = 0.f;
    e = 0.f;
  }
  return fdivr;
}

// Pair (i, j) of a nonbonded term as a force vector, energy and virial.
template <typename Eval>
__device__ __forceinline__ PairResult eval_pair(float4 pi, float4 pj, float qi, float qj,
                                                const typename Eval::Params* __restrict__ table, int ntypes,
                                                const BoxGeometry<float>& box) {
  const Vec3<float> d = separation(pi, pj, box);
  const float rsq = dot(d, d);
  float e;
  const float fdivr = pair_force_divr<Eval>(rsq, pi, pj, qi, qj, table, ntypes, e);
  return {make_float3(fdivr * d.x, fdivr * d.y, fdivr * d.z), e, fdivr * rsq};
}

// F/r of bond (i, j) with its own parameters; `ok` turns false if the bond broke (FENE beyond
// R0), and F/r and the energy are then 0.
template <typename Eval>
__device__ __forceinline__ float bond_force_divr(float rsq, const typename Eval::Params& p, float& e, bool& ok) {
  float fdivr = 0.f;
  e = 0.f;
  ok = Eval::eval(rsq, p, fdivr, e);
  if (!ok) fdivr = e = 0.f;
  return fdivr;
}

template <typename Eval>
__device__ __forceinline__ PairResult eval_bond(float4 pi, float4 pj, const typename Eval::Params& p,
                                                const BoxGeometry<float>& box, bool& ok) {
  const Vec3<float> d = separation(pi, pj, box);
  const float rsq = dot(d, d);
  float e;
  const float fdivr = bond_force_divr<Eval>(rsq, p, e, ok);
  return {make_float3(fdivr * d.x, fdivr * d.y, fdivr * d.z), e, fdivr * rsq};
}

}  // namespace pairmd
