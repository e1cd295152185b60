// A native contact of a structure-based (Go-like) model: the 12-6 Lennard-Jones potential with
// its minimum -eps at the pair's native distance r0, the attraction of the Self-Organized
// Polymer (SOP) model of proteins between residues closer than 8 A in the native structure
// (Hyeon, Dima and Thirumalai, Structure 2006):
//
//   V(r) = eps [(r0/r)^12 - 2 (r0/r)^6]
//   F/r  = 12 eps [(r0/r)^12 - (r0/r)^6] / r^2
//
// Evaluated with r^-2 only. No cutoff: the pair list names the contacts, and each keeps its
// attraction however far it is stretched (V -> 0). Usually in a pair list with r0 per pair
// (force_field.pair_lists), so that each contact keeps its own native distance.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct LjNativeBond {
  static constexpr const char* kName = "lj_native";
  static constexpr const char* kFormula = "V = eps [(r0/r)^12 - 2 (r0/r)^6] (minimum -eps at r0; SOP native contact)";
  static constexpr const char* kK = nullptr;
  static constexpr const char* kR0 = "a native distance > 0";
  static constexpr bool kR0Positive = true;
  static constexpr const char* kEpsilon = "a well depth >= 0";
  static constexpr const char* kMaxExtension = nullptr;

  struct Params {
    Real eps, r0sq;
  };

  static Params from(const BondCoeffs& c) { return Params{Real(c.epsilon), Real(c.r0 * c.r0)}; }

  // Always succeeds; returns true for the same interface as bonds that can break.
  PAIRMD_HD static bool eval(Real rsq, const Params& p, Real& force_divr, Real& energy) {
    const Real s2 = p.r0sq / rsq;
    const Real s6 = s2 * s2 * s2;
    force_divr = Real(12) * p.eps * s6 * (s6 - Real(1)) / rsq;
    energy = p.eps * s6 * (s6 - Real(2));
    return true;
  }
};

}  // namespace pairmd
