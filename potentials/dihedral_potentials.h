// Dihedral and improper potentials, in LAMMPS's conventions (dihedral_style harmonic, fourier,
// opls, multi/harmonic, quadratic; improper_style harmonic), so that a LAMMPS data file's
// Dihedral and Improper Coeffs mean the same here. phi is the IUPAC dihedral (trans 180 deg,
// potentials/bonded_geometry.h); coefficients in LAMMPS's order, angles in degrees.
//
//   harmonic        V = k [1 + d cos(n phi)],  d = +1 or -1, n an integer >= 0
//   fourier         V = sum_i k_i [1 + cos(n_i phi - d_i)],  1 to 6 terms [k_i, n_i, d_i]
//                   (LAMMPS's fourier; its charmm with weight 0 is one term)
//   opls            V = k1/2 (1 + cos phi) + k2/2 (1 - cos 2phi) + k3/2 (1 + cos 3phi)
//                       + k4/2 (1 - cos 4phi)
//   multi_harmonic  V = sum_{n=1..5} a_n cos^(n-1) phi
//   quadratic       V = k (phi - phi0)^2, phi - phi0 taken in [-180, 180) deg
//   improper harmonic  V = k (chi - chi0)^2, chi = |phi| of (i, j, k, l) in [0, 180] deg: the
//                   angle between the planes (i, j, k) and (j, k, l)
//
// Each gives V and dV/dphi at c = cos phi, s = sin phi.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "potentials/angle_potentials.h"
#include "potentials/coeffs.h"

namespace pairmd {

// cos(n phi) and sin(n phi) from c = cos phi, s = sin phi, by n rotations (n small).
template <typename Real>
PAIRMD_HD void multiple_angle(int n, Real c, Real s, Real& cn, Real& sn) {
  cn = Real(1);
  sn = Real(0);
  for (int k = 0; k < n; ++k) {
    const Real next = cn * c - sn * s;
    sn = sn * c + cn * s;
    cn = next;
  }
}

template <typename Real>
struct HarmonicDihedral {
  static constexpr const char* kName = "harmonic";
  static constexpr const char* kLammpsStyle = "harmonic";
  static constexpr const char* kFormula = "V = k [1 + d cos(n phi)], d = +1 or -1";
  static constexpr BondedCoeffSpec kCoeffs[] = {{"k", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"d", "the sign +1 or -1", -1, 1, true, true},
                                                {"n", "the multiplicity, an integer 0 to 12", 0, 12, true, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real kd;  // k d
    Real k;
    int n;
  };
  static Params from(const BondedCoeffs& c) {
    return {Real(c.values[0] * c.values[1]), Real(c.values[0]), static_cast<int>(c.values[2])};
  }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    Real cn, sn;
    multiple_angle(p.n, c, s, cn, sn);
    energy = p.k + p.kd * cn;
    dv_dphi = -p.kd * Real(p.n) * sn;
  }
};

constexpr int kMaxFourierTerms = 6;

template <typename Real>
struct FourierDihedral {
  static constexpr const char* kName = "fourier";
  static constexpr const char* kLammpsStyle = "fourier";
  static constexpr const char* kFormula = "V = sum_i k_i [1 + cos(n_i phi - d_i)], terms [k_i, n_i, d_i]";
  // One term; `terms` repeats it 1 to kMaxFourierTerms times (LAMMPS: "m k1 n1 d1 k2 n2 d2 ...").
  static constexpr BondedCoeffSpec kCoeffs[] = {{"k", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"n", "the multiplicity, an integer 0 to 12", 0, 12, true, false},
                                                {"d", "the phase in degrees, -360 to 360", -360, 360, false, false}};
  static constexpr int kRepeat = kMaxFourierTerms;

  struct Params {
    Real k[kMaxFourierTerms], cos_d[kMaxFourierTerms], sin_d[kMaxFourierTerms];
    int n[kMaxFourierTerms];
    int terms;
  };
  static Params from(const BondedCoeffs& c) {
    Params p{};
    p.terms = static_cast<int>(c.values.size() / 3);
    for (int t = 0; t < p.terms; ++t) {
      p.k[t] = Real(c.values[3 * t]);
      p.n[t] = static_cast<int>(c.values[3 * t + 1]);
      p.cos_d[t] = Real(std::cos(c.values[3 * t + 2] * kDegree));
      p.sin_d[t] = Real(std::sin(c.values[3 * t + 2] * kDegree));
    }
    return p;
  }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    energy = Real(0);
    dv_dphi = Real(0);
    for (int t = 0; t < p.terms; ++t) {
      Real cn, sn;
      multiple_angle(p.n[t], c, s, cn, sn);
      // cos(n phi - d) and its derivative -n sin(n phi - d).
      energy += p.k[t] * (Real(1) + cn * p.cos_d[t] + sn * p.sin_d[t]);
      dv_dphi -= p.k[t] * Real(p.n[t]) * (sn * p.cos_d[t] - cn * p.sin_d[t]);
    }
  }
};

template <typename Real>
struct OplsDihedral {
  static constexpr const char* kName = "opls";
  static constexpr const char* kLammpsStyle = "opls";
  static constexpr const char* kFormula =
      "V = k1/2 (1 + cos phi) + k2/2 (1 - cos 2phi) + k3/2 (1 + cos 3phi) + k4/2 (1 - cos 4phi)";
  static constexpr BondedCoeffSpec kCoeffs[] = {{"k1", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"k2", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"k3", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"k4", "an energy", -kBondedInf, kBondedInf, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real half_k[4];
  };
  static Params from(const BondedCoeffs& c) {
    Params p{};
    for (int t = 0; t < 4; ++t) p.half_k[t] = Real(0.5 * c.values[t]);
    return p;
  }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    // cos and sin of phi, 2 phi, 3 phi, 4 phi; the signs alternate: +, -, +, -.
    Real cn = Real(1), sn = Real(0);
    energy = Real(0);
    dv_dphi = Real(0);
    for (int t = 0; t < 4; ++t) {
      const Real next = cn * c - sn * s;
      sn = sn * c + cn * s;
      cn = next;
      const Real sign = t % 2 == 0 ? Real(1) : Real(-1);
      energy += p.half_k[t] * (Real(1) + sign * cn);
      dv_dphi -= p.half_k[t] * sign * Real(t + 1) * sn;
    }
  }
};

template <typename Real>
struct MultiHarmonicDihedral {
  static constexpr const char* kName = "multi_harmonic";
  static constexpr const char* kLammpsStyle = "multi/harmonic";
  static constexpr const char* kFormula = "V = sum_{n=1..5} a_n cos^(n-1) phi";
  static constexpr BondedCoeffSpec kCoeffs[] = {{"a1", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"a2", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"a3", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"a4", "an energy", -kBondedInf, kBondedInf, false, false},
                                                {"a5", "an energy", -kBondedInf, kBondedInf, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real a[5];
  };
  static Params from(const BondedCoeffs& c) {
    Params p{};
    for (int t = 0; t < 5; ++t) p.a[t] = Real(c.values[t]);
    return p;
  }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    // Horner's rule for V(c) and dV/dc; dc/dphi = -sin phi.
    Real v = p.a[4], dv = Real(0);
    for (int t = 3; t >= 0; --t) {
      dv = dv * c + v;
      v = v * c + p.a[t];
    }
    energy = v;
    dv_dphi = -dv * s;
  }
};

template <typename Real>
struct QuadraticDihedral {
  static constexpr const char* kName = "quadratic";
  static constexpr const char* kLammpsStyle = "quadratic";
  static constexpr const char* kFormula = "V = k (phi - phi0)^2, phi - phi0 in [-180, 180) deg";
  static constexpr BondedCoeffSpec kCoeffs[] = {
      {"k", "a stiffness >= 0 (energy per rad^2)", 0, kBondedInf, false, false},
      {"phi0", "the rest dihedral in degrees, -180 to 180", -180, 180, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real k, phi0;
  };
  static Params from(const BondedCoeffs& c) { return {Real(c.values[0]), Real(c.values[1] * kDegree)}; }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    const Real pi = Real(3.14159265358979323846);
    Real d = std::atan2(s, c) - p.phi0;
    if (d >= pi) d -= Real(2) * pi;
    if (d < -pi) d += Real(2) * pi;
    energy = p.k * d * d;
    dv_dphi = Real(2) * p.k * d;
  }
};

template <typename Real>
struct HarmonicImproper {
  static constexpr const char* kName = "harmonic";
  static constexpr const char* kLammpsStyle = "harmonic";
  static constexpr const char* kFormula = "V = k (chi - chi0)^2, chi = |phi| in [0, 180] deg";
  static constexpr BondedCoeffSpec kCoeffs[] = {
      {"k", "a stiffness >= 0 (energy per rad^2)", 0, kBondedInf, false, false},
      {"chi0", "the rest angle in degrees, 0 to 180", 0, 180, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real k, chi0;
  };
  static Params from(const BondedCoeffs& c) { return {Real(c.values[0]), Real(c.values[1] * kDegree)}; }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dphi, Real& energy) {
    const Real d = std::atan2(std::fabs(s), c) - p.chi0;
    energy = p.k * d * d;
    // dchi/dphi = sign(phi)
    dv_dphi = Real(2) * p.k * d * (s > Real(0) ? Real(1) : (s < Real(0) ? Real(-1) : Real(0)));
  }
};

}  // namespace pairmd
