// FENE about a rest length: the covalent backbone of the Self-Organized Polymer (SOP) model of
// proteins (Hyeon, Dima and Thirumalai, Structure 2006; SOP-GPU, Zhmurov et al. 2010), where
// each bond keeps its own native length r0 (the Calpha-Calpha distance of the structure):
//
//   V(r) = -(k/2) R^2 ln(1 - ((r - r0)/R)^2),        |r - r0| < R
//   F/r  = -k (r - r0) / (r (1 - ((r - r0)/R)^2))
//
// R is `max_extension` (SOP: R = 2 A, k = 14 kcal/(mol A^2)). Near r0 this is a harmonic spring
// of constant k; a bond stretched or squeezed to |r - r0| >= R has no finite energy: eval
// returns false and the run stops, as for FENE. Used as a bond type (one r0 for every bond of
// the type) or in a pair list with r0 per pair (force_field.pair_lists).
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct FeneNativeBond {
  static constexpr const char* kName = "fene_native";
  static constexpr const char* kFormula =
      "V = -(k/2) R^2 ln(1 - ((r - r0)/R)^2), |r - r0| < R (R is max_extension; SOP backbone)";
  static constexpr const char* kK = "a spring constant > 0";
  static constexpr const char* kR0 = "a rest length > 0";
  static constexpr bool kR0Positive = true;
  static constexpr const char* kEpsilon = nullptr;
  static constexpr const char* kMaxExtension = "the largest |r - r0|, > 0";

  struct Params {
    Real k, r0, inv_R2, half_k_R2;
  };

  static Params from(const BondCoeffs& c) {
    const double R2 = c.max_extension * c.max_extension;
    return Params{Real(c.k), Real(c.r0), Real(1.0 / R2), Real(0.5 * c.k * R2)};
  }

  PAIRMD_HD static bool eval(Real rsq, const Params& p, Real& force_divr, Real& energy) {
    const Real r = std::sqrt(rsq);
    const Real d = r - p.r0;
    const Real s = Real(1) - d * d * p.inv_R2;
    if (!(s > Real(0))) return false;
    force_divr = -p.k * d / (r * s);
    energy = -p.half_k_R2 * std::log(s);
    return true;
  }
};

}  // namespace pairmd
