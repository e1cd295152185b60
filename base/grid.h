// A scalar field on a regular orthogonal 3-D lattice (potential maps). Values are stored with
// x fastest: values[(k * ny + j) * nx + i] is the point origin + (i, j, k) * spacing.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace pairmd {

struct Grid3 {
  std::array<int, 3> dims{0, 0, 0};        // points per direction
  std::array<double, 3> origin{0, 0, 0};   // position of point (0, 0, 0)
  std::array<double, 3> spacing{1, 1, 1};  // lattice spacing per direction
  std::vector<double> values;
  std::string unit;  // e.g. "kcal/mol/e"

  size_t size() const { return static_cast<size_t>(dims[0]) * dims[1] * dims[2]; }
};

// The most points a lattice may have (potential maps, .dx files): checked before anything of
// that size is allocated.
constexpr size_t kMaxMapPoints = size_t(1) << 30;

}  // namespace pairmd
