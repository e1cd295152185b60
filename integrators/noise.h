// Gaussian noise for stochastic integrators from the counter-based Philox4x32-10 generator
// (Random123). A draw is a pure function of (seed, step, particle tag, stream): it does not
// depend on thread order, on the order particles are stored in, or on the backend. The CPU
// (double) and GPU (float) backends see the same 32-bit integers; only the final conversion to
// a Gaussian is done in each backend's precision.
//
//   key     = seed (64 bits)
//   counter = {tag, step low 32 bits, step high 32 bits, stream}
#pragma once

#include <cmath>
#include <cstdint>

#include <Random123/philox.h>

#include "base/hd.h"
#include "base/vec3.h"

namespace pairmd {

enum NoiseStream : uint32_t {
  kNoiseThermostat = 0,       // Langevin O-step / Brownian displacement
  kNoiseVelocities = 1,       // Maxwell-Boltzmann velocities (initial state, Brownian reporting)
  kNoiseReplicaExchange = 2,  // Metropolis draws of temperature replica exchange (counter: pair, exchange)
  kNoiseBarostat = 3,         // the barostat's noise (integrators/barostat.h; tag 0, counter: step)
};

template <typename Real>
PAIRMD_HD Real uniform_open01(uint32_t u) {
  // (u + 0.5) / 2^32 lies strictly inside (0, 1), so log() below never sees 0.
  return (Real(u) + Real(0.5)) * Real(2.3283064365386963e-10);
}

// Three independent standard normal numbers for one particle at one step.
template <typename Real>
PAIRMD_HD Vec3<Real> gaussian3(uint64_t seed, uint64_t step, uint32_t tag, uint32_t stream) {
  r123::Philox4x32 rng;
  r123::Philox4x32::ctr_type ctr = {{tag, uint32_t(step), uint32_t(step >> 32), stream}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  const r123::Philox4x32::ctr_type bits = rng(ctr, key);
  const Real two_pi = Real(6.283185307179586);
  // Box-Muller on two pairs of uniforms gives four normals; the fourth is unused.
  const Real r1 = std::sqrt(Real(-2) * std::log(uniform_open01<Real>(bits.v[0])));
  const Real r2 = std::sqrt(Real(-2) * std::log(uniform_open01<Real>(bits.v[2])));
  const Real a1 = two_pi * uniform_open01<Real>(bits.v[1]);
  const Real a2 = two_pi * uniform_open01<Real>(bits.v[3]);
  return {r1 * std::cos(a1), r1 * std::sin(a1), r2 * std::cos(a2)};
}

// One uniform number in (0, 1) from the same generator: a pure function of (seed, index, counter,
// stream). Replica exchange draws the decision for ladder pair `index` at exchange `counter`.
inline double uniform_draw(uint64_t seed, uint32_t index, uint64_t counter, uint32_t stream) {
  r123::Philox4x32 rng;
  r123::Philox4x32::ctr_type ctr = {{index, uint32_t(counter), uint32_t(counter >> 32), stream}};
  r123::Philox4x32::key_type key = {{uint32_t(seed), uint32_t(seed >> 32)}};
  return uniform_open01<double>(rng(ctr, key).v[0]);
}

}  // namespace pairmd
