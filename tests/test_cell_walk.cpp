// The GPU pair-list search's candidate walk (neighbor/cell_walk.h) and key decoding
// (neighbor/pair_keys.h), run on the CPU: every search thread (particle, part) of the kernels
// is emulated in turn, over a cell list binned the way the GPU bins it, and the pairs found are
// compared with the CPU reference list. The half-shell stencil must meet every pair exactly
// once and find exactly the pairs of the full stencil.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "neighbor/cell_walk.h"
#include "neighbor/pair_keys.h"
#include "neighbor/verlet_list.h"

namespace pairmd {
namespace {

constexpr int kSplit = 4;  // as the kernels (kSearchSplit)
constexpr double kCutoff = 2.5, kSkin = 0.3;

// A cell list in the GPU's layout: particles in cell order, cells of at least rlist, the grid
// over the box (periodic) or the bounding box (open), at most about two cells per particle.
struct HostGrid {
  std::vector<WalkCandidate> cand;  // in cell order
  std::vector<unsigned> tags;
  std::vector<int> cell_of, starts, ends;
  CellDims dims{1, 1, 1, true};

  int start(int c) const { return starts[c]; }
  int end(int c) const { return ends[c]; }
  WalkCandidate candidate(int k) const { return cand[k]; }
  unsigned tag(int k) const { return tags[k]; }
};

HostGrid bin(const std::vector<Vec3<float>>& x, const BoxGeometry<float>& box, float rlist) {
  const int n = static_cast<int>(x.size());
  float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, len[3] = {box.L.x, box.L.y, box.L.z};
  if (!box.periodic) {
    for (int d = 0; d < 3; ++d) {
      float mn = 1e30f, mx = -1e30f;
      for (const auto& p : x) {
        const float v = d == 0 ? p.x : d == 1 ? p.y : p.z;
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      lo[d] = mn;
      len[d] = mx - mn + 1e-4f;
    }
  }
  HostGrid g;
  int dims[3];
  for (int d = 0; d < 3; ++d) dims[d] = cells_along(len[d], rlist, n);
  g.dims = {dims[0], dims[1], dims[2], box.periodic};
  std::vector<int> cell(n);
  for (int i = 0; i < n; ++i) {
    const float v[3] = {x[i].x, x[i].y, x[i].z};
    int q[3];
    for (int d = 0; d < 3; ++d)
      q[d] = std::min(dims[d] - 1, std::max(0, static_cast<int>(std::floor((v[d] - lo[d]) * (dims[d] / len[d])))));
    cell[i] = (q[2] * dims[1] + q[1]) * dims[0] + q[0];
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cell[a] < cell[b]; });
  const int ncell = dims[0] * dims[1] * dims[2];
  g.starts.assign(ncell, 0);
  g.ends.assign(ncell, 0);
  for (int k = 0; k < n; ++k) {
    const int i = order[k], c = cell[i];
    g.cand.push_back({x[i], i});
    g.tags.push_back(static_cast<unsigned>(i));
    g.cell_of.push_back(c);
    if (k == 0 || cell[order[k - 1]] != c) g.starts[c] = k;
    g.ends[c] = k + 1;
  }
  return g;
}

using PairSet = std::multiset<std::pair<int, int>>;

// Every search thread of the kernels in turn: particle h (cell order), part 0 .. kSplit - 1.
// Half-shell pairs are keyed (min, max), as the write kernel keys them.
template <bool kFull, CellStencil kStencil>
PairSet search(const HostGrid& g, const BoxGeometry<float>& box, float rlist, const std::vector<int>& excl, int width) {
  PairSet out;
  for (int h = 0; h < static_cast<int>(g.cand.size()); ++h)
    for (int part = 0; part < kSplit; ++part) {
      const WalkCandidate ci = g.cand[h];
      const int* ex = width ? excl.data() + static_cast<size_t>(g.tags[h]) * width : nullptr;
      for_each_partner<kFull, kStencil, kSplit>(g, g.dims, box, h, g.cell_of[h], part, ci.x, ci.index, ex, width, true,
                                                rlist * rlist, [&](int j) {
                                                  if (kStencil == CellStencil::HalfShell) {
                                                    const uint64_t k = half_list_key<uint64_t>(ci.index, j, 32);
                                                    out.insert({key_first(k, 32), key_second(k, 32)});
                                                  } else {
                                                    out.insert({ci.index, j});
                                                  }
                                                });
    }
  return out;
}

struct System {
  std::vector<Vec3<float>> x;
  BoxGeometry<float> box;
  std::vector<std::vector<int>> excl;  // by index
  std::vector<int> table;              // fixed width, -1 padded
  int width = 0;
};

// n particles uniformly in a box L wide (Lx along x where given: non-cubic grids).
System random_system(int n, float L, bool periodic, bool exclusions, uint64_t seed, float Lx = 0.f) {
  System s;
  std::mt19937_64 rng(seed);
  if (Lx <= 0.f) Lx = L;
  std::uniform_real_distribution<float> u(0.f, 1.f);
  s.box = {{0.f, 0.f, 0.f}, {Lx, L, L}, periodic};
  for (int i = 0; i < n; ++i) s.x.push_back({Lx * u(rng), L * u(rng), L * u(rng)});
  s.excl.resize(n);
  if (exclusions) {
    for (int i = 0; i + 1 < n; ++i) {  // chains: 1-2 partners
      s.excl[i].push_back(i + 1);
      s.excl[i + 1].push_back(i);
    }
    s.width = 2;
    s.table.assign(static_cast<size_t>(n) * 2, -1);
    for (int i = 0; i < n; ++i)
      for (size_t k = 0; k < s.excl[i].size(); ++k) s.table[i * 2 + k] = s.excl[i][k];
  }
  return s;
}

// The CPU reference's half list at list radius cutoff + skin: pairs the GPU walk must find
// (radius a hair shorter) and may find (a hair longer), float and double rounding apart.
PairSet reference(const System& s, double skin) {
  std::vector<Vec3d> x;
  for (const auto& p : s.x) x.push_back({p.x, p.y, p.z});
  Box box{{s.box.lo.x, s.box.lo.y, s.box.lo.z}, {s.box.L.x, s.box.L.y, s.box.L.z}, s.box.periodic};
  VerletList cpu(kCutoff, skin);
  cpu.build(x, box, s.width ? s.excl : std::vector<std::vector<int>>{});
  PairSet out;
  for (int i = 0; i + 1 < static_cast<int>(cpu.offsets().size()); ++i)
    for (int k = cpu.offsets()[i]; k < cpu.offsets()[i + 1]; ++k) out.insert({i, cpu.neighbors()[k]});
  return out;
}

void expect_matches_reference(const PairSet& got, const System& s, const char* what) {
  const PairSet want = reference(s, kSkin - 1e-4), allowed = reference(s, kSkin + 1e-4);
  ASSERT_GT(want.size(), 0u) << what;
  for (const auto& p : want) EXPECT_EQ(got.count(p), 1u) << what << ": pair " << p.first << "-" << p.second;
  for (const auto& p : got) EXPECT_EQ(allowed.count(p), 1u) << what << ": extra or repeated pair " << p.first << "-" << p.second;
}

PairSet symmetrised(const PairSet& half) {
  PairSet out;
  for (const auto& p : half) {
    out.insert(p);
    out.insert({p.second, p.first});
  }
  return out;
}

struct WalkCase {
  int n;
  float L;
  bool periodic;
  bool exclusions;
  bool half_shell_exact;  // what the grid must report
  float Lx = 0.f;         // box length along x, if not L
};

void PrintTo(const WalkCase& c, std::ostream* os) {
  *os << c.n << " particles, " << (c.periodic ? "periodic" : "open") << " box " << (c.Lx > 0 ? c.Lx : c.L) << " x "
      << c.L << " x " << c.L
      << (c.exclusions ? ", exclusions" : "");
}

class CellWalk : public ::testing::TestWithParam<WalkCase> {};

TEST_P(CellWalk, EveryStencilFindsTheReferencePairsOnce) {
  const WalkCase c = GetParam();
  const System s = random_system(c.n, c.L, c.periodic, c.exclusions, 1000 + c.n, c.Lx);
  const float rlist = static_cast<float>(kCutoff + kSkin);
  const HostGrid g = bin(s.x, s.box, rlist);
  ASSERT_EQ(half_shell_exact(g.dims), c.half_shell_exact)
      << "grid " << g.dims.x << "x" << g.dims.y << "x" << g.dims.z;

  const PairSet full_stencil = search<false, CellStencil::Full>(g, s.box, rlist, s.table, s.width);
  expect_matches_reference(full_stencil, s, "half list, full stencil");

  // The full list holds every pair of the half list in both directions, and nothing else.
  const PairSet full_list = search<true, CellStencil::Full>(g, s.box, rlist, s.table, s.width);
  EXPECT_EQ(full_list, symmetrised(full_stencil));

  if (c.half_shell_exact) {
    // Same float arithmetic from either side (IEEE subtraction is antisymmetric), so the very
    // same pairs, each met once.
    const PairSet half_shell = search<false, CellStencil::HalfShell>(g, s.box, rlist, s.table, s.width);
    EXPECT_EQ(half_shell, full_stencil);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Boxes, CellWalk,
    ::testing::Values(WalkCase{2000, 16.f, true, false, true},    // 5 cells per direction
                      WalkCase{1500, 16.f, true, true, true},     // with exclusions
                      WalkCase{400, 8.5f, true, false, true},     // 3 cells: the smallest exact grid
                      WalkCase{300, 6.f, true, false, false},     // 2 cells: half shell not exact
                      WalkCase{100, 4.f, true, false, true},      // 1 cell: nothing to lose
                      WalkCase{800, 16.f, true, false, true, 4.f},  // 1 x 5 x 5 cells
                      WalkCase{900, 16.f, true, false, false, 6.f}, // 2 x 5 x 5 cells: not exact
                      WalkCase{1200, 14.f, false, true, true},    // open box, grid over the particles
                      WalkCase{200, 30.f, false, false, true}),   // open, sparse: the grid capped at ~2 cells per particle
    [](const ::testing::TestParamInfo<WalkCase>& i) {
      const WalkCase& c = i.param;
      return std::string(c.periodic ? "periodic" : "open") + "_n" + std::to_string(c.n) + "_L" +
             std::to_string(static_cast<int>(c.L)) + (c.Lx > 0 ? "_Lx" + std::to_string(static_cast<int>(c.Lx)) : "") +
             (c.exclusions ? "_excl" : "");
    });

// Why the guard exists: with 2 cells along a periodic direction the +1 neighbour is the -1
// neighbour, walked once as the -1 shift, which the half shell leaves out: the pairs across
// that direction would be lost (none repeated).
TEST(CellWalkGuard, HalfShellWouldLosePairsOnTwoCellsPerDirection) {
  const System s = random_system(300, 6.f, true, false, 77);
  const float rlist = static_cast<float>(kCutoff + kSkin);
  const HostGrid g = bin(s.x, s.box, rlist);
  ASSERT_EQ(g.dims.x, 2);
  ASSERT_FALSE(half_shell_exact(g.dims));
  const PairSet half_shell = search<false, CellStencil::HalfShell>(g, s.box, rlist, s.table, s.width);
  const PairSet full_stencil = search<false, CellStencil::Full>(g, s.box, rlist, s.table, s.width);
  size_t lost = 0;
  for (const auto& p : full_stencil) lost += half_shell.count(p) == 0;
  for (const auto& p : half_shell) EXPECT_EQ(half_shell.count(p), 1u) << "repeated " << p.first << "-" << p.second;
  EXPECT_GT(lost, full_stencil.size() / 4) << "lost " << lost << " of " << full_stencil.size();
  EXPECT_EQ(half_shell.size() + lost, full_stencil.size());
}

TEST(PairKeys, RoundTripAndRowStarts) {
  std::mt19937_64 rng(5);
  for (const int n : {1, 7, 1000, 65536, 70000}) {
    const int bits = bits_for(n);
    std::uniform_int_distribution<int> u(0, n - 1);
    std::vector<uint64_t> keys;
    for (int k = 0; k < 3 * n; ++k) {
      const int i = u(rng), j = u(rng);
      const uint64_t key = pair_key<uint64_t>(i, j, bits);
      ASSERT_EQ(key_first(key, bits), i);
      ASSERT_EQ(key_second(key, bits), j);
      keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    for (int p = 0; p < n; p += std::max(1, n / 97)) {
      const auto want = std::lower_bound(keys.begin(), keys.end(), static_cast<uint64_t>(p) << bits) - keys.begin();
      ASSERT_EQ(row_start_in_keys(keys.data(), static_cast<int>(keys.size()), bits, p), want) << "n " << n << " p " << p;
    }
    // Rows as the half-shell build takes them: every row, the sentinel row n included, with
    // 32-bit keys up to 65,536 particles (where n << bits would not fit a key).
    std::vector<int> length(n + 1, 0);
    for (uint64_t k : keys) ++length[key_first(k, bits)];
    const auto check_rows = [&](const auto& ks) {
      int start = -1, len = -1, expect_start = 0;
      for (int p = 0; p <= n; ++p) {
        row_in_keys(ks.data(), static_cast<int>(ks.size()), bits, n, p, start, len);
        ASSERT_EQ(start, expect_start) << "n " << n << " row " << p;
        ASSERT_EQ(len, length[p]) << "n " << n << " row " << p;
        expect_start += len;
      }
      EXPECT_EQ(start, static_cast<int>(ks.size()));
    };
    check_rows(keys);
    if (2 * bits <= 32) {
      std::vector<uint32_t> k32;
      for (uint64_t k : keys) k32.push_back(static_cast<uint32_t>(k));
      ASSERT_TRUE(std::is_sorted(k32.begin(), k32.end()));
      check_rows(k32);
    }
  }
  EXPECT_EQ(half_list_key<uint32_t>(5, 2, 16), pair_key<uint32_t>(2, 5, 16));
  EXPECT_EQ(half_list_key<uint32_t>(2, 5, 16), pair_key<uint32_t>(2, 5, 16));
}

}  // namespace
}  // namespace pairmd
