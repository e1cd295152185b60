#include "kernels/box_update.cuh"

#include "cuda/block_reduce.cuh"

namespace pairmd {

namespace {

// parts[a * gridDim.x + b] = sum over block b's particles of m v_a^2.
__global__ void kinetic_diag_kernel(const float4* vel, int n, double* parts) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  double k[3] = {0, 0, 0};
  if (p < n) {
    const float4 v = vel[p];
    k[0] = double(v.w) * v.x * v.x;
    k[1] = double(v.w) * v.y * v.y;
    k[2] = double(v.w) * v.z * v.z;
  }
  for (int a = 0; a < 3; ++a) {
    const double s = block_reduce(k[a], SumOp{}, 0.0);
    if (threadIdx.x == 0) parts[a * gridDim.x + blockIdx.x] = s;
  }
}

// One thread: the factors and the new box (integrators/barostat.h, in double as on the CPU).
__global__ void c_rescale_kernel(BoxUpdateArgs a) {
  if (halted(a.ctrl) || threadIdx.x != 0 || !a.settings.due(a.ctrl->step - 1)) return;
  DeviceBox* b = a.box;
  const double volume = b->L[0] * b->L[1] * b->L[2];
  const double to_energy = 0.5 / a.force_to_accel;
  const double kinetic[3] = {to_energy * a.sums[0], to_energy * a.sums[1], to_energy * a.sums[2]};
  const PressureDiagonal p = pressure_diagonal(kinetic, a.virial_diag, volume);
  const double kT = double(a.system->kT_mvv) / a.force_to_accel;
  double mu[3];
  c_rescale_factors(a.settings, kT, a.dt, p, volume, a.seed, a.ctrl->step - 1, mu);
  double L[3], smallest = 1e300;
  for (int d = 0; d < 3; ++d) {
    L[d] = b->L[d] * mu[d];
    smallest = fmin(smallest, L[d]);
  }
  if (!(0.5 * smallest >= a.min_half_edge)) {  // NaN too
    b->too_small = 1;
    a.ctrl->halt = kHaltBlowup;
    return;
  }
  for (int d = 0; d < 3; ++d) {
    b->L[d] = L[d];
    b->mu[d] = mu[d];
  }
  b->box.L = {float(L[0]), float(L[1]), float(L[2])};
  b->scale_since_build *= float(fmin(mu[0], fmin(mu[1], mu[2])));
}

// Every particle by the factors of c_rescale_kernel (the same function as the CPU backend's).
__global__ void rescale_particles_kernel(BoxUpdateArgs a) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (halted(a.ctrl) || p >= a.n || !a.settings.due(a.ctrl->step - 1)) return;
  const DeviceBox* b = a.box;
  const float mu[3] = {float(b->mu[0]), float(b->mu[1]), float(b->mu[2])};
  const BoxGeometry<float> box = b->box;  // lo is the old box's too: scaling keeps the lower corner
  const float4 x4 = a.pos[p], v4 = a.vel[p];
  Vec3<float> x{x4.x, x4.y, x4.z}, v{v4.x, v4.y, v4.z};
  Int3 im{a.image[p].x, a.image[p].y, a.image[p].z};
  rescale_particle(x, v, im, mu, box, box);
  a.pos[p] = make_float4(x.x, x.y, x.z, x4.w);
  a.vel[p] = make_float4(v.x, v.y, v.z, v4.w);
  a.image[p] = make_int3(im.x, im.y, im.z);
  const float4 r = a.pos_at_build[p];
  a.pos_at_build[p] = make_float4(box.lo.x + mu[0] * (r.x - box.lo.x), box.lo.y + mu[1] * (r.y - box.lo.y),
                                  box.lo.z + mu[2] * (r.z - box.lo.z), r.w);
}

}  // namespace

void enqueue_box_update(Launcher& launcher, const BoxUpdateArgs& a) {
  const int blocks = blocks_for(static_cast<size_t>(a.n));
  launcher.kernel(PAIRMD_HERE, kinetic_diag_kernel, blocks, kBlockSize, 0, a.vel, a.n, a.parts);
  launcher.kernel(PAIRMD_HERE, sum_block_parts, 3, kBlockSize, 0, a.parts, blocks, blocks, 3, a.sums);
  launcher.kernel(PAIRMD_HERE, c_rescale_kernel, 1, 32, 0, a);
  launcher.kernel(PAIRMD_HERE, rescale_particles_kernel, blocks, kBlockSize, 0, a);
}

}  // namespace pairmd
