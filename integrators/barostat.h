// Pressure control: stochastic cell rescaling (Bernetti & Bussi, J. Chem. Phys. 153, 114107
// (2020); GROMACS's C-rescale), written once for the CPU reference and the GPU kernels.
//
// Every `every` steps the box edges are scaled by factors mu_a = exp(d eps_a), positions with
// them (about the box's lower corner, so images stay as they are) and velocities by 1 / mu_a.
// In the log-volume eps = ln V the update is the Euler-Maruyama step of
//   d eps = -(beta_T / tau_p) (P0 - P) dt + sqrt(2 k_B T beta_T / (V tau_p)) dW,
// whose stationary distribution is exp(-(F(V) + P0 V) / k_B T) dV, the NPT ensemble (the k_B T / V
// drift of the paper's equation cancels against the noise-induced drift of a diffusion that goes
// as 1/V in Ito's reading). P = (2 K + W) / (3 V) is the instantaneous pressure with the kinetic
// energy of the velocities that are scaled: scaling x by mu and v by 1/mu keeps dx dp, so the
// kinetic term belongs in P (the paper's variant with velocity scaling). beta_T is an estimate of
// the isothermal compressibility: it sets how fast the volume relaxes (about tau_p), not where.
//
// Couplings of an orthorhombic box:
//   iso       one factor for all edges;
//   semi_iso  x and y together, z alone (GROMACS's semiisotropic);
//   aniso     each edge alone, driven by its own diagonal pressure P_aa.
// A group k of n_k edges (their common log-length y_k) is driven by the mean diagonal pressure
// P_k of its edges: per update dy_k = -(beta_T dt_b / (3 tau_p)) (P0 - P_k) + noise of variance
// 2 k_B T beta_T dt_b / (n_k^2 V tau_p) * n_k / 3 (dt_b = every * dt), independent per group. With
// a diffusion going as 1/V the Ito drift carries no k_B T / V term exactly when the measure is
// V dy, which is dV (iso), dA dLz (semi_iso) and dLx dLy dLz (aniso); in every coupling the sum
// over edges, d ln V, is the isotropic update. Under semi_iso and aniso a liquid's box shape is
// free (nothing in F depends on it) and wanders: those couplings are for solids and interfaces.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/box.h"
#include "base/hd.h"
#include "base/vec3.h"
#include "integrators/noise.h"

namespace pairmd {

enum class BarostatKind { None, CRescale };
enum class BarostatCoupling { Isotropic, SemiIsotropic, Anisotropic };

// In the run's internal units: pressure in energy / length^3, compressibility its inverse.
struct BarostatSettings {
  BarostatKind kind = BarostatKind::None;
  double pressure = 0.0;         // P0
  double tau_p = 1.0;            // relaxation time of the volume
  double compressibility = 0.0;  // beta_T
  BarostatCoupling couple = BarostatCoupling::Isotropic;
  int64_t every = 1;  // steps between box updates

  PAIRMD_HD bool active() const { return kind != BarostatKind::None; }
  // The box is updated during step `step` -> `step + 1` (after its drift, before its forces).
  PAIRMD_HD bool due(int64_t step) const { return active() && step % every == 0; }
};

// The config names of the couplings (config, docs, messages).
inline const char* barostat_coupling_name(BarostatCoupling c) {
  return c == BarostatCoupling::Isotropic ? "iso" : c == BarostatCoupling::SemiIsotropic ? "semi_iso" : "aniso";
}

// The instantaneous pressure tensor's diagonal, P_aa = (2 K_aa + W_aa) / V, from the kinetic
// energy per direction K_aa = sum m v_a^2 / 2 and the virial per direction W_aa = sum r_a f_a
// (energies), and the volume.
struct PressureDiagonal {
  double p[3];
  PAIRMD_HD double scalar() const { return (p[0] + p[1] + p[2]) / 3.0; }
};

PAIRMD_HD PressureDiagonal pressure_diagonal(const double kinetic[3], const double virial[3], double volume) {
  PressureDiagonal d;
  for (int a = 0; a < 3; ++a) d.p[a] = (2.0 * kinetic[a] + virial[a]) / volume;
  return d;
}

// The edge factors mu[3] of one C-rescale update: `kT` is k_B T in energy units, `dt` the time
// step, `r` three normal draws. The draws are Philox (seed, step) on their own stream
// (barostat_noise, below): a function of the seed and the step only, so restarts repeat them.
PAIRMD_HD void c_rescale_factors(const BarostatSettings& s, double kT, double dt, const PressureDiagonal& p,
                                 double volume, const Vec3<double>& r, double mu[3]) {
  const double rate = s.compressibility * s.every * dt / s.tau_p;  // beta_T dt_b / tau_p
  const double var = 2.0 * kT * rate / volume;                     // noise variance of d(ln V)
  if (s.couple == BarostatCoupling::Isotropic) {
    // d ln L = d ln V / 3 for every edge.
    const double e = (-rate * (s.pressure - p.scalar()) + std::sqrt(var) * r.x) / 3.0;
    mu[0] = mu[1] = mu[2] = std::exp(e);
  } else if (s.couple == BarostatCoupling::SemiIsotropic) {
    // ln Lx = ln Ly (n = 2): variance var / 6; ln Lz (n = 1): var / 3.
    const double pxy = 0.5 * (p.p[0] + p.p[1]);
    const double exy = -rate * (s.pressure - pxy) / 3.0 + std::sqrt(var / 6.0) * r.x;
    const double ez = -rate * (s.pressure - p.p[2]) / 3.0 + std::sqrt(var / 3.0) * r.y;
    mu[0] = mu[1] = std::exp(exy);
    mu[2] = std::exp(ez);
  } else {  // each edge alone (n = 1): variance var / 3
    const double g[3] = {r.x, r.y, r.z};
    for (int a = 0; a < 3; ++a) mu[a] = std::exp(-rate * (s.pressure - p.p[a]) / 3.0 + std::sqrt(var / 3.0) * g[a]);
  }
}

// The same with the update's normal draws, r = barostat_noise<double>(seed, step) (the CPU's;
// the GPU's decision, one thread on the step's critical path, draws them in float).
template <typename Real>
PAIRMD_HD Vec3<double> barostat_noise(uint64_t seed, uint64_t step) {
  const Vec3<Real> g = gaussian3<Real>(seed, step, 0, kNoiseBarostat);
  return {double(g.x), double(g.y), double(g.z)};
}

PAIRMD_HD void c_rescale_factors(const BarostatSettings& s, double kT, double dt, const PressureDiagonal& p,
                                 double volume, uint64_t seed, uint64_t step, double mu[3]) {
  c_rescale_factors(s, kT, dt, p, volume, barostat_noise<double>(seed, step), mu);
}

// The box after scaling its edges by mu about its lower corner.
template <typename Real>
PAIRMD_HD BoxGeometry<Real> scaled_box(const BoxGeometry<Real>& b, const Real mu[3]) {
  BoxGeometry<Real> s = b;
  s.L.x = b.L.x * mu[0];
  s.L.y = b.L.y * mu[1];
  s.L.z = b.L.z * mu[2];
  return s;
}

// One particle's part of a box update from `old_box` to `new_box` (= scaled_box(old_box, mu)):
// the position scales about the lower corner (its unwrapped position too, images unchanged; a
// position that rounds onto the upper face is wrapped), the velocity by 1 / mu.
template <typename Real>
PAIRMD_HD void rescale_particle(Vec3<Real>& x, Vec3<Real>& v, Int3& image, const Real mu[3],
                                const BoxGeometry<Real>& old_box, const BoxGeometry<Real>& new_box) {
  x.x = old_box.lo.x + mu[0] * (x.x - old_box.lo.x);
  x.y = old_box.lo.y + mu[1] * (x.y - old_box.lo.y);
  x.z = old_box.lo.z + mu[2] * (x.z - old_box.lo.z);
  v.x /= mu[0];
  v.y /= mu[1];
  v.z /= mu[2];
  new_box.wrap(x, image);
}

}  // namespace pairmd
