// FENE bond (finitely extensible nonlinear elastic), the attractive part of the
// Kremer-Grest bead-spring model:
//
//   V(r) = -K R0^2 / 2 ln(1 - (r/R0)^2),     F/r = -K / (1 - (r/R0)^2),     r < R0
//
// Kremer-Grest adds WCA between all monomers, bonded ones included; in pairmd that is the
// nonbonded WCA term with `exclusions: none`, so this evaluator is the FENE part only.
// A bond stretched to r >= R0 has no finite energy: eval returns false and the run stops.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct FeneBond {
  static constexpr const char* kName = "fene";
  static constexpr const char* kFormula = "V = -(k/2) R0^2 ln(1 - (r/R0)^2), r < R0 (r0 is R0)";
  static constexpr const char* kK = "a spring constant > 0";
  static constexpr const char* kR0 = "the maximum extension R0 > 0";
  static constexpr bool kR0Positive = true;
  static constexpr const char* kEpsilon = nullptr;
  static constexpr const char* kMaxExtension = nullptr;

  struct Params {
    Real k, r0sq;
  };

  static Params from(const BondCoeffs& c) { return Params{Real(c.k), Real(c.r0 * c.r0)}; }

  PAIRMD_HD static bool eval(Real rsq, const Params& p, Real& force_divr, Real& energy) {
    const Real stretch = Real(1) - rsq / p.r0sq;
    if (!(stretch > Real(0))) return false;
    force_divr = -p.k / stretch;
    energy = Real(-0.5) * p.k * p.r0sq * std::log(stretch);
    return true;
  }
};

}  // namespace pairmd
