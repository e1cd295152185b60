#include "backends/pme_cpu.h"

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <stdexcept>

namespace pairmd {

// FFTW's grids and plans. FFTW_ESTIMATE chooses the algorithm without timing it, so every run
// transforms with the same arithmetic (FFTW_MEASURE could pick another one each time).
struct PmeCpu::Fft {
  double* real = nullptr;
  fftw_complex* spectrum = nullptr;
  fftw_plan forward = nullptr, backward = nullptr;
  Fft(int nx, int ny, int nz) {
    real = fftw_alloc_real(static_cast<size_t>(nx) * ny * nz);
    spectrum = fftw_alloc_complex(static_cast<size_t>(nx) * ny * (nz / 2 + 1));
    if (!real || !spectrum) throw std::bad_alloc();
    forward = fftw_plan_dft_r2c_3d(nx, ny, nz, real, spectrum, FFTW_ESTIMATE);
    backward = fftw_plan_dft_c2r_3d(nx, ny, nz, spectrum, real, FFTW_ESTIMATE);
    if (!forward || !backward) throw std::runtime_error("FFTW could not plan the PME transforms");
  }
  ~Fft() {
    if (forward) fftw_destroy_plan(forward);
    if (backward) fftw_destroy_plan(backward);
    fftw_free(real);
    fftw_free(spectrum);
  }
};

PmeCpu::PmeCpu(const PmeParams& params, const Box& box, const std::vector<double>& charge)
    : params_(params), charge_(charge) {
  double sum_q2 = 0.0;
  total_charge_ = 0.0;
  for (double q : charge_) {
    sum_q2 += q * q;
    total_charge_ += q;
  }
  self_energy_ = pme_self_energy(params_, sum_q2);
  set_box(box);
#pragma omp critical(pairmd_fftw_planner)  // the planner is not thread-safe
  fft_ = std::make_unique<Fft>(params_.grid[0], params_.grid[1], params_.grid[2]);
}

void PmeCpu::set_box(const Box& box) {
  box_ = box;
  influence_ = pme_influence(params_, box);
  background_energy_ = pme_background_energy(params_, total_charge_, box.volume());
}

PmeCpu::~PmeCpu() = default;

namespace {

// A particle's grid coordinate along one edge: the first grid point (floor(u)) and the weights
// of points first, first - 1, ..., first - n + 1.
struct Stencil1d {
  int first;
  double m[kPmeMaxOrder], dm[kPmeMaxOrder];
};

Stencil1d stencil(double x, double lo, double len, int k, int order) {
  double u = (x - lo) / len * k;
  u -= std::floor(u / k) * k;  // wrapped, for positions a hair outside [lo, lo + L)
  Stencil1d s;
  s.first = static_cast<int>(std::floor(u));
  bspline_weights(u - s.first, order, s.m, s.dm);
  s.first += k;  // (first - t) % k below is then never negative
  return s;
}

}  // namespace

void PmeCpu::spread(const std::vector<Vec3d>& x) {
  const int nx = params_.grid[0], ny = params_.grid[1], nz = params_.grid[2], n = params_.order;
  std::fill(fft_->real, fft_->real + static_cast<size_t>(nx) * ny * nz, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (charge_[i] == 0.0) continue;
    const Stencil1d sx = stencil(x[i].x, box_.lo.x, box_.L.x, nx, n), sy = stencil(x[i].y, box_.lo.y, box_.L.y, ny, n),
                    sz = stencil(x[i].z, box_.lo.z, box_.L.z, nz, n);
    for (int a = 0; a < n; ++a) {
      const int gx = (sx.first - a) % nx;
      for (int b = 0; b < n; ++b) {
        const int gy = (sy.first - b) % ny;
        const double qxy = charge_[i] * sx.m[a] * sy.m[b];
        double* row = fft_->real + (static_cast<size_t>(gx) * ny + gy) * nz;
        for (int c = 0; c < n; ++c) row[(sz.first - c) % nz] += qxy * sz.m[c];
      }
    }
  }
}

double PmeCpu::convolve(Vec3d* virial) {
  fftw_execute(fft_->forward);
  const int nx = params_.grid[0], ny = params_.grid[1], nz = params_.grid[2];
  const double pi2_a2 = M_PI * M_PI / (params_.alpha * params_.alpha);
  double e = 0.0;
  Vec3d w{0, 0, 0};
  const size_t size = influence_.g.size();
  for (size_t i = 1; i < size; ++i) {  // G(0) = 0
    std::complex<double>& s = reinterpret_cast<std::complex<double>&>(fft_->spectrum[i]);
    int kx, ky, kz;
    const Vec3d m = pme_wave_vector<double>(static_cast<int>(i), nx, ny, nz, box_.L, kx, ky, kz);
    const double term = 0.5 * half_spectrum_weight(kz, nz) * influence_.g[i] * std::norm(s);
    e += term;
    if (virial) w += pme_virial_diag(term, m, pi2_a2);
    s *= influence_.g[i];
  }
  fft_->spectrum[0][0] = fft_->spectrum[0][1] = 0.0;
  fftw_execute(fft_->backward);  // unnormalised: sum_m G(m) F[Q](m) exp(+2 pi i m.k / K)
  if (virial) *virial = w;
  return e;
}

void PmeCpu::gather(const std::vector<Vec3d>& x, Vec3d* f) const {
  const int nx = params_.grid[0], ny = params_.grid[1], nz = params_.grid[2], n = params_.order;
  const double* phi = fft_->real;
  const long np = static_cast<long>(x.size());
#pragma omp for schedule(static)
  for (long i = 0; i < np; ++i) {
    if (charge_[i] == 0.0) continue;
    const Stencil1d sx = stencil(x[i].x, box_.lo.x, box_.L.x, nx, n), sy = stencil(x[i].y, box_.lo.y, box_.L.y, ny, n),
                    sz = stencil(x[i].z, box_.lo.z, box_.L.z, nz, n);
    double gx = 0, gy = 0, gz = 0;  // d(theta . phi) / du
    for (int a = 0; a < n; ++a) {
      const int ix = (sx.first - a) % nx;
      for (int b = 0; b < n; ++b) {
        const int iy = (sy.first - b) % ny;
        const double* row = phi + (static_cast<size_t>(ix) * ny + iy) * nz;
        double p = 0, dp = 0;
        for (int c = 0; c < n; ++c) {
          const double v = row[(sz.first - c) % nz];
          p += sz.m[c] * v;
          dp += sz.dm[c] * v;
        }
        gx += sx.dm[a] * sy.m[b] * p;
        gy += sx.m[a] * sy.dm[b] * p;
        gz += sx.m[a] * sy.m[b] * dp;
      }
    }
    const double q = charge_[i];
    f[i] -= Vec3d{q * gx * nx / box_.L.x, q * gy * ny / box_.L.y, q * gz * nz / box_.L.z};
  }
}

void PmeCpu::add_forces(const std::vector<Vec3d>& x, Vec3d* f, double* energy, Vec3d* virial) {
#pragma omp single
  {
    spread(x);
    const double e = convolve(virial);
    if (energy) *energy = e + self_energy_ + background_energy_;
    if (virial) *virial += Vec3d{background_energy_, background_energy_, background_energy_};
  }  // implicit barrier: the potential is on the grid for every thread
  gather(x, f);
}

}  // namespace pairmd
