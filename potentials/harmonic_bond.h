// Harmonic bond:  V(r) = k/2 (r - r0)^2,   F/r = -k (r - r0) / r.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct HarmonicBond {
  static constexpr const char* kName = "harmonic";
  static constexpr const char* kFormula = "V = k/2 (r - r0)^2";
  // r0 of the config: what it means, and whether 0 is allowed (host only; config reader).
  static constexpr const char* kK = "a spring constant > 0";
  static constexpr const char* kR0 = "a rest length >= 0";
  static constexpr bool kR0Positive = false;
  static constexpr const char* kEpsilon = nullptr;  // keys it does not take
  static constexpr const char* kMaxExtension = nullptr;

  struct Params {
    Real k, r0;
  };

  static Params from(const BondCoeffs& c) { return Params{Real(c.k), Real(c.r0)}; }

  // Always succeeds; returns true for the same interface as bonds that can break.
  PAIRMD_HD static bool eval(Real rsq, const Params& p, Real& force_divr, Real& energy) {
    const Real r = std::sqrt(rsq);
    const Real dr = r - p.r0;
    force_divr = -p.k * dr / r;
    energy = Real(0.5) * p.k * dr * dr;
    return true;
  }
};

}  // namespace pairmd
