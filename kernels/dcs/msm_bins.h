// Cutoff binning of the multilevel summation's short-range part, shared by the CPU reference
// (analysis/msm.cpp) and the GPU kernel (kernels/dcs/msm_kernels.cu); plain C++ with PAIRMD_HD.
//
// The atoms are binned in the cells of the finest MSM grid (cell c spans [c h, (c+1) h) from the
// grid origin), stored bin after bin with x fastest, so that the bins cx0..cx1 of one (cy, cz)
// row are one contiguous range of atoms. A tile of lattice points (bounding box [bmin, bmax],
// relative to the grid origin) needs the atoms within a of it: the rows (cy, cz) whose cells
// come within a of the box in y and z, each with the x range that the remaining distance
// sqrt(a^2 - dy^2 - dz^2) reaches. In a periodic box the cell indices run on past the box
// (unwrapped) and each row is cut where x wraps, so one row may give several segments, each
// with the shift (a multiple of the box) that puts its atoms' image next to the tile; the
// number of x periods is part of the row index.
#pragma once

#include <cmath>

#include "base/hd.h"

namespace pairmd::msm {

template <typename Real>
struct BinGrid {
  int nb[3];     // bins per direction
  int lo[3];     // open: cell index of bin 0 (cells lo .. lo + nb - 1); periodic: 0
  Real h[3];     // cell size
  Real L[3];     // periodic: box lengths (= nb * h)
  int periodic;  // 1: cells wrap with period nb
};

PAIRMD_HD int floor_div(int a, int b) {
  const int q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The rows a tile visits: cells c0..c1 per direction (unwrapped), `periods` x periods per row.
struct TileRows {
  int c0[3], c1[3];
  int periods;
  PAIRMD_HD int count() const {
    const int ny = c1[1] - c0[1] + 1, nz = c1[2] - c0[2] + 1;
    return (ny > 0 && nz > 0 && c1[0] >= c0[0]) ? ny * nz * periods : 0;
  }
};

template <typename Real>
PAIRMD_HD TileRows tile_rows(const BinGrid<Real>& g, const Real* bmin, const Real* bmax, Real a) {
  TileRows t;
  for (int d = 0; d < 3; ++d) {
    t.c0[d] = static_cast<int>(std::floor((bmin[d] - a) / g.h[d]));
    t.c1[d] = static_cast<int>(std::floor((bmax[d] + a) / g.h[d]));
    if (!g.periodic) {
      if (t.c0[d] < g.lo[d]) t.c0[d] = g.lo[d];
      if (t.c1[d] > g.lo[d] + g.nb[d] - 1) t.c1[d] = g.lo[d] + g.nb[d] - 1;
    }
  }
  t.periods = g.periodic ? floor_div(t.c1[0], g.nb[0]) - floor_div(t.c0[0], g.nb[0]) + 1 : 1;
  return t;
}

// One segment of atoms: bins first..last (linear indices, one x row) and the shift to add to
// their positions. Returns false when row `row` of the tile comes no closer than a.
template <typename Real>
struct RowSegment {
  int first, last;
  Real shift[3];
};

template <typename Real>
PAIRMD_HD Real gap(Real lo, Real hi, Real cell_lo, Real cell_hi) {
  // Distance between the intervals [lo, hi] and [cell_lo, cell_hi] (0 if they overlap).
  const Real d1 = cell_lo - hi, d2 = lo - cell_hi;
  const Real d = d1 > d2 ? d1 : d2;
  return d > Real(0) ? d : Real(0);
}

template <typename Real>
PAIRMD_HD bool tile_row(const BinGrid<Real>& g, const TileRows& t, const Real* bmin, const Real* bmax, Real a, int row,
                        RowSegment<Real>& seg) {
  const int ny = t.c1[1] - t.c0[1] + 1, nz = t.c1[2] - t.c0[2] + 1;
  const int cy = t.c0[1] + row % ny, cz = t.c0[2] + (row / ny) % nz, period = row / (ny * nz);
  const Real dy = gap(bmin[1], bmax[1], cy * g.h[1], (cy + 1) * g.h[1]);
  const Real dz = gap(bmin[2], bmax[2], cz * g.h[2], (cz + 1) * g.h[2]);
  const Real left = a * a - dy * dy - dz * dz;
  if (!(left > Real(0))) return false;
  const Real rx = std::sqrt(left);
  int cx0 = static_cast<int>(std::floor((bmin[0] - rx) / g.h[0]));
  int cx1 = static_cast<int>(std::floor((bmax[0] + rx) / g.h[0]));
  int by = cy, bz = cz;
  if (g.periodic) {
    const int px = floor_div(t.c0[0], g.nb[0]) + period;
    if (cx0 < px * g.nb[0]) cx0 = px * g.nb[0];
    if (cx1 > px * g.nb[0] + g.nb[0] - 1) cx1 = px * g.nb[0] + g.nb[0] - 1;
    if (cx0 > cx1) return false;
    const int py = floor_div(cy, g.nb[1]), pz = floor_div(cz, g.nb[2]);
    cx0 -= px * g.nb[0], cx1 -= px * g.nb[0];
    by = cy - py * g.nb[1], bz = cz - pz * g.nb[2];
    seg.shift[0] = px * g.L[0], seg.shift[1] = py * g.L[1], seg.shift[2] = pz * g.L[2];
  } else {
    if (cx0 < g.lo[0]) cx0 = g.lo[0];
    if (cx1 > g.lo[0] + g.nb[0] - 1) cx1 = g.lo[0] + g.nb[0] - 1;
    if (cx0 > cx1) return false;
    cx0 -= g.lo[0], cx1 -= g.lo[0], by -= g.lo[1], bz -= g.lo[2];
    seg.shift[0] = seg.shift[1] = seg.shift[2] = Real(0);
  }
  const int base = g.nb[0] * (by + g.nb[1] * bz);
  seg.first = base + cx0;
  seg.last = base + cx1;
  return true;
}

// The bin of an atom at x (relative to the grid origin; periodic: wrapped into [0, L)), clamped
// so that rounding at an edge cannot leave the bins.
template <typename Real>
PAIRMD_HD int bin_of(const BinGrid<Real>& g, const Real* x) {
  int b[3];
  for (int d = 0; d < 3; ++d) {
    int c = static_cast<int>(std::floor(x[d] / g.h[d])) - g.lo[d];
    b[d] = c < 0 ? 0 : (c >= g.nb[d] ? g.nb[d] - 1 : c);
  }
  return b[0] + g.nb[0] * (b[1] + g.nb[1] * b[2]);
}

}  // namespace pairmd::msm
