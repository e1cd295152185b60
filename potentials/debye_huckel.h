// Debye-Hueckel (screened Coulomb) interaction of an implicit electrolyte:
//
//   V(r) = C q_i q_j exp(-kappa r) / r - V_shift,    r < rcut,   C = k_e / eps_r
//   F/r  = C q_i q_j exp(-kappa r) (1 + kappa r) / r^3
//
// kappa is the inverse Debye length; V_shift = V(rcut) when shifted.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct DebyeHuckel {
  static constexpr const char* kName = "debye_huckel";
  static constexpr const char* kFormula = "V = (k_e/eps_r) q_i q_j exp(-kappa r) / r, cut at rc";
  static constexpr bool kUsesCharge = true;
  static constexpr bool kScreened = true;
  static constexpr const char* kFixedCutoff = nullptr;
  static constexpr const char* kFixedShift = nullptr;
  static double cutoff(const PairCoeffs& c) { return c.rcut; }

  struct Params {
    Real prefactor, kappa, rcutsq, shift_per_qq;  // shift_per_qq = exp(-kappa rc) / rc or 0
  };

  static Params from(const PairCoeffs& c) {
    Params p;
    p.prefactor = Real(c.prefactor);
    p.kappa = Real(c.kappa);
    p.rcutsq = Real(c.rcut * c.rcut);
    p.shift_per_qq = Real(c.shift && c.rcut > 0 ? std::exp(-c.kappa * c.rcut) / c.rcut : 0.0);
    return p;
  }

  PAIRMD_HD static bool eval(Real rsq, Real qiqj, const Params& p, Real& force_divr, Real& energy) {
    if (!(rsq < p.rcutsq)) return false;
    const Real r = std::sqrt(rsq);
    const Real rinv = Real(1) / r;
    const Real cq = p.prefactor * qiqj;
    const Real screened = cq * std::exp(-p.kappa * r) * rinv;  // V without shift
    force_divr = screened * (Real(1) + p.kappa * r) * rinv * rinv;
    energy = screened - cq * p.shift_per_qq;
    return true;
  }
};

}  // namespace pairmd
