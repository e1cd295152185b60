// The integrators as per-particle updates, written once for the CPU reference backend and the
// fused GPU summation+integration kernels.
//
// Every step is split in two halves around the force evaluation:
//   begin(x, v, F(x_n))   ... positions move to x_{n+1}
//   -- forces F(x_{n+1}) are computed --
//   end(v, F(x_{n+1}))    ... velocities complete step n+1
// The GPU fuses end() of step n with begin() of step n+1 into one kernel, with the force
// summation in front. Both halves are separate operations in that kernel too, so the result is
// bitwise the same whether or not the loop pauses between them (output, checkpoints).
//
// Langevin uses BAOAB (Leimkuhler & Matthews 2013): B = half kick, A = half drift,
// O = exact Ornstein-Uhlenbeck velocity update with friction gamma. Velocity Verlet is B A A B
// without O. Brownian (overdamped) moves x by mobility * F dt plus noise; its velocities are
// not part of the dynamics, so begin() draws them fresh from Maxwell-Boltzmann for reporting.
#pragma once

#include <cmath>

#include "base/box.h"
#include "base/hd.h"
#include "base/vec3.h"
#include "integrators/integrator_params.h"
#include "integrators/noise.h"

namespace pairmd {

template <typename Real>
PAIRMD_HD void half_kick(Vec3<Real>& v, Vec3<Real> f, Real inv_mass, const StepConstants<Real>& c) {
  const Real s = c.half_dt * c.force_to_accel * inv_mass;
  v.x += s * f.x;
  v.y += s * f.y;
  v.z += s * f.z;
}

template <typename Real>
PAIRMD_HD void half_drift(Vec3<Real>& x, Vec3<Real> v, const StepConstants<Real>& c) {
  x.x += c.half_dt * v.x;
  x.y += c.half_dt * v.y;
  x.z += c.half_dt * v.z;
}

// First part of step `step` -> `step + 1`; f is the force at the current positions.
template <typename Real>
PAIRMD_HD void begin_step(IntegratorKind kind, Vec3<Real>& x, Vec3<Real>& v, Int3& image, Vec3<Real> f, Real inv_mass,
                          uint32_t tag, uint64_t step, const StepConstants<Real>& c, const BoxGeometry<Real>& box) {
  if (kind == IntegratorKind::Brownian) {
    // x += dt F / (m gamma) + sqrt(2 kT dt / (m gamma)) R   (mobility 1 / (m gamma))
    const Real mobility_dt = c.dt * c.force_to_accel * inv_mass / c.friction;
    const Real amp = std::sqrt(Real(2) * c.kT_mvv * c.dt * inv_mass / c.friction);
    const Vec3<Real> r = gaussian3<Real>(c.seed, step, tag, kNoiseThermostat);
    x.x += mobility_dt * f.x + amp * r.x;
    x.y += mobility_dt * f.y + amp * r.y;
    x.z += mobility_dt * f.z + amp * r.z;
    const Vec3<Real> u = gaussian3<Real>(c.seed, step, tag, kNoiseVelocities);
    const Real vs = std::sqrt(c.kT_mvv * inv_mass);
    v = {vs * u.x, vs * u.y, vs * u.z};
  } else {
    half_kick(v, f, inv_mass, c);  // B
    half_drift(x, v, c);           // A
    if (kind == IntegratorKind::Langevin) {
      const Vec3<Real> r = gaussian3<Real>(c.seed, step, tag, kNoiseThermostat);  // O
      const Real amp = c.ou_c2 * std::sqrt(c.kT_mvv * inv_mass);
      v.x = c.ou_c1 * v.x + amp * r.x;
      v.y = c.ou_c1 * v.y + amp * r.y;
      v.z = c.ou_c1 * v.z + amp * r.z;
    }
    half_drift(x, v, c);  // A
  }
  box.wrap(x, image);
}

// Last part of a step; f is the force at the new positions.
template <typename Real>
PAIRMD_HD void end_step(IntegratorKind kind, Vec3<Real>& v, Vec3<Real> f, Real inv_mass, const StepConstants<Real>& c) {
  if (kind != IntegratorKind::Brownian) half_kick(v, f, inv_mass, c);  // B
}

}  // namespace pairmd
