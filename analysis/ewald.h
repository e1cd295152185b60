// The periodic Coulomb potential of an orthorhombic box by Ewald summation, in double: for the
// top level of periodic multilevel summation (analysis/msm.cpp) and for the sampled accuracy
// check of periodic maps. The convention is that of Ewald summation without a surface term:
// the potential of a unit charge, all its periodic images and a uniform neutralising background
// of charge -1 per box,
//
//   phi_E(d) = sum_n erfc(b |d + nL|) / |d + nL|
//            + (4 pi / V) sum_{k != 0} exp(-k^2 / 4b^2) / k^2 cos(k.d)  -  pi / (b^2 V),
//
// (k = 2 pi (m_x / L_x, m_y / L_y, m_z / L_z)), which does not depend on b and has zero mean
// over the box. For charges q_i with sum Q != 0 the map sum_i q_i phi_E(p - r_i) is the
// potential of the charges, their images and a uniform background of total charge -Q per box.
#pragma once

#include <array>
#include <vector>

#include "analysis/potential_map.h"

namespace pairmd {

class EwaldKernel {
 public:
  // Converged to ~1e-14 of 1/L.
  explicit EwaldKernel(const std::array<double, 3>& box);

  // phi_E(d) - 1/|d| (the n = 0 term of 1/r taken out): finite everywhere, smooth near d = 0,
  // where it is the Ewald self term.
  double regular(double dx, double dy, double dz) const;
  // phi_E(d), d not a lattice vector.
  double potential(double dx, double dy, double dz) const;

 private:
  std::array<double, 3> L_;
  double beta_ = 0, background_ = 0;
  std::vector<std::array<double, 3>> images_;    // n L within the real-space cutoff of any d in the box
  std::vector<std::array<double, 4>> kvectors_;  // half space: kx, ky, kz, 2 * (4 pi / V) exp(-k^2/4b^2) / k^2
};

// V_i = sum_j q_j phi_F(p_i - r_j), where phi_F is phi_E with any image closer than `floor`
// counted as if at `floor` (as the maps do), at the given points (absolute coordinates; the
// charges may be anywhere, they are taken modulo the box). Real space by minimum image, the
// reciprocal part through structure factors, OpenMP; relative accuracy ~1e-7 of the terms.
// Needs floor < min(L) / 2.
std::vector<double> ewald_potential_at(const ChargeList& charges, const std::array<double, 3>& box, double floor,
                                       const std::vector<std::array<double, 3>>& points);

}  // namespace pairmd
