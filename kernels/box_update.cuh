// The barostat's box update on the GPU (integrators/barostat.h): the stage the CPU backend runs
// in CpuBackend::update_box, for a step in which barostat.due(step) holds, between the
// integrate launch that begins the step (kick, drift, thermostat, drift) and the step's forces.
// Four launches through the step's Launcher, so that they are part of the chunk's graph and the
// host never reads the box. They may go into every step of a graph: the last two do nothing on a
// step that barostat.due() leaves out (read on the device from the step counter), so a graph of
// any number of steps stays the same graph whatever `every` is.
//   kinetic_diag_kernel + sum_block_parts   K_aa of the velocities (after the thermostat), in a
//                                           fixed order (bitwise reproducible)
//   c_rescale_kernel (one thread)           the pressure diagonal from K_aa, the virial diagonal
//                                           of x_n and the box; mu and the new box, into
//                                           DeviceBox; halts the chunk (kHaltBlowup, with
//                                           DeviceBox::too_small) if the box became too small
//   rescale_particles_kernel                positions (wrapped, images kept), velocities by
//                                           1 / mu, and the positions at the list build
//
// Not wired into the step yet (kernels/cuda_backend.cu). What that takes:
//   - the box in device memory, read there by every kernel of the step and of the list build
//     (integrate, forces, pulling, cell order) instead of a BoxGeometry<float> argument: graphs
//     hold their arguments, and would keep the box they were captured with;
//   - the cell grid follows the box: its cells must stay at least a list radius wide as the box
//     shrinks (the build recomputes the grid from the DeviceBox, or the host rebuilds it when
//     the chunk halts for a rebuild);
//   - the force kernels sum the virial diagonal W_aa (deterministically, as the energy words)
//     in the force pass before a due step, into BoxUpdateArgs::virial_diag;
//   - decide_step's rebuild test reads rebuild_threshold_sq(), and a list build sets
//     scale_since_build to 1;
//   - set_state uploads the DeviceBox, get_state reads its box back, and a blow-up with
//     too_small is reported with the box-size message of the CPU backend;
//   - make_backend stops sending barostat runs to the CPU backend.
#pragma once

#include <cuda_runtime.h>

#include "base/box.h"
#include "cuda/launcher.cuh"
#include "integrators/barostat.h"
#include "kernels/step_control.cuh"

namespace pairmd {

// The box as the barostat keeps it in device memory.
struct DeviceBox {
  double L[3];              // the edges, in double: the float box below is rounded from these, so
                            // rounding does not accumulate over many updates
  BoxGeometry<float> box;   // what the kernels of the step read
  double mu[3];             // the factors of the last update
  float scale_since_build;  // smallest edge ratio since the last list build (the build sets 1)
  int too_small;            // 1: an update would have made half the smallest edge < min_half_edge
};

struct BoxUpdateArgs {
  float4* pos;  // x_{n+1} (the begin launch's pos_out): xyz + type bits
  float4* vel;  // after the thermostat: xyz + mass
  int3* image;
  float4* pos_at_build;  // the rebuild test's reference, scaled with the particles
  int n;
  const double* virial_diag;  // W_aa of x_n (energy units), 3 doubles in device memory
  double* parts;              // scratch, 3 * blocks_for(n) doubles
  double* sums;               // scratch, 3 doubles: sum m v_a^2 (m v^2 units)
  DeviceBox* box;
  StepControl* ctrl;  // ctrl->step - 1 is the step being taken (decide_step counted it)
  BarostatSettings settings;
  double force_to_accel;  // m v^2 = force_to_accel * energy (k_B T comes from system->kT_mvv)
  double dt;
  uint64_t seed;
  float min_half_edge;  // the largest list radius (cutoff + skin), and above max_step_displacement
  const SystemParams* system;  // k_B T of the thermostat (kT_mvv)
};

// Launches the stage on `launcher` (issued at once, keyed, or planned into a graph).
void enqueue_box_update(Launcher& launcher, const BoxUpdateArgs& a);

// The list's rebuild threshold on a particle's squared displacement from its (scaled) position at
// the build: half of s (rc + skin) - rc, squared (skin / 2 without scaling); negative (rebuild
// at once) when the box shrank by rc / (rc + skin) or more since the build.
__device__ __forceinline__ float rebuild_threshold_sq(const DeviceBox* box, float rc, float skin) {
  const float half = 0.5f * (box->scale_since_build * (rc + skin) - rc);
  return half > 0.f ? half * half : -1.f;
}

}  // namespace pairmd
