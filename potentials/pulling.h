// Pulling, as an atomic force microscope or optical tweezers do (dynamic force spectroscopy in
// silico; SOP-GPU, Zhmurov et al. 2010): external forces on two chosen particles.
//
//   tethered particle t:  a stiff spring to its tether point T,
//                         V_t = (k_t/2) |x_t - T|^2
//   pulled particle p, force ramp (mode ramp): a virtual spring (the cantilever) to an anchor
//                         that moves at constant speed v along the unit vector n,
//                         X(s) = A + v dt (s - s0) n   at step s,
//                         V_p = (k_s/2) |X(s) - x_p|^2,  F_p = k_s (X(s) - x_p)
//   pulled particle p, constant force (mode constant):
//                         V_p = -f n . (x_p - A),        F_p = f n
//
// Positions are unwrapped (x + image L), so the springs hold across periodic boundaries. The
// force reported is the pulling spring's along n, k_s (X - x_p) . n (or f), and the extension
// the end-to-end distance |x_p - x_t| (and its projection on n).
//
// One function, pull_force, gives the force and energy on a particle, for the CPU reference
// (CpuBackend::compute_forces) and the GPU (the integrate kernel adds it to the summed force of
// the two particles, after the fixed-point sum, so the run stays deterministic). The forces
// depend only on the positions and the step, so restarts are exact.
#pragma once

#include <cstdint>

#include "base/hd.h"
#include "base/vec3.h"

namespace pairmd {

enum class PullMode : int { None = 0, Ramp = 1, Constant = 2 };

// The pulling of a run, resolved (engine/pulling.h): every point and the direction known.
// Indices are tags (the user's particle order); -1: none.
struct PullSettings {
  PullMode mode = PullMode::None;
  int64_t pulled = -1;
  int64_t tethered = -1;
  Vec3d anchor{0, 0, 0};     // A: where the anchor is at step start_step (ramp), the origin of V_p (constant)
  Vec3d direction{0, 0, 1};  // n, a unit vector
  Vec3d tether{0, 0, 0};     // T
  double spring = 0;         // k_s
  double speed = 0;          // v, length per time
  double force = 0;          // f (constant mode)
  double tether_spring = 0;  // k_t
  int64_t start_step = 0;    // s0: the anchor is at A then
  double dt = 0;             // the time step, to turn steps into time

  bool active() const { return mode != PullMode::None; }
};

// What a backend's force code reads: the same in double (CPU) and float (GPU).
template <typename Real>
struct PullParams {
  int mode;        // PullMode
  int64_t pulled;  // tag, or -1
  int64_t tethered;
  Vec3<Real> anchor, direction, tether;
  Real spring, step_length, force, tether_spring;  // step_length = v dt: the anchor's move per step
  int64_t start_step;
};

template <typename Real>
PullParams<Real> make_pull_params(const PullSettings& s) {
  PullParams<Real> p;
  p.mode = static_cast<int>(s.mode);
  p.pulled = s.pulled;
  p.tethered = s.tethered;
  p.anchor = {Real(s.anchor.x), Real(s.anchor.y), Real(s.anchor.z)};
  p.direction = {Real(s.direction.x), Real(s.direction.y), Real(s.direction.z)};
  p.tether = {Real(s.tether.x), Real(s.tether.y), Real(s.tether.z)};
  p.spring = Real(s.spring);
  p.step_length = Real(s.speed * s.dt);
  p.force = Real(s.force);
  p.tether_spring = Real(s.tether_spring);
  p.start_step = s.start_step;
  return p;
}

// The anchor X at `step` (ramp): A + v dt (step - s0) n.
template <typename Real>
PAIRMD_HD Vec3<Real> pull_anchor(const PullParams<Real>& p, int64_t step) {
  const Real s = p.step_length * Real(step - p.start_step);
  return p.anchor + s * p.direction;
}

// The external force on the particle of tag `tag` at unwrapped position x at step `step`, and
// its energy added to *energy. Zero for every particle but the pulled and the tethered one.
template <typename Real>
PAIRMD_HD Vec3<Real> pull_force(const PullParams<Real>& p, int64_t tag, Vec3<Real> x, int64_t step, Real* energy) {
  Vec3<Real> f{Real(0), Real(0), Real(0)};
  if (tag == p.pulled) {
    if (p.mode == static_cast<int>(PullMode::Ramp)) {
      const Vec3<Real> d = pull_anchor(p, step) - x;
      f += p.spring * d;
      if (energy) *energy += Real(0.5) * p.spring * dot(d, d);
    } else if (p.mode == static_cast<int>(PullMode::Constant)) {
      f += p.force * p.direction;
      if (energy) *energy -= p.force * dot(p.direction, x - p.anchor);
    }
  }
  if (tag == p.tethered) {
    const Vec3<Real> d = p.tether - x;
    f += p.tether_spring * d;
    if (energy) *energy += Real(0.5) * p.tether_spring * dot(d, d);
  }
  return f;
}

// The force a pulling experiment records: the pulling spring's force along n (ramp), or f.
template <typename Real>
PAIRMD_HD Real pull_force_along(const PullParams<Real>& p, Vec3<Real> x_pulled, int64_t step) {
  if (p.mode == static_cast<int>(PullMode::Ramp)) return p.spring * dot(pull_anchor(p, step) - x_pulled, p.direction);
  if (p.mode == static_cast<int>(PullMode::Constant)) return p.force;
  return Real(0);
}

}  // namespace pairmd
