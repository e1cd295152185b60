// The candidate walk of the GPU pair-list search (neighbor/gpu_pair_list.cu), written for host
// and device so that the CPU tests run the very walk the kernels run (tests/test_cell_runs.cpp
// emulates every search thread and compares its rows with the CPU Verlet list).
//
// The particles are stored in cell order (neighbor/gpu_cell_order.cuh): cell c = (z * ny + y)
// * nx + x holds the particles [start[c], start[c + 1]). The cells of one row (z, y) with
// consecutive x are therefore one contiguous range of particles, and visiting the stencil's
// rows in ascending (z, y) and each row's cells in ascending x visits the candidates in
// ascending particle index: every row of the list comes out sorted, with no sort.
//
// The stencil reaches m cells on each side per direction (m = ceil(r_list / cell width); one
// grid serves terms of several cutoffs). Per direction its cells are up to three ascending
// segments, each with the image shift of its particles: with periodic wrap-around a segment of
// cells at the far end holds particles whose image next to the home cell is x - L (shift -1)
// or x + L (shift +1). Where the stencil covers a whole periodic direction (2m + 1 >= cells),
// the direction is one segment and pairs take the minimum image instead (kAnyImage).
//
// Half lists (each pair once, j > i) walk only the rows (z', y') >= (z, y) and the candidates
// from the home cell's first particle on; the caller keeps j > i. Since index order is cell
// order, a pair (i, j), i < j, has cell(j) >= cell(i) and is met exactly once, from i. Full
// lists walk every row; the caller skips j == i.
//
// A particle's walk is shared by `parts` threads: part p takes the p-th of `parts` consecutive
// chunks of its candidate sequence, so the parts' partners, concatenated, are the sorted row.
// The sequence is the same for every particle of a cell, so the threads of one part of the
// particles of a cell read the same candidates at the same time (one load serves them all).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/hd.h"

namespace pairmd {

// Cells per direction of the search grid, and whether the box is periodic. An ensemble of
// `systems` systems stacks one grid per system along z: system k's cells are the z layers
// [k nz, (k + 1) nz), and a stencil wraps within its system's layers, so no pair ever joins two
// systems.
struct CellGridDims {
  int nx, ny, nz;
  bool periodic;
  int systems = 1;
  PAIRMD_HD int cells() const { return nx * ny * nz * systems; }
};

// How many cells the stencil reaches on each side, per direction (at least 1).
struct StencilReach {
  int mx, my, mz;
};

constexpr int kAnyImage = 2;  // segment shift: the whole periodic direction, take the minimum image

// Cells of one direction visited around cell c (of n) by a stencil of reach m: one or two
// ascending, disjoint segments [lo, hi], each with the image shift of its particles.
struct AxisSegments {
  int lo[2], hi[2], shift[2];
  int count;
  PAIRMD_HD int cells() const { return (hi[0] - lo[0] + 1) + (count > 1 ? hi[1] - lo[1] + 1 : 0); }
  // The k-th cell in ascending order, and its shift.
  PAIRMD_HD void cell(int k, int& c, int& s) const {
    const int n0 = hi[0] - lo[0] + 1;
    const bool first = k < n0 || count == 1;
    c = first ? lo[0] + k : lo[1] + k - n0;
    s = first ? shift[0] : shift[1];
  }
};

PAIRMD_HD AxisSegments axis_segments(int c, int n, int m, bool periodic) {
  AxisSegments s{};
  s.count = 1;
  if (!periodic) {
    s.lo[0] = c - m < 0 ? 0 : c - m;
    s.hi[0] = c + m > n - 1 ? n - 1 : c + m;
    s.shift[0] = 0;
  } else if (2 * m + 1 >= n) {
    s.lo[0] = 0;
    s.hi[0] = n - 1;
    s.shift[0] = kAnyImage;
  } else if (c - m < 0) {  // wraps below: the far end holds the cells below 0
    s.lo[0] = 0;
    s.hi[0] = c + m;
    s.shift[0] = 0;
    s.lo[1] = c - m + n;
    s.hi[1] = n - 1;
    s.shift[1] = -1;
    s.count = 2;
  } else if (c + m > n - 1) {  // wraps above: the low end holds the cells above n - 1
    s.lo[0] = 0;
    s.hi[0] = c + m - n;
    s.shift[0] = 1;
    s.lo[1] = c - m;
    s.hi[1] = n - 1;
    s.shift[1] = 0;
    s.count = 2;
  } else {
    s.lo[0] = c - m;
    s.hi[0] = c + m;
    s.shift[0] = 0;
  }
  return s;
}

// A run of consecutive cells [first, last] of one row and the image shift of its particles.
struct CellRun {
  int first, last;
  int sx, sy, sz;  // -1, 0, +1 box lengths, or kAnyImage
};

// Calls f(run) for every run of the stencil around cell (cx, cy, cz), in ascending cell order;
// `half`: only the rows (z', y') >= (cz, cy). The loops are kept rolled on the GPU so that f's
// code appears once: unrolled, its copies overflow the instruction cache.
// cz is the z layer of the whole stacked grid (system cz / nz).
template <typename F>
PAIRMD_HD void for_each_cell_run(const CellGridDims& g, const StencilReach& r, int cx, int cy, int cz, bool half,
                                 F&& f) {
  const int layer0 = cz / g.nz * g.nz;  // the system's first layer
  cz -= layer0;
  const AxisSegments zs = axis_segments(cz, g.nz, r.mz, g.periodic);
  const AxisSegments ys = axis_segments(cy, g.ny, r.my, g.periodic);
  const AxisSegments xs = axis_segments(cx, g.nx, r.mx, g.periodic);
  const int nz = zs.cells(), ny = ys.cells();
  PAIRMD_NO_UNROLL
  for (int a = 0; a < nz; ++a) {
    int z, sz;
    zs.cell(a, z, sz);
    if (half && z < cz) continue;
    PAIRMD_NO_UNROLL
    for (int b = 0; b < ny; ++b) {
      int y, sy;
      ys.cell(b, y, sy);
      if (half && z == cz && y < cy) continue;
      const int row = ((layer0 + z) * g.ny + y) * g.nx;
      PAIRMD_NO_UNROLL
      for (int c = 0; c < xs.count; ++c) {
        const bool first = c == 0;
        f(CellRun{row + (first ? xs.lo[0] : xs.lo[1]), row + (first ? xs.hi[0] : xs.hi[1]),
                  first ? xs.shift[0] : xs.shift[1], sy, sz});
      }
    }
  }
}

// Calls f(run) for the runs of the stencil around cell (cx, cy, cz) made of cells at or before
// it in index order: where the partners i < j of the particles j of that cell lie (the
// columns of a half list, neighbor/gpu_pair_list.cu).
template <typename F>
PAIRMD_HD void for_each_cell_run_up_to(const CellGridDims& g, const StencilReach& r, int cx, int cy, int cz, F&& f) {
  const int c = (cz * g.ny + cy) * g.nx + cx;
  for_each_cell_run(g, r, cx, cy, cz, false, [&](CellRun run) {
    if (run.first > c) return;
    if (run.last > c) run.last = c;
    f(run);
  });
}

// A range of candidates [begin, end) (particle indices in cell order) and their image shift.
struct CandidateRange {
  int begin, end;
  int sx, sy, sz;
};

// Calls f(range) for the candidates of the particles of cell (cx, cy, cz) that fall in chunk
// `part` of `parts`, in ascending index order. `start(c)` is the first particle of cell c
// (start(cells) = n). Half lists begin at the home cell's first particle (the caller keeps
// j > i); full lists take every candidate, i itself included (the caller skips it).
template <typename Start, typename F>
PAIRMD_HD void for_each_candidate_range(const CellGridDims& g, const StencilReach& r, Start&& start, int cx, int cy,
                                        int cz, bool half, int part, int parts, F&& f) {
  const int first = half ? start((cz * g.ny + cy) * g.nx + cx) : 0;
  int64_t total = 0;
  for_each_cell_run(g, r, cx, cy, cz, half, [&](const CellRun& run) {
    int b = start(run.first);
    const int e = start(run.last + 1);
    if (b < first) b = first;
    if (e > b) total += e - b;
  });
  const int64_t lo = total * part / parts, hi = total * (part + 1) / parts;
  int64_t pos = 0;  // where this run begins in the candidate sequence
  for_each_cell_run(g, r, cx, cy, cz, half, [&](const CellRun& run) {
    int b = start(run.first);
    const int e = start(run.last + 1);
    if (b < first) b = first;
    if (e <= b) return;
    const int64_t len = e - b;
    const int64_t s = lo > pos ? lo : pos, t = hi < pos + len ? hi : pos + len;
    if (s < t) f(CandidateRange{b + static_cast<int>(s - pos), b + static_cast<int>(t - pos), run.sx, run.sy, run.sz});
    pos += len;
  });
}

// Separation of a candidate at xj from the home particle at xi along one direction, for a
// range of shift s: xi - (xj + s L), or the minimum image where s is kAnyImage. The shifted form
// needs no rounding to the box per candidate.
PAIRMD_HD float shifted_separation(float xi, float xj, int s, float len) {
  if (s == kAnyImage) {
    float d = xi - xj;
    const float half = 0.5f * len;
    if (d > half)
      d -= len;
    else if (d < -half)
      d += len;
    return d;
  }
  return (xi - static_cast<float>(s) * len) - xj;
}

// Cell coordinate of x along a direction of n cells starting at lo, inv = cells per length
// (clamped, so positions a rounding outside the grid land in its edge cells).
PAIRMD_HD int cell_coordinate(float x, float lo, float inv, int n) {
#if defined(__CUDA_ARCH__)
  const int c = __float2int_rd((x - lo) * inv);
#else
  const int c = static_cast<int>(std::floor((x - lo) * inv));
#endif
  return c < 0 ? 0 : (c > n - 1 ? n - 1 : c);
}

// Cells along a direction of length `len` for cells at least `width` wide and n particles: at
// most about two cells per particle, so far-flung particles (open boxes) cannot blow the grid
// up. Host side (the build sizes its grid there).
inline int cells_along(double len, double width, int n) {
  const double max_per_dim = std::cbrt(2.0 * std::max(n, 1)) + 1;
  const int k = static_cast<int>(std::floor(len / width));
  return std::max(1, std::min(k, static_cast<int>(max_per_dim)));
}

// Bits that hold the values [0, n): the radix sort by cell sorts only those.
inline int bits_for(int n) {
  int b = 1;
  while (b < 31 && (1 << b) < n) ++b;
  return b;
}

// Cells a stencil must reach on each side so that it covers r_list with cells `cell_width` wide.
inline int reach_for(double r_list, double cell_width) {
  return std::max(1, static_cast<int>(std::ceil(r_list / cell_width)));
}

// The width of the one cell grid that serves pair terms of list radii `radii` at `density`
// particles per unit volume: the radius (of those given) for which the search costs least. A
// search block takes a cell's particles, up to 32 at a time, and walks the (2 m + 1)^3 cells of
// its stencil; so a term costs about cells x passes x (candidates + kBlockOverhead), with
// candidates = (2 m + 1)^3 particles per cell. Cells as wide as the shortest radius are best
// where the radii are alike; where they differ (WCA at 1.52 beside Coulomb at 6.4 in a dilute
// box, 0.35 particles per cell) the long list would walk 1,331 mostly empty cells per block,
// and cells as wide as the long radius cost 30 times less. One radius: that radius.
inline double shared_cell_width(const double* radii, int count, double density) {
  constexpr double kBlockOverhead = 64.0;  // a block pass's fixed cost, in candidates
  double best = count > 0 ? radii[0] : 1.0, best_cost = 0.0;
  for (int c = 0; c < count; ++c) {
    const double w = radii[c], per_cell = density * w * w * w;
    const double passes = std::max(1.0, std::ceil(per_cell / 32.0));
    double cost = 0.0;
    for (int t = 0; t < count; ++t) {
      const double side = 2.0 * reach_for(radii[t], w) + 1.0;
      cost += passes * (side * side * side * per_cell + kBlockOverhead) / (w * w * w);
    }
    if (c == 0 || cost < best_cost || (cost == best_cost && w < best)) {
      best = w;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace pairmd
