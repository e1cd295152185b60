// The geometry of angle and dihedral terms, shared by every angle, dihedral and improper
// evaluator and by both backends (double on the CPU, float on the GPU). An evaluator gives the
// energy and its derivative in one coordinate (cos theta for angles, phi for dihedrals); the
// functions here turn that into forces on the three or four particles and their virial.
//
// Conventions are LAMMPS's (src/MOLECULE/angle_*.cpp, dihedral_*.cpp), so that coefficients of a
// LAMMPS data file mean the same:
//   angle (i, j, k): theta is the angle at the vertex j between d1 = x_i - x_j and d2 = x_k - x_j,
//     cos theta = d1.d2 / (|d1| |d2|), clamped to [-1, 1]; a straight chain has theta = 180 deg.
//   dihedral (i, j, k, l): b1 = x_j - x_i, b2 = x_k - x_j, b3 = x_l - x_k, m = b1 x b2,
//     n = b2 x b3; phi = atan2(|b2| b1.n, m.n) (IUPAC: trans is 180 deg, cis 0). An improper
//     (i, j, k, l) is the same angle: between the planes (i, j, k) and (j, k, l).
// Forces are minus the gradient of the energy; the force on j (and k) makes the sum zero, as the
// GPU does exactly in fixed point. The virial is W = sum_a r_a . f_a with the positions relative
// to j, which is zero up to round-off for every term here (the energy depends on angles only,
// which do not change under a uniform scaling): pressure gets nothing from them, as in LAMMPS.
#pragma once

#include <cmath>

#include "base/hd.h"
#include "base/vec3.h"

namespace pairmd {

// Componentwise product: a term's virial per direction, sum_a (r_a)_d (f_a)_d.
template <typename Real>
PAIRMD_HD Vec3<Real> times(Vec3<Real> a, Vec3<Real> b) {
  return {a.x * b.x, a.y * b.y, a.z * b.z};
}

template <typename Real>
PAIRMD_HD Vec3<Real> cross(Vec3<Real> a, Vec3<Real> b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

// What an angle term gives: the forces on i and k (j gets -(fi + fk)), energy and virial.
template <typename Real>
struct AngleResult {
  Vec3<Real> fi, fk;
  Real energy, virial;
  Vec3<Real> virial_diag;  // the virial per direction (a barostat's anisotropic coupling)
};

// Angle (i, j, k) with d1 = x_i - x_j, d2 = x_k - x_j under minimum image: Eval::eval(c, s, p,
// dV/dc, V) at c = cos theta, s = sin theta (from the cross product: accurate near 180 deg, where
// acos(c) is not in float).
template <typename Eval, typename Real>
PAIRMD_HD AngleResult<Real> angle_forces(Vec3<Real> d1, Vec3<Real> d2, const typename Eval::Params& p) {
  const Real r1sq = dot(d1, d1), r2sq = dot(d2, d2);
  const Real inv12 = Real(1) / std::sqrt(r1sq * r2sq);
  Real c = dot(d1, d2) * inv12;
  c = c > Real(1) ? Real(1) : (c < Real(-1) ? Real(-1) : c);
  const Vec3<Real> x = cross(d1, d2);
  const Real s = std::sqrt(dot(x, x)) * inv12;
  Real dv_dc = 0, energy = 0;
  Eval::eval(c, s, p, dv_dc, energy);
  // f_i = -dV/dc dc/dx_i, dc/dx_i = d2 / (|d1| |d2|) - c d1 / |d1|^2 (and i <-> k).
  const Real a = -dv_dc;
  AngleResult<Real> out;
  out.fi = (a * inv12) * d2 - (a * c / r1sq) * d1;
  out.fk = (a * inv12) * d1 - (a * c / r2sq) * d2;
  out.energy = energy;
  out.virial = dot(d1, out.fi) + dot(d2, out.fk);
  out.virial_diag = times(d1, out.fi) + times(d2, out.fk);
  return out;
}

// What a dihedral (or improper) term gives: the forces on i and l, and t, from which the forces
// on j and k follow: f_j = t - f_i, f_k = -t - f_l (so the four add up to zero exactly, in any
// arithmetic that is exact for sums: the GPU's fixed point).
template <typename Real>
struct DihedralResult {
  Vec3<Real> fi, fl, t;
  Real energy, virial;
  Vec3<Real> virial_diag;  // the virial per direction (a barostat's anisotropic coupling)
};

// Dihedral (i, j, k, l) with b1 = x_j - x_i, b2 = x_k - x_j, b3 = x_l - x_k under minimum image:
// Eval::eval(cos phi, sin phi, p, dV/dphi, V). Collinear bonds (m or n zero) have no plane:
// there cos phi = sin phi = 0 go to the evaluator and the forces are zero, as in LAMMPS.
template <typename Eval, typename Real>
PAIRMD_HD DihedralResult<Real> dihedral_forces(Vec3<Real> b1, Vec3<Real> b2, Vec3<Real> b3,
                                               const typename Eval::Params& p) {
  const Vec3<Real> m = cross(b1, b2), n = cross(b2, b3);
  const Real msq = dot(m, m), nsq = dot(n, n), b2sq = dot(b2, b2);
  const Real rb2 = std::sqrt(b2sq);
  const Real inv_msq = msq > Real(0) ? Real(1) / msq : Real(0);
  const Real inv_nsq = nsq > Real(0) ? Real(1) / nsq : Real(0);
  const Real inv_mn = std::sqrt(inv_msq * inv_nsq);
  Real c = dot(m, n) * inv_mn;
  const Real s = rb2 * dot(b1, n) * inv_mn;
  c = c > Real(1) ? Real(1) : (c < Real(-1) ? Real(-1) : c);
  Real dv_dphi = 0, energy = 0;
  Eval::eval(c, s, p, dv_dphi, energy);
  // dphi/dx_i = -|b2| m / |m|^2, dphi/dx_l = |b2| n / |n|^2 (Blondel & Karplus 1996).
  const Real f = -dv_dphi;
  DihedralResult<Real> out;
  out.fi = (-f * rb2 * inv_msq) * m;
  out.fl = (f * rb2 * inv_nsq) * n;
  const Real inv_b2 = b2sq > Real(0) ? Real(1) / rb2 : Real(0);
  out.t = (f * dot(b1, b2) * inv_msq * inv_b2) * m + (f * dot(b3, b2) * inv_nsq * inv_b2) * n;
  out.energy = energy;
  // Positions relative to j: x_i - x_j = -b1, x_k - x_j = b2, x_l - x_j = b2 + b3.
  const Vec3<Real> fk = Real(-1) * (out.t + out.fl);
  out.virial = -dot(b1, out.fi) + dot(b2, fk) + dot(b2 + b3, out.fl);
  out.virial_diag = times(b2, fk) + times(b2 + b3, out.fl) - times(b1, out.fi);
  return out;
}

}  // namespace pairmd
