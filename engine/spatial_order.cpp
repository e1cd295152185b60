#include "engine/spatial_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace pairmd {
namespace {

// The 21 low bits of v, spread to every third bit.
uint64_t spread_bits(uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

template <typename T>
void permute(std::vector<T>& v, const std::vector<int>& order) {
  if (v.empty()) return;
  std::vector<T> out(order.size());
  for (size_t k = 0; k < order.size(); ++k) out[k] = v[order[k]];
  v.swap(out);
}

}  // namespace

std::vector<int> sort_spatially(SystemState& s, Topology& topo, double cell) {
  const size_t n = s.size();
  Vec3d lo = s.box.lo, len = s.box.L;
  if (!s.box.periodic && n > 0) {  // open boundaries: the particles' bounding box
    Vec3d hi = s.position[0];
    lo = s.position[0];
    for (const Vec3d& p : s.position) {
      lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
      hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
    }
    len = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
  }
  // Cells per direction (at least 1, at most the 2^21 a Morton code holds), and their inverse size.
  const auto cells_along = [&](double l) { return std::max(1.0, std::min(double(1 << 21), std::floor(l / cell))); };
  const Vec3d cells{cells_along(len.x), cells_along(len.y), cells_along(len.z)};
  const Vec3d per_length{cells.x / std::max(len.x, 1e-300), cells.y / std::max(len.y, 1e-300),
                         cells.z / std::max(len.z, 1e-300)};
  const auto cell_of = [](double x, double lo_d, double per, double ncells) {
    return static_cast<uint64_t>(std::min(ncells - 1, std::max(0.0, std::floor((x - lo_d) * per))));
  };
  std::vector<uint64_t> code(n);
  for (size_t i = 0; i < n; ++i) {
    const Vec3d& p = s.position[i];
    code[i] = spread_bits(cell_of(p.x, lo.x, per_length.x, cells.x)) |
              spread_bits(cell_of(p.y, lo.y, per_length.y, cells.y)) << 1 |
              spread_bits(cell_of(p.z, lo.z, per_length.z, cells.z)) << 2;
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return code[a] < code[b]; });

  permute(s.position, order);
  permute(s.velocity, order);
  permute(s.image, order);
  permute(s.type, order);
  permute(s.mass, order);
  permute(s.charge, order);
  std::vector<int> new_index(n);
  for (size_t k = 0; k < n; ++k) new_index[order[k]] = static_cast<int>(k);
  for (Bond& b : topo.bonds) {
    b.i = new_index[b.i];
    b.j = new_index[b.j];
  }
  return order;
}

}  // namespace pairmd
