// GPU integration kernels: one thread (or two, see SlotForce) per particle adds up its force and applies the shared
// per-particle step (integrators/particle_step.h). With the pair_slots_fused strategy the
// force summation over the particle's slots happens right here, so the summed force never
// goes through memory: "summation fused into the integrator".
//
// One launch can end step n (the last half kick with the new forces) and begin step n + 1
// (kick, drift, thermostat, drift). Both are separate operations, so a launch that only ends a
// step followed by one that only begins the next gives bitwise the same result.
//
// The same kernel reports, through DeviceFlags, the largest squared displacement since the
// last list build (block max, then one integer atomicMax per block) and the lowest index of a
// particle that moved farther than allowed or stopped being finite.
#pragma once

#include <cuda_runtime.h>

#include <climits>

#include "integrators/particle_step.h"
#include "kernels/block_reduce.cuh"
#include "kernels/slot_layout.cuh"

namespace pairmd {

// All zero means "nothing to report", so one cudaMemsetAsync resets them (no host copy).
struct DeviceFlags {
  unsigned max_disp_sq;  // float bits of the largest squared displacement since the list build
  int bad_particle;      // INT_MAX - (lowest index of a runaway / non-finite particle), 0 if none
  int broken_bond;       // INT_MAX - (lowest index of a broken bond), 0 if none
  int unused;
};

__device__ __forceinline__ void report_lowest(int* flag, int index) { atomicMax(flag, INT_MAX - index); }
inline int reported_index(int flag) { return flag == 0 ? -1 : INT_MAX - flag; }

constexpr int kMaxSlotViews = 8;

// Force = sum of the particle's slots over all terms (fused strategy), by two neighbouring
// threads: part 0 adds the pairs in which p is j (partners below p, ascending; the slot holds
// the force on the partner, so it is subtracted), part 1 those in which p is i (partners above
// p, ascending, contiguous); the force is part 0 + part 1. Two threads per particle double the
// loads in flight; the sum is bandwidth-bound, so this measured the same as one thread
// (docs/benchmarks.md). Each part is a sequential sum
// over a canonical list, so the result is deterministic, and pairs beyond the cutoff (exact
// zeros) change nothing wherever the list build put them.
struct SlotForce {
  static constexpr int kParts = 2;
  SlotView views[kMaxSlotViews];
  int nviews;
  __device__ __forceinline__ float3 operator()(int p, int part) const {
    float3 f = make_float3(0.f, 0.f, 0.f);
    for (int v = 0; v < nviews; ++v) {
      const SlotView& sv = views[v];
      if (part == 0) {
        const int nj = sv.col_count[p];
        const int* c = sv.col_pair + sv.col_start[p];
#pragma unroll 4
        for (int k = 0; k < nj; ++k) {
          const float4 x = __ldg(sv.slots + __ldg(c + k));
          f.x -= x.x;
          f.y -= x.y;
          f.z -= x.z;
        }
      } else {
        const int ni = sv.row_count[p];
        const float4* t = sv.slots + sv.row_start[p];
#pragma unroll 4
        for (int k = 0; k < ni; ++k) {
          const float4 x = __ldg(t + k);
          f.x += x.x;
          f.y += x.y;
          f.z += x.z;
        }
      }
    }
    return f;
  }
};

// Force read from an array (every other strategy).
struct ArrayForce {
  static constexpr int kParts = 1;
  const float4* force;
  __device__ __forceinline__ float3 operator()(int p, int) const {
    const float4 f = force[p];
    return make_float3(f.x, f.y, f.z);
  }
};

// Thread t handles part t % kParts of particle t / kParts; the parts' sum, the same in every
// thread of the particle (IEEE addition commutes), comes back to all of them.
template <typename ForceSource>
__device__ __forceinline__ float3 summed_force(const ForceSource& source, int t, int n) {
  constexpr int kParts = ForceSource::kParts;
  static_assert(kParts == 1 || kParts == 2, "one or two threads per particle");
  const int p = t / kParts;
  float3 f = p < n ? source(p, t % kParts) : make_float3(0.f, 0.f, 0.f);
  if constexpr (kParts == 2) {
    const float3 o = make_float3(__shfl_xor_sync(0xffffffffu, f.x, 1), __shfl_xor_sync(0xffffffffu, f.y, 1),
                                 __shfl_xor_sync(0xffffffffu, f.z, 1));
    f = make_float3(f.x + o.x, f.y + o.y, f.z + o.z);
  }
  return f;
}

// Threads to launch for n particles.
template <typename ForceSource>
inline size_t force_threads(int n) { return static_cast<size_t>(n) * ForceSource::kParts; }

struct IntegrateArgs {
  float4* pos;                // xyz + type bits
  float4* vel;                // xyz + mass
  int3* image;
  const unsigned* tag;
  const float4* pos_at_build; // positions at the last list build
  float4* force_out;          // if non-null, the summed force is stored (outputs, tests)
  int n;
  uint64_t step;              // step being begun (noise key)
  StepConstants<float> c;
  BoxGeometry<float> box;
  IntegratorKind kind;
  bool finish;                // apply end_step (the last half of the previous step)
  bool begin;                 // apply begin_step (the first half of `step`)
  float max_move_sq;          // runaway threshold per step
  DeviceFlags* flags;
};

template <typename ForceSource>
__global__ void integrate_kernel(IntegrateArgs a, ForceSource source) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;  // blockDim a multiple of 32: whole warps
  const int p = t / ForceSource::kParts;
  const float3 f3 = summed_force(source, t, a.n);
  float disp_sq = 0.f;
  if (p < a.n && t % ForceSource::kParts == 0) {
    const Vec3<float> f{f3.x, f3.y, f3.z};
    if (a.force_out) a.force_out[p] = make_float4(f.x, f.y, f.z, 0.f);
    float4 v4 = a.vel[p];
    Vec3<float> v{v4.x, v4.y, v4.z};
    const float inv_mass = 1.f / v4.w;
    if (a.finish) end_step(a.kind, v, f, inv_mass, a.c);
    if (a.begin) {
      const float4 x4 = a.pos[p];
      Vec3<float> x{x4.x, x4.y, x4.z};
      int3 im3 = a.image[p];
      Int3 im{im3.x, im3.y, im3.z};
      const Int3 im0 = im;
      begin_step(a.kind, x, v, im, f, inv_mass, a.tag[p], a.step, a.c, a.box);
      const Vec3<float> moved{x.x - x4.x + (im.x - im0.x) * a.box.L.x, x.y - x4.y + (im.y - im0.y) * a.box.L.y,
                              x.z - x4.z + (im.z - im0.z) * a.box.L.z};
      if (!(dot(moved, moved) <= a.max_move_sq) || !(dot(v, v) < 3.0e38f)) report_lowest(&a.flags->bad_particle, p);
      a.pos[p] = make_float4(x.x, x.y, x.z, x4.w);
      a.image[p] = make_int3(im.x, im.y, im.z);
      const float4 b = a.pos_at_build[p];
      const Vec3<float> d = a.box.min_image(Vec3<float>{x.x - b.x, x.y - b.y, x.z - b.z});
      disp_sq = dot(d, d);
      if (!(disp_sq < 3.0e38f)) disp_sq = 3.0e38f;  // NaN: force a rebuild check to trip
    }
    a.vel[p] = make_float4(v.x, v.y, v.z, v4.w);
  }
  if (a.begin) {
    const float m = block_reduce(disp_sq, MaxOp{}, 0.f);
    // Non-negative floats order like their bit patterns: an integer max is exact.
    if (threadIdx.x == 0) atomicMax(&a.flags->max_disp_sq, __float_as_uint(m));
  }
}

// parts[b] = kinetic energy (mvv units), parts[B + b], parts[2B + b], parts[3B + b] = momentum.
__global__ void kinetic_kernel(const float4* vel, int n, double* parts) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  double ke = 0, px = 0, py = 0, pz = 0;
  if (p < n) {
    const float4 v = vel[p];
    ke = 0.5 * v.w * (double(v.x) * v.x + double(v.y) * v.y + double(v.z) * v.z);
    px = double(v.w) * v.x;
    py = double(v.w) * v.y;
    pz = double(v.w) * v.z;
  }
  ke = block_reduce(ke, SumOp{}, 0.0);
  px = block_reduce(px, SumOp{}, 0.0);
  py = block_reduce(py, SumOp{}, 0.0);
  pz = block_reduce(pz, SumOp{}, 0.0);
  if (threadIdx.x == 0) {
    parts[blockIdx.x] = ke;
    parts[gridDim.x + blockIdx.x] = px;
    parts[2 * gridDim.x + blockIdx.x] = py;
    parts[3 * gridDim.x + blockIdx.x] = pz;
  }
}

// pair_slots (unfused): the same summation as SlotForce, as its own kernel.
// Launch force_threads<SlotForce>(n) threads.
__global__ void sum_slots_kernel(SlotForce source, int n, float4* force) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 f = summed_force(source, t, n);
  const int p = t / SlotForce::kParts;
  if (p < n && t % SlotForce::kParts == 0) force[p] = make_float4(f.x, f.y, f.z, 0.f);
}

}  // namespace pairmd
