// Direct Coulomb Summation kernels (see dcs_launch.h for what they compute).
//
// Cost model (why the kernels look like this). One atom evaluation is
//   dx = x - xa; r2 = dx*dx + dyz2; r2 = max(r2, floor2); v += q * rsqrt(r2)
// = 3 FP32 instructions + 1 FMNMX + 1 MUFU.RSQ. The H100's 16 MUFU lanes per SM and clock
// (4.2e12 rsqrt/s at 1.98 GHz on 132 SMs) bound the rate; the 128 FP32 lanes per SM are not
// the limit as long as each evaluation issues few other instructions. The coarsened kernels
// compute dy*dy + dz*dz, load the atom (one LDC.128 from __constant__ memory, broadcast to the
// warp) and read q once per atom for `C` points, so the per-evaluation overhead shrinks to
// about 4/C instructions.
//
// Accuracy. Every thread sums at most 4096 atoms (one __constant__ chunk) in a float register,
// then adds that partial sum to the lattice value: the rounding error of a float running sum of
// n terms grows like sqrt(n/3) * 2^-24 * |partial sum| (random rounding), ~2e-6 relative for
// n = 4096, while one running sum over 100k atoms would reach ~1e-5. Chunked partial sums keep
// the relative RMS error well below 1e-5 without the 3 extra FP32 instructions per evaluation of
// Kahan summation. Coordinates are relative to lattice point (0,0,0), so their float rounding is
// 2^-24 of the lattice extent.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_query.h"
#include "kernels/dcs/dcs_launch.h"
#include "kernels/dcs/soft_rsqrt.h"

namespace pairmd::dcs {

namespace {

// One chunk of atoms: float4 (x, y, z, q); 4096 * 16 B = 64 KB, all of constant memory.
__constant__ float4 c_atoms[kAtomsPerChunk];

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    PAIRMD_CUDA_CHECK(cudaEventCreate(&start));
    PAIRMD_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// Gather: each thread owns C points of one lattice row (j, k) and sums the chunk's atoms over
// them. kInterleaved == false: points i0, i0+1, ..., i0+C-1 (coarsened; a store instruction of
// the warp touches addresses C floats apart). kInterleaved == true: points i0, i0+bx, i0+2bx, ...
// where bx = blockDim.x (coalesced; each store instruction writes bx consecutive floats).
// C == 1 is the plain thread-per-point gather. Points past the row end are computed (keeps the
// loop branch-free) but not stored. The first kSoft of the C points take their rsqrt on the FMA
// pipes (rsqrt_fma) rather than MUFU.RSQ: with few of them the FP32 pipes, idle most of the
// time here, share the work of the special-function units (GatherMixedRsqrt).
template <int C, bool kInterleaved, int kSoft = 0>
__global__ void __launch_bounds__(128)
    dcs_gather(float* __restrict__ out, GpuLattice lat, int natoms, float floor2, int accumulate) {
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int k = blockIdx.z;
  if (j >= lat.ny) return;
  const int segment = blockIdx.x * blockDim.x * C;
  const int i0 = kInterleaved ? segment + threadIdx.x : segment + threadIdx.x * C;
  const int stride = kInterleaved ? blockDim.x : 1;
  float x[C], v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    x[c] = static_cast<float>(i0 + c * stride) * lat.hx;
    v[c] = 0.0f;
  }
  const float y = static_cast<float>(j) * lat.hy, z = static_cast<float>(k) * lat.hz;
#pragma unroll 4
  for (int a = 0; a < natoms; ++a) {
    const float4 atom = c_atoms[a];
    const float dy = y - atom.y, dz = z - atom.z;
    const float dyz2 = fmaf(dy, dy, dz * dz);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float dx = x[c] - atom.x;
      const float r2 = fmaxf(fmaf(dx, dx, dyz2), floor2);
      v[c] = fmaf(atom.w, c < kSoft ? rsqrt_fma(r2) : rsqrtf(r2), v[c]);
    }
  }
  float* row = out + (static_cast<size_t>(k) * lat.ny + j) * lat.nx;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const int i = i0 + c * stride;
    if (i < lat.nx) row[i] = accumulate ? row[i] + v[c] : v[c];
  }
}

// Scatter: thread per (atom, z-plane k); it adds its atom's term to every point of plane k with
// float atomicAdd. Lanes start at different points of a row and blocks at different rows, so the
// 32 atomics of a warp instruction hit 32 consecutive addresses (one coalesced reduction) and
// warps of one plane rarely collide.
__global__ void __launch_bounds__(128) dcs_scatter(float* __restrict__ plane_sums, GpuLattice lat,
                                                   const float4* __restrict__ atoms, int natoms, float floor2) {
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  const int k = blockIdx.y;
  if (a >= natoms) return;
  const float4 atom = atoms[a];
  const float dz = static_cast<float>(k) * lat.hz - atom.z;
  const float dz2 = dz * dz;
  const int i_start = (threadIdx.x & 31) % lat.nx;
  const int j_start = blockIdx.x % lat.ny;
  for (int jj = 0; jj < lat.ny; ++jj) {
    int j = jj + j_start;
    if (j >= lat.ny) j -= lat.ny;
    const float dy = static_cast<float>(j) * lat.hy - atom.y;
    const float dyz2 = fmaf(dy, dy, dz2);
    float* row = plane_sums + (static_cast<size_t>(k) * lat.ny + j) * lat.nx;
    for (int ii = 0; ii < lat.nx; ++ii) {
      int i = ii + i_start;
      if (i >= lat.nx) i -= lat.nx;
      const float dx = static_cast<float>(i) * lat.hx - atom.x;
      atomicAdd(row + i, atom.w * rsqrtf(fmaxf(fmaf(dx, dx, dyz2), floor2)));
    }
  }
}

// out = (accumulate ? out : 0) + chunk_sums, for every point.
__global__ void dcs_add(float* __restrict__ out, const float* __restrict__ chunk_sums, size_t n, int accumulate) {
  for (size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[p] = accumulate ? out[p] + chunk_sums[p] : chunk_sums[p];
}

__global__ void dcs_fill(float* __restrict__ out, size_t n, float value) {
  for (size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[p] = value;
}

int next_pow2(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

template <int C, bool kInterleaved, int kSoft = 0>
void launch_gather(float* out, const GpuLattice& lat, int n, float floor2, int accumulate) {
  // 128 threads: bx along the row (enough to cover it with C points each, at most a warp), the
  // rest along y, so that short rows do not leave most threads idle.
  const int bx = std::min(32, next_pow2((lat.nx + C - 1) / C));
  const dim3 block(bx, 128 / bx);
  const dim3 grid((lat.nx + bx * C - 1) / (bx * C), (lat.ny + block.y - 1) / block.y, lat.nz);
  dcs_gather<C, kInterleaved, kSoft><<<grid, block>>>(out, lat, n, floor2, accumulate);
  PAIRMD_CHECK_LAUNCH();
}

void launch_gather_kind(GpuKernel kernel, int coarsen, int soft, float* out, const GpuLattice& lat, int n, float floor2,
                        int accumulate) {
  if (kernel == GpuKernel::Gather) return launch_gather<1, false>(out, lat, n, floor2, accumulate);
  if (kernel == GpuKernel::GatherMixedRsqrt) {
    if (coarsen == 8 && soft == 1) return launch_gather<8, true, 1>(out, lat, n, floor2, accumulate);
    if (coarsen == 8 && soft == 2) return launch_gather<8, true, 2>(out, lat, n, floor2, accumulate);
    if (coarsen == 16 && soft == 2) return launch_gather<16, true, 2>(out, lat, n, floor2, accumulate);
    if (coarsen == 16 && soft == 3) return launch_gather<16, true, 3>(out, lat, n, floor2, accumulate);
    if (coarsen == 16 && soft == 4) return launch_gather<16, true, 4>(out, lat, n, floor2, accumulate);
    throw std::invalid_argument(
        "dcs: gather_mixed_rsqrt is built for C = 8 with 1 or 2 and C = 16 with 2, 3 or 4 "
        "software rsqrt points, not C = " +
        std::to_string(coarsen) + " with " + std::to_string(soft));
  }
  const bool inter = kernel == GpuKernel::GatherCoalesced;
  switch (coarsen) {
    case 4:
      return inter ? launch_gather<4, true>(out, lat, n, floor2, accumulate)
                   : launch_gather<4, false>(out, lat, n, floor2, accumulate);
    case 8:
      return inter ? launch_gather<8, true>(out, lat, n, floor2, accumulate)
                   : launch_gather<8, false>(out, lat, n, floor2, accumulate);
    case 16:
      return inter ? launch_gather<16, true>(out, lat, n, floor2, accumulate)
                   : launch_gather<16, false>(out, lat, n, floor2, accumulate);
  }
  throw std::invalid_argument("dcs: coarsening factor " + std::to_string(coarsen) + " is not one of 4, 8, 16");
}

dim3 grid_stride_blocks(size_t n) { return dim3(static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 65535))); }

}  // namespace

bool gpu_available(std::string* why) { return probe_cuda_device(why); }

double gpu_potential(GpuKernel kernel, const GpuLattice& lat, const float* xyzq, size_t natoms, float* out,
                     const GpuOptions& opt) {
  if (lat.nx <= 0 || lat.ny <= 0 || lat.nz <= 0) throw std::invalid_argument("dcs: empty lattice");
  if (lat.nz > 65535) throw std::invalid_argument("dcs: more than 65535 lattice planes");
  if (!(opt.floor2 > 0)) throw std::invalid_argument("dcs: the distance floor must be > 0");
  const size_t npoints = static_cast<size_t>(lat.nx) * lat.ny * lat.nz;

  DeviceBuffer<float> d_out(npoints);
  DeviceBuffer<float4> d_atoms(natoms);
  DeviceBuffer<float> d_chunk(kernel == GpuKernel::Scatter ? npoints : 0);
  if (natoms) PAIRMD_CUDA_CHECK(cudaMemcpy(d_atoms.data(), xyzq, natoms * sizeof(float4), cudaMemcpyHostToDevice));
  if (opt.poison) {
    dcs_fill<<<grid_stride_blocks(npoints), 256>>>(d_out.data(), npoints, std::numeric_limits<float>::quiet_NaN());
    PAIRMD_CHECK_LAUNCH();
  }
  Events ev;
  PAIRMD_CUDA_CHECK(cudaEventRecord(ev.start));
  if (natoms == 0) {
    dcs_fill<<<grid_stride_blocks(npoints), 256>>>(d_out.data(), npoints, 0.0f);
    PAIRMD_CHECK_LAUNCH();
  }
  for (size_t first = 0; first < natoms; first += kAtomsPerChunk) {
    const int n = static_cast<int>(std::min<size_t>(kAtomsPerChunk, natoms - first));
    const int accumulate = first > 0;
    if (kernel == GpuKernel::Scatter) {
      PAIRMD_CUDA_CHECK(cudaMemsetAsync(d_chunk.data(), 0, npoints * sizeof(float)));
      const dim3 grid((n + 127) / 128, lat.nz);
      dcs_scatter<<<grid, 128>>>(d_chunk.data(), lat, d_atoms.data() + first, n, opt.floor2);
      PAIRMD_CHECK_LAUNCH();
      dcs_add<<<grid_stride_blocks(npoints), 256>>>(d_out.data(), d_chunk.data(), npoints, accumulate);
      PAIRMD_CHECK_LAUNCH();
    } else {
      PAIRMD_CUDA_CHECK(
          cudaMemcpyToSymbolAsync(c_atoms, d_atoms.data() + first, n * sizeof(float4), 0, cudaMemcpyDeviceToDevice));
      launch_gather_kind(kernel, opt.coarsen, opt.soft_rsqrt, d_out.data(), lat, n, opt.floor2, accumulate);
    }
  }
  PAIRMD_CUDA_CHECK(cudaEventRecord(ev.stop));
  PAIRMD_CUDA_CHECK(cudaEventSynchronize(ev.stop));
  float ms = 0;
  PAIRMD_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  PAIRMD_CUDA_CHECK(cudaMemcpy(out, d_out.data(), npoints * sizeof(float), cudaMemcpyDeviceToHost));
  return ms;
}

}  // namespace pairmd::dcs
