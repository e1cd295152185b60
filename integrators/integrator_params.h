// Parameters of the integrators, in the run's units, precomputed once per run so that the
// per-particle step functions are a few multiply-adds.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace pairmd {

// Names and docs lines: integrators/registry.h.
enum class IntegratorKind { Langevin, VelocityVerlet, Brownian };

struct IntegratorSettings {
  IntegratorKind kind = IntegratorKind::Langevin;
  double dt = 0.005;
  double temperature = 1.0;  // target temperature (Langevin, Brownian)
  double friction = 1.0;     // gamma, in 1/time
  uint64_t seed = 1;
};

// Everything the per-particle updates need, in backend precision.
template <typename Real>
struct StepConstants {
  Real dt;
  Real half_dt;
  Real force_to_accel;  // a = force_to_accel * F / m (1 in LJ units, 4.184e-4 in real units)
  Real kT_mvv;          // k_B T expressed in mass * velocity^2 units
  Real ou_c1;           // exp(-gamma dt): velocity memory of the Langevin O-step
  Real ou_c2;           // sqrt(1 - c1^2): its noise amplitude per sqrt(kT/m)
  Real friction;        // gamma
  uint64_t seed;
};

template <typename Real>
StepConstants<Real> make_step_constants(const IntegratorSettings& s, double kB, double force_to_accel) {
  StepConstants<Real> c;
  c.dt = Real(s.dt);
  c.half_dt = Real(0.5 * s.dt);
  c.force_to_accel = Real(force_to_accel);
  // k_B T is in energy units; mvv = force_to_accel * energy (base/units.h).
  c.kT_mvv = Real(kB * s.temperature * force_to_accel);
  const double c1 = std::exp(-s.friction * s.dt);
  c.ou_c1 = Real(c1);
  c.ou_c2 = Real(std::sqrt(1.0 - c1 * c1));
  c.friction = Real(s.friction);
  c.seed = s.seed;
  return c;
}

}  // namespace pairmd
