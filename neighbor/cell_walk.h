// The candidate walk of the GPU pair-list search (neighbor/gpu_pair_list.cu), written for host
// and device so that the CPU tests run the very walk the kernels run
// (tests/test_cell_walk.cpp emulates the search threads and compares with the CPU list).
//
// A search thread owns one particle (index h in cell order, home cell c) and one part of the
// stencil: stencil cells part, part + kSplit, ... Two stencils:
//   Full       the 27 cells around c. Half lists keep j > i; full lists keep every j != i.
//   HalfShell  c itself (candidates after h in cell order only) and the 13 cells "after" it,
//              so every pair of particles is met exactly once, from one side; half lists only.
//              A periodic direction of exactly 2 cells breaks it: there the +1 neighbour is
//              the -1 neighbour, neighbour_cell() walks it once, as the -1 shift, which the
//              half shell leaves out, so pairs across that direction would be lost.
//              half_shell_exact() says whether the grid is safe; callers fall back to Full
//              where it is not.
// Half-shell pairs come out as (i, j) with either order of indices; the list keys them by
// (min, max) (half_list_key, neighbor/pair_keys.h), and the sort that follows makes the list
// the same as the full stencil's.
#pragma once

#include <algorithm>
#include <cmath>

#include "engine/box.h"
#include "engine/hd.h"
#include "engine/vec3.h"

#if defined(__CUDA_ARCH__)
#define PAIRMD_UNROLL_4 _Pragma("unroll 4")
#else
#define PAIRMD_UNROLL_4
#endif

namespace pairmd {

enum class CellStencil { Full, HalfShell };

struct CellDims {
  int x, y, z;
  bool periodic;
};

// A candidate of the walk: its position and particle index.
struct WalkCandidate {
  Vec3<float> x;
  int index;
};

// Stencil entry s (0 .. cells - 1) as a shift 0..26 around the home cell, where shift
// (oz + 1) * 9 + (oy + 1) * 3 + (ox + 1) is the offset (ox, oy, oz) and 13 is the cell itself.
// The half shell is 13 (itself) and 14..26: the offsets after (0, 0, 0) in (z, y, x) order,
// whose negatives are 0..12.
template <CellStencil S>
struct StencilShape;
template <>
struct StencilShape<CellStencil::Full> {
  static constexpr int kCells = 27;
  PAIRMD_HD static int shift(int s) { return s; }
};
template <>
struct StencilShape<CellStencil::HalfShell> {
  static constexpr int kCells = 14;
  PAIRMD_HD static int shift(int s) { return 13 + s; }
};
constexpr int kSelfShift = 13;

// Cells along a direction of length `len` for n particles: cells at least `rlist` wide, and at
// most about two per particle, so far-flung particles (open boxes) cannot blow the grid up.
// Host side (the build sizes its grid there).
inline int cells_along(float len, float rlist, int n) {
  const double max_per_dim = std::cbrt(2.0 * std::max(n, 1)) + 1;
  const int k = static_cast<int>(std::floor(len / rlist));
  return std::max(1, std::min(k, static_cast<int>(max_per_dim)));
}

// No periodic direction has exactly 2 cells (see above). With 1 cell the direction has no
// neighbours to lose, and with 3 or more each neighbour is either before or after.
PAIRMD_HD bool half_shell_exact(const CellDims& g) { return !g.periodic || (g.x != 2 && g.y != 2 && g.z != 2); }

// Neighbour `shift` (0..26) of cell c. False when that cell does not exist (open boundary) or
// repeats another one (a periodic direction of 1 or 2 cells, where the -1 and +1 shifts meet).
PAIRMD_HD bool neighbour_cell(const CellDims& g, int c, int shift, int& cell) {
  int q[3] = {c % g.x, (c / g.x) % g.y, c / (g.x * g.y)};
  const int o[3] = {shift % 3 - 1, (shift / 3) % 3 - 1, shift / 9 - 1};
  const int n[3] = {g.x, g.y, g.z};
  for (int d = 0; d < 3; ++d) {
    if (g.periodic) {
      if (n[d] == 1 && o[d] != 0) return false;
      if (n[d] == 2 && o[d] == 1) return false;
      q[d] = (q[d] + o[d] + n[d]) % n[d];
    } else {
      q[d] += o[d];
      if (q[d] < 0 || q[d] >= n[d]) return false;
    }
  }
  cell = (q[2] * g.y + q[1]) * g.x + q[0];
  return true;
}

// Calls f(j) for every partner j of particle i (cell-order index h, home cell c, position xi)
// within rlist in stencil part `part`, bonded exclusions (row ex of `ex_width` tags) left out.
// Grid provides start(cell), end(cell) (the cell's range in cell order), candidate(k) and
// tag(k). Lanes with the same home cell and part walk the same candidates, so on the GPU
// their loads are broadcasts (except in the half shell's own cell, where each lane starts
// after its own particle). Inactive threads (active = false) walk along and take nothing.
template <bool kFull, CellStencil kStencil, int kSplit, typename Grid, typename F>
PAIRMD_HD void for_each_partner(const Grid& g, const CellDims& dims, const BoxGeometry<float>& box, int h, int c,
                                int part, Vec3<float> xi, int i, const int* ex, int ex_width, bool active,
                                float rlist_sq, F&& f) {
  static_assert(!(kFull && kStencil == CellStencil::HalfShell), "a full list needs the full stencil");
  using Shape = StencilShape<kStencil>;
  for (int s = part; s < Shape::kCells; s += kSplit) {
    const int shift = Shape::shift(s);
    int cell;
    if (!neighbour_cell(dims, c, shift, cell)) continue;
    // Half shell, own cell: only the candidates after this particle, so each pair once.
    int k = (kStencil == CellStencil::HalfShell && shift == kSelfShift) ? h + 1 : g.start(cell);
    const int e = g.end(cell);
    PAIRMD_UNROLL_4
    for (; k < e; ++k) {
      const WalkCandidate cj = g.candidate(k);
      const Vec3<float> d = box.min_image(xi - cj.x);
      const bool side = kStencil == CellStencil::HalfShell || (kFull ? cj.index != i : cj.index > i);
      bool take = active && side && dot(d, d) < rlist_sq;
      if (take && ex_width > 0) {
        const int tag_j = static_cast<int>(g.tag(k));
        for (int q = 0; q < ex_width; ++q) take &= ex[q] != tag_j;
      }
      if (take) f(cj.index);
    }
  }
}

}  // namespace pairmd
