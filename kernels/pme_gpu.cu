#include "kernels/pme_gpu.cuh"

#include <stdexcept>
#include <string>

#include "cuda/block_reduce.cuh"
#include "kernels/force_kernels.cuh"

namespace pairmd {

namespace {

constexpr double kGridScale = 4294967296.0;  // 2^32 fixed-point units per charge unit on the grid
// Threads per block of the spectrum kernels: a warp per row of the half spectrum.
constexpr int kSpectrumBlock = 256;

struct GridShape {
  int nx, ny, nz, order;
};

// The half spectrum and what G needs besides the box: C / pi, pi^2 / alpha^2, the B-spline
// factors of each edge, and E_background = background / V.
struct SpectrumShape {
  int nx, ny, nz, n;
  float c_over_pi, pi2_a2, background;
  const float* bx;
  const float* by;
  const float* bz;
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

// v[i] for an index known only at run time, without a local-memory array: a select per entry.
template <int kOrder>
__device__ __forceinline__ float pick(const float* v, int i) {
  float r = 0.f;
#pragma unroll
  for (int t = 0; t < kOrder; ++t) r = t == i ? v[t] : r;
  return r;
}

// The lanes of a warp over a particle's n^3 stencil: lane l takes point c = l % n along z of
// row l / n of a pass; 32 / n rows per pass (5 at order 6), passes over the n^2 rows (a, b).
// Neighbouring lanes touch neighbouring grid points, so one atomic or load instruction of the
// warp touches a few rows' sectors, not 32 rows.
template <int kOrder>
struct StencilLanes {
  static constexpr int kRowsPerPass = 32 / kOrder;
  static constexpr int kPasses = (kOrder * kOrder + kRowsPerPass - 1) / kRowsPerPass;
  int c, rr;  // this lane's z point, and its row within a pass
  __device__ explicit StencilLanes(int lane) : c(lane % kOrder), rr(lane / kOrder) {}
  // Row ab = (a, b) of pass p, or -1 where this lane has none.
  __device__ int row(int p) const {
    const int ab = p * kRowsPerPass + rr;
    return rr < kRowsPerPass && ab < kOrder * kOrder ? ab : -1;
  }
};

// A warp per particle (particles without charge return at once), its lanes over the stencil
// (StencilLanes). One thread per particle left a 64k-particle dilute system with ~10 warps per
// multiprocessor, each waiting out 216 atomics in turn.
template <int kOrder>
__global__ void pme_spread_kernel(ParticleData pd, GridShape g, long long* grid) {
  const int p = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5);
  if (p >= pd.n) return;
  const float q = pd.charge[p];
  if (q == 0.f) return;
  const BoxGeometry<float> box = *pd.box;
  const float4 x = pd.pos[p];
  const Stencil sx = stencil(x.x, box.lo.x, box.L.x, g.nx, kOrder);
  const Stencil sy = stencil(x.y, box.lo.y, box.L.y, g.ny, kOrder);
  const Stencil sz = stencil(x.z, box.lo.z, box.L.z, g.nz, kOrder);
  const StencilLanes<kOrder> lanes(threadIdx.x & 31);
  const float qz = q * pick<kOrder>(sz.m, lanes.c);
  const int iz = (sz.first - lanes.c) % g.nz;
  unsigned long long* cells = reinterpret_cast<unsigned long long*>(grid);
#pragma unroll
  for (int pass = 0; pass < StencilLanes<kOrder>::kPasses; ++pass) {
    const int ab = lanes.row(pass);
    if (ab < 0) continue;
    const int a = ab / kOrder, b = ab % kOrder;
    const int ix = (sx.first - a) % g.nx, iy = (sy.first - b) % g.ny;
    const float w = qz * pick<kOrder>(sx.m, a) * pick<kOrder>(sy.m, b);
    const long long v = __double2ll_rn(static_cast<double>(w) * kGridScale);
    if (v) atomicAdd(cells + (static_cast<size_t>(ix) * g.ny + iy) * g.nz + iz, static_cast<unsigned long long>(v));
  }
}

__global__ void pme_fixed_to_real_kernel(const long long* fixed, int n, float* real) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) real[i] = static_cast<float>(static_cast<double>(fixed[i]) * (1.0 / kGridScale));
}

// The half spectrum by rows: a warp per (k_x, k_y), its lanes along k_z (entry i = (k_x K_y +
// k_y)(K_z/2 + 1) + k_z: a warp reads 32 consecutive entries). (A thread per entry took three
// integer divisions each; a block per row segment, 259k blocks of 64 threads at 300^3, was
// bound by the rate at which blocks start.)
struct SpectrumRow {
  int kx, ky, first;  // first: the entry of k_z = 0
  bool valid;
};

__device__ __forceinline__ SpectrumRow spectrum_row(const SpectrumShape& s) {
  SpectrumRow r;
  const int row = static_cast<int>(blockIdx.x) * (kSpectrumBlock / 32) + static_cast<int>(threadIdx.x >> 5);
  r.valid = row < s.nx * s.ny;
  r.kx = row / s.ny;
  r.ky = row - r.kx * s.ny;
  r.first = row * (s.nz / 2 + 1);
  return r;
}

// G at (k_x, k_y, k_z) and the wave vector m, k_x and k_y folded to (-K/2, K/2]; 0 at m = 0.
__device__ __forceinline__ float influence_at(const SpectrumShape& s, const SpectrumRow& r, int kz,
                                              const BoxGeometry<float>& box, Vec3<float>& m) {
  m = {static_cast<float>(r.kx <= s.nx / 2 ? r.kx : r.kx - s.nx) / box.L.x,
       static_cast<float>(r.ky <= s.ny / 2 ? r.ky : r.ky - s.ny) / box.L.y, static_cast<float>(kz) / box.L.z};
  if (r.first == 0 && kz == 0) return 0.f;
  return pme_gauss_factor(s.c_over_pi, s.pi2_a2, box.L.x * box.L.y * box.L.z, dot(m, m)) * __ldg(s.bx + r.kx) *
         __ldg(s.by + r.ky) * __ldg(s.bz + kz);
}

int spectrum_blocks(const PmeParams& p) {
  const int rows = p.grid[0] * p.grid[1], per_block = kSpectrumBlock / 32;
  return (rows + per_block - 1) / per_block;
}

// The transform times G. kVirial (a barostat's run): when its update is due, the virial per
// direction of each wave vector's energy and, once, of the background, into its sums.
template <bool kVirial>
__global__ void pme_multiply_kernel(cufftComplex* spectrum, SpectrumShape s, const BoxGeometry<float>* device_box,
                                    BondedVirial bv, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const BoxGeometry<float> box = *device_box;
  const SpectrumRow r = spectrum_row(s);
  const int nzh = s.nz / 2 + 1;
  Vec3<float> wd{0.f, 0.f, 0.f};
  if (r.valid)
    for (int kz = threadIdx.x & 31; kz < nzh; kz += 32) {
      Vec3<float> m;
      const float g = influence_at(s, r, kz, box, m);
      cufftComplex c = spectrum[r.first + kz];
      if (kVirial) {
        if (r.first + kz > 0) {
          const float en = 0.5f * static_cast<float>(half_spectrum_weight(kz, s.nz)) * g * (c.x * c.x + c.y * c.y);
          wd += pme_virial_diag(en, m, s.pi2_a2);
        } else {
          const float background = s.background / (box.L.x * box.L.y * box.L.z);
          wd += Vec3<float>{background, background, background};
        }
      }
      c.x *= g;
      c.y *= g;
      spectrum[r.first + kz] = c;
    }
  if (kVirial) add_term_virial(wd, r.valid, bv, static_cast<int64_t>(ctrl->step));
}

// The reciprocal energy 1/2 sum G |F[Q]|^2 and its virial, in split fixed point.
__global__ void pme_energy_kernel(const cufftComplex* spectrum, SpectrumShape s, const BoxGeometry<float>* device_box,
                                  long long* acc) {
  const BoxGeometry<float> box = *device_box;
  const SpectrumRow r = spectrum_row(s);
  const int nzh = s.nz / 2 + 1;
  int64_t ew = 0, ef = 0, ww = 0, wf = 0, bad = 0;
  if (r.valid)
    for (int kz = threadIdx.x & 31; kz < nzh; kz += 32) {
      if (r.first + kz == 0) continue;
      Vec3<float> m;
      const float g = influence_at(s, r, kz, box, m);
      const cufftComplex c = spectrum[r.first + kz];
      const float en = 0.5f * static_cast<float>(half_spectrum_weight(kz, s.nz)) * g * (c.x * c.x + c.y * c.y);
      const Vec3<float> w = pme_virial_diag(en, m, s.pi2_a2);
      split_add(en, ew, ef, bad);
      split_add(w.x + w.y + w.z, ww, wf, bad);
    }
  add_energy_words(acc, ew, ef, ww, wf, bad);
}

// The force on each particle from the potential on the grid: -q grad(theta . phi), into extra.
// A warp per particle, lane l taking the stencil rows (a, b) = (l / n, l % n), l + 32, ...: each
// lane reads its rows' n points along z (the spread's lanes-along-z layout made the gather
// slower, 116 against 69 us at 64k particles on the H200). The lanes' sums are added in a fixed order (a shuffle
// tree), so the force is the same bits every run.
template <int kOrder>
__global__ void pme_gather_kernel(ParticleData pd, GridShape g, const float* phi, const unsigned* tag, FixedVec* extra,
                                  DeviceFlags* flags, const StepControl* ctrl) {
  if (halted(ctrl)) return;
  const int p = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (p >= pd.n) return;
  const float q = pd.charge[p];
  if (q == 0.f) return;
  const BoxGeometry<float> box = *pd.box;
  const float4 x = pd.pos[p];
  const Stencil sx = stencil(x.x, box.lo.x, box.L.x, g.nx, kOrder);
  const Stencil sy = stencil(x.y, box.lo.y, box.L.y, g.ny, kOrder);
  const Stencil sz = stencil(x.z, box.lo.z, box.L.z, g.nz, kOrder);
  float gx = 0.f, gy = 0.f, gz = 0.f;
  for (int ab = lane; ab < kOrder * kOrder; ab += 32) {
    const int a = ab / kOrder, b = ab % kOrder;
    const int ix = (sx.first - a) % g.nx, iy = (sy.first - b) % g.ny;
    const float* row = phi + (static_cast<size_t>(ix) * g.ny + iy) * g.nz;
    float v = 0.f, dv = 0.f;
#pragma unroll
    for (int c = 0; c < kOrder; ++c) {
      const float w = __ldg(row + (sz.first - c) % g.nz);
      v += sz.m[c] * w;
      dv += sz.dm[c] * w;
    }
    gx += sx.dm[a] * sy.m[b] * v;
    gy += sx.m[a] * sy.dm[b] * v;
    gz += sx.m[a] * sy.m[b] * dv;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    gx += __shfl_down_sync(0xffffffffu, gx, o);
    gy += __shfl_down_sync(0xffffffffu, gy, o);
    gz += __shfl_down_sync(0xffffffffu, gz, o);
  }
  if (lane != 0) return;
  bool clamped = false;
  FixedVec f = extra[p];
  f.x -= to_fixed(q * gx * (static_cast<float>(g.nx) / box.L.x), clamped);
  f.y -= to_fixed(q * gy * (static_cast<float>(g.ny) / box.L.y), clamped);
  f.z -= to_fixed(q * gz * (static_cast<float>(g.nz) / box.L.z), clamped);
  extra[p] = f;
  if (clamped) report_lowest(&flags->bad_force, static_cast<int>(tag[p]));
}

// The kernel of this order (4, 5 or 6: kPmeMinOrder..kPmeMaxOrder).
template <template <int> class Pick>
auto by_order(int order) {
  return order == 4 ? Pick<4>::kernel : order == 5 ? Pick<5>::kernel : Pick<6>::kernel;
}
template <int kOrder>
struct SpreadKernel {
  static constexpr auto kernel = pme_spread_kernel<kOrder>;
};
template <int kOrder>
struct GatherKernel {
  static constexpr auto kernel = pme_gather_kernel<kOrder>;
};

// Blocks of kBlockSize threads for a warp per particle.
int warp_blocks(int n) { return static_cast<int>((32LL * n + kBlockSize - 1) / kBlockSize); }

cudaError_t cufft_status(cufftResult r) { return r == CUFFT_SUCCESS ? cudaSuccess : cudaErrorUnknown; }

std::vector<float> as_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// One cuFFT transform on the launcher's stream (keyed by its plan and buffers).
template <typename In, typename Out, typename Exec>
void enqueue_fft(Launcher& launcher, LaunchSite site, cufftHandle plan, In* in, Out* out, Exec exec) {
  launcher.call(
      site,
      [plan, in, out, exec](cudaStream_t s) {
        const cufftResult r = cufftSetStream(plan, s);
        return cufft_status(r != CUFFT_SUCCESS ? r : exec(plan, in, out));
      },
      plan, in, out);
}

}  // namespace

PmeGpu::PmeGpu(const PmeParams& params, const Box& box) : params_(params), box_(box) {
  const int nx = params.grid[0], ny = params.grid[1], nz = params.grid[2];
  points_ = nx * ny * nz;
  half_ = nx * ny * (nz / 2 + 1);
  fixed_.resize(points_);
  real_.resize(points_);
  spectrum_.resize(half_);
  bx_.upload(as_float(pme_bspline_moduli(nx, params.order)));
  by_.upload(as_float(pme_bspline_moduli(ny, params.order)));
  bz_.upload(as_float(pme_bspline_moduli(nz, params.order)));
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
  self_energy_ = pme_self_energy(params_, sum_q2);
  background_coefficient_ = pme_background_energy(params_, total, 1.0);
}

PmeGpu::~PmeGpu() {
  if (forward_) cufftDestroy(forward_);
  if (backward_) cufftDestroy(backward_);
}

void PmeGpu::enqueue_transform(Launcher& launcher, const ParticleData& pd) {
  const GridShape g{params_.grid[0], params_.grid[1], params_.grid[2], params_.order};
  launcher.memset(PAIRMD_HERE, fixed_.data(), 0, static_cast<size_t>(points_) * sizeof(long long));
  launcher.kernel(PAIRMD_HERE, by_order<SpreadKernel>(g.order), warp_blocks(pd.n), kBlockSize, 0, pd, g, fixed_.data());
  launcher.kernel(PAIRMD_HERE, pme_fixed_to_real_kernel, blocks_for(points_), kBlockSize, 0,
                  static_cast<const long long*>(fixed_.data()), points_, real_.data());
  enqueue_fft(launcher, PAIRMD_HERE, forward_, real_.data(), spectrum_.data(), cufftExecR2C);
}

namespace {

SpectrumShape spectrum_shape(const PmeParams& p, int n, double background, const float* bx, const float* by,
                             const float* bz) {
  return {p.grid[0],
          p.grid[1],
          p.grid[2],
          n,
          static_cast<float>(p.prefactor / M_PI),
          static_cast<float>(M_PI * M_PI / (p.alpha * p.alpha)),
          static_cast<float>(background),
          bx,
          by,
          bz};
}

}  // namespace

void PmeGpu::enqueue_forces(Launcher& launcher, const ParticleData& pd, const unsigned* tag, FixedVec* extra,
                            DeviceFlags* flags, const StepControl* ctrl, const BondedVirial& bv) {
  enqueue_transform(launcher, pd);
  const SpectrumShape s = spectrum_shape(params_, half_, background_coefficient_, bx_.data(), by_.data(), bz_.data());
  launcher.kernel(PAIRMD_HERE, bv.sums ? pme_multiply_kernel<true> : pme_multiply_kernel<false>,
                  spectrum_blocks(params_), kSpectrumBlock, 0, spectrum_.data(), s, pd.box, bv, ctrl);
  enqueue_fft(launcher, PAIRMD_HERE, backward_, spectrum_.data(), real_.data(), cufftExecC2R);
  const GridShape g{params_.grid[0], params_.grid[1], params_.grid[2], params_.order};
  launcher.kernel(PAIRMD_HERE, by_order<GatherKernel>(g.order), warp_blocks(pd.n), kBlockSize, 0, pd, g,
                  static_cast<const float*>(real_.data()), tag, extra, flags, ctrl);
}

void PmeGpu::enqueue_energy(Launcher& launcher, const ParticleData& pd, long long* acc) {
  enqueue_transform(launcher, pd);
  const SpectrumShape s = spectrum_shape(params_, half_, background_coefficient_, bx_.data(), by_.data(), bz_.data());
  launcher.kernel(PAIRMD_HERE, pme_energy_kernel, spectrum_blocks(params_), kSpectrumBlock, 0,
                  static_cast<const cufftComplex*>(spectrum_.data()), s, pd.box, acc);
}

}  // namespace pairmd
