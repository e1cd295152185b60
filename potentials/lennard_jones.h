// Lennard-Jones pair potential, cut at rcut and optionally energy-shifted:
//
//   V(r) = 4 eps [ (sigma/r)^12 - (sigma/r)^6 ] - V_shift,     r < rcut
//
// Evaluated as in most MD codes with r^-2 only (no sqrt):
//   F/r = -(1/r) dV/dr = r^-2 r^-6 (lj1 r^-6 - lj2),   lj1 = 48 eps sigma^12, lj2 = 24 eps sigma^6
//   V   = r^-6 (lj1 r^-6 - 2 lj2) / 12
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct LennardJones {
  // What the registry (potentials/registry.h) and the config reader need to know; host only.
  static constexpr const char* kName = "lj";  // config: potential: lj
  static constexpr const char* kFormula = "V = 4 eps [(sigma/r)^12 - (sigma/r)^6], cut at rc";
  static constexpr bool kUsesCharge = false;            // V depends on q_i q_j
  static constexpr bool kScreened = false;              // takes kappa / debye_length
  static constexpr const char* kFixedCutoff = nullptr;  // else: why `cutoff` is not a key
  static constexpr const char* kFixedShift = nullptr;   // else: why `shift` is not a key
  // The cutoff of one type pair (what its list needs); 0 switches the pair off.
  static double cutoff(const PairCoeffs& c) { return c.rcut; }

  struct Params {
    Real lj1, lj2, rcutsq, shift;
  };

  static Params from(const PairCoeffs& c) {
    const double s6 = std::pow(c.sigma, 6);
    Params p;
    p.lj1 = Real(48.0 * c.epsilon * s6 * s6);
    p.lj2 = Real(24.0 * c.epsilon * s6);
    p.rcutsq = Real(c.rcut * c.rcut);
    p.shift = Real(0);
    if (c.shift && c.rcut > 0) {
      const double r6 = 1.0 / std::pow(c.rcut, 6);
      p.shift = Real(4.0 * c.epsilon * (s6 * s6 * r6 * r6 - s6 * r6));
    }
    return p;
  }

  // Returns false (and leaves the outputs untouched) beyond the cutoff.
  PAIRMD_HD static bool eval(Real rsq, Real /*qiqj*/, const Params& p, Real& force_divr, Real& energy) {
    if (!(rsq < p.rcutsq)) return false;
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    force_divr = r2inv * r6inv * (p.lj1 * r6inv - p.lj2);
    energy = r6inv * (p.lj1 * r6inv - Real(2) * p.lj2) * Real(1.0 / 12.0) - p.shift;
    return true;
  }
};

// Weeks-Chandler-Andersen: the purely repulsive part of LJ, cut at the minimum 2^(1/6) sigma
// and shifted up by eps so that V and F vanish there. The config's rcut is ignored.
template <typename Real>
struct WCA : LennardJones<Real> {
  static constexpr const char* kName = "wca";
  static constexpr const char* kFormula = "LJ cut at 2^(1/6) sigma and shifted up by eps (purely repulsive)";
  static constexpr const char* kFixedCutoff = "WCA is always cut at 2^(1/6) sigma";
  static constexpr const char* kFixedShift = "WCA is always shifted";
  using Params = typename LennardJones<Real>::Params;

  static double cutoff(const PairCoeffs& c) { return c.epsilon != 0.0 ? std::pow(2.0, 1.0 / 6.0) * c.sigma : 0.0; }

  static Params from(PairCoeffs c) {
    c.rcut = cutoff(c);
    c.shift = true;
    return LennardJones<Real>::from(c);
  }
};

}  // namespace pairmd
