#include "kernels/box_update.cuh"

#include "cuda/block_reduce.cuh"

namespace pairmd {

namespace {

// Every particle by the factors the step's decision set (the same function as the CPU backend's),
// when it set any. The last block to finish clears box->apply: a chunk launched behind one that
// halted runs this kernel again, and must then scale nothing.
__global__ void rescale_particles_kernel(RescaleArgs a) {
  __shared__ int apply;
  if (threadIdx.x == 0) apply = *reinterpret_cast<volatile int*>(&a.box->apply);
  __syncthreads();
  if (apply) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < a.n) {
      const DeviceBox* b = a.box;
      const float mu[3] = {float(b->mu[0]), float(b->mu[1]), float(b->mu[2])};
      // lo is the old box's too (scaling keeps the lower corner); the new edges wrap.
      const BoxGeometry<float> box = b->box;
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
  }
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(a.ticket, 1u) == gridDim.x - 1) {  // every block has read apply
      a.box->apply = 0;
      *a.ticket = 0;
    }
  }
}

__global__ void box_build_reset_kernel(DeviceBox* box, float half_skin_sq) {
  box->scale_since_build = 1.f;
  box->rebuild_sq = half_skin_sq;
}

}  // namespace

void enqueue_rescale(Launcher& launcher, const RescaleArgs& a) {
  launcher.kernel(PAIRMD_HERE, rescale_particles_kernel, blocks_for(static_cast<size_t>(std::max(a.n, 1))), kBlockSize,
                  0, a);
}

void enqueue_box_build_reset(Launcher& launcher, DeviceBox* box, float half_skin_sq) {
  launcher.kernel(PAIRMD_HERE, box_build_reset_kernel, 1, 1, 0, box, half_skin_sq);
}

}  // namespace pairmd
