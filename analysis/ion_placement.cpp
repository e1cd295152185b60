#include "analysis/ion_placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace pairmd {

namespace {

// Marks the lattice points closer than d to x (and to its periodic images).
void block_around(const Grid3& g, const Box& box, Vec3d x, double d, std::vector<char>& blocked) {
  const double L[3] = {box.L.x, box.L.y, box.L.z};
  const int images = box.periodic ? 1 : 0;
  for (int sz = -images; sz <= images; ++sz)
    for (int sy = -images; sy <= images; ++sy)
      for (int sx = -images; sx <= images; ++sx) {
        const double c[3] = {x.x + sx * L[0], x.y + sy * L[1], x.z + sz * L[2]};
        int lo[3], hi[3];
        bool empty = false;
        for (int a = 0; a < 3; ++a) {
          lo[a] = std::max(0, static_cast<int>(std::floor((c[a] - d - g.origin[a]) / g.spacing[a])));
          hi[a] = std::min(g.dims[a] - 1, static_cast<int>(std::ceil((c[a] + d - g.origin[a]) / g.spacing[a])));
          empty = empty || lo[a] > hi[a];
        }
        if (empty) continue;
        for (int k = lo[2]; k <= hi[2]; ++k)
          for (int j = lo[1]; j <= hi[1]; ++j)
            for (int i = lo[0]; i <= hi[0]; ++i) {
              const double dx = g.origin[0] + i * g.spacing[0] - c[0];
              const double dy = g.origin[1] + j * g.spacing[1] - c[1];
              const double dz = g.origin[2] + k * g.spacing[2] - c[2];
              if (dx * dx + dy * dy + dz * dz < d * d)
                blocked[(static_cast<size_t>(k) * g.dims[1] + j) * g.dims[0] + i] = 1;
            }
      }
}

}  // namespace

std::vector<PlacedIon> place_ions(Grid3& g, const std::vector<Vec3d>& particles, const Box& box,
                                  const IonPlacementSettings& s) {
  if (s.count < 0) throw std::invalid_argument("place ions: the count must be >= 0");
  if (!(s.min_distance >= 0)) throw std::invalid_argument("place ions: the minimum distance must be >= 0");
  if (!(s.floor > 0)) throw std::invalid_argument("place ions: the distance floor must be > 0");
  if (g.values.size() != g.size() || g.size() == 0) throw std::invalid_argument("place ions: the map is empty");
  std::vector<char> blocked(g.size(), 0);
  for (const Vec3d& p : particles) block_around(g, box, p, s.min_distance, blocked);

  std::vector<PlacedIon> ions;
  const int nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  const double sign = s.highest ? -1.0 : 1.0;  // minimise sign * q * V
  for (int n = 0; n < s.count; ++n) {
    size_t best = g.size();
    double best_e = std::numeric_limits<double>::infinity();
    for (size_t p = 0; p < g.size(); ++p)
      if (!blocked[p] && sign * s.charge * g.values[p] < best_e) {
        best_e = sign * s.charge * g.values[p];
        best = p;
      }
    if (best == g.size()) {
      std::ostringstream m;
      m << "place ions: only " << n << " of " << s.count << " ions fit: no lattice point is left at least "
        << s.min_distance << " from every particle and placed ion (smaller --min-distance or a larger region)";
      throw std::runtime_error(m.str());
    }
    const int i = static_cast<int>(best % nx), j = static_cast<int>((best / nx) % ny),
              k = static_cast<int>(best / (static_cast<size_t>(nx) * ny));
    Vec3d x{g.origin[0] + i * g.spacing[0], g.origin[1] + j * g.spacing[1], g.origin[2] + k * g.spacing[2]};
    PlacedIon ion{x, g.values[best], s.charge * g.values[best]};
    // The ion's own potential, open boundaries like the map.
    const double floor2 = s.floor * s.floor, kq = s.k_e * s.charge;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < static_cast<long>(ny) * nz; ++r) {
      const double dy = g.origin[1] + (r % ny) * g.spacing[1] - x.y;
      const double dz = g.origin[2] + (r / ny) * g.spacing[2] - x.z;
      double* row = g.values.data() + static_cast<size_t>(r) * nx;
      for (int a = 0; a < nx; ++a) {
        const double dx = g.origin[0] + a * g.spacing[0] - x.x;
        row[a] += kq / std::sqrt(std::max(dx * dx + dy * dy + dz * dz, floor2));
      }
    }
    block_around(g, box, x, s.min_distance, blocked);
    if (box.periodic) {
      // Lattice points of a padded region may lie several box lengths out.
      double* c[3] = {&ion.position.x, &ion.position.y, &ion.position.z};
      const double lo[3] = {box.lo.x, box.lo.y, box.lo.z}, L[3] = {box.L.x, box.L.y, box.L.z};
      for (int a = 0; a < 3; ++a) {
        *c[a] = lo[a] + std::fmod(*c[a] - lo[a], L[a]);
        if (*c[a] < lo[a]) *c[a] += L[a];
        if (*c[a] >= lo[a] + L[a]) *c[a] = lo[a];
      }
    }
    ions.push_back(ion);
  }
  return ions;
}

}  // namespace pairmd
