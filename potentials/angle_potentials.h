// Angle potentials, in LAMMPS's conventions (angle_style harmonic, cosine, cosine/squared), so
// that a LAMMPS data file's Angle Coeffs mean the same here. theta is the angle at the vertex
// (180 deg for a straight chain); coefficients are in LAMMPS's order, theta0 in degrees.
//
//   harmonic        V = k (theta - theta0)^2                 (no 1/2: k is LAMMPS's K)
//   cosine          V = k (1 + cos theta)                    harmonic-cosine / Kratky-Porod: with
//                                                            the bend angle b = 180 deg - theta it
//                                                            is k (1 - cos b); persistence length
//                                                            l_p = k b0 / k_B T for k >> k_B T
//   cosine_squared  V = k (cos theta - cos theta0)^2
//
// Each gives V and dV/d(cos theta) at c = cos theta and s = sin theta >= 0 (both from the
// geometry, potentials/bonded_geometry.h, which turns them into forces).
#pragma once

#include <cmath>
#include <limits>

#include "base/hd.h"
#include "potentials/coeffs.h"

namespace pairmd {

constexpr double kBondedInf = std::numeric_limits<double>::infinity();
constexpr double kDegree = 3.14159265358979323846 / 180.0;

template <typename Real>
struct HarmonicAngle {
  static constexpr const char* kName = "harmonic";
  static constexpr const char* kLammpsStyle = "harmonic";
  static constexpr const char* kFormula = "V = k (theta - theta0)^2";
  static constexpr BondedCoeffSpec kCoeffs[] = {
      {"k", "a stiffness >= 0 (energy per rad^2)", 0, kBondedInf, false, false},
      {"theta0", "the rest angle in degrees, 0 to 180", 0, 180, false, false}};
  static constexpr int kRepeat = 0;  // no repeated group of coefficients

  struct Params {
    Real k, theta0;
  };
  static Params from(const BondedCoeffs& c) { return {Real(c.values[0]), Real(c.values[1] * kDegree)}; }

  PAIRMD_HD static void eval(Real c, Real s, const Params& p, Real& dv_dc, Real& energy) {
    const Real dtheta = std::atan2(s, c) - p.theta0;
    energy = p.k * dtheta * dtheta;
    // dV/dc = dV/dtheta / (dc/dtheta) = -2 k dtheta / sin theta; sin theta held >= 0.001 at a
    // straight or folded angle, as LAMMPS does.
    const Real sin_theta = s < Real(0.001) ? Real(0.001) : s;
    dv_dc = Real(-2) * p.k * dtheta / sin_theta;
  }
};

template <typename Real>
struct CosineAngle {
  static constexpr const char* kName = "cosine";
  static constexpr const char* kLammpsStyle = "cosine";
  static constexpr const char* kFormula = "V = k (1 + cos theta)";
  static constexpr BondedCoeffSpec kCoeffs[] = {{"k", "a stiffness >= 0 (energy)", 0, kBondedInf, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real k;
  };
  static Params from(const BondedCoeffs& c) { return {Real(c.values[0])}; }

  PAIRMD_HD static void eval(Real c, Real, const Params& p, Real& dv_dc, Real& energy) {
    energy = p.k * (Real(1) + c);
    dv_dc = p.k;
  }
};

template <typename Real>
struct CosineSquaredAngle {
  static constexpr const char* kName = "cosine_squared";
  static constexpr const char* kLammpsStyle = "cosine/squared";
  static constexpr const char* kFormula = "V = k (cos theta - cos theta0)^2";
  static constexpr BondedCoeffSpec kCoeffs[] = {
      {"k", "a stiffness >= 0 (energy)", 0, kBondedInf, false, false},
      {"theta0", "the rest angle in degrees, 0 to 180", 0, 180, false, false}};
  static constexpr int kRepeat = 0;

  struct Params {
    Real k, cos0;
  };
  static Params from(const BondedCoeffs& c) { return {Real(c.values[0]), Real(std::cos(c.values[1] * kDegree))}; }

  PAIRMD_HD static void eval(Real c, Real, const Params& p, Real& dv_dc, Real& energy) {
    const Real dc = c - p.cos0;
    energy = p.k * dc * dc;
    dv_dc = Real(2) * p.k * dc;
  }
};

}  // namespace pairmd
