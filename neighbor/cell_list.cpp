#include "neighbor/cell_list.h"

#include <algorithm>
#include <cmath>

namespace pairmd {

void CellList::build(const std::vector<Vec3d>& x, const Box& box, double min_cell) {
  const int n = static_cast<int>(x.size());
  Vec3d lo = box.lo, len = box.L;
  if (!box.periodic) {
    // Open boundaries: cover the particles' bounding box.
    Vec3d hi = lo;
    if (n > 0) lo = hi = x[0];
    for (const Vec3d& p : x) {
      lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
      hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
    }
    len = {hi.x - lo.x + 1e-9, hi.y - lo.y + 1e-9, hi.z - lo.z + 1e-9};
  }
  const double lens[3] = {len.x, len.y, len.z};
  // Bound the grid to about 2 cells per particle so a few far-flung particles under open
  // boundaries cannot make it huge.
  const double max_cells_per_dim = std::cbrt(2.0 * std::max(n, 1)) + 1;
  for (int d = 0; d < 3; ++d) {
    int k = static_cast<int>(std::floor(lens[d] / min_cell));
    k = std::max(1, std::min(k, static_cast<int>(max_cells_per_dim)));
    dims_[d] = k;
  }
  const double inv[3] = {dims_[0] / lens[0], dims_[1] / lens[1], dims_[2] / lens[2]};

  const int nc = num_cells();
  cell_of_.assign(n, 0);
  cell_start_.assign(nc + 1, 0);
  for (int i = 0; i < n; ++i) {
    const double r[3] = {x[i].x - lo.x, x[i].y - lo.y, x[i].z - lo.z};
    int c[3];
    for (int d = 0; d < 3; ++d) c[d] = std::min(dims_[d] - 1, std::max(0, static_cast<int>(r[d] * inv[d])));
    cell_of_[i] = (c[2] * dims_[1] + c[1]) * dims_[0] + c[0];
    ++cell_start_[cell_of_[i] + 1];
  }
  for (int c = 0; c < nc; ++c) cell_start_[c + 1] += cell_start_[c];
  order_.resize(n);
  std::vector<int> fill(cell_start_.begin(), cell_start_.end() - 1);
  for (int i = 0; i < n; ++i) order_[fill[cell_of_[i]]++] = i;

  if (stencil_dims_ == dims_ && stencil_periodic_ == box.periodic && stencil_box_.x == len.x &&
      stencil_box_.y == len.y && stencil_box_.z == len.z)
    return;
  stencil_dims_ = dims_;
  stencil_periodic_ = box.periodic;
  stencil_box_ = len;
  shifts_exact_ = !box.periodic || (dims_[0] >= 3 && dims_[1] >= 3 && dims_[2] >= 3);
  stencil_.assign(nc, {});
  for (int cz = 0; cz < dims_[2]; ++cz)
    for (int cy = 0; cy < dims_[1]; ++cy)
      for (int cx = 0; cx < dims_[0]; ++cx) {
        std::vector<Neighbour>& s = stencil_[(cz * dims_[1] + cy) * dims_[0] + cx];
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              int c[3] = {cx + dx, cy + dy, cz + dz};
              double shift[3] = {0, 0, 0};
              bool inside = true;
              for (int d = 0; d < 3; ++d) {
                if (c[d] < 0 || c[d] >= dims_[d]) {
                  if (!box.periodic) inside = false;
                  shift[d] = c[d] < 0 ? -lens[d] : lens[d];
                  c[d] = (c[d] + dims_[d]) % dims_[d];
                }
              }
              if (!inside) continue;
              const int cell = (c[2] * dims_[1] + c[1]) * dims_[0] + c[0];
              bool seen = false;  // with fewer than 3 cells along a direction, cells repeat
              for (const Neighbour& other : s) seen = seen || other.cell == cell;
              if (!seen) s.push_back({cell, shifts_exact_ ? Vec3d{shift[0], shift[1], shift[2]} : Vec3d{0, 0, 0}});
            }
        std::sort(s.begin(), s.end(), [](const Neighbour& a, const Neighbour& b) { return a.cell < b.cell; });
      }
}

}  // namespace pairmd
