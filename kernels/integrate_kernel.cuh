// The GPU integration kernels: each particle gets its force (kernels/force_sources.cuh) and the
// shared per-particle step (integrators/particle_step.h) is applied. With pair_slots_fused the
// slot summation happens right here (integrate_slots_kernel: a block sums the slots of 32
// particles, 8 threads each, into shared memory, then one warp integrates them), so the summed
// force never goes through memory; the other strategies read a force array, one thread per
// particle (integrate_kernel).
//
// One launch ends the step begun last (the last half kick with the new forces, if one is
// pending) and, with `begin`, begins the next (kick, drift, thermostat, drift). Both are separate
// operations, so a launch that only ends a step (output) followed by one that only begins the
// next gives bitwise the same result as one launch doing both.
//
// Positions are double-buffered: the kernel reads x_n from pos_in and writes x_{n+1} to pos_out,
// because the slot summation of other threads still reads x_n of this particle.
//
// The kernel also decides, on the GPU, what the step means for the run (kernels/step_control.cuh):
// each block reports the largest squared displacement since the list build (one integer
// atomicMax) and any runaway particle or huge force; the last block to finish reads the flags,
// counts the step, and halts the chunk when a list rebuild is due or the run blew up.
#pragma once

#include <cuda_runtime.h>

#include "integrators/particle_step.h"
#include "cuda/block_reduce.cuh"
#include "kernels/force_kernels.cuh"
#include "kernels/force_sources.cuh"
#include "kernels/step_control.cuh"

namespace pairmd {

struct IntegrateArgs {
  const float4* pos_in;        // x_n: xyz + type bits
  float4* pos_out;             // x_{n+1} (begin only); never the same array as pos_in
  float4* vel;                 // xyz + mass
  int3* image;
  const unsigned* tag;
  const float4* pos_at_build;  // positions at the last list build
  float4* force_out;           // if non-null, the force is stored (outputs, tests)
  int n;
  StepConstants<float> c;
  BoxGeometry<float> box;
  IntegratorKind kind;
  bool begin;                  // begin the next step (else only end the pending one)
  float max_move_sq;           // runaway threshold per step
  float half_skin_sq;          // a list rebuild is due beyond this squared displacement
  DeviceFlags* flags;
  StepControl* ctrl;
  PullParams<float> pull;      // external forces of a pulling experiment (mode None: none)
};

// The last block's reading of the step: counts it or halts the chunk.
__device__ __forceinline__ void decide_step(const IntegrateArgs& a) {
  StepControl* c = a.ctrl;
  DeviceFlags* f = a.flags;
  if (!a.begin) {
    c->pending = 0;
    return;
  }
  // Atomic reads: the flags were set by atomics of other blocks, at L2.
  const unsigned disp = atomicOr(&f->max_disp_sq, 0u);
  const bool blown = atomicOr(&f->bad_particle, 0) != 0 || atomicOr(&f->broken_bond, 0) != 0 ||
                     atomicOr(&f->bad_force, 0) != 0;
  if (blown) {
    c->halt = kHaltBlowup;
    return;
  }
  c->step += 1;
  c->steps_done += 1;
  c->pending = 1;
  atomicExch(&f->max_disp_sq, 0u);
  if (__uint_as_float(disp) > a.half_skin_sq) c->halt = kHaltRebuild;
}

// The end of every block: the last block to get here decides the step (every block's atomics
// are done before its ticket).
__device__ __forceinline__ void finish_block(const IntegrateArgs& a) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&a.ctrl->blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (last && threadIdx.x == 0) {
    __threadfence();
    decide_step(a);
    a.ctrl->blocks_done = 0;
  }
}

// Particle p at x4 with force f3: ends the pending step and, with a.begin, begins the next.
// Returns the squared displacement since the list build (0 without a.begin).
__device__ __forceinline__ float step_particle(const IntegrateArgs& a, int p, float4 x4, float3 f3) {
  Vec3<float> f{f3.x, f3.y, f3.z};
  if (a.pull.mode != static_cast<int>(PullMode::None)) {
    // The pulled and tethered particles' springs, added to the summed force (after the
    // fixed-point sum: one float addition per particle, the same in every strategy).
    const int64_t tag = a.tag[p];
    if (tag == a.pull.pulled || tag == a.pull.tethered)
      f += pull_force<float>(a.pull, tag, unwrapped_position(x4, a.image[p], a.box),
                             static_cast<int64_t>(a.ctrl->step), nullptr);
  }
  if (a.force_out) a.force_out[p] = make_float4(f.x, f.y, f.z, 0.f);
  const float4 v4 = a.vel[p];
  Vec3<float> v{v4.x, v4.y, v4.z};
  const float inv_mass = 1.f / v4.w;
  float disp_sq = 0.f;
  if (a.ctrl->pending) end_step(a.kind, v, f, inv_mass, a.c);
  if (a.begin) {
    const unsigned tag = a.tag[p];
    Vec3<float> x{x4.x, x4.y, x4.z};
    const int3 im3 = a.image[p];
    Int3 im{im3.x, im3.y, im3.z};
    const Int3 im0 = im;
    begin_step(a.kind, x, v, im, f, inv_mass, tag, a.ctrl->step, a.c, a.box);
    const Vec3<float> moved{x.x - x4.x + (im.x - im0.x) * a.box.L.x, x.y - x4.y + (im.y - im0.y) * a.box.L.y,
                            x.z - x4.z + (im.z - im0.z) * a.box.L.z};
    if (!(dot(moved, moved) <= a.max_move_sq) || !(dot(v, v) < 3.0e38f)) report_lowest(&a.flags->bad_particle, tag);
    a.pos_out[p] = make_float4(x.x, x.y, x.z, x4.w);
    a.image[p] = make_int3(im.x, im.y, im.z);
    const float4 b = a.pos_at_build[p];
    const Vec3<float> d = a.box.min_image(Vec3<float>{x.x - b.x, x.y - b.y, x.z - b.z});
    disp_sq = dot(d, d);
    if (!(disp_sq < 3.0e38f)) disp_sq = 3.0e38f;  // NaN: force the rebuild check to trip
  }
  a.vel[p] = make_float4(v.x, v.y, v.z, v4.w);
  return disp_sq;
}

// One thread per particle, the force read from an array (ArrayForce, FixedArrayForce).
template <typename ForceSource>
__global__ void __launch_bounds__(kBlockSize) integrate_kernel(IntegrateArgs a, ForceSource source) {
  if (halted(a.ctrl)) return;  // the same for every block: only the last block changes it
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  float disp_sq = 0.f;
  if (p < a.n) disp_sq = step_particle(a, p, a.pos_in[p], source(p));
  if (a.begin) {
    // Non-negative floats order like their bit patterns: an integer max is exact.
    const float m = block_reduce(disp_sq, MaxOp{}, 0.f);
    if (threadIdx.x == 0) atomicMax(&a.flags->max_disp_sq, __float_as_uint(m));
  }
  finish_block(a);
}

// pair_slots_fused: the block sums the slots of kSumParticles particles (SlotForce reads the
// positions of a.pos_in), then its first warp integrates them, one particle per lane. Six
// blocks per multiprocessor (40 registers) measured 3 % faster than the compiler's 48
// registers and five (docs/benchmarks.md).
__global__ void __launch_bounds__(kSumBlock, 6) integrate_slots_kernel(IntegrateArgs a, SlotForce source) {
  static_assert(kSumParticles == 32, "one warp integrates the block's particles");
  if (halted(a.ctrl)) return;
  __shared__ FixedVec force[kSumParticles];
  const int first = blockIdx.x * kSumParticles;
  sum_slots_block(source, first, a.n, force, a.flags);
  __syncthreads();
  if (threadIdx.x < 32) {
    const int p = first + threadIdx.x;
    float disp_sq = 0.f;
    if (p < a.n) {
      const FixedVec f = force[threadIdx.x];
      disp_sq = step_particle(a, p, a.pos_in[p], make_float3(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z)));
    }
    if (a.begin) {
      for (int o = 16; o > 0; o >>= 1) disp_sq = fmaxf(disp_sq, __shfl_down_sync(0xffffffffu, disp_sq, o));
      if (threadIdx.x == 0) atomicMax(&a.flags->max_disp_sq, __float_as_uint(disp_sq));
    }
  }
  finish_block(a);
}

// pair_slots (unfused): the same summation as integrate_slots_kernel, as a kernel of its own
// that stores the forces. Launch blocks of kSumBlock threads, one per kSumParticles particles.
__global__ void __launch_bounds__(kSumBlock) sum_slots_kernel(SlotForce source, int n, float4* force, DeviceFlags* flags,
                                                              const StepControl* ctrl) {
  if (halted(ctrl)) return;
  __shared__ FixedVec sums[kSumParticles];
  const int first = blockIdx.x * kSumParticles;
  sum_slots_block(source, first, n, sums, flags);
  __syncthreads();
  const int p = first + threadIdx.x;
  if (threadIdx.x < kSumParticles && p < n) {
    const FixedVec f = sums[threadIdx.x];
    force[p] = make_float4(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z), 0.f);
  }
}

// Slot-summation blocks for n particles.
inline int slot_blocks(int n) { return (n + kSumParticles - 1) / kSumParticles; }

// Forces as floats from the fixed-point array (atom_gather's outputs and tests).
__global__ void fixed_to_float_kernel(const FixedVec* fixed, int n, float4* force) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const FixedVec f = fixed[p];
  force[p] = make_float4(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z), 0.f);
}

// Kinetic energy and momentum, summed in tag order (so the sum does not depend on the
// particles' current numbering): parts[b] = kinetic energy (m v^2 units), parts[B + b],
// parts[2B + b], parts[3B + b] = momentum, of the block's tags.
__global__ void kinetic_kernel(const float4* vel, const unsigned* rank, int n, double* parts) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  double ke = 0, px = 0, py = 0, pz = 0;
  if (t < n) {
    const float4 v = vel[rank[t]];
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

}  // namespace pairmd
