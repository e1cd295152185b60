// The GPU pair-list search's walk (neighbor/cell_runs.h), run on the CPU: particles are put in
// cell order the way neighbor/gpu_cell_order.cu does it, then every search thread (particle,
// part) of the kernel is emulated in turn and its partners concatenated as the kernel's warp
// claim concatenates them. Each row must come out sorted, hold each pair once (half lists) and
// equal the CPU reference list, for periodic and open boxes, grids of 1, 2, 3 and many cells
// per direction, non-cubic boxes, stencils that reach several cells (terms of several
// cutoffs on one grid) and bonded exclusions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "base/box.h"
#include "neighbor/cell_runs.h"
#include "neighbor/verlet_list.h"

namespace pairmd {
namespace {

constexpr int kSplit = 4;  // as the kernel (kSearchSplit)

// Particles in cell order, as the GPU keeps them after a list build.
struct CellOrdered {
  CellGridDims dims{1, 1, 1, true};
  double width[3] = {1, 1, 1};
  std::vector<int> order;       // order[k]: the user's index of the k-th particle
  std::vector<int> cell_of;     // ascending
  std::vector<int> cell_start;  // cells + 1 entries
  std::vector<Vec3<float>> x;   // in cell order
};

CellOrdered order_cells(const std::vector<Vec3<float>>& x, const BoxGeometry<float>& box, double width) {
  const int n = static_cast<int>(x.size());
  double lo[3] = {box.lo.x, box.lo.y, box.lo.z}, len[3] = {box.L.x, box.L.y, box.L.z};
  if (!box.periodic) {
    for (int d = 0; d < 3; ++d) {
      float mn = 1e30f, mx = -1e30f;
      for (const auto& p : x) {
        const float v = d == 0 ? p.x : d == 1 ? p.y : p.z;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      lo[d] = mn;
      len[d] = static_cast<double>(mx) - mn + 1e-4;
    }
  }
  CellOrdered g;
  const int nd[3] = {cells_along(len[0], width, n), cells_along(len[1], width, n), cells_along(len[2], width, n)};
  g.dims = {nd[0], nd[1], nd[2], box.periodic};
  for (int d = 0; d < 3; ++d) g.width[d] = len[d] / nd[d];
  std::vector<int> cell(n);
  for (int i = 0; i < n; ++i) {
    const float v[3] = {x[i].x, x[i].y, x[i].z};
    int q[3];
    for (int d = 0; d < 3; ++d)
      q[d] = cell_coordinate(v[d], static_cast<float>(lo[d]), static_cast<float>(nd[d] / len[d]), nd[d]);
    cell[i] = (q[2] * nd[1] + q[1]) * nd[0] + q[0];
  }
  g.order.resize(n);
  std::iota(g.order.begin(), g.order.end(), 0);
  std::stable_sort(g.order.begin(), g.order.end(), [&](int a, int b) { return cell[a] < cell[b]; });
  const int cells = g.dims.cells();
  for (int k = 0; k < n; ++k) {
    g.cell_of.push_back(cell[g.order[k]]);
    g.x.push_back(x[g.order[k]]);
  }
  for (int c = 0; c <= cells; ++c)
    g.cell_start.push_back(
        static_cast<int>(std::lower_bound(g.cell_of.begin(), g.cell_of.end(), c) - g.cell_of.begin()));
  return g;
}

// The rows the kernel writes (cell-order indices), thread by thread. `excl` is the fixed-width
// table by the user's index (-1 padded).
std::vector<std::vector<int>> search(const CellOrdered& g, const BoxGeometry<float>& box, float cutoff, float skin,
                                     bool full, const std::vector<int>& excl, int width) {
  const int n = static_cast<int>(g.x.size());
  const double rlist = static_cast<double>(cutoff) + skin;
  const float rl = cutoff + skin, rlist_sq = rl * rl;
  const StencilReach reach{reach_for(rlist, g.width[0]), reach_for(rlist, g.width[1]), reach_for(rlist, g.width[2])};
  std::vector<std::vector<int>> rows(n);
  for (int i = 0; i < n; ++i) {
    const int c = g.cell_of[i];
    const int cx = c % g.dims.nx, cy = (c / g.dims.nx) % g.dims.ny, cz = c / (g.dims.nx * g.dims.ny);
    const int* ex = width ? excl.data() + static_cast<size_t>(g.order[i]) * width : nullptr;
    const Vec3<float> xi = g.x[i];
    for (int part = 0; part < kSplit; ++part) {
      for_each_candidate_range(
          g.dims, reach, [&](int cell) { return g.cell_start[cell]; }, cx, cy, cz, !full, part, kSplit,
          [&](const CandidateRange& r) {
            for (int k = r.begin; k < r.end; ++k) {
              const Vec3<float> q = g.x[k];
              const float dx = shifted_separation(xi.x, q.x, r.sx, box.L.x);
              const float dy = shifted_separation(xi.y, q.y, r.sy, box.L.y);
              const float dz = shifted_separation(xi.z, q.z, r.sz, box.L.z);
              bool take = dx * dx + dy * dy + dz * dz < rlist_sq;
              take = take && (full ? k != i : k > i);
              for (int e = 0; ex && e < width; ++e) take = take && ex[e] != g.order[k];
              if (take) rows[i].push_back(k);
            }
          });
    }
  }
  return rows;
}

struct System {
  std::vector<Vec3<float>> x;
  BoxGeometry<float> box;
  std::vector<std::vector<int>> excl;  // by index
  std::vector<int> table;              // fixed width, -1 padded
  int width = 0;
};

// n particles uniformly in a box of edges (Lx, Ly, Lz); chain-like exclusions where asked.
System random_system(int n, float Lx, float Ly, float Lz, bool periodic, bool exclusions, uint64_t seed) {
  System s;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> ux(0.f, Lx), uy(0.f, Ly), uz(0.f, Lz);
  s.box = {{0.f, 0.f, 0.f}, {Lx, Ly, Lz}, periodic};
  for (int i = 0; i < n; ++i) s.x.push_back({ux(rng), uy(rng), uz(rng)});
  s.excl.resize(n);
  if (exclusions) {
    for (int i = 0; i + 1 < n; ++i) {
      s.excl[i].push_back(i + 1);
      s.excl[i + 1].push_back(i);
    }
    s.width = 2;
  }
  s.table.assign(static_cast<size_t>(n) * std::max(s.width, 1), -1);
  for (int i = 0; i < n && s.width; ++i)
    for (size_t k = 0; k < s.excl[i].size(); ++k) s.table[static_cast<size_t>(i) * s.width + k] = s.excl[i][k];
  return s;
}

using PairSet = std::set<std::pair<int, int>>;

// CPU reference pairs (user indices, i < j) within cutoff + skin.
PairSet reference_pairs(const System& s, double cutoff, double skin) {
  std::vector<Vec3d> xd;
  for (const auto& p : s.x) xd.push_back({p.x, p.y, p.z});
  Box box;
  box.lo = {0, 0, 0};
  box.L = {s.box.L.x, s.box.L.y, s.box.L.z};
  box.periodic = s.box.periodic;
  VerletList list(cutoff, skin);
  list.build(xd, box, s.width ? s.excl : std::vector<std::vector<int>>{});
  PairSet out;
  for (int i = 0; i + 1 < static_cast<int>(list.offsets().size()); ++i)
    for (int k = list.offsets()[i]; k < list.offsets()[i + 1]; ++k) out.insert({i, list.neighbors()[k]});
  return out;
}

struct Case {
  int n;
  float Lx, Ly, Lz;
  bool periodic;
  bool exclusions;
  float cutoff = 2.5f, skin = 0.3f;
  double width = 0;  // grid cells; 0: cutoff + skin (one term), less: a grid shared with a shorter term
};

void check(const Case& c) {
  const System s = random_system(c.n, c.Lx, c.Ly, c.Lz, c.periodic, c.exclusions, 1000 + c.n);
  const double width = c.width > 0 ? c.width : static_cast<double>(c.cutoff) + c.skin;
  const CellOrdered g = order_cells(s.x, s.box, width);
  // Pairs within a float rounding of the list radius may legitimately differ.
  const PairSet want = reference_pairs(s, c.cutoff, c.skin - 1e-4),
                allowed = reference_pairs(s, c.cutoff, c.skin + 1e-4);
  for (const bool full : {false, true}) {
    SCOPED_TRACE(full ? "full list" : "half list");
    const auto rows = search(g, s.box, c.cutoff, c.skin, full, s.table, s.width);
    PairSet got;
    size_t entries = 0;
    for (int i = 0; i < c.n; ++i) {
      const auto& r = rows[i];
      for (size_t k = 0; k < r.size(); ++k) {
        if (k > 0) ASSERT_LT(r[k - 1], r[k]) << "row " << i << " not sorted (or a partner twice)";
        if (!full) ASSERT_GT(r[k], i) << "half list: partner below i";
        const int a = g.order[i], b = g.order[r[k]];
        got.insert({std::min(a, b), std::max(a, b)});
        ++entries;
      }
    }
    // Each pair once in a half list, twice in a full one (and symmetric).
    EXPECT_EQ(entries, (full ? 2 : 1) * got.size());
    if (full)
      for (int i = 0; i < c.n; ++i)
        for (int j : rows[i]) EXPECT_TRUE(std::binary_search(rows[j].begin(), rows[j].end(), i)) << i << " " << j;
    int missing = 0, extra = 0;
    for (const auto& p : want)
      if (!got.count(p)) ++missing;
    for (const auto& p : got)
      if (!allowed.count(p)) ++extra;
    EXPECT_EQ(missing, 0) << "pairs of the CPU list not found";
    EXPECT_EQ(extra, 0) << "pairs found that the CPU list does not have";
    EXPECT_GT(want.size(), 0u) << "a case meant to have pairs has none";
  }
}

// The columns of a half list, as neighbor/gpu_pair_list.cu builds them: for every cell C, the
// rows of the particles in the stencil cells at or before C hold every pair (i, j) with j in C,
// each as one stretch of the sorted row.
void check_columns(const Case& c) {
  const System s = random_system(c.n, c.Lx, c.Ly, c.Lz, c.periodic, c.exclusions, 2000 + c.n);
  const double width = c.width > 0 ? c.width : static_cast<double>(c.cutoff) + c.skin;
  const CellOrdered g = order_cells(s.x, s.box, width);
  const auto rows = search(g, s.box, c.cutoff, c.skin, false, s.table, s.width);
  const double rlist = static_cast<double>(c.cutoff) + c.skin;
  const StencilReach reach{reach_for(rlist, g.width[0]), reach_for(rlist, g.width[1]), reach_for(rlist, g.width[2])};
  std::vector<int> found(c.n, 0), expected(c.n, 0);
  for (int i = 0; i < c.n; ++i)
    for (int j : rows[i]) ++expected[j];
  for (int cell = 0; cell < g.dims.cells(); ++cell) {
    const int a = g.cell_start[cell], b = g.cell_start[cell + 1];
    const int cx = cell % g.dims.nx, cy = (cell / g.dims.nx) % g.dims.ny, cz = cell / (g.dims.nx * g.dims.ny);
    std::set<int> cells_seen;
    for_each_cell_run_up_to(g.dims, reach, cx, cy, cz, [&](const CellRun& run) {
      ASSERT_LE(run.last, cell);
      for (int q = run.first; q <= run.last; ++q) ASSERT_TRUE(cells_seen.insert(q).second) << "cell visited twice";
      for (int i = g.cell_start[run.first]; i < g.cell_start[run.last + 1]; ++i) {
        const auto& r = rows[i];
        for (auto it = std::lower_bound(r.begin(), r.end(), a); it != r.end() && *it < b; ++it) ++found[*it];
      }
    });
  }
  EXPECT_EQ(found, expected) << "a column misses pairs or has some twice";
}

TEST(CellRuns, ColumnsAreFoundInTheRowsOfEarlierCells) {
  for (const Case& c : {Case{2000, 14.f, 14.f, 14.f, true, false}, Case{800, 6.f, 6.f, 6.f, true, true},
                        Case{1200, 8.5f, 8.5f, 8.5f, true, false}, Case{900, 6.f, 15.f, 15.f, true, true},
                        Case{1500, 20.f, 11.f, 16.f, false, true}, Case{20, 6.f, 6.f, 6.f, true, false},
                        Case{2000, 14.f, 14.f, 14.f, true, false, 2.5f, 0.3f, 1.0}}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " box " << c.Lx << "x" << c.Ly << "x" << c.Lz
                                      << (c.periodic ? " periodic" : " open") << " grid width " << c.width);
    check_columns(c);
  }
}

TEST(CellRuns, AxisSegmentsCoverTheStencilOnceInAscendingOrder) {
  for (const bool periodic : {true, false})
    for (int n = 1; n <= 9; ++n)
      for (int m = 1; m <= 4; ++m)
        for (int c = 0; c < n; ++c) {
          const AxisSegments s = axis_segments(c, n, m, periodic);
          std::vector<int> cells;
          for (int k = 0; k < s.count; ++k) {
            ASSERT_LE(s.lo[k], s.hi[k]);
            for (int q = s.lo[k]; q <= s.hi[k]; ++q) {
              if (!cells.empty()) ASSERT_LT(cells.back(), q) << "not ascending";
              cells.push_back(q);
              if (s.shift[k] == kAnyImage) continue;
              // The cell sits at offset q + shift * n - c from c, within the stencil's reach.
              const int offset = q + s.shift[k] * n - c;
              EXPECT_LE(std::abs(offset), m) << "n " << n << " m " << m << " c " << c << " q " << q;
            }
          }
          // Exactly the distinct cells within reach m of c.
          std::set<int> expect;
          for (int o = -m; o <= m; ++o) {
            const int q = c + o;
            if (periodic)
              expect.insert(((q % n) + n) % n);
            else if (q >= 0 && q < n)
              expect.insert(q);
          }
          EXPECT_EQ(std::set<int>(cells.begin(), cells.end()), expect) << "n " << n << " m " << m << " c " << c;
        }
}

TEST(CellRuns, RowsEqualTheCpuListSortedAndOnce) {
  for (const Case& c : {Case{2000, 14.f, 14.f, 14.f, true, false},   // 5 cells per direction
                        Case{800, 6.f, 6.f, 6.f, true, true},        // 2 cells: whole directions, min image
                        Case{1200, 8.5f, 8.5f, 8.5f, true, false},   // 3 cells: every neighbour wraps
                        Case{300, 2.9f, 9.f, 9.f, true, false},      // 1 x 3 x 3 cells, non-cubic
                        Case{900, 6.f, 15.f, 15.f, true, true},      // 2 x 5 x 5 cells
                        Case{1500, 20.f, 20.f, 20.f, false, false},  // open box
                        Case{1500, 20.f, 11.f, 16.f, false, true},   // open, non-cubic
                        Case{20, 6.f, 6.f, 6.f, true, false},        // fewer particles than a warp
                        Case{2000, 14.f, 14.f, 14.f, true, false, 2.5f, 0.3f, 1.0},      // reach 3 per direction
                        Case{1500, 13.f, 10.f, 16.f, true, true, 2.5f, 0.3f, 1.4},       // reach 2-3, exclusions
                        Case{1000, 18.f, 18.f, 18.f, false, false, 2.5f, 0.3f, 1.2}}) {  // open, reach 3
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " box " << c.Lx << "x" << c.Ly << "x" << c.Lz
                                      << (c.periodic ? " periodic" : " open") << (c.exclusions ? " exclusions" : "")
                                      << " grid width " << c.width);
    check(c);
  }
}

// The walk must visit a cell's candidates in ascending order across the parts: the parts'
// chunks tile the sequence without gaps or overlaps, whatever the number of parts.
TEST(CellRuns, PartsTileTheCandidateSequence) {
  const System s = random_system(500, 9.f, 9.f, 9.f, true, false, 5);
  const CellOrdered g = order_cells(s.x, s.box, 2.8);
  const StencilReach reach{1, 1, 1};
  for (const bool half : {true, false})
    for (int i = 0; i < 500; i += 7) {
      const int c = g.cell_of[i];
      const int cx = c % g.dims.nx, cy = (c / g.dims.nx) % g.dims.ny, cz = c / (g.dims.nx * g.dims.ny);
      std::vector<int> whole, split;
      for_each_candidate_range(
          g.dims, reach, [&](int cell) { return g.cell_start[cell]; }, cx, cy, cz, half, 0, 1,
          [&](const CandidateRange& r) {
            for (int k = r.begin; k < r.end; ++k) whole.push_back(k);
          });
      for (int parts : {2, 3, 4, 7})
        for (int p = 0; p < parts; ++p) {
          if (p == 0) split.clear();
          for_each_candidate_range(
              g.dims, reach, [&](int cell) { return g.cell_start[cell]; }, cx, cy, cz, half, p, parts,
              [&](const CandidateRange& r) {
                for (int k = r.begin; k < r.end; ++k) split.push_back(k);
              });
          if (p == parts - 1) EXPECT_EQ(split, whole) << parts << " parts, particle " << i;
        }
      EXPECT_TRUE(std::is_sorted(whole.begin(), whole.end()));
      // Half walks begin at the home cell (every particle of a cell walks the same sequence) and
      // reach every candidate after i.
      if (half) EXPECT_TRUE(whole.empty() || whole.front() >= g.cell_start[c]);
      if (half && i + 1 < 500 && g.cell_of[i + 1] == c)
        EXPECT_TRUE(std::binary_search(whole.begin(), whole.end(), i + 1));
    }
}

// The shared grid's width: one term, its radius; radii alike (2.8 and 3.1 in a liquid), the
// longer (cells of 2.8 would make the 3.1 list reach two cells each way: 125 cells instead of
// 27); WCA (1.52) beside PME's real space (6.4) at the dilute polyelectrolyte's density 0.1,
// the long one (the short one makes the long list walk 11^3 cells of 0.35 particles per block);
// WCA beside a long Debye-Hueckel term at 0.05, the long one.
TEST(CellRuns, SharedCellWidthIsTheCheapestRadius) {
  const double one[] = {2.8};
  EXPECT_EQ(shared_cell_width(one, 1, 0.84), 2.8);
  const double alike[] = {2.8, 3.1};
  EXPECT_EQ(shared_cell_width(alike, 2, 0.84), 3.1);
  const double dilute[] = {1.52, 6.4};
  EXPECT_EQ(shared_cell_width(dilute, 2, 0.1), 6.4);
  const double screened[] = {1.52, 9.4};
  EXPECT_EQ(shared_cell_width(screened, 2, 0.05), 9.4);
}

}  // namespace
}  // namespace pairmd
