// Smooth particle-mesh Ewald (Essmann, Perera, Berkowitz, Darden, Lee and Pedersen, J. Chem.
// Phys. 103 (1995) 8577): what the CPU (backends/pme_cpu.cpp) and the GPU (kernels/pme_gpu.cu)
// solvers share, the parameters from a requested accuracy, the B-spline weights and the
// influence function.
//
// The Coulomb energy of a periodic, orthorhombic box is split by alpha into
//   E = E_real + E_recip + E_self + E_background,
//   E_real  = C sum_{i<j} q_i q_j erfc(alpha r_ij) / r_ij            (coulomb_long, r < rc)
//   E_recip = C / (2 pi V) sum_{m != 0} exp(-pi^2 m^2 / alpha^2) / m^2 |S(m)|^2
//   E_self  = -C alpha / sqrt(pi) sum_i q_i^2
//   E_background = -C pi Q^2 / (2 V alpha^2)          (Q = sum_i q_i; 0 for a neutral box)
// with C = k_e / eps_r and m = (k_x / L_x, k_y / L_y, k_z / L_z). PME puts the charges on a
// K_x x K_y x K_z grid with cardinal B-splines M_n of order n, so that
//   E_recip = 1/2 sum_m G(m) |F[Q](m)|^2,
//   G(m) = C exp(-pi^2 m^2 / alpha^2) / (pi V m^2) B_x(k_x) B_y(k_y) B_z(k_z),  G(0) = 0,
// B the squared moduli of the B-splines' Euler exponential factors; the force on i is
// -q_i grad (theta_i . (G * Q)), the convolution done by a forward and a backward FFT, and the
// virial per direction is sum_m E(m) (1 - 2 (1 + pi^2 m^2 / alpha^2) m_a^2 / m^2), whose trace
// is sum_m E(m) (1 - 2 pi^2 m^2 / alpha^2); E_background's is E_background per direction.
//
// Parameters from the requested relative force accuracy delta (OpenMM's ewaldErrorTolerance):
//   alpha = sqrt(-ln(2 delta)) / rc              (OpenMM's choice: erfc(alpha rc) ~ delta)
//   K_d   = ceil(c_n alpha L_d / delta^(e_n)),   c_5 = c_6 = 0.9, e_n = 1/n;  c_4 = 1, e_4 = 1/3,
// K_d at least 2 n and rounded up to a product of 2, 3, 5 and 7 (fast FFT sizes; from 160 to 512
// points the one whose measured cuFFT time is least, pme_fft_size). OpenMM's grid
// (c = 2/3, e = 1/5 at every order) leaves a reciprocal error of up to ~1.5 delta on its own;
// c_n and e_n here are fitted so that the grid's error stays below the real-space error
// (~0.4-0.7 delta) and the total relative rms force error below delta; order 4 converges so
// slowly with the grid that it needs far more points (docs/electrostatics.md has the numbers).
#pragma once

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/box.h"
#include "base/hd.h"
#include "base/topology.h"
#include "base/vec3.h"
#include "potentials/force_field.h"

namespace pairmd {

constexpr int kPmeMinOrder = 4;
constexpr int kPmeMaxOrder = 6;
constexpr int kPmeMaxGrid = 1024;  // points per edge; more is an accuracy this machine cannot meet
// The finest accuracy a single-precision backend (CUDA) takes: its float positions, pair forces,
// transforms and gathers differ from the fp64 reference by ~1e-6 relative (tests/test_pme.cpp),
// so a finer one could not be met there.
constexpr double kPmeMinAccuracyFp32 = 1e-5;

// The `electrostatics` section, with what the config reader takes from the coulomb_long term.
struct PmeSettings {
  bool enabled = false;       // method: pme
  double accuracy = 1e-5;     // relative force accuracy delta
  int order = 6;              // B-spline order n (6: the smallest grid for an accuracy, docs/electrostatics.md)
  std::array<int, 3> grid{};  // points per edge; 0: from grid_spacing or the accuracy
  double spacing = 0.0;       // grid_spacing: points at most this far apart; 0: from the accuracy
  int term = -1;              // the coulomb_long pair term (index in force_field.pair)
  double cutoff = 0.0;        // its real-space cutoff (largest over type pairs)
  double alpha = 0.0;         // the splitting parameter (1/length)
  double prefactor = 1.0;     // its k_e / eps_r
};

// What a solver runs with, for one box.
struct PmeParams {
  double alpha = 0.0;
  int order = 6;
  std::array<int, 3> grid{};
  double prefactor = 1.0;
  double accuracy = 0.0;
  double cutoff = 0.0;
};

double ewald_alpha(double cutoff, double accuracy);
int fft_friendly_size(int minimum);  // the smallest n >= minimum with no prime factor above 7
// The grid size for at least `minimum` points per edge: in 160..512, the size >= minimum whose
// measured cuFFT transforms plus the other passes over the grid cost least (294 -> 300: 1.09 ms
// of transforms -> 0.59 on the H200); elsewhere fft_friendly_size.
int pme_fft_size(int minimum);
double pme_grid_factor(int order);    // c_n of the grid formula above
double pme_grid_exponent(int order);  // e_n
// The grid of one edge: the formula above, at least 2 n points.
int pme_grid_points(double alpha, double length, double accuracy, int order);
// The solver's parameters for `box`; throws std::invalid_argument (the reason as a sentence)
// for an open box, a box shorter than twice the cutoff, or a grid beyond kPmeMaxGrid.
PmeParams resolve_pme(const PmeSettings& s, const Box& box);
// One line for the log: alpha, grid, order, the accuracy asked for.
std::string describe_pme(const PmeParams& p, const char* length_unit);

// The pairs whose reciprocal-space interaction the coulomb_long term `term` must take out again
// (potentials/coulomb_long.h, CoulombLongExcluded), sorted by (i, j): its 1-2, 1-3 and 1-4 pairs
// of weight w < 1 (special_bonds, exclusions) with weight 1 - w, and the pairs of every pair list
// that leaves the term out, with weight 1.
std::vector<ScaledPair> pme_excluded_pairs(const ForceField& ff, const Topology& topology, size_t n, size_t term);

// E_self and E_background of charges with sum q^2 = sum_q2 and sum q = total.
double pme_self_energy(const PmeParams& p, double sum_q2);
double pme_background_energy(const PmeParams& p, double total, double volume);

// The half spectrum of a real-to-complex FFT of a K_x x K_y x K_z grid: k_z in 0..K_z/2, entry
// i = (k_x K_y + k_y)(K_z/2 + 1) + k_z. pme_influence: G(m) there (energy = 1/2 sum over the full
// spectrum of G |F[Q]|^2), with G = 0 at m = 0.
struct PmeInfluence {
  std::vector<double> g;
};
PmeInfluence pme_influence(const PmeParams& p, const Box& box);
// The B-spline factor of one edge, B(k) = 1 / |sum_t M_n(t) exp(2 pi i k t / K)|^2, k = 0..K-1.
std::vector<double> pme_bspline_moduli(int K, int order);

// The wave vector m (1/length) of half-spectrum entry i, its k_x and k_y folded to (-K/2, K/2].
template <typename Real>
PAIRMD_HD Vec3<Real> pme_wave_vector(int i, int nx, int ny, int nz, Vec3<Real> L, int& kx, int& ky, int& kz) {
  const int nzh = nz / 2 + 1;
  kz = i % nzh;
  ky = (i / nzh) % ny;
  kx = i / (nzh * ny);
  return {Real(kx <= nx / 2 ? kx : kx - nx) / L.x, Real(ky <= ny / 2 ? ky : ky - ny) / L.y, Real(kz) / L.z};
}

// G(m) without its B-spline factor, C exp(-pi^2 m^2 / alpha^2) / (pi V m^2), for m^2 > 0;
// c_over_pi = C / pi, pi2_a2 = pi^2 / alpha^2.
template <typename Real>
PAIRMD_HD Real pme_gauss_factor(Real c_over_pi, Real pi2_a2, Real volume, Real m2) {
  return c_over_pi * std::exp(-pi2_a2 * m2) / (volume * m2);
}

// The virial per direction of the reciprocal energy e of wave vector m (the diagonal of
// e (delta_ab - 2 (1 + pi^2 m^2 / alpha^2) m_a m_b / m^2); its trace is e (1 - 2 pi^2 m^2 / alpha^2)).
template <typename Real>
PAIRMD_HD Vec3<Real> pme_virial_diag(Real e, Vec3<Real> m, Real pi2_a2) {
  const Real m2 = m.x * m.x + m.y * m.y + m.z * m.z;
  const Real f = Real(2) * (Real(1) + pi2_a2 * m2) / m2;
  return {e * (Real(1) - f * m.x * m.x), e * (Real(1) - f * m.y * m.y), e * (Real(1) - f * m.z * m.z)};
}

// The weight of half-spectrum column k_z in the full sum: 1 for k_z = 0 and the Nyquist plane, else 2.
PAIRMD_HD int half_spectrum_weight(int kz, int nz) { return kz == 0 || 2 * kz == nz ? 1 : 2; }

// Cardinal B-spline weights of a particle at fractional grid offset w in [0, 1): m[t] =
// M_n(w + t) and dm[t] = M_n'(w + t), t = 0..n-1, for grid point floor(u) - t (u the particle's
// coordinate in grid units). The weights sum to 1 and the derivatives to 0.
template <typename Real>
PAIRMD_HD void bspline_weights(Real w, int order, Real* m, Real* dm) {
  m[0] = w;  // order 2: M_2(w) = w, M_2(w + 1) = 1 - w
  m[1] = Real(1) - w;
  for (int n = 3; n <= order; ++n) {
    if (n == order) {  // M_n' (x) = M_{n-1}(x) - M_{n-1}(x - 1)
      dm[0] = m[0];
      for (int t = 1; t < n - 1; ++t) dm[t] = m[t] - m[t - 1];
      dm[n - 1] = -m[n - 2];
    }
    // M_n(x) = [x M_{n-1}(x) + (n - x) M_{n-1}(x - 1)] / (n - 1), from the top down, in place.
    const Real inv = Real(1) / Real(n - 1);
    m[n - 1] = (Real(1) - w) * m[n - 2] * inv;
    for (int t = n - 2; t >= 1; --t) m[t] = ((w + Real(t)) * m[t] + (Real(n - t) - w) * m[t - 1]) * inv;
    m[0] = w * m[0] * inv;
  }
}

}  // namespace pairmd
