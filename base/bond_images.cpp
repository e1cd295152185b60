#include "base/bond_images.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pairmd {

namespace {

// Whole within a tolerance of the round-off of adding images to positions.
bool whole(const SystemState& s, const Bond& b) {
  const Vec3d unwrapped = s.unwrapped(b.j) - s.unwrapped(b.i);
  const Vec3d minimum = s.box.min_image(s.position[b.j] - s.position[b.i]);
  const Vec3d d = unwrapped - minimum;
  const double tol = 1e-9 * std::max({s.box.L.x, s.box.L.y, s.box.L.z, 1.0});
  return std::fabs(d.x) <= tol && std::fabs(d.y) <= tol && std::fabs(d.z) <= tol;
}

// The image of j that makes bond (i, j) whole, given i's image.
Int3 following_image(const SystemState& s, int i, int j) {
  const Vec3d want = s.unwrapped(i) + s.box.min_image(s.position[j] - s.position[i]);
  const Vec3d shift = want - s.position[j];
  return {static_cast<int>(std::lround(shift.x / s.box.L.x)), static_cast<int>(std::lround(shift.y / s.box.L.y)),
          static_cast<int>(std::lround(shift.z / s.box.L.z))};
}

}  // namespace

double longest_unwrapped_bond(const SystemState& s, const Topology& t) {
  double longest = 0;
  for (const Bond& b : t.bonds) {
    const Vec3d d = s.unwrapped(b.j) - s.unwrapped(b.i);
    longest = std::max(longest, std::sqrt(dot(d, d)));
  }
  return longest;
}

BondImageReport repair_bond_images(SystemState& s, const Topology& t) {
  BondImageReport r;
  if (!s.box.periodic || t.bonds.empty()) return r;
  const size_t n = s.size();
  for (const Bond& b : t.bonds)
    if (!whole(s, b)) ++r.broken;
  if (r.broken == 0) return r;
  std::vector<std::vector<int>> bonded(n);
  for (const Bond& b : t.bonds) {
    bonded[b.i].push_back(b.j);
    bonded[b.j].push_back(b.i);
  }
  // Breadth-first from the lowest index of each molecule: the tree's bonds are made whole.
  std::vector<char> seen(n, 0);
  std::vector<int> queue;
  for (size_t root = 0; root < n; ++root) {
    if (seen[root] || bonded[root].empty()) continue;
    seen[root] = 1;
    queue.assign(1, static_cast<int>(root));
    for (size_t q = 0; q < queue.size(); ++q) {
      const int i = queue[q];
      for (int j : bonded[i]) {
        if (seen[j]) continue;
        seen[j] = 1;
        const Int3 im = following_image(s, i, j);
        if (im.x != s.image[j].x || im.y != s.image[j].y || im.z != s.image[j].z) ++r.changed;
        s.image[j] = im;
        queue.push_back(j);
      }
    }
  }
  for (const Bond& b : t.bonds)
    if (!whole(s, b)) ++r.loops;
  return r;
}

}  // namespace pairmd
