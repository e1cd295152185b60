// Angle, dihedral and improper terms, and the scaled 1-2/1-3/1-4 pairs of the pair terms, on the
// GPU: one path for every force strategy.
//
// Each term (one thread each) evaluates the shared evaluators (potentials/bonded_geometry.h) in
// float, converts its forces to 64-bit fixed point (kernels/fixed_point.h) and adds them to the
// particles' "extra force" with integer atomicAdd: integer addition is exact and associative, so
// the sum does not depend on the order of the atomics and the run stays bitwise reproducible;
// the particle that closes the sum (j of an angle, j and k of a dihedral, j of a pair) takes the
// exact negative of the others' integers, so the total force is exactly zero. The integrate
// kernels add the extra force to the particle's force (kernels/force_sources.cuh) where a run
// has such terms; runs without them pass a null pointer and do no new work. The buffer is in the
// particles' current numbering and is cleared before each force evaluation (after every list
// build's renumbering too); terms are indexed by tag and find their particles through rank[].
#pragma once

#include <cuda_runtime.h>

#include "kernels/box_update.cuh"
#include "kernels/fixed_point.h"
#include "kernels/force_kernels.cuh"
#include "kernels/pair_physics.cuh"
#include "kernels/step_control.cuh"
#include "potentials/bonded_geometry.h"

namespace pairmd {

// Angles (dihedrals, impropers) of one kind: term t joins the particles of tags atoms[t] (x, y,
// z and, for four-particle terms, w), with parameter record type[t].
struct BondedListView {
  const uint4* atoms;
  const int* type;
  int count;
  const unsigned* rank;  // particle of each tag
};

// The scaled pairs of one pair term: tags i[k], j[k], weight[k].
struct ScaledPairView {
  const unsigned* i;
  const unsigned* j;
  const float* weight;
  int count;
  const unsigned* rank;
};

// Where the force kernels add the barostat's virial per direction: null sums without a barostat.
struct BondedVirial {
  BarostatSettings settings;
  unsigned long long* sums;
};

__device__ __forceinline__ FixedVec to_fixed_vec(Vec3<float> f, bool& clamped) {
  return {to_fixed(f.x, clamped), to_fixed(f.y, clamped), to_fixed(f.z, clamped)};
}

__device__ __forceinline__ void atomic_add_fixed(FixedVec* acc, int p, FixedVec f) {
  auto* a = reinterpret_cast<unsigned long long*>(acc + p);
  if (f.x) atomicAdd(a, static_cast<unsigned long long>(f.x));
  if (f.y) atomicAdd(a + 1, static_cast<unsigned long long>(f.y));
  if (f.z) atomicAdd(a + 2, static_cast<unsigned long long>(f.z));
}

__device__ __forceinline__ FixedVec fixed_neg_sum(FixedVec a, FixedVec b) {
  return {-(a.x + b.x), -(a.y + b.y), -(a.z + b.z)};
}
__device__ __forceinline__ FixedVec fixed_sub(FixedVec a, FixedVec b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }

template <typename Eval>
__device__ __forceinline__ AngleResult<float> eval_angle(const BondedListView& v, const ParticleData& pd, int t,
                                                         const typename Eval::Params* __restrict__ table,
                                                         const BoxGeometry<float>& box, uint4& q, int p[4]) {
  q = v.atoms[t];
  p[0] = v.rank[q.x];
  p[1] = v.rank[q.y];
  p[2] = v.rank[q.z];
  const float4 xj = pd.pos[p[1]];
  return angle_forces<Eval>(separation(pd.pos[p[0]], xj, box), separation(pd.pos[p[2]], xj, box), table[v.type[t]]);
}

template <typename Eval>
__device__ __forceinline__ DihedralResult<float> eval_dihedral(const BondedListView& v, const ParticleData& pd, int t,
                                                               const typename Eval::Params* __restrict__ table,
                                                               const BoxGeometry<float>& box, uint4& q, int p[4]) {
  q = v.atoms[t];
  p[0] = v.rank[q.x];
  p[1] = v.rank[q.y];
  p[2] = v.rank[q.z];
  p[3] = v.rank[q.w];
  const float4 xi = pd.pos[p[0]], xj = pd.pos[p[1]], xk = pd.pos[p[2]], xl = pd.pos[p[3]];
  return dihedral_forces<Eval>(separation(xj, xi, box), separation(xk, xj, box), separation(xl, xk, box),
                               table[v.type[t]]);
}

// The barostat's virial per direction of a term (kernels/box_update.cuh), when its update is due.
__device__ __forceinline__ void add_term_virial(Vec3<float> wd, bool mine, const BondedVirial& bv, int64_t step) {
  if (!bv.sums || !bv.settings.due(step)) return;
  long long w[3] = {0, 0, 0};
  if (mine) {
    w[0] = box_fixed(wd.x);
    w[1] = box_fixed(wd.y);
    w[2] = box_fixed(wd.z);
  }
  add_box_words(bv.sums, w, 0, 3);  // every thread of the block
}

template <typename Eval>
__global__ void angle_force_kernel(BondedListView v, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                   FixedVec* extra, DeviceFlags* flags, const StepControl* ctrl, BondedVirial bv) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  Vec3<float> wd{0.f, 0.f, 0.f};
  if (t < v.count) {
    uint4 q;
    int p[4];
    const AngleResult<float> r = eval_angle<Eval>(v, pd, t, table, box, q, p);
    bool clamped = false;
    const FixedVec fi = to_fixed_vec(r.fi, clamped), fk = to_fixed_vec(r.fk, clamped);
    atomic_add_fixed(extra, p[0], fi);
    atomic_add_fixed(extra, p[2], fk);
    atomic_add_fixed(extra, p[1], fixed_neg_sum(fi, fk));
    if (clamped) report_lowest(&flags->bad_force, static_cast<int>(q.y));
    wd = r.virial_diag;
  }
  add_term_virial(wd, t < v.count, bv, static_cast<int64_t>(ctrl->step));
}

// Dihedrals and impropers.
template <typename Eval>
__global__ void dihedral_force_kernel(BondedListView v, ParticleData pd,
                                      const typename Eval::Params* __restrict__ table, FixedVec* extra,
                                      DeviceFlags* flags, const StepControl* ctrl, BondedVirial bv) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  Vec3<float> wd{0.f, 0.f, 0.f};
  if (t < v.count) {
    uint4 q;
    int p[4];
    const DihedralResult<float> r = eval_dihedral<Eval>(v, pd, t, table, box, q, p);
    bool clamped = false;
    const FixedVec fi = to_fixed_vec(r.fi, clamped), fl = to_fixed_vec(r.fl, clamped), ft = to_fixed_vec(r.t, clamped);
    atomic_add_fixed(extra, p[0], fi);
    atomic_add_fixed(extra, p[3], fl);
    atomic_add_fixed(extra, p[1], fixed_sub(ft, fi));
    atomic_add_fixed(extra, p[2], fixed_neg_sum(ft, fl));
    if (clamped) report_lowest(&flags->bad_force, static_cast<int>(q.y));
    wd = r.virial_diag;
  }
  add_term_virial(wd, t < v.count, bv, static_cast<int64_t>(ctrl->step));
}

template <typename Eval>
__global__ void scaled_pair_force_kernel(ScaledPairView v, ParticleData pd,
                                         const typename Eval::Params* __restrict__ table, int ntypes, FixedVec* extra,
                                         DeviceFlags* flags, const StepControl* ctrl, BondedVirial bv) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *pd.box;
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  Vec3<float> wd{0.f, 0.f, 0.f};
  if (k < v.count) {
    const int i = v.rank[v.i[k]], j = v.rank[v.j[k]];
    const float4 xi = pd.pos[i], xj = pd.pos[j];
    const Vec3<float> d = separation(xi, xj, box);
    float e;
    const float s = v.weight[k] * pair_force_divr<Eval>(dot(d, d), xi, xj, Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                                        Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, e);
    bool clamped = false;
    const FixedVec f = to_fixed_vec(Vec3<float>{s * d.x, s * d.y, s * d.z}, clamped);
    atomic_add_fixed(extra, i, f);
    atomic_add_fixed(extra, j, FixedVec{-f.x, -f.y, -f.z});
    if (clamped) report_lowest(&flags->bad_force, static_cast<int>(v.i[k]));
    wd = {(s * d.x) * d.x, (s * d.y) * d.y, (s * d.z) * d.z};
  }
  add_term_virial(wd, k < v.count, bv, static_cast<int64_t>(ctrl->step));
}

// Energies and virials (thermo steps), into one term's kEnergyWords (kernels/force_kernels.cuh)
// of the term's system: system k holds tags [k s, (k + 1) s), its accumulators are at
// acc + k * stride (a single system: s is every tag).
template <typename Eval>
__global__ void angle_energy_kernel(BondedListView v, ParticleData pd, const typename Eval::Params* __restrict__ table,
                                    int system_size, long long* acc, int stride) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  int system = -1;
  if (t < v.count) {
    uint4 q;
    int p[4];
    const AngleResult<float> r = eval_angle<Eval>(v, pd, t, table, *pd.box, q, p);
    split_add(r.energy, ew, ef, bad);
    split_add(r.virial, ww, wf, bad);
    system = static_cast<int>(q.x / system_size);
  }
  add_energy_words_by_system(acc, stride, system, ew, ef, ww, wf, bad);
}

template <typename Eval>
__global__ void dihedral_energy_kernel(BondedListView v, ParticleData pd,
                                       const typename Eval::Params* __restrict__ table, int system_size, long long* acc,
                                       int stride) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  int system = -1;
  if (t < v.count) {
    uint4 q;
    int p[4];
    const DihedralResult<float> r = eval_dihedral<Eval>(v, pd, t, table, *pd.box, q, p);
    split_add(r.energy, ew, ef, bad);
    split_add(r.virial, ww, wf, bad);
    system = static_cast<int>(q.x / system_size);
  }
  add_energy_words_by_system(acc, stride, system, ew, ef, ww, wf, bad);
}

template <typename Eval>
__global__ void scaled_pair_energy_kernel(ScaledPairView v, ParticleData pd,
                                          const typename Eval::Params* __restrict__ table, int ntypes, int system_size,
                                          long long* acc, int stride) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  int system = -1;
  if (k < v.count) {
    const int i = v.rank[v.i[k]], j = v.rank[v.j[k]];
    const PairResult r = eval_pair<Eval>(pd.pos[i], pd.pos[j], Eval::kUsesCharge ? pd.charge[i] : 0.f,
                                         Eval::kUsesCharge ? pd.charge[j] : 0.f, table, ntypes, *pd.box);
    split_add(v.weight[k] * r.e, ew, ef, bad);
    split_add(v.weight[k] * r.w, ww, wf, bad);
    system = static_cast<int>(v.i[k] / system_size);
  }
  add_energy_words_by_system(acc, stride, system, ew, ef, ww, wf, bad);
}

}  // namespace pairmd
