// The real-space part of an Ewald sum (particle-mesh Ewald, potentials/pme.h): the Coulomb
// interaction screened by erfc,
//
//   V(r) = C q_i q_j erfc(alpha r) / r,   r < rcut,   C = k_e / eps_r
//   F/r  = C q_i q_j [erfc(alpha r) / r + (2 alpha / sqrt(pi)) exp(-alpha^2 r^2)] / r^2
//
// alpha comes from the `electrostatics` section (its accuracy and this term's cutoff); the
// reciprocal-space part, the self energy and the neutralising background are added by the
// backends' PME solvers into this term's energy. Not shifted: at the cutoff V is already of the
// order of the requested accuracy. On the GPU erfcf (at most 4 ulp, ~2.4e-7 relative) is far
// below any accuracy the section accepts there (>= 1e-6).
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

template <typename Real>
struct CoulombLong {
  static constexpr const char* kName = "coulomb_long";
  static constexpr const char* kFormula =
      "V = (k_e/eps_r) q_i q_j erfc(alpha r) / r, cut at rc (the real-space part of PME; alpha from electrostatics)";
  static constexpr bool kUsesCharge = true;
  static constexpr bool kScreened = false;
  static constexpr const char* kFixedCutoff = nullptr;
  static constexpr const char* kFixedShift =
      "coulomb_long is not shifted (at its cutoff erfc(alpha rc) is of the order of electrostatics.accuracy)";
  static double cutoff(const PairCoeffs& c) { return c.rcut; }

  struct Params {
    Real prefactor, alpha, rcutsq, gauss;  // gauss = 2 alpha / sqrt(pi)
  };

  static Params from(const PairCoeffs& c) {
    Params p;
    p.prefactor = Real(c.prefactor);
    p.alpha = Real(c.ewald_alpha);
    p.rcutsq = Real(c.rcut * c.rcut);
    p.gauss = Real(2.0 * c.ewald_alpha / std::sqrt(M_PI));
    return p;
  }

  PAIRMD_HD static bool eval(Real rsq, Real qiqj, const Params& p, Real& force_divr, Real& energy) {
    if (!(rsq < p.rcutsq)) return false;
    const Real r = std::sqrt(rsq);
    const Real rinv = Real(1) / r;
    const Real cq = p.prefactor * qiqj;
    const Real screened = cq * std::erfc(p.alpha * r) * rinv;
    force_divr = (screened + cq * p.gauss * std::exp(-p.alpha * p.alpha * rsq)) * rinv * rinv;
    energy = screened;
    return true;
  }
};

// The reciprocal-space part of a pair that the coulomb_long term leaves out (weight 0) or scales
// (special_bonds): the mesh sums every pair, so the pair's C q_i q_j erf(alpha r) / r is taken
// out again, times 1 - w (the ScaledPair weight of potentials/pme.h, pme_excluded_pairs), as
// LAMMPS's coul/long and OpenMM's exceptions do. The pair's real-space part (w erfc / r) is the
// term's own business, so the pair interacts as w C q_i q_j / r in all. No cutoff (a bonded pair
// is always nearer than half the box); below alpha r = 1e-2 (0.1 in float) a series keeps
// r -> 0 finite and exact:
//   V(r) = -C q_i q_j erf(alpha r) / r
//   F/r  = C q_i q_j [(2 alpha / sqrt(pi)) exp(-alpha^2 r^2) - erf(alpha r) / r] / r^2
template <typename Real>
struct CoulombLongExcluded {
  static constexpr bool kUsesCharge = true;
  using Params = typename CoulombLong<Real>::Params;

  PAIRMD_HD static bool eval(Real rsq, Real qiqj, const Params& p, Real& force_divr, Real& energy) {
    const Real cq = p.prefactor * qiqj;
    const Real x2 = p.alpha * p.alpha * rsq;
    // Where the two terms of F/r cancel to a few digits, the series (to x^6 / 42 relative):
    //   erf(x) / x = (2 / sqrt(pi)) (1 - x^2 / 3 + x^4 / 10 - ...)
    if (x2 < (sizeof(Real) == sizeof(float) ? Real(1e-2) : Real(1e-4))) {
      energy = -cq * p.gauss * (Real(1) - x2 / Real(3) + x2 * x2 / Real(10));
      force_divr = cq * p.gauss * p.alpha * p.alpha * (Real(-2) / Real(3) + Real(2) / Real(5) * x2 - x2 * x2 / Real(7));
      return true;
    }
    const Real r = std::sqrt(rsq);
    const Real erf_r = std::erf(p.alpha * r) / r;
    energy = -cq * erf_r;
    force_divr = cq * (p.gauss * std::exp(-x2) - erf_r) / rsq;
    return true;
  }
};

}  // namespace pairmd
