// The box on the GPU, and the barostat's box update inside the step (integrators/barostat.h; the
// CPU backend's CpuBackend::update_box is the reference).
//
// The box lives in device memory (DeviceBox, in the chunk's control block, kernels/cuda_backend.cuh)
// and every kernel of the step and of the list build reads it there, never as an argument: a
// captured graph holds its arguments, and would keep the box it was captured with. So a box that
// changes every step keeps the graphs and their keys (base/work_key.h) as they are.
//
// A step n -> n + 1 with barostat.due(n), in the CUDA backend's kernels:
//   - the pressure's parts: the virial per direction W_aa of x_n (the slot strategies: summed by
//     the pair and bond kernels that write the slots, each pair once, with its F/r; the others: a
//     pass of its own after the forces, pair_virial_kernel and bond_virial_kernel) and the kinetic
//     energy per direction K_aa of the velocities after the thermostat (the integrate kernel, from
//     the very velocities it stores). Each block adds its sums, in 64-bit fixed point (exact, in
//     any order), to one of kBoxGroups groups of accumulators, so no address takes an
//     atomic per block of a large grid;
//   - the step's decision (the integrate kernel's last block, or decide_step_kernel) then reads
//     the sums and clears them, computes the factors mu and the new box (box_decide, in double
//     as on the CPU), and halts the chunk when the box would become too small (a blow-up with
//     DeviceBox::too_small) or when the list's rebuild test fails under the new box;
//   - rescale_particles_kernel (the launch after the integrate kernel) scales x_{n+1}, the
//     velocities, the images' positions and the list's reference positions; its last block
//     clears DeviceBox::apply, so a chunk launched behind a halted one scales nothing again.
// The stage goes into every step of a graph: a step that barostat.due() leaves out reads no sums
// and scales nothing (decided on the device from the step counter), so a graph of any number of
// steps stays the same graph whatever `every` is.
//
// The list's rebuild test under scaling: positions at the build are scaled with the particles, so
// the displacements are those the dynamics made; a pair outside the list radius R = rc + skin at
// the build is at least s R apart after the box scaled by s (the smallest edge ratio since the
// build, at most 1 here), so the list holds every pair within rc while twice the largest
// displacement stays below s R - rc (neighbor/verlet_list.cpp says the same for the CPU list).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "base/box.h"
#include "cuda/launcher.cuh"
#include "integrators/barostat.h"
#include "kernels/step_control.cuh"

namespace pairmd {

// The box as the kernels read it, and the barostat's state on the device.
struct DeviceBox {
  BoxGeometry<float> box;   // what every kernel reads (edges rounded from L)
  double L[3];              // the edges, in double: updates scale these, so rounding does not build up
  double mu[3];             // the factors of the last update
  float rebuild_sq;         // a list rebuild is due beyond this squared displacement since the build
  float scale_since_build;  // the smallest edge ratio since the last list build (at most 1)
  int apply;                // 1: rescale_particles_kernel scales this step's particles
  int too_small;            // 1: an update would have made half the smallest edge too short (halted)
};

// Groups of accumulators of the pressure's parts: block b adds to group b % kBoxGroups.
constexpr int kBoxGroups = 16;
// Words of a group: W_xx, W_yy, W_zz (energy) and m v_x^2, m v_y^2, m v_z^2 (m v^2 units), each
// in units of 2^-32.
constexpr int kBoxWords = 6;

// What the box update reads besides the sums: set once per run.
struct BoxStage {
  BarostatSettings settings;  // kind None: no barostat (the stage is not compiled in)
  double force_to_accel;      // m v^2 = force_to_accel * energy
  double dt;
  float list_cutoff;    // the largest cutoff of the lists and their skin: the rebuild test
  float list_skin;      //   under scaling (above)
  float min_half_edge;  // half the smallest edge may not go below this (cutoff + skin, and above
                        // max_step_displacement)
};

// A barostat term (a virial or m v^2 component) as a fixed-point word: units of 2^-32, clamped
// at 2^30 (such a term belongs to a blow-up the force sums report anyway).
__device__ __forceinline__ long long box_fixed(float v) {
  constexpr float kMax = 1073741824.0f;  // 2^30
  if (!(v < kMax && v > -kMax)) v = v < 0.f ? -kMax : kMax;
  return __float2ll_rn(v * 4294967296.0f);
}

// Adds a block's words (valid in every thread: one value per thread, summed here) to group
// blockIdx.x % kBoxGroups of `sums`. Call from every thread of the block (kBlockSize or kSumBlock
// threads, a multiple of 32, at most 1024).
__device__ __forceinline__ void add_box_words(unsigned long long* sums, const long long* v, int first, int count) {
  __shared__ long long warp_sums[32][kBoxWords];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int q = 0; q < count; ++q) {
    long long s = v[q];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) warp_sums[warp][q] = s;
  }
  __syncthreads();
  if (threadIdx.x < count) {
    long long total = 0;
    for (int w = 0; w < warps; ++w) total += warp_sums[w][threadIdx.x];
    if (total)
      atomicAdd(sums + (blockIdx.x % kBoxGroups) * kBoxWords + first + threadIdx.x,
                static_cast<unsigned long long>(total));
    __threadfence();  // in before the block's ticket (the step's decision reads the sums)
  }
  __syncthreads();  // warp_sums may be reused
}

// The same for the words of one warp (the lanes of the calling warp; every lane calls it), for
// integrate_slots_kernel: no fence, since the decision that reads the sums is a kernel of its own
// (decide_step_kernel), after this one.
__device__ __forceinline__ void add_box_words_warp(unsigned long long* sums, const long long* v, int first, int count) {
  const int lane = threadIdx.x & 31;
  for (int q = 0; q < count; ++q) {
    long long s = v[q];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0 && s)
      atomicAdd(sums + (blockIdx.x % kBoxGroups) * kBoxWords + first + q, static_cast<unsigned long long>(s));
  }
}

// The rebuild threshold on the squared displacement at scale s (<= 1) since the build.
__device__ __forceinline__ float rebuild_threshold_sq(float s, float rc, float skin) {
  const float half = 0.5f * (s * (rc + skin) - rc);
  return half > 0.f ? half * half : -1.f;
}

// The box update of the step just taken, `step` (one thread, in the step's decision, after every
// block's sums are in): reads and clears the sums, sets mu, the new box and apply, or too_small
// (returns false: the caller halts the chunk as a blow-up). `kT_mvv` is k_B T in m v^2 units. Not
// inlined, and given the stage by value: the integrate kernels it is called from run at their
// register limit, and their other threads never come here.
static __device__ __noinline__ bool box_decide(const BoxStage st, DeviceBox* b, unsigned long long* sums, float kT_mvv,
                                               uint64_t seed, uint64_t step) {
  b->apply = 0;
  if (!st.settings.due(static_cast<int64_t>(step))) return true;
  long long w[kBoxWords] = {0, 0, 0, 0, 0, 0};
  for (int g = 0; g < kBoxGroups; ++g)  // read at L2 (other blocks' atomics) and cleared for the next update
    for (int q = 0; q < kBoxWords; ++q) w[q] += static_cast<long long>(atomicExch(sums + g * kBoxWords + q, 0ull));
  constexpr double unit = 1.0 / 4294967296.0;
  double virial[3] = {w[0] * unit, w[1] * unit, w[2] * unit};
  if (st.settings.couple == BarostatCoupling::Isotropic) {
    // The trace only (as the CPU backend, which reads W / 3 per direction).
    const double third = (virial[0] + virial[1] + virial[2]) / 3.0;
    virial[0] = virial[1] = virial[2] = third;
  }
  const double to_energy = 0.5 / st.force_to_accel;
  const double kinetic[3] = {to_energy * (w[3] * unit), to_energy * (w[4] * unit), to_energy * (w[5] * unit)};
  const double volume = b->L[0] * b->L[1] * b->L[2];
  const PressureDiagonal p = pressure_diagonal(kinetic, virial, volume);
  double mu[3];
  // The normal draws in float: in double their logarithms, roots and sines took most of the
  // decision's 5 us, which every block of the step waits for (their precision is immaterial: the
  // CPU's double draws differ from these by ~1e-7 of the noise).
  c_rescale_factors(st.settings, double(kT_mvv) / st.force_to_accel, st.dt, p, volume,
                    barostat_noise<float>(seed, step), mu);
  for (int d = 0; d < 3; ++d) b->mu[d] = mu[d];
  double L[3], smallest = 1e300;
  for (int d = 0; d < 3; ++d) {
    L[d] = b->L[d] * b->mu[d];
    smallest = fmin(smallest, L[d]);
  }
  if (!(0.5 * smallest >= st.min_half_edge)) {  // NaN too
    b->too_small = 1;
    return false;
  }
  for (int d = 0; d < 3; ++d) b->L[d] = L[d];
  b->box.L = {float(L[0]), float(L[1]), float(L[2])};
  const float smallest_mu = float(fmin(b->mu[0], fmin(b->mu[1], b->mu[2])));
  b->scale_since_build = fminf(1.f, b->scale_since_build * smallest_mu);
  b->rebuild_sq = rebuild_threshold_sq(b->scale_since_build, st.list_cutoff, st.list_skin);
  b->apply = 1;
  return true;
}

// The largest factor of the update just decided (1 without one): displacements grow by at most
// this much when the particles are scaled.
__device__ __forceinline__ float box_largest_factor(const DeviceBox* b) {
  return b->apply ? float(fmax(b->mu[0], fmax(b->mu[1], b->mu[2]))) : 1.f;
}

struct RescaleArgs {
  float4* pos;  // x_{n+1} (the integrate launch's pos_out): xyz + type bits
  float4* vel;  // xyz + mass
  int3* image;
  float4* pos_at_build;  // the rebuild test's reference, scaled with the particles
  int n;
  DeviceBox* box;
  unsigned* ticket;  // zero between launches: the last block clears box->apply
};

// The particles' part of the update the step's decision made (nothing unless box->apply).
void enqueue_rescale(Launcher& launcher, const RescaleArgs& a);

// A list build: the displacements start again from the new reference positions.
void enqueue_box_build_reset(Launcher& launcher, DeviceBox* box, float half_skin_sq);

}  // namespace pairmd
