// GPU integration kernels: one thread per particle adds up its force and applies the shared
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

// Force = sum of the particle's slots over all terms (fused strategy).
struct SlotForce {
  SlotView views[kMaxSlotViews];
  int nviews;
  __device__ __forceinline__ float3 operator()(int p) const {
    float3 f = make_float3(0.f, 0.f, 0.f);
    for (int v = 0; v < nviews; ++v) {
      const SlotView& sv = views[v];
      const int nj = sv.njslots[p];  // partners below p, ascending: coalesced ELLPACK rows
      const float4* s = sv.jslots + sv.chunk_base[p >> 5] * 32 + (p & 31);
      for (int k = 0; k < nj; ++k) {
        const float4 x = s[k * 32];
        f.x += x.x;
        f.y += x.y;
        f.z += x.z;
      }
      const int ni = sv.row_count[p];  // partners above p, ascending: contiguous, pair order
      const float4* t = sv.islots + sv.row_start[p];
      for (int k = 0; k < ni; ++k) {
        const float4 x = t[k];
        f.x += x.x;
        f.y += x.y;
        f.z += x.z;
      }
    }
    return f;
  }
};

// Force read from an array (every other strategy).
struct ArrayForce {
  const float4* force;
  __device__ __forceinline__ float3 operator()(int p) const {
    const float4 f = force[p];
    return make_float3(f.x, f.y, f.z);
  }
};

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
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  float disp_sq = 0.f;
  if (p < a.n) {
    const float3 f3 = source(p);
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
__global__ void sum_slots_kernel(SlotForce source, int n, float4* force) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const float3 f = source(p);
  force[p] = make_float4(f.x, f.y, f.z, 0.f);
}

}  // namespace pairmd
