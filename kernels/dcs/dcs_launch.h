// Direct Coulomb Summation on the GPU: host-callable launchers in plain C++ (no CUDA headers),
// so that analysis/ and the tests compile without the CUDA toolkit. Implemented by
// dcs_kernels.cu in a CUDA build and by dcs_stub.cpp otherwise (where every call but
// gpu_available() throws).
//
// What the kernels compute, in float: out[(k*ny + j)*nx + i] = sum_a q_a * rsqrt(max(r^2, floor2))
// with r the distance from point (i*hx, j*hy, k*hz) to atom a. The caller folds the lattice origin
// into the atom coordinates (atoms relative to point (0,0,0) keep the float coordinates small) and
// multiplies by k_e afterwards.
#pragma once

#include <cstddef>
#include <string>

namespace pairmd::dcs {

enum class GpuKernel {
  Scatter,          // thread per (atom, z-plane); float atomicAdd into the lattice
  Gather,           // thread per lattice point; atoms from __constant__ memory in 4096-atom chunks
  GatherCoarsened,  // thread per `coarsen` consecutive points of a row; dy, dz, q reused from registers
  GatherCoalesced,  // as coarsened, but thread t of a row segment owns points t, t+bx, t+2bx, ...
  // As coalesced, but the first `soft_rsqrt` of each thread's `coarsen` points take 1/sqrt on the
  // FMA pipes (soft_rsqrt.h) instead of the special-function units; a measurement variant
  // (dcs_bench), not a map kernel.
  GatherMixedRsqrt,
};

struct GpuLattice {
  int nx = 0, ny = 0, nz = 0;
  float hx = 1, hy = 1, hz = 1;
};

struct GpuOptions {
  float floor2 = 0.25f;  // r^2 is clamped to at least this (distance floor squared); must be > 0
  int coarsen = 8;       // points per thread of the coarsened kernels: 4, 8 or 16
  bool poison = false;   // fill the device output with NaN before the kernels (tests: every point written)
  int soft_rsqrt = 1;    // GatherMixedRsqrt: points per thread on the FMA pipes (C = 8: 1, 2; C = 16: 2, 3, 4)
};

// Whether GPU kernels are compiled in and a CUDA device is present; `why` says which device, or why not.
bool gpu_available(std::string* why);

// Computes the lattice sums described above. `xyzq` holds 4 floats per atom (x, y, z relative to
// lattice point (0,0,0), charge); `out` receives nx*ny*nz floats, x fastest. Returns the time of the
// kernels alone in milliseconds (CUDA events; no allocation or transfer). Throws std::runtime_error
// naming the CUDA call, file and line on any CUDA error, std::invalid_argument on bad arguments.
double gpu_potential(GpuKernel kernel, const GpuLattice& lattice, const float* xyzq, size_t natoms, float* out,
                     const GpuOptions& options);

// Atoms per __constant__ chunk: 4096 float4 = the whole 64 KB of constant memory.
constexpr int kAtomsPerChunk = 4096;

}  // namespace pairmd::dcs
