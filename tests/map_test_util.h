// Helpers shared by the potential-map tests (exact sums and multilevel summation, CPU and GPU):
// random charges, lattices, a state holding the charges, errors, and the skip where no GPU is.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "analysis/potential_map.h"
#include "base/box.h"
#include "base/grid.h"
#include "base/system_state.h"
#include "kernels/dcs/dcs_launch.h"

// Skips the test, with the reason, where the potential-map GPU kernels cannot run.
#define REQUIRE_DCS_GPU()                                  \
  do {                                                     \
    std::string why_;                                      \
    if (!::pairmd::dcs::gpu_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

namespace pairmd::maptest {

// n charges uniform in the box [lo, hi], of random sign and magnitude 0.1..1 (never zero).
inline ChargeList random_charges(size_t n, const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                                 unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), mag(0.1, 1.0);
  ChargeList c;
  for (size_t i = 0; i < n; ++i) {
    const double x = lo[0] + u(rng) * (hi[0] - lo[0]), y = lo[1] + u(rng) * (hi[1] - lo[1]),
                 z = lo[2] + u(rng) * (hi[2] - lo[2]);
    c.add(x, y, z, (rng() & 1 ? 1.0 : -1.0) * mag(rng));
  }
  return c;
}

inline Grid3 lattice(std::array<int, 3> dims, std::array<double, 3> origin, std::array<double, 3> spacing) {
  Grid3 g;
  g.dims = dims;
  g.origin = origin;
  g.spacing = spacing;
  g.values.assign(g.size(), 0.0);
  return g;
}

inline Box make_box(std::array<double, 3> lo, std::array<double, 3> L, bool periodic) {
  Box b;
  b.lo = {lo[0], lo[1], lo[2]};
  b.L = {L[0], L[1], L[2]};
  b.periodic = periodic;
  return b;
}

// A state of particles of one type carrying the charges.
inline SystemState charged_state(const ChargeList& c, const Box& box) {
  SystemState s;
  s.box = box;
  for (size_t i = 0; i < c.size(); ++i) {
    s.position.push_back({c.x[i], c.y[i], c.z[i]});
    s.velocity.push_back({0, 0, 0});
    s.image.push_back({0, 0, 0});
    s.type.push_back(0);
    s.mass.push_back(1);
    s.charge.push_back(c.q[i]);
  }
  s.type_names = {"A"};
  return s;
}

// sqrt(sum (got - want)^2 / sum want^2).
template <typename T>
double rel_rms(const std::vector<T>& got, const std::vector<double>& want) {
  double se = 0, sr = 0;
  for (size_t p = 0; p < want.size(); ++p) {
    const double e = static_cast<double>(got[p]) - want[p];
    se += e * e;
    sr += want[p] * want[p];
  }
  return std::sqrt(se / sr);
}

}  // namespace pairmd::maptest
