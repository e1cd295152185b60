// Multilevel summation kernels (see msm_launch.h for the interface, analysis/msm.h for the
// method, potentials/msm.h for the splitting and the stencils, msm_bins.h for the binning).
//
// Every step is a gather (one thread per output value, inputs read in a fixed order), and the
// atoms are binned deterministically (integer atomicAdd for the counts, a stable sort for the
// order: by atom index within a bin), so a map is bitwise reproducible: no float atomics.
//
//   binning        count per bin (integer atomicAdd), exclusive scan (CUB) for the bins' starts,
//                  stable radix sort (CUB) of (bin, atom index), gather the atoms in bin order
//   short range    a block per tile of 8^3 lattice points (128 threads, 4 points each, along z):
//                  the tile's bin rows within a (msm_bins.h) are laid out in shared memory
//                  128 atoms at a time; every thread evaluates its 4 points against each
//                  atom: dx, dy shared, per point dz, r^2, rsqrt, the softening polynomial and
//                  a select for r < a
//   anterpolation  a thread per finest-grid point sums the atoms of the P^3 cells whose
//                  stencils reach it
//   grids          restriction (thread per coarse point), the level sums over a padded copy of
//                  each level (thread per point, stencil rows in global memory read by the whole
//                  warp at once), the top level (thread per point, all pairs), prolongation
//                  (thread per fine point)
//   interpolation  along x for every grid row (T1 = lattice x by grid y by grid z), then P^2
//                  rows of T1 per lattice point
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "kernels/dcs/msm_bins.h"
#include "kernels/dcs/msm_launch.h"
#include "potentials/msm.h"

namespace pairmd::dcs {

namespace {

constexpr int kTile = 8;            // lattice points per tile edge (short range)
constexpr int kShortThreads = 128;  // 8 x 8 x 2 threads, 4 points each along z
constexpr int kPointsPerThread = 4;

struct LevelDev {
  int lo[3], dims[3];
  __host__ __device__ size_t size() const { return static_cast<size_t>(dims[0]) * dims[1] * dims[2]; }
};

struct ShortGeom {
  int nx, ny, nz;
  float s[3], origin[3];
  float a, a2, floor2;
  float coef[5];
  msm::BinGrid<float> bins;
};

unsigned blocks_for(size_t n, int threads = 256) {
  return static_cast<unsigned>(std::min<size_t>((n + threads - 1) / threads, 1u << 30));
}

// ---- Binning ----------------------------------------------------------------------------------

__global__ void bin_count(const float4* __restrict__ atoms, int n, msm::BinGrid<float> g, int* __restrict__ bin,
                          int* __restrict__ count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4 a = atoms[i];
  const float x[3] = {a.x, a.y, a.z};
  const int b = msm::bin_of(g, x);
  bin[i] = b;
  atomicAdd(count + b, 1);
}

__global__ void iota(int* __restrict__ v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = i;
}

__global__ void bin_gather(const float4* __restrict__ atoms, const int* __restrict__ order, int n,
                           float4* __restrict__ binned) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) binned[i] = atoms[order[i]];
}

// ---- Short range ------------------------------------------------------------------------------

using ShortScan = cub::BlockScan<int, kShortThreads>;

// A block's shared memory: the tile's bin rows of one batch (their first atom, offset in the
// batch's layout and periodic shift), and the atoms of the chunk being summed.
struct ShortShared {
  typename ShortScan::TempStorage scan;
  float4 atoms[kShortThreads];
  int first[kShortThreads], offset[kShortThreads + 1];
  float shift[3][kShortThreads];
};

// One bin row per thread (row base + t of the tile's rows): its segment of atoms, then the
// block's prefix sum lays them out one after the other. Returns the batch's atom count.
__device__ int lay_out_rows(ShortShared& sh, const ShortGeom& g, const msm::TileRows& rows, int nrows,
                            const float* bmin, const float* bmax, int base, const int* __restrict__ start) {
  const int t = threadIdx.x;
  int first = 0, len = 0;
  msm::RowSegment<float> seg;
  seg.shift[0] = seg.shift[1] = seg.shift[2] = 0.0f;
  if (base + t < nrows && msm::tile_row(g.bins, rows, bmin, bmax, g.a, base + t, seg)) {
    first = start[seg.first];
    len = start[seg.last + 1] - first;
  }
  int offset, total;
  ShortScan(sh.scan).ExclusiveSum(len, offset, total);
  sh.first[t] = first;
  sh.offset[t] = offset;
  sh.shift[0][t] = seg.shift[0], sh.shift[1][t] = seg.shift[1], sh.shift[2][t] = seg.shift[2];
  if (t == 0) sh.offset[kShortThreads] = total;
  __syncthreads();
  return total;
}

// Atom `chunk + t` of the batch's layout into shared memory, shifted to its periodic image.
__device__ void load_atom(ShortShared& sh, const float4* __restrict__ atoms, int chunk, int total) {
  const int t = threadIdx.x, f = chunk + t;
  if (f < total) {
    // The last segment starting at or before f holds it (empty segments share offsets).
    int lo = 0, hi = kShortThreads - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (sh.offset[mid] <= f)
        lo = mid;
      else
        hi = mid - 1;
    }
    float4 a = atoms[sh.first[lo] + f - sh.offset[lo]];
    a.x += sh.shift[0][lo], a.y += sh.shift[1][lo], a.z += sh.shift[2][lo];
    sh.atoms[t] = a;
  }
}

// The short-range potential of the first n shared atoms at a thread's points (px, py, pz[c]).
template <int K>
__device__ void add_atoms(const ShortShared& sh, int n, const ShortGeom& g, const float* coef, float px, float py,
                          const float* pz, float* v) {
  for (int k = 0; k < n; ++k) {
    const float4 a = sh.atoms[k];
    const float dx = px - a.x, dy = py - a.y;
    const float dxy2 = fmaf(dx, dx, dy * dy);
#pragma unroll
    for (int c = 0; c < kPointsPerThread; ++c) {
      const float dz = pz[c] - a.z;
      const float r2 = fmaf(dz, dz, dxy2);
      const float term = rsqrtf(fmaxf(r2, g.floor2)) - msm::softening_poly<K>(coef, r2);
      v[c] = fmaf(r2 < g.a2 ? a.w : 0.0f, term, v[c]);
    }
  }
}

template <int K>
__global__ void __launch_bounds__(kShortThreads)
    short_range(float* __restrict__ out, ShortGeom g, const float4* __restrict__ atoms, const int* __restrict__ start) {
  __shared__ ShortShared sh;
  float coef[K + 1];
#pragma unroll
  for (int j = 0; j <= K; ++j) coef[j] = g.coef[j];
  const int t = threadIdx.x;
  const int i0 = blockIdx.x * kTile, j0 = blockIdx.y * kTile, k0 = blockIdx.z * kTile;
  const int i = i0 + (t & 7), j = j0 + ((t >> 3) & 7), kb = k0 + (t >> 6);
  const float px = i * g.s[0] - g.origin[0], py = j * g.s[1] - g.origin[1];
  float pz[kPointsPerThread], v[kPointsPerThread];
#pragma unroll
  for (int c = 0; c < kPointsPerThread; ++c) pz[c] = (kb + 2 * c) * g.s[2] - g.origin[2], v[c] = 0.0f;
  const float bmin[3] = {i0 * g.s[0] - g.origin[0], j0 * g.s[1] - g.origin[1], k0 * g.s[2] - g.origin[2]};
  const float bmax[3] = {(min(g.nx, i0 + kTile) - 1) * g.s[0] - g.origin[0],
                         (min(g.ny, j0 + kTile) - 1) * g.s[1] - g.origin[1],
                         (min(g.nz, k0 + kTile) - 1) * g.s[2] - g.origin[2]};
  const msm::TileRows rows = msm::tile_rows(g.bins, bmin, bmax, g.a);
  const int nrows = rows.count();
  for (int base = 0; base < nrows; base += kShortThreads) {
    const int total = lay_out_rows(sh, g, rows, nrows, bmin, bmax, base, start);
    for (int chunk = 0; chunk < total; chunk += kShortThreads) {
      load_atom(sh, atoms, chunk, total);
      __syncthreads();
      add_atoms<K>(sh, min(kShortThreads, total - chunk), g, coef, px, py, pz, v);
      __syncthreads();
    }
    __syncthreads();  // the next batch rewrites the shared rows and reuses the scan storage
  }
  if (i < g.nx && j < g.ny) {
#pragma unroll
    for (int c = 0; c < kPointsPerThread; ++c) {
      const int k = kb + 2 * c;
      if (k < g.nz) out[(static_cast<size_t>(k) * g.ny + j) * g.nx + i] = v[c];
    }
  }
}

// ---- Anterpolation ----------------------------------------------------------------------------

// Cell c (unwrapped) along direction d: its bin index and the shift that brings its atoms next to
// c. False where an open grid has no such bin.
__device__ __forceinline__ bool cell_bin(const msm::BinGrid<float>& bins, int d, int c, int& b, float& shift) {
  if (bins.periodic) {
    b = msm::wrap_index(c, bins.nb[d]);
    shift = static_cast<float>((c - b) / bins.nb[d]) * bins.L[d];
    return true;
  }
  b = c - bins.lo[d];
  shift = 0.0f;
  return b >= 0 && b < bins.nb[d];
}

template <int P>
__global__ void anterpolate(float* __restrict__ q, LevelDev l, msm::BinGrid<float> bins,
                            const float4* __restrict__ atoms, const int* __restrict__ start) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= l.size()) return;
  const int m[3] = {static_cast<int>(idx % l.dims[0]) + l.lo[0],
                    static_cast<int>((idx / l.dims[0]) % l.dims[1]) + l.lo[1],
                    static_cast<int>(idx / (static_cast<size_t>(l.dims[0]) * l.dims[1])) + l.lo[2]};
  float sum = 0.0f;
  // Atoms of cell c reach grid points c - P/2 + 1 .. c + P/2.
  int bx, by, bz;
  float sx, sy, sz;
  for (int cz = m[2] - P / 2; cz < m[2] + P / 2; ++cz) {
    if (!cell_bin(bins, 2, cz, bz, sz)) continue;
    for (int cy = m[1] - P / 2; cy < m[1] + P / 2; ++cy) {
      if (!cell_bin(bins, 1, cy, by, sy)) continue;
      for (int cx = m[0] - P / 2; cx < m[0] + P / 2; ++cx) {
        if (!cell_bin(bins, 0, cx, bx, sx)) continue;
        const int b = bx + bins.nb[0] * (by + bins.nb[1] * bz);
        const int e = start[b + 1];
        for (int a = start[b]; a < e; ++a) {
          const float4 at = atoms[a];
          const float wx = msm::phi<P>((at.x + sx) / bins.h[0] - m[0]);
          const float wy = msm::phi<P>((at.y + sy) / bins.h[1] - m[1]);
          const float wz = msm::phi<P>((at.z + sz) / bins.h[2] - m[2]);
          sum = fmaf(at.w * wx, wy * wz, sum);
        }
      }
    }
  }
  q[idx] = sum;
}

// ---- Grid levels ------------------------------------------------------------------------------

__device__ __forceinline__ int level_index(const LevelDev& l, int d, int m, int periodic) {
  if (periodic) return msm::wrap_index(m, l.dims[d]);
  const int i = m - l.lo[d];
  return (i >= 0 && i < l.dims[d]) ? i : -1;
}

struct RestrictWeights {
  float w[11];  // Phi(d/2), d = -(P-1) .. P-1
};

template <int P>
__global__ void restrict_level(const float* __restrict__ qf, LevelDev f, float* __restrict__ qc, LevelDev c,
                               int periodic, RestrictWeights rw) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= c.size()) return;
  const int n[3] = {static_cast<int>(idx % c.dims[0]) + c.lo[0],
                    static_cast<int>((idx / c.dims[0]) % c.dims[1]) + c.lo[1],
                    static_cast<int>(idx / (static_cast<size_t>(c.dims[0]) * c.dims[1])) + c.lo[2]};
  float sum = 0.0f;
  for (int dz = 0; dz < 2 * P - 1; ++dz) {
    const float wz = rw.w[dz];
    const int iz = level_index(f, 2, 2 * n[2] + dz - (P - 1), periodic);
    if (wz == 0.0f || iz < 0) continue;
    for (int dy = 0; dy < 2 * P - 1; ++dy) {
      const float wy = rw.w[dy];
      const int iy = level_index(f, 1, 2 * n[1] + dy - (P - 1), periodic);
      if (wy == 0.0f || iy < 0) continue;
      const float* row = qf + (static_cast<size_t>(iz) * f.dims[1] + iy) * f.dims[0];
      for (int dx = 0; dx < 2 * P - 1; ++dx) {
        const float wx = rw.w[dx];
        const int ix = level_index(f, 0, 2 * n[0] + dx - (P - 1), periodic);
        if (wx != 0.0f && ix >= 0) sum = fmaf(wz * wy * wx, row[ix], sum);
      }
    }
  }
  qc[idx] = sum;
}

template <int P>
__global__ void prolong_level(float* __restrict__ ef, LevelDev f, const float* __restrict__ ec, LevelDev c,
                              int periodic, RestrictWeights rw) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= f.size()) return;
  const int m[3] = {static_cast<int>(idx % f.dims[0]) + f.lo[0],
                    static_cast<int>((idx / f.dims[0]) % f.dims[1]) + f.lo[1],
                    static_cast<int>(idx / (static_cast<size_t>(f.dims[0]) * f.dims[1])) + f.lo[2]};
  int n0[3], cnt[3];
  for (int d = 0; d < 3; ++d) {
    n0[d] = -msm::floor_div(-(m[d] - (P - 1)), 2);
    cnt[d] = msm::floor_div(m[d] + (P - 1), 2) - n0[d] + 1;
  }
  float sum = 0.0f;
  for (int kz = 0; kz < cnt[2]; ++kz) {
    const int nz = n0[2] + kz;
    const float wz = rw.w[m[2] - 2 * nz + P - 1];
    const int iz = level_index(c, 2, nz, periodic);
    if (wz == 0.0f || iz < 0) continue;
    for (int ky = 0; ky < cnt[1]; ++ky) {
      const int ny = n0[1] + ky;
      const float wy = rw.w[m[1] - 2 * ny + P - 1];
      const int iy = level_index(c, 1, ny, periodic);
      if (wy == 0.0f || iy < 0) continue;
      for (int kx = 0; kx < cnt[0]; ++kx) {
        const int nx = n0[0] + kx;
        const float wx = rw.w[m[0] - 2 * nx + P - 1];
        const int ix = level_index(c, 0, nx, periodic);
        if (wx != 0.0f && ix >= 0)
          sum = fmaf(wz * wy * wx, ec[(static_cast<size_t>(iz) * c.dims[1] + iy) * c.dims[0] + ix], sum);
      }
    }
  }
  ef[idx] += sum;
}

// q padded by R on every side: zeros outside an open grid, wrapped copies of a periodic one.
__global__ void pad_level(const float* __restrict__ q, LevelDev l, int rx, int ry, int rz, int periodic,
                          float* __restrict__ pad) {
  const int px = l.dims[0] + 2 * rx, py = l.dims[1] + 2 * ry, pz = l.dims[2] + 2 * rz;
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(px) * py * pz) return;
  int s[3] = {static_cast<int>(idx % px) - rx, static_cast<int>((idx / px) % py) - ry,
              static_cast<int>(idx / (static_cast<size_t>(px) * py)) - rz};
  bool inside = true;
  for (int d = 0; d < 3; ++d) {
    if (periodic)
      s[d] = msm::wrap_index(s[d], l.dims[d]);
    else
      inside = inside && s[d] >= 0 && s[d] < l.dims[d];
  }
  pad[idx] = inside ? q[(static_cast<size_t>(s[2]) * l.dims[1] + s[1]) * l.dims[0] + s[0]] : 0.0f;
}

// e = scale * sum over the stencil of W(s) q(m + s), from the padded q.
__global__ void level_sum(const float* __restrict__ pad, LevelDev l, int rx, int ry, int rz,
                          const float* __restrict__ stencil, const int* __restrict__ reach, float scale,
                          float* __restrict__ e) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= l.size()) return;
  const int x = static_cast<int>(idx % l.dims[0]), y = static_cast<int>((idx / l.dims[0]) % l.dims[1]),
            z = static_cast<int>(idx / (static_cast<size_t>(l.dims[0]) * l.dims[1]));
  const int px = l.dims[0] + 2 * rx, py = l.dims[1] + 2 * ry;
  const int wx = 2 * rx + 1, wy = 2 * ry + 1;
  float sum = 0.0f;
  for (int sz = -rz; sz <= rz; ++sz)
    for (int sy = -ry; sy <= ry; ++sy) {
      const int r = __ldg(reach + (sz + rz) * wy + sy + ry);
      if (r < 0) continue;
      const float* in = pad + (static_cast<size_t>(z + rz + sz) * py + (y + ry + sy)) * px + x + rx;
      const float* w = stencil + (static_cast<size_t>(sz + rz) * wy + sy + ry) * wx + rx;
      for (int sx = -r; sx <= r; ++sx) sum = fmaf(__ldg(w + sx), in[sx], sum);
    }
  e[idx] = scale * sum;
}

__global__ void top_sum(const float* __restrict__ q, LevelDev t, const float* __restrict__ table, int periodic,
                        float* __restrict__ e) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= t.size()) return;
  const int D0 = t.dims[0], D1 = t.dims[1], D2 = t.dims[2];
  const int mx = static_cast<int>(idx % D0), my = static_cast<int>((idx / D0) % D1),
            mz = static_cast<int>(idx / (static_cast<size_t>(D0) * D1));
  float sum = 0.0f;
  for (int z = 0; z < D2; ++z)
    for (int y = 0; y < D1; ++y) {
      const float* qrow = q + (static_cast<size_t>(z) * D1 + y) * D0;
      if (periodic) {
        const float* krow =
            table + (static_cast<size_t>(msm::wrap_index(mz - z, D2)) * D1 + msm::wrap_index(my - y, D1)) * D0;
        for (int x = 0; x < D0; ++x) sum = fmaf(__ldg(krow + msm::wrap_index(mx - x, D0)), qrow[x], sum);
      } else {
        const int wx = 2 * D0 - 1, wy = 2 * D1 - 1;
        const float* krow = table + (static_cast<size_t>(mz - z + D2 - 1) * wy + (my - y + D1 - 1)) * wx + mx + D0 - 1;
        for (int x = 0; x < D0; ++x) sum = fmaf(__ldg(krow - x), qrow[x], sum);
      }
    }
  e[idx] = sum;
}

// ---- Interpolation ----------------------------------------------------------------------------

template <int P>
__global__ void interp_x(const float* __restrict__ e, LevelDev l, int nx, const int* __restrict__ ix,
                         const float* __restrict__ wx, float* __restrict__ t1) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(nx) * l.dims[1] * l.dims[2]) return;
  const int i = static_cast<int>(idx % nx);
  const size_t row = idx / nx;
  const float* src = e + row * l.dims[0];
  float v = 0.0f;
#pragma unroll
  for (int k = 0; k < P; ++k) v = fmaf(__ldg(wx + i * P + k), src[__ldg(ix + i * P + k)], v);
  t1[idx] = v;
}

template <int P>
__global__ void interp_yz(const float* __restrict__ t1, LevelDev l, int nx, int ny, int nz, const int* __restrict__ iy,
                          const float* __restrict__ wy, const int* __restrict__ iz, const float* __restrict__ wz,
                          int accumulate, float* __restrict__ out) {
  const size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (idx >= static_cast<size_t>(nx) * ny * nz) return;
  const int i = static_cast<int>(idx % nx), j = static_cast<int>((idx / nx) % ny),
            k = static_cast<int>(idx / (static_cast<size_t>(nx) * ny));
  float v = 0.0f;
#pragma unroll
  for (int c = 0; c < P; ++c) {
    const float w = __ldg(wz + k * P + c);
    const size_t plane = static_cast<size_t>(__ldg(iz + k * P + c)) * l.dims[1];
#pragma unroll
    for (int b = 0; b < P; ++b) v = fmaf(w * __ldg(wy + j * P + b), t1[(plane + __ldg(iy + j * P + b)) * nx + i], v);
  }
  out[idx] = accumulate ? out[idx] + v : v;
}

__global__ void fill(float* __restrict__ out, size_t n, float value) {
  for (size_t p = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; p < n;
       p += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[p] = value;
}

// ---- Host side --------------------------------------------------------------------------------

struct Events {
  cudaEvent_t e[6] = {};
  Events() {
    for (cudaEvent_t& x : e) PAIRMD_CUDA_CHECK(cudaEventCreate(&x));
  }
  ~Events() {
    for (cudaEvent_t& x : e)
      if (x) cudaEventDestroy(x);
  }
  double ms(int a, int b) const {
    float t = 0;
    PAIRMD_CUDA_CHECK(cudaEventElapsedTime(&t, e[a], e[b]));
    return t;
  }
};

LevelDev level_dev(const MsmGpuLevel& l) {
  LevelDev d;
  for (int i = 0; i < 3; ++i) d.lo[i] = l.lo[i], d.dims[i] = l.dims[i];
  return d;
}

void check_plan(const MsmGpuPlan& p) {
  if (p.order != 4 && p.order != 6) throw std::invalid_argument("msm gpu: order must be 4 or 6");
  if (p.split != 2 && p.split != 3) throw std::invalid_argument("msm gpu: the splitting order must be 2 or 3");
  if (p.nx <= 0 || p.ny <= 0 || p.nz <= 0 || p.levels.empty()) throw std::invalid_argument("msm gpu: empty plan");
  if ((p.nz + kTile - 1) / kTile > 65535 || (p.ny + kTile - 1) / kTile > 65535)
    throw std::invalid_argument("msm gpu: the lattice has too many tiles along y or z");
  if (!(p.floor2 > 0) || !(p.a * p.a > p.floor2)) throw std::invalid_argument("msm gpu: need 0 < floor < a");
  for (int d = 0; d < 3; ++d)
    if (p.interp_index[d].size() != static_cast<size_t>(d == 0 ? p.nx : d == 1 ? p.ny : p.nz) * p.order)
      throw std::invalid_argument("msm gpu: interpolation tables do not match the lattice");
}

// Every device array of a map, allocated and filled before the timed kernels start.
struct DevicePlan {
  std::vector<LevelDev> levels;
  std::vector<DeviceBuffer<float>> q, e;
  DeviceBuffer<float> pad, stencil, top, t1;
  DeviceBuffer<int> reach;
  DeviceBuffer<int> index[3];
  DeviceBuffer<float> weight[3];

  explicit DevicePlan(const MsmGpuPlan& p) {
    const size_t L = p.levels.size();
    q.resize(L);
    e.resize(L);
    size_t npad = 0;
    for (size_t l = 0; l < L; ++l) {
      levels.push_back(level_dev(p.levels[l]));
      q[l].resize(levels[l].size());
      e[l].resize(levels[l].size());
      if (l + 1 < L)
        npad = std::max(npad, static_cast<size_t>(levels[l].dims[0] + 2 * p.radius[0]) *
                                  (levels[l].dims[1] + 2 * p.radius[1]) * (levels[l].dims[2] + 2 * p.radius[2]));
    }
    pad.resize(npad);
    stencil.upload(p.stencil);
    reach.upload(p.row_reach);
    top.upload(p.top);
    for (int d = 0; d < 3; ++d) index[d].upload(p.interp_index[d]), weight[d].upload(p.interp_weight[d]);
    t1.resize(static_cast<size_t>(p.nx) * levels[0].dims[1] * levels[0].dims[2]);
  }
};

template <int P>
void anterpolation(DevicePlan& d, msm::BinGrid<float> bins, const float4* atoms, const int* start) {
  anterpolate<P><<<blocks_for(d.levels[0].size()), 256>>>(d.q[0].data(), d.levels[0], bins, atoms, start);
  PAIRMD_CHECK_LAUNCH();
}

template <int P>
void grid_steps(const MsmGpuPlan& p, DevicePlan& d) {
  const size_t L = d.levels.size();
  RestrictWeights rw{};
  for (int k = 0; k < 2 * P - 1; ++k) rw.w[k] = static_cast<float>(msm::restriction_weight<P>(k - (P - 1)));
  for (size_t l = 0; l + 1 < L; ++l) {
    restrict_level<P><<<blocks_for(d.levels[l + 1].size()), 256>>>(d.q[l].data(), d.levels[l], d.q[l + 1].data(),
                                                                   d.levels[l + 1], p.periodic, rw);
    PAIRMD_CHECK_LAUNCH();
  }
  for (size_t l = 0; l + 1 < L; ++l) {
    const LevelDev& lv = d.levels[l];
    const size_t npad = static_cast<size_t>(lv.dims[0] + 2 * p.radius[0]) * (lv.dims[1] + 2 * p.radius[1]) *
                        (lv.dims[2] + 2 * p.radius[2]);
    pad_level<<<blocks_for(npad), 256>>>(d.q[l].data(), lv, p.radius[0], p.radius[1], p.radius[2], p.periodic,
                                         d.pad.data());
    PAIRMD_CHECK_LAUNCH();
    level_sum<<<blocks_for(lv.size(), 128), 128>>>(d.pad.data(), lv, p.radius[0], p.radius[1], p.radius[2],
                                                   d.stencil.data(), d.reach.data(),
                                                   std::ldexp(1.0f, -static_cast<int>(l)), d.e[l].data());
    PAIRMD_CHECK_LAUNCH();
  }
  top_sum<<<blocks_for(d.levels[L - 1].size(), 128), 128>>>(d.q[L - 1].data(), d.levels[L - 1], d.top.data(),
                                                            p.periodic, d.e[L - 1].data());
  PAIRMD_CHECK_LAUNCH();
  for (size_t l = L - 1; l > 0; --l) {
    prolong_level<P><<<blocks_for(d.levels[l - 1].size()), 256>>>(d.e[l - 1].data(), d.levels[l - 1], d.e[l].data(),
                                                                  d.levels[l], p.periodic, rw);
    PAIRMD_CHECK_LAUNCH();
  }
}

template <int P>
void interpolation(const MsmGpuPlan& p, DevicePlan& d, bool accumulate, float* out) {
  const LevelDev& l0 = d.levels[0];
  const size_t nt1 = static_cast<size_t>(p.nx) * l0.dims[1] * l0.dims[2];
  interp_x<P><<<blocks_for(nt1), 256>>>(d.e[0].data(), l0, p.nx, d.index[0].data(), d.weight[0].data(), d.t1.data());
  PAIRMD_CHECK_LAUNCH();
  const size_t n = static_cast<size_t>(p.nx) * p.ny * p.nz;
  interp_yz<P><<<blocks_for(n), 256>>>(d.t1.data(), l0, p.nx, p.ny, p.nz, d.index[1].data(), d.weight[1].data(),
                                       d.index[2].data(), d.weight[2].data(), accumulate ? 1 : 0, out);
  PAIRMD_CHECK_LAUNCH();
}

// The finest level's cells as bins of the atoms.
msm::BinGrid<float> bin_grid(const MsmGpuPlan& p, const LevelDev& l0) {
  msm::BinGrid<float> bins{};
  for (int d = 0; d < 3; ++d) {
    bins.nb[d] = l0.dims[d];
    bins.lo[d] = p.periodic ? 0 : l0.lo[d];
    bins.h[d] = p.h[d];
    bins.L[d] = p.box[d];
  }
  bins.periodic = p.periodic;
  return bins;
}

// The atoms in bin order, with every buffer (and CUB's scratch) allocated before the timed
// kernels start.
struct Binning {
  int n;
  size_t nbins;
  int key_bits = 1;
  DeviceBuffer<float4> atoms, binned;
  DeviceBuffer<int> bin, bin_sorted, index, order, count, start;
  size_t scan_bytes = 0, sort_bytes = 0;
  DeviceBuffer<unsigned char> scan, sort;

  Binning(const float* xyzq, int n_atoms, size_t bins)
      : n(n_atoms),
        nbins(bins),
        atoms(n),
        binned(n),
        bin(n),
        bin_sorted(n),
        index(n),
        order(n),
        count(bins + 1),
        start(bins + 1) {
    if (n) PAIRMD_CUDA_CHECK(cudaMemcpy(atoms.data(), xyzq, n * sizeof(float4), cudaMemcpyHostToDevice));
    PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, count.data(), start.data(), nbins + 1));
    scan.resize(scan_bytes + 1);
    while (key_bits < 31 && (size_t(1) << key_bits) < nbins) ++key_bits;
    PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, bin.data(), bin_sorted.data(), index.data(),
                                                      order.data(), n, 0, key_bits));
    sort.resize(sort_bytes + 1);
  }

  // Counts by integer atomicAdd, offsets by a scan, and the atoms in bin order by a stable radix
  // sort of (bin, atom index), so that within a bin they stay in index order.
  void run(const msm::BinGrid<float>& bins) {
    PAIRMD_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, (nbins + 1) * sizeof(int)));
    bin_count<<<blocks_for(n), 256>>>(atoms.data(), n, bins, bin.data(), count.data());
    PAIRMD_CHECK_LAUNCH();
    PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan.data(), scan_bytes, count.data(), start.data(), nbins + 1));
    iota<<<blocks_for(n), 256>>>(index.data(), n);
    PAIRMD_CHECK_LAUNCH();
    PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort.data(), sort_bytes, bin.data(), bin_sorted.data(),
                                                      index.data(), order.data(), n, 0, key_bits));
    bin_gather<<<blocks_for(n), 256>>>(atoms.data(), order.data(), n, binned.data());
    PAIRMD_CHECK_LAUNCH();
  }
};

void short_range_pass(const MsmGpuPlan& p, const msm::BinGrid<float>& bins, const Binning& b, float* out) {
  ShortGeom g{};
  g.nx = p.nx, g.ny = p.ny, g.nz = p.nz;
  for (int d = 0; d < 3; ++d) g.s[d] = p.s[d], g.origin[d] = p.origin[d];
  g.a = p.a, g.a2 = p.a * p.a, g.floor2 = p.floor2;
  for (int j = 0; j < 5; ++j) g.coef[j] = p.coef[j];
  g.bins = bins;
  const dim3 grid_dim((p.nx + kTile - 1) / kTile, (p.ny + kTile - 1) / kTile, (p.nz + kTile - 1) / kTile);
  if (p.split == 2)
    short_range<2><<<grid_dim, kShortThreads>>>(out, g, b.binned.data(), b.start.data());
  else
    short_range<3><<<grid_dim, kShortThreads>>>(out, g, b.binned.data(), b.start.data());
  PAIRMD_CHECK_LAUNCH();
}

// f(std::integral_constant<int, P>) for the plan's interpolation order P (4 or 6).
template <class F>
void by_order(int order, F f) {
  if (order == 4)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, 6>{});
}

}  // namespace

MsmGpuTimes gpu_msm_potential(const MsmGpuPlan& p, const float* xyzq, size_t natoms, float* out,
                              const MsmGpuOptions& opt, std::vector<float>* grid) {
  check_plan(p);
  if (natoms > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("msm gpu: more than 2^31 atoms");
  const int n = static_cast<int>(natoms);
  const size_t npoints = static_cast<size_t>(p.nx) * p.ny * p.nz;
  const LevelDev l0 = level_dev(p.levels[0]);
  const msm::BinGrid<float> bins = bin_grid(p, l0);
  DeviceBuffer<float> d_out(npoints);
  Binning binning(xyzq, n, l0.size());
  if (opt.poison) {
    fill<<<blocks_for(npoints), 256>>>(d_out.data(), npoints, std::numeric_limits<float>::quiet_NaN());
    PAIRMD_CHECK_LAUNCH();
  }
  std::unique_ptr<DevicePlan> dev;
  if (n && opt.long_range) dev = std::make_unique<DevicePlan>(p);

  // Events 0..5 bound binning, short range, anterpolation, grids and interpolation.
  Events ev;
  PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[0]));
  if (n == 0 || !(opt.short_range || opt.long_range)) {
    fill<<<blocks_for(npoints), 256>>>(d_out.data(), npoints, 0.0f);
    PAIRMD_CHECK_LAUNCH();
    for (int i = 1; i < 6; ++i) PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[i]));
  } else {
    binning.run(bins);
    PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[1]));
    if (opt.short_range) short_range_pass(p, bins, binning, d_out.data());
    PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[2]));
    if (opt.long_range)
      by_order(p.order, [&](auto P) {
        anterpolation<decltype(P)::value>(*dev, bins, binning.binned.data(), binning.start.data());
      });
    PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[3]));
    if (opt.long_range) by_order(p.order, [&](auto P) { grid_steps<decltype(P)::value>(p, *dev); });
    PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[4]));
    if (opt.long_range)
      by_order(p.order, [&](auto P) { interpolation<decltype(P)::value>(p, *dev, opt.short_range, d_out.data()); });
    PAIRMD_CUDA_CHECK(cudaEventRecord(ev.e[5]));
  }
  PAIRMD_CUDA_CHECK(cudaEventSynchronize(ev.e[5]));
  MsmGpuTimes t;
  t.binning = ev.ms(0, 1);
  t.short_range = ev.ms(1, 2);
  t.anterpolation = ev.ms(2, 3);
  t.grids = ev.ms(3, 4);
  t.interpolation = ev.ms(4, 5);
  t.total = ev.ms(0, 5);
  if (npoints) PAIRMD_CUDA_CHECK(cudaMemcpy(out, d_out.data(), npoints * sizeof(float), cudaMemcpyDeviceToHost));
  if (grid && opt.long_range && n) *grid = dev->e[0].download();
  return t;
}

}  // namespace pairmd::dcs
