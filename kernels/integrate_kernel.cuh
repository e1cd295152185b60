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
// counts the step, and halts the chunk when a list rebuild is due or the run blew up (or, for
// integrate_slots_kernel beyond one wave of blocks, and at every size with a barostat,
// decide_step_kernel does, after it).
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include "cuda/block_reduce.cuh"
#include "integrators/particle_step.h"
#include "kernels/box_update.cuh"
#include "kernels/force_kernels.cuh"
#include "kernels/force_sources.cuh"
#include "kernels/step_control.cuh"

namespace pairmd {

struct IntegrateArgs {
  const float4* pos_in;  // x_n: xyz + type bits
  float4* pos_out;       // x_{n+1} (begin only); never the same array as pos_in
  float4* vel;           // xyz + mass
  int3* image;
  const unsigned* tag;
  const float4* pos_at_build;  // positions at the last list build
  float4* force_out;           // if non-null, the force is stored (outputs, tests)
  int n;
  int system_size;              // particles per system: system k holds particles [k s, (k + 1) s)
                                // of the current numbering and tags [k s, (k + 1) s)
  const SystemParams* systems;  // k_B T and seed of each system
  StepConstants<float> c;       // kT_mvv and seed here are not used: the kernels read systems[]
  BoxGeometry<float> box;       // the box (runs without a barostat: it never changes)
  DeviceBox* device_box;        // with a barostat (the kBox variants): the box and the list's rebuild
                                // threshold in device memory, which the step changes (box_update.cuh)
  IntegratorKind kind;
  bool begin;          // begin the next step (else only end the pending one)
  float max_move_sq;   // runaway threshold per step
  float half_skin_sq;  // a list rebuild is due beyond this squared displacement (without a barostat)
  DeviceFlags* flags;
  StepControl* ctrl;
  unsigned* tickets;        // kTicketStride-spaced counters, one per kTicketGroup blocks (zero between launches)
  PullParams<float> pull;   // external forces of a pulling experiment (mode None: none)
  bool last_block_decides;  // false: decide_step_kernel, launched after it, decides the step
                            // (integrate_slots_kernel only; integrate_kernel always decides)
  // The barostat (the kernels' kBox variants only): its settings, and the sums of the pressure's
  // parts that the blocks add to and the step's decision reads (kernels/box_update.cuh).
  BoxStage stage;
  unsigned long long* box_sums;
};

// Whether the step that `a` begins has a box update: its blocks then add the pressure's parts.
__device__ __forceinline__ bool box_update_due(const IntegrateArgs& a) {
  return a.begin && a.stage.settings.due(static_cast<int64_t>(a.ctrl->step));
}

// The reading of the step (by the last block, or by decide_step_kernel): counts it or halts the
// chunk. With kBox, the barostat's box update of the step (kernels/box_update.cuh) first: a box
// that would become too small halts the chunk as a blow-up, before the step counts; and the
// rebuild test reads the displacement as the particles' scaling will stretch it, against the
// threshold of the new box.
template <bool kBox = false>
__device__ __forceinline__ void decide_step(const IntegrateArgs& a) {
  StepControl* c = a.ctrl;
  DeviceFlags* f = a.flags;
  if (!a.begin) {
    c->pending = 0;
    return;
  }
  // Atomic reads: the flags were set by atomics of other blocks, at L2.
  const unsigned disp = atomicOr(&f->max_disp_sq, 0u);
  const bool blown =
      atomicOr(&f->bad_particle, 0) != 0 || atomicOr(&f->broken_bond, 0) != 0 || atomicOr(&f->bad_force, 0) != 0;
  if (blown) {
    c->halt = kHaltBlowup;
    return;
  }
  if constexpr (kBox) {
    const SystemParams sp = a.systems[0];  // a barostat runs one system (CudaBackend refuses ensembles)
    if (!box_decide(a.stage, a.device_box, a.box_sums, sp.kT_mvv, sp.seed, c->step)) {
      c->halt = kHaltBlowup;
      return;
    }
  }
  c->step += 1;
  c->steps_done += 1;
  c->pending = 1;
  atomicExch(&f->max_disp_sq, 0u);
  if constexpr (kBox) {
    const float stretch = box_largest_factor(a.device_box);
    if (__uint_as_float(disp) * (stretch * stretch) > a.device_box->rebuild_sq) c->halt = kHaltRebuild;
  } else {
    if (__uint_as_float(disp) > a.half_skin_sq) c->halt = kHaltRebuild;
  }
}

// Called by one thread per block once every flag the block raises is in (each raised flag is
// followed by a fence of the thread that raised it): the last block to get here decides the
// step. Tickets are taken in two levels, a counter per kTicketGroup blocks and one for the
// groups, so no single address takes an atomic per block (with tens of thousands of blocks
// those serialise at L2). The blocks take their tickets before they store their particles, so
// the fence here does not wait for those stores.
template <bool kBox = false>
__device__ __forceinline__ void block_done(const IntegrateArgs& a) {
  __threadfence();
  const unsigned group = blockIdx.x / kTicketGroup;
  const unsigned in_group = min(kTicketGroup, gridDim.x - group * kTicketGroup);
  unsigned* ticket = a.tickets + static_cast<size_t>(group) * kTicketStride;
  if (atomicAdd(ticket, 1u) != in_group - 1) return;
  *ticket = 0;  // the group's last block: nobody else takes this ticket in this launch
  __threadfence();
  const unsigned groups = (gridDim.x + kTicketGroup - 1) / kTicketGroup;
  if (atomicAdd(&a.ctrl->blocks_done, 1u) != groups - 1) return;
  __threadfence();
  decide_step<kBox>(a);
  a.ctrl->blocks_done = 0;
}

// The block's largest squared displacement into the step's maximum. The maximum only grows
// during a step, so a block whose value is not above what is already there skips the atomic
// (most blocks, once the first few are in).
__device__ __forceinline__ void report_displacement(const IntegrateArgs& a, float block_max) {
  const unsigned m = __float_as_uint(block_max);  // non-negative floats order like their bits
  if (m > *reinterpret_cast<volatile unsigned*>(&a.flags->max_disp_sq)) atomicMax(&a.flags->max_disp_sq, m);
}

// What the step of one particle reads besides its force.
struct ParticleInputs {
  float4 x4;  // x_n: xyz + type bits
  float4 v4;  // xyz + mass
  int3 image;
  unsigned tag;
  float4 at_build;  // position at the last list build
};

__device__ __forceinline__ ParticleInputs load_inputs(const IntegrateArgs& a, int p) {
  ParticleInputs in;
  in.x4 = a.pos_in[p];
  in.v4 = a.vel[p];
  in.image = a.image[p];
  in.tag = a.tag[p];
  in.at_build = a.pos_at_build[p];
  return in;
}

// What the step of one particle writes.
struct ParticleOutputs {
  float4 x4;  // x_{n+1} (with a.begin)
  float4 v4;
  int3 image;
  float3 force;
  float disp_sq;  // squared displacement since the list build (0 without a.begin)
};

// Particle p with force f3: ends the pending step and, with a.begin, begins the next. Raises
// (and fences) the runaway flag itself; stores nothing (store_particle does, after the ticket).
// Particle p (current numbering) is of system p / system_size; the noise and the pulling know it
// by its tag within its system, so system k of an ensemble steps as it would alone.
__device__ __forceinline__ ParticleOutputs step_particle(const IntegrateArgs& a, const BoxGeometry<float>& box, int p,
                                                         const ParticleInputs& in, float3 f3) {
  ParticleOutputs out;
  const int system = p / a.system_size;
  const SystemParams sp = a.systems[system];
  StepConstants<float> c = a.c;
  c.kT_mvv = sp.kT_mvv;  // the current temperature (kernels/step_control.cuh)
  c.seed = sp.seed;
  const unsigned local = in.tag - static_cast<unsigned>(system) * static_cast<unsigned>(a.system_size);
  const float4 v4 = in.v4, x4 = in.x4;
  Vec3<float> f{f3.x, f3.y, f3.z};
  if (a.pull.mode != static_cast<int>(PullMode::None)) {
    // The pulled and tethered particles' springs, added to the summed force (after the
    // fixed-point sum: one float addition per particle, the same in every strategy).
    const int64_t tag = local;
    if (tag == a.pull.pulled || tag == a.pull.tethered)
      f += pull_force<float>(a.pull, tag, unwrapped_position(x4, in.image, box), static_cast<int64_t>(a.ctrl->step),
                             nullptr);
  }
  out.force = make_float3(f.x, f.y, f.z);
  Vec3<float> v{v4.x, v4.y, v4.z};
  const float inv_mass = 1.f / v4.w;
  out.disp_sq = 0.f;
  out.x4 = x4;
  out.image = in.image;
  if (a.ctrl->pending) end_step(a.kind, v, f, inv_mass, c);
  if (a.begin) {
    const unsigned tag = in.tag;
    Vec3<float> x{x4.x, x4.y, x4.z};
    Int3 im{in.image.x, in.image.y, in.image.z};
    const Int3 im0 = im;
    begin_step(a.kind, x, v, im, f, inv_mass, local, a.ctrl->step, c, box);
    const Vec3<float> moved{x.x - x4.x + (im.x - im0.x) * box.L.x, x.y - x4.y + (im.y - im0.y) * box.L.y,
                            x.z - x4.z + (im.z - im0.z) * box.L.z};
    if (!(dot(moved, moved) <= a.max_move_sq) || !(dot(v, v) < 3.0e38f)) {
      report_lowest(&a.flags->bad_particle, tag);
      __threadfence();
    }
    out.x4 = make_float4(x.x, x.y, x.z, x4.w);
    out.image = make_int3(im.x, im.y, im.z);
    const float4 b = in.at_build;
    const Vec3<float> d = box.min_image(Vec3<float>{x.x - b.x, x.y - b.y, x.z - b.z});
    out.disp_sq = dot(d, d);
    if (!(out.disp_sq < 3.0e38f)) out.disp_sq = 3.0e38f;  // NaN: force the rebuild check to trip
  }
  out.v4 = make_float4(v.x, v.y, v.z, v4.w);
  return out;
}

__device__ __forceinline__ void store_particle(const IntegrateArgs& a, int p, const ParticleOutputs& o) {
  if (a.force_out) a.force_out[p] = make_float4(o.force.x, o.force.y, o.force.z, 0.f);
  if (a.begin) {
    a.pos_out[p] = o.x4;
    a.image[p] = o.image;
  }
  a.vel[p] = o.v4;
}

// m v_a^2 of a particle's new velocity (zero for no particle), the barostat's kinetic words.
__device__ __forceinline__ void kinetic_words(const ParticleOutputs& o, bool particle, long long k[3]) {
  const float m = o.v4.w;
  k[0] = particle ? box_fixed((m * o.v4.x) * o.v4.x) : 0;
  k[1] = particle ? box_fixed((m * o.v4.y) * o.v4.y) : 0;
  k[2] = particle ? box_fixed((m * o.v4.z) * o.v4.z) : 0;
}

// One thread per particle, the force read from an array (ArrayForce, FixedArrayForce). kBox: the
// barostat's variant (the kinetic energy per direction for the box update; kernels/box_update.cuh).
template <typename ForceSource, bool kBox = false>
__global__ void __launch_bounds__(kBlockSize) integrate_kernel(IntegrateArgs a, ForceSource source) {
  if (halted(a.ctrl)) return;  // the same for every block: only the last block changes it
  const bool due = kBox && box_update_due(a);
  const BoxGeometry<float> box = kBox ? a.device_box->box : a.box;
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  ParticleOutputs o{};
  if (p < a.n) o = step_particle(a, box, p, load_inputs(a, p), source(p));
  if (kBox && due) {  // the same in every thread of the block
    long long k[3];
    kinetic_words(o, p < a.n, k);
    add_box_words(a.box_sums, k, 3, 3);
  }
  // Non-negative floats order like their bit patterns: an integer max is exact. The reduction's
  // barrier also means every thread's flags are in before thread 0 takes the ticket.
  const float m = block_reduce(o.disp_sq, MaxOp{}, 0.f);
  if (threadIdx.x == 0) {
    if (a.begin) report_displacement(a, m);
    block_done<kBox>(a);
  }
  if (p < a.n) store_particle(a, p, o);
}

// pair_slots_fused: the block sums the slots of kSumParticles particles (SlotForce reads the
// positions of a.pos_in), then its first warp integrates them, one particle per lane. Six
// blocks per multiprocessor (40 registers) measured 3 % faster than the compiler's 48
// registers and five (docs/benchmarks.md).
// What the integrating warp reads besides the force is copied to shared memory asynchronously
// (cp.async) before the summation starts, so those loads (from DRAM in large systems) overlap
// the summation instead of stalling the block at its end while its other warps wait.
// kBox: the barostat's variant, which reads the box in device memory and sums the kinetic energy
// per direction of its particles for the box update (kernels/box_update.cuh). It never decides
// the step: decide_step_kernel, launched after it, does (with the box update). The barostat's
// decision here (box_decide, a call) held the integrating warp's registers at the bounds' limit
// and made every block spill (238 bytes against 82 without it), whether it ran or not.
template <bool kBox = false>
__global__ void __launch_bounds__(kSumBlock, 6) integrate_slots_kernel(IntegrateArgs a, SlotForce source) {
  static_assert(kSumParticles == 32, "one warp integrates the block's particles");
  if (halted(a.ctrl)) return;
  const bool due = kBox && box_update_due(a);
  __shared__ FixedVec force[kSumParticles];
  __shared__ float4 x_in[kSumParticles], v_in[kSumParticles], b_in[kSumParticles];
  __shared__ int im_in[3 * kSumParticles];
  __shared__ unsigned tag_in[kSumParticles];
  const int first = blockIdx.x * kSumParticles;
  const int mine = first + static_cast<int>(threadIdx.x);
  if (threadIdx.x < 32 && mine < a.n) {
    __pipeline_memcpy_async(&x_in[threadIdx.x], &a.pos_in[mine], sizeof(float4));
    __pipeline_memcpy_async(&v_in[threadIdx.x], &a.vel[mine], sizeof(float4));
    __pipeline_memcpy_async(&tag_in[threadIdx.x], &a.tag[mine], sizeof(unsigned));
    const int* im = reinterpret_cast<const int*>(a.image + mine);  // 12 bytes, 4-aligned: three copies
    for (int d = 0; d < 3; ++d) __pipeline_memcpy_async(&im_in[3 * threadIdx.x + d], im + d, sizeof(int));
    if (a.begin) __pipeline_memcpy_async(&b_in[threadIdx.x], &a.pos_at_build[mine], sizeof(float4));
    __pipeline_commit();
  }
  sum_slots_block<kBox>(source, first, a.n, force, a.flags);
  __syncthreads();
  if (threadIdx.x < 32) {
    const int p = mine;
    const BoxGeometry<float> box = kBox ? a.device_box->box : a.box;
    ParticleOutputs o{};
    if (p < a.n) {
      __pipeline_wait_prior(0);  // this lane's own copies: no other thread reads them
      ParticleInputs in;
      in.x4 = x_in[threadIdx.x];
      in.v4 = v_in[threadIdx.x];
      in.tag = tag_in[threadIdx.x];
      in.image = make_int3(im_in[3 * threadIdx.x], im_in[3 * threadIdx.x + 1], im_in[3 * threadIdx.x + 2]);
      if (a.begin) in.at_build = b_in[threadIdx.x];
      const FixedVec f = force[threadIdx.x];
      o = step_particle(a, box, p, in, make_float3(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z)));
    }
    if (kBox && due) {  // this warp's particles, for decide_step_kernel after this kernel
      long long k[3];
      kinetic_words(o, p < a.n, k);
      add_box_words_warp(a.box_sums, k, 3, 3);
    }
    float disp_sq = o.disp_sq;
    for (int off = 16; off > 0; off >>= 1) disp_sq = fmaxf(disp_sq, __shfl_down_sync(0xffffffffu, disp_sq, off));
    // The other warps' flags were in before the barrier above; this warp's are in after the
    // shuffles. Then the ticket, and only then the stores, which the ticket's fence need not wait for.
    if (threadIdx.x == 0) {
      if (a.begin) report_displacement(a, disp_sq);
      if constexpr (!kBox)
        if (a.last_block_decides) block_done<false>(a);
    }
    if (p < a.n) store_particle(a, p, o);
  }
}

// The step's decision in a kernel of its own, after integrate_slots_kernel in large systems
// (kernels/cuda_backend.cu says why). The integrate kernel's flags are all in: it has ended.
template <bool kBox = false>
__global__ void decide_step_kernel(IntegrateArgs a) {
  if (halted(a.ctrl)) return;
  decide_step<kBox>(a);
}

// pair_slots (unfused): the same summation as integrate_slots_kernel, as a kernel of its own
// that stores the forces. Launch blocks of kSumBlock threads, one per kSumParticles particles.
// kDeviceBox: the box read in device memory (a barostat's run), not source.box.
template <bool kDeviceBox = false>
__global__ void __launch_bounds__(kSumBlock)
    sum_slots_kernel(SlotForce source, int n, float4* force, DeviceFlags* flags, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  __shared__ FixedVec sums[kSumParticles];
  const int first = blockIdx.x * kSumParticles;
  sum_slots_block<kDeviceBox>(source, first, n, sums, flags);
  __syncthreads();
  const int p = first + threadIdx.x;
  if (threadIdx.x < kSumParticles && p < n) {
    const FixedVec f = sums[threadIdx.x];
    force[p] = make_float4(fixed_to_float(f.x), fixed_to_float(f.y), fixed_to_float(f.z), 0.f);
  }
}

// Forces as floats from the fixed-point array (atom_gather's outputs and tests), with the extra
// force (or null) added as the integrate kernel adds it.
__global__ void fixed_to_float_kernel(const FixedVec* fixed, const FixedVec* extra, int n, float4* force) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const float3 f = FixedArrayForce{fixed, extra}(p);
  force[p] = make_float4(f.x, f.y, f.z, 0.f);
}

// Kinetic energy and momentum of each system, summed in tag order (so the sum does not depend on
// the particles' current numbering, and system k of an ensemble sums as it would alone): the
// grid is `systems` x B blocks; block b of system k writes part b of quantity q (kinetic energy
// in m v^2 units, momentum x, y, z) of system k to parts[(q * systems + k) * B + b].
__global__ void kinetic_kernel(const float4* vel, const unsigned* rank, int system_size, int systems, double* parts) {
  const int blocks = gridDim.x / systems;
  const int k = blockIdx.x / blocks, b = blockIdx.x % blocks;
  const int t = b * blockDim.x + threadIdx.x;
  double ke = 0, px = 0, py = 0, pz = 0;
  if (t < system_size) {
    const float4 v = vel[rank[static_cast<size_t>(k) * system_size + t]];
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
    const size_t stride = static_cast<size_t>(systems) * blocks;
    parts[static_cast<size_t>(k) * blocks + b] = ke;
    parts[stride + static_cast<size_t>(k) * blocks + b] = px;
    parts[2 * stride + static_cast<size_t>(k) * blocks + b] = py;
    parts[3 * stride + static_cast<size_t>(k) * blocks + b] = pz;
  }
}

}  // namespace pairmd
