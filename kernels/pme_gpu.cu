#include "kernels/pme_gpu.cuh"

#include <stdexcept>
#include <string>

#include "cuda/block_reduce.cuh"
#include "kernels/force_kernels.cuh"

namespace pairmd {

namespace {

constexpr double kGridScale = 4294967296.0;  // 2^32 fixed-point units per charge unit on the grid

struct GridShape {
  int nx, ny, nz, order;
};

// One edge of a particle's stencil (potentials/pme.h, bspline_weights): the first grid point
// plus the grid size (so (first - t) % n is never negative) and the weights.
struct Stencil {
  int first;
  float m[kPmeMaxOrder], dm[kPmeMaxOrder];
};

__device__ __forceinline__ Stencil stencil(float x, float lo, float len, int k, int order) {
  float u = (x - lo) / len * static_cast<float>(k);
  u -= floorf(u / static_cast<float>(k)) * static_cast<float>(k);
  Stencil s;
  const float f = floorf(u);
  s.first = static_cast<int>(f);
  bspline_weights(fminf(u - f, 1.0f), order, s.m, s.dm);
  s.first = s.first % k + k;
  return s;
}

__global__ void pme_spread_kernel(ParticleData pd, GridShape g, long long* grid) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pd.n) return;
  const float q = pd.charge[p];
  if (q == 0.f) return;
  const float4 x = pd.pos[p];
  const Stencil sx = stencil(x.x, pd.box.lo.x, pd.box.L.x, g.nx, g.order);
  const Stencil sy = stencil(x.y, pd.box.lo.y, pd.box.L.y, g.ny, g.order);
  const Stencil sz = stencil(x.z, pd.box.lo.z, pd.box.L.z, g.nz, g.order);
  for (int a = 0; a < g.order; ++a) {
    const int ix = (sx.first - a) % g.nx;
    for (int b = 0; b < g.order; ++b) {
      const int iy = (sy.first - b) % g.ny;
      const float qxy = q * sx.m[a] * sy.m[b];
      unsigned long long* row =
          reinterpret_cast<unsigned long long*>(grid) + (static_cast<size_t>(ix) * g.ny + iy) * g.nz;
      for (int c = 0; c < g.order; ++c) {
        const long long v = __double2ll_rn(static_cast<double>(qxy * sz.m[c]) * kGridScale);
        if (v) atomicAdd(row + (sz.first - c) % g.nz, static_cast<unsigned long long>(v));
      }
    }
  }
}

__global__ void pme_fixed_to_real_kernel(const long long* fixed, int n, float* real) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) real[i] = static_cast<float>(static_cast<double>(fixed[i]) * (1.0 / kGridScale));
}

__global__ void pme_multiply_kernel(cufftComplex* spectrum, const float* g, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  spectrum[i].x *= g[i];
  spectrum[i].y *= g[i];
}

// The reciprocal energy 1/2 sum G |F[Q]|^2 and its virial, in split fixed point.
__global__ void pme_energy_kernel(const cufftComplex* spectrum, const float* g, const float* virial_factor, int n,
                                  int nz, long long* acc) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  if (i < n) {
    const int nzh = nz / 2 + 1;
    const cufftComplex s = spectrum[i];
    const float e = 0.5f * static_cast<float>(half_spectrum_weight(i % nzh, nz)) * g[i] * (s.x * s.x + s.y * s.y);
    split_add(e, ew, ef, bad);
    split_add(e * virial_factor[i], ww, wf, bad);
  }
  add_energy_words(acc, ew, ef, ww, wf, bad);
}

// The force on each particle from the potential on the grid: -q grad(theta . phi), into extra.
__global__ void pme_gather_kernel(ParticleData pd, GridShape g, const float* phi, const unsigned* tag, FixedVec* extra,
                                  DeviceFlags* flags) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= pd.n) return;
  const float q = pd.charge[p];
  if (q == 0.f) return;
  const float4 x = pd.pos[p];
  const Stencil sx = stencil(x.x, pd.box.lo.x, pd.box.L.x, g.nx, g.order);
  const Stencil sy = stencil(x.y, pd.box.lo.y, pd.box.L.y, g.ny, g.order);
  const Stencil sz = stencil(x.z, pd.box.lo.z, pd.box.L.z, g.nz, g.order);
  float gx = 0.f, gy = 0.f, gz = 0.f;
  for (int a = 0; a < g.order; ++a) {
    const int ix = (sx.first - a) % g.nx;
    for (int b = 0; b < g.order; ++b) {
      const int iy = (sy.first - b) % g.ny;
      const float* row = phi + (static_cast<size_t>(ix) * g.ny + iy) * g.nz;
      float v = 0.f, dv = 0.f;
      for (int c = 0; c < g.order; ++c) {
        const float w = __ldg(row + (sz.first - c) % g.nz);
        v += sz.m[c] * w;
        dv += sz.dm[c] * w;
      }
      gx += sx.dm[a] * sy.m[b] * v;
      gy += sx.m[a] * sy.dm[b] * v;
      gz += sx.m[a] * sy.m[b] * dv;
    }
  }
  bool clamped = false;
  FixedVec f = extra[p];
  f.x -= to_fixed(q * gx * (static_cast<float>(g.nx) / pd.box.L.x), clamped);
  f.y -= to_fixed(q * gy * (static_cast<float>(g.ny) / pd.box.L.y), clamped);
  f.z -= to_fixed(q * gz * (static_cast<float>(g.nz) / pd.box.L.z), clamped);
  extra[p] = f;
  if (clamped) report_lowest(&flags->bad_force, static_cast<int>(tag[p]));
}

cudaError_t cufft_status(cufftResult r) { return r == CUFFT_SUCCESS ? cudaSuccess : cudaErrorUnknown; }

}  // namespace

PmeGpu::PmeGpu(const PmeParams& params, const Box& box) : params_(params), box_(box) {
  const int nx = params.grid[0], ny = params.grid[1], nz = params.grid[2];
  points_ = nx * ny * nz;
  half_ = nx * ny * (nz / 2 + 1);
  fixed_.resize(points_);
  real_.resize(points_);
  spectrum_.resize(half_);
  const PmeInfluence inf = pme_influence(params, box);
  g_.upload(std::vector<float>(inf.g.begin(), inf.g.end()));
  virial_factor_.upload(std::vector<float>(inf.virial_factor.begin(), inf.virial_factor.end()));
  if (cufftPlan3d(&forward_, nx, ny, nz, CUFFT_R2C) != CUFFT_SUCCESS ||
      cufftPlan3d(&backward_, nx, ny, nz, CUFFT_C2R) != CUFFT_SUCCESS) {
    if (forward_) cufftDestroy(forward_);
    throw std::runtime_error("cuFFT could not plan the PME transforms (" + std::to_string(nx) + " x " +
                             std::to_string(ny) + " x " + std::to_string(nz) + ")");
  }
}

bool PmeGpu::fits(const PmeParams& params, const Box& box) const {
  return params.grid == params_.grid && params.order == params_.order && params.alpha == params_.alpha &&
         params.prefactor == params_.prefactor && box.L.x == box_.L.x && box.L.y == box_.L.y && box.L.z == box_.L.z;
}

void PmeGpu::set_charges(const std::vector<double>& charge) {
  double sum_q2 = 0.0, total = 0.0;
  for (double q : charge) {
    sum_q2 += q * q;
    total += q;
  }
  const double background = pme_background_energy(params_, total, box_.volume());
  constant_energy_ = pme_self_energy(params_, sum_q2) + background;
  constant_virial_ = 3.0 * background;
}

PmeGpu::~PmeGpu() {
  if (forward_) cufftDestroy(forward_);
  if (backward_) cufftDestroy(backward_);
}

size_t PmeGpu::device_bytes() const {
  return fixed_.bytes() + real_.bytes() + spectrum_.bytes() + g_.bytes() + virial_factor_.bytes();
}

void PmeGpu::enqueue_transform(Launcher& launcher, const ParticleData& pd) {
  const GridShape g{params_.grid[0], params_.grid[1], params_.grid[2], params_.order};
  launcher.memset(PAIRMD_HERE, fixed_.data(), 0, static_cast<size_t>(points_) * sizeof(long long));
  launcher.kernel(PAIRMD_HERE, pme_spread_kernel, blocks_for(pd.n), kBlockSize, 0, pd, g, fixed_.data());
  launcher.kernel(PAIRMD_HERE, pme_fixed_to_real_kernel, blocks_for(points_), kBlockSize, 0,
                  static_cast<const long long*>(fixed_.data()), points_, real_.data());
  const cufftHandle plan = forward_;
  float* in = real_.data();
  cufftComplex* out = spectrum_.data();
  launcher.call(
      PAIRMD_HERE,
      [plan, in, out](cudaStream_t s) {
        const cufftResult r = cufftSetStream(plan, s);
        return cufft_status(r != CUFFT_SUCCESS ? r : cufftExecR2C(plan, in, out));
      },
      plan, in, out);
}

void PmeGpu::enqueue_forces(Launcher& launcher, const ParticleData& pd, const unsigned* tag, FixedVec* extra,
                            DeviceFlags* flags) {
  enqueue_transform(launcher, pd);
  launcher.kernel(PAIRMD_HERE, pme_multiply_kernel, blocks_for(half_), kBlockSize, 0, spectrum_.data(),
                  static_cast<const float*>(g_.data()), half_);
  const cufftHandle plan = backward_;
  cufftComplex* in = spectrum_.data();
  float* out = real_.data();
  launcher.call(
      PAIRMD_HERE,
      [plan, in, out](cudaStream_t s) {
        const cufftResult r = cufftSetStream(plan, s);
        return cufft_status(r != CUFFT_SUCCESS ? r : cufftExecC2R(plan, in, out));
      },
      plan, in, out);
  const GridShape g{params_.grid[0], params_.grid[1], params_.grid[2], params_.order};
  launcher.kernel(PAIRMD_HERE, pme_gather_kernel, blocks_for(pd.n), kBlockSize, 0, pd, g,
                  static_cast<const float*>(real_.data()), tag, extra, flags);
}

void PmeGpu::enqueue_energy(Launcher& launcher, const ParticleData& pd, long long* acc) {
  enqueue_transform(launcher, pd);
  launcher.kernel(PAIRMD_HERE, pme_energy_kernel, blocks_for(half_), kBlockSize, 0,
                  static_cast<const cufftComplex*>(spectrum_.data()), static_cast<const float*>(g_.data()),
                  static_cast<const float*>(virial_factor_.data()), half_, params_.grid[2], acc);
}

}  // namespace pairmd
