// Multilevel summation (MSM) of the Coulomb kernel 1/r: the splitting and the interpolation
// stencils, written once for the CPU reference (analysis/msm.cpp) and the GPU kernels
// (kernels/dcs/msm_kernels.cu). Hardy, Stone and Schulten, "Multilevel summation of
// electrostatic potentials using graphics processing units", Parallel Computing 35 (2009)
// 164-177; Hardy's thesis (UIUC 2006) for the interpolants.
//
// Splitting. With a the splitting distance,
//
//   1/r = [1/r - g_a(r)] + g_a(r),       g_a(r) = (1/a) gamma(r/a),
//   gamma(rho) = 1/rho                                   for rho >= 1,
//   gamma(rho) = sum_{k=0..K} binom(-1/2, k) (rho^2 - 1)^k  for rho < 1,
//
// i.e. below a, 1/r is replaced by its Taylor polynomial in rho^2 about rho^2 = 1 (K = 2:
// 15/8 - 5/4 rho^2 + 3/8 rho^4). gamma is C^K at rho = 1 and even in rho, so g_a(r) is a
// polynomial in r^2: no square root is needed below a, and the short-range part 1/r - g_a(r)
// vanishes (with K derivatives) at r = a, so a cutoff at a is exact. The long-range part g_a
// is smooth (bounded by 15/(8a) for K = 2) and is summed on grids. Multilevel: with a_l =
// 2^(l-1) a and grid spacing h_l = 2^(l-1) h,
//
//   g_a = sum_{l=1..L-1} [g_{a_l} - g_{a_(l+1)}] + g_{a_L},
//
// each bracket vanishing beyond 2 a_l (a cutoff of 2a/h grid spacings at every level, since
// g_{2a}(2r) = g_a(r) / 2), the last one summed directly over the (small) top grid.
//
// Interpolation. Charges are spread to the finest grid and the grid potential is read back
// with the tensor product of a 1-D piecewise polynomial Phi of support (-P/2, P/2): P = 4 is
// Hardy's C1 cubic (reproduces quadratics), P = 6 his C1 quintic (reproduces quartics). One
// grid level to the next coarser (spacing doubled) uses the same Phi at half-integer steps:
// the restriction weights w(d) = Phi(d / 2), d = -(P-1)..P-1 (cubic: -1/16, 0, 9/16, 1, 9/16,
// 0, -1/16).
#pragma once

#include <cmath>

#include "base/hd.h"

// Loops of compile-time length: unrolled by nvcc (the host compiler does it on its own).
#if defined(__CUDACC__)
#define PAIRMD_MSM_UNROLL _Pragma("unroll")
#else
#define PAIRMD_MSM_UNROLL
#endif

namespace pairmd::msm {

constexpr int kMaxSplitOrder = 4;

// binom(-1/2, k) = (-1)^k (2k)! / (4^k (k!)^2): 1, -1/2, 3/8, -5/16, 35/128.
PAIRMD_HD double taylor_coefficient(int k) {
  double c = 1.0;
  for (int j = 1; j <= k; ++j) c *= -(2.0 * j - 1.0) / (2.0 * j);
  return c;
}

// g_a(r) below a as a polynomial in r^2: g_a(r) = sum_{j=0..K} coef[j] r^(2j) (expanded from the
// powers of (r^2/a^2 - 1); done in double once, on the host).
inline void softening_polynomial(int K, double a, double* coef) {
  for (int j = 0; j <= K; ++j) coef[j] = 0.0;
  // (rho^2 - 1)^k = sum_j binom(k, j) rho^(2j) (-1)^(k-j)
  for (int k = 0; k <= K; ++k) {
    const double ck = taylor_coefficient(k);
    double binom = 1.0;
    for (int j = 0; j <= k; ++j) {
      if (j > 0) binom = binom * (k - j + 1) / j;
      coef[j] += ck * binom * (((k - j) % 2) ? -1.0 : 1.0);
    }
  }
  // rho^(2j) = r^(2j) / a^(2j); g = gamma / a
  double scale = 1.0 / a;
  for (int j = 0; j <= K; ++j) {
    coef[j] *= scale;
    scale /= a * a;
  }
}

// sum_j coef[j] r2^j by Horner's rule.
template <int K, typename Real>
PAIRMD_HD Real softening_poly(const Real* coef, Real r2) {
  Real g = coef[K];
  PAIRMD_MSM_UNROLL
  for (int j = K - 1; j >= 0; --j) g = g * r2 + coef[j];
  return g;
}

// Runtime-K version (host tables).
PAIRMD_HD double softening_poly(const double* coef, int K, double r2) {
  double g = coef[K];
  for (int j = K - 1; j >= 0; --j) g = g * r2 + coef[j];
  return g;
}

// The smooth part g_a(r) for any r (host tables; double).
PAIRMD_HD double softened(const double* coef, int K, double a, double r) {
  return r >= a ? 1.0 / r : softening_poly(coef, K, r * r);
}

// The short-range part of one charge's term with the distance floor of the potential maps:
// 1/max(r, floor) - g_a(r) for r < a, 0 beyond (requires floor < a). The floor only changes the
// exact term, so short + long range still add up to the floored potential.
template <int K, typename Real>
PAIRMD_HD Real short_range_term(Real r2, Real floor2, Real a2, const Real* coef) {
  if (!(r2 < a2)) return Real(0);
  const Real rf2 = r2 > floor2 ? r2 : floor2;
  return Real(1) / std::sqrt(rf2) - softening_poly<K>(coef, r2);
}

// ---- Interpolation --------------------------------------------------------------------------

// Hardy's C1 piecewise interpolants (P = 4 cubic, P = 6 quintic), Phi(0) = 1, Phi(n) = 0 at the
// other integers, support |t| < P/2.
template <int P, typename Real>
PAIRMD_HD Real phi(Real t) {
  const Real x = t < Real(0) ? -t : t;
  const Real x2 = x * x;
  if (P == 4) {
    if (x <= Real(1)) return (Real(1) - x) * (Real(1) + x - Real(1.5) * x2);
    if (x <= Real(2)) return Real(-0.5) * (x - Real(1)) * (Real(2) - x) * (Real(2) - x);
    return Real(0);
  } else {
    if (x <= Real(1)) return (Real(1) - x2) * (Real(2) - x) * (Real(6) + Real(3) * x - Real(5) * x2) / Real(12);
    if (x <= Real(2))
      return -(x - Real(1)) * (Real(2) - x) * (Real(3) - x) * (Real(4) + Real(9) * x - Real(5) * x2) / Real(24);
    if (x <= Real(3)) return (x - Real(1)) * (x - Real(2)) * (Real(3) - x) * (Real(3) - x) * (Real(4) - x) / Real(24);
    return Real(0);
  }
}

// The P grid points whose Phi covers position u (in grid units): first = floor(u) - (P/2 - 1),
// w[k] = Phi(u - (first + k)).
template <int P, typename Real>
PAIRMD_HD int stencil_weights(Real u, Real* w) {
  const Real f = std::floor(u);
  const int first = static_cast<int>(f) - (P / 2 - 1);
  const Real t = u - f;  // in [0, 1)
  PAIRMD_MSM_UNROLL
  for (int k = 0; k < P; ++k) w[k] = phi<P>(t + Real(P / 2 - 1 - k));
  return first;
}

// Restriction weight from fine index m to coarse index n (coarse spacing 2x the fine):
// Phi((m - 2n) / 2), nonzero for |m - 2n| <= P - 1.
template <int P>
PAIRMD_HD double restriction_weight(int d) {
  return phi<P>(0.5 * static_cast<double>(d));
}

// Grid index i wrapped onto 0..M-1 (any sign, any multiple of M).
PAIRMD_HD int wrap_index(int i, int M) {
  const int r = i % M;
  return r < 0 ? r + M : r;
}

}  // namespace pairmd::msm
