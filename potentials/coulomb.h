// Coulomb interaction with a plain cutoff, optionally energy-shifted:
//
//   V(r) = C q_i q_j (1/r - s / rcut),   r < rcut,   C = k_e / eps_r, s = 1 if shifted else 0
//   F/r  = C q_i q_j / r^3
//
// A cut Coulomb sum is only a model (reaction-field-free truncation); it is here for
// screened or small systems and as a baseline against Debye-Hueckel.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct Coulomb {
  static constexpr const char* kName = "coulomb";
  static constexpr const char* kFormula = "V = (k_e/eps_r) q_i q_j / r, cut at rc";
  static constexpr bool kUsesCharge = true;
  static constexpr bool kScreened = false;
  static constexpr const char* kFixedCutoff = nullptr;
  static constexpr const char* kFixedShift = nullptr;
  static double cutoff(const PairCoeffs& c) { return c.rcut; }

  struct Params {
    Real prefactor, rcutsq, inv_rcut_shift, unused;
  };

  static Params from(const PairCoeffs& c) {
    Params p;
    p.prefactor = Real(c.prefactor);
    p.rcutsq = Real(c.rcut * c.rcut);
    p.inv_rcut_shift = Real(c.shift && c.rcut > 0 ? 1.0 / c.rcut : 0.0);
    p.unused = Real(0);
    return p;
  }

  PAIRMD_HD static bool eval(Real rsq, Real qiqj, const Params& p, Real& force_divr, Real& energy) {
    if (!(rsq < p.rcutsq)) return false;
    const Real rinv = Real(1) / std::sqrt(rsq);
    const Real cq = p.prefactor * qiqj;
    force_divr = cq * rinv * rinv * rinv;
    energy = cq * (rinv - p.inv_rcut_shift);
    return true;
  }
};

}  // namespace pairmd
