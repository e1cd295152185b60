// Soft r^-6 repulsion, the excluded volume of the Self-Organized Polymer (SOP) model of
// proteins between residues that are neither bonded nor in native contact (Hyeon, Dima and
// Thirumalai, Structure 2006: sigma = 3.8 A, eps = 1 kcal/mol), cut at rc and optionally
// energy-shifted:
//
//   V(r) = eps (sigma/r)^6 - V_shift,     F/r = 6 eps sigma^6 / r^8,     r < rc
//
// Evaluated with r^-2 only. In the SOP model the bonded and native pairs are left out of this
// term by the pair lists' `exclude_from` (docs/proteins.md).
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct RepulsiveR6 {
  static constexpr const char* kName = "repulsive_r6";
  static constexpr const char* kFormula = "V = eps (sigma/r)^6, cut at rc (SOP excluded volume)";
  static constexpr bool kUsesCharge = false;
  static constexpr bool kScreened = false;
  static constexpr const char* kFixedCutoff = nullptr;
  static constexpr const char* kFixedShift = nullptr;
  static double cutoff(const PairCoeffs& c) { return c.rcut; }

  struct Params {
    Real c6, rcutsq, shift, unused;
  };

  static Params from(const PairCoeffs& c) {
    const double c6 = c.epsilon * std::pow(c.sigma, 6);
    Params p;
    p.c6 = Real(c6);
    p.rcutsq = Real(c.rcut * c.rcut);
    p.shift = Real(c.shift && c.rcut > 0 ? c6 / std::pow(c.rcut, 6) : 0.0);
    p.unused = Real(0);
    return p;
  }

  // Returns false (and leaves the outputs untouched) beyond the cutoff.
  PAIRMD_HD static bool eval(Real rsq, Real /*qiqj*/, const Params& p, Real& force_divr, Real& energy) {
    if (!(rsq < p.rcutsq)) return false;
    const Real r2inv = Real(1) / rsq;
    const Real e6 = p.c6 * r2inv * r2inv * r2inv;
    force_divr = Real(6) * e6 * r2inv;
    energy = e6 - p.shift;
    return true;
  }
};

}  // namespace pairmd
