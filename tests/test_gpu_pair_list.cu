// The GPU cell order and Verlet pair list against the CPU list: the list holds exactly the
// CPU list's pairs (mapped back to the user's numbering), every row is sorted, half lists hold
// each pair once with i < j, row offsets and columns are consistent; for half and full lists,
// with exclusions, in periodic and open boxes, at sizes with 1, 2, 3 and many cells per
// direction, with fewer particles than a warp, with no pairs, with a tiny first buffer that must
// grow, and with a grid shared with a shorter term (a stencil reaching several cells).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "neighbor/gpu_cell_order.cuh"
#include "neighbor/gpu_pair_list.cuh"
#include "neighbor/verlet_list.h"

namespace pairmd {
namespace {

struct Case {
  int n;
  double L;
  bool periodic;
  bool full;
  bool exclusions;
  bool expect_pairs = true;
  double grid = 0;  // cell width; 0: cutoff + skin
};

template <typename T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> h(n);
  if (n) PAIRMD_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Sets *chunk to the list's chunk size.
// The case's list in each shape of the search; the chunk sizes and the shapes the search chose
// itself (SearchShape{}) are collected.
void run_case(const Case& c, const std::vector<SearchShape>& shapes, std::set<int>* chunks,
              std::set<std::pair<int, int>>* chosen) {
  std::mt19937_64 rng(c.n * 7 + c.full);
  std::uniform_real_distribution<double> u(0.0, c.L);
  Box box;
  box.lo = {0, 0, 0};
  box.L = {c.L, c.L, c.L};
  box.periodic = c.periodic;
  std::vector<Vec3d> x(c.n);
  for (auto& p : x) p = {u(rng), u(rng), u(rng)};
  std::vector<std::vector<int>> excl(c.n);
  if (c.exclusions)
    for (int i = 0; i + 1 < c.n; ++i) {
      excl[i].push_back(i + 1);
      excl[i + 1].push_back(i);
    }
  for (auto& e : excl) std::sort(e.begin(), e.end());
  const double cutoff = 2.5, skin = 0.3;

  // Pairs within a float rounding of the list radius may legitimately differ: the GPU list
  // must hold every pair of the CPU list with a slightly shorter radius (want), and nothing
  // beyond a slightly longer one (allowed).
  const auto pairs_within = [&](double s) {
    VerletList cpu(cutoff, s);
    cpu.build(x, box, c.exclusions ? excl : std::vector<std::vector<int>>{});
    std::set<std::pair<int, int>> out;
    for (int i = 0; i < c.n; ++i)
      for (int k = cpu.offsets()[i]; k < cpu.offsets()[i + 1]; ++k) out.insert({i, cpu.neighbors()[k]});
    return out;
  };
  const std::set<std::pair<int, int>> want = pairs_within(skin - 1e-4), allowed = pairs_within(skin + 1e-4);

  // Sort into cells on the GPU, then put positions and tags in that order, as the backend does.
  std::vector<float4> pos(c.n);
  for (int i = 0; i < c.n; ++i) pos[i] = make_float4(float(x[i].x), float(x[i].y), float(x[i].z), 0.f);
  DeviceBuffer<float4> dpos;
  dpos.upload(pos);
  BoxGeometry<float> fbox{{0.f, 0.f, 0.f}, {float(c.L), float(c.L), float(c.L)}, c.periodic};
  DeviceBuffer<BoxGeometry<float>> dbox;  // the kernels read the box in device memory
  dbox.upload(std::vector<BoxGeometry<float>>{fbox});
  GpuCellOrder cells;
  Launcher launcher(nullptr);
  std::vector<unsigned> identity(c.n);
  for (int i = 0; i < c.n; ++i) identity[i] = static_cast<unsigned>(i);
  DeviceBuffer<unsigned> dtag0;
  dtag0.upload(identity);
  cells.build(launcher, dpos.data(), dtag0.data(), c.n, std::max(c.n, 1), fbox, dbox.data(),
              c.grid > 0 ? c.grid : cutoff + skin);
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<int> order = download(cells.order(), c.n);
  const std::vector<int> cell_of = download(cells.view().cell_of, c.n);
  ASSERT_TRUE(std::is_sorted(cell_of.begin(), cell_of.end())) << "cells not in order";
  std::vector<float4> sorted(c.n);
  std::vector<unsigned> tag(c.n);
  for (int k = 0; k < c.n; ++k) {
    sorted[k] = pos[order[k]];
    tag[k] = static_cast<unsigned>(order[k]);
  }
  const int width = c.exclusions ? 2 : 0;
  std::vector<int> table(static_cast<size_t>(c.n) * std::max(width, 1), -1);
  for (int i = 0; i < c.n && width; ++i)
    for (size_t k = 0; k < excl[i].size(); ++k) table[i * width + k] = excl[i][k];
  DeviceBuffer<float4> dsorted;
  DeviceBuffer<unsigned> dtag;
  DeviceBuffer<int> dexcl;
  dsorted.upload(sorted);
  dtag.upload(tag);
  dexcl.upload(table);

  for (const SearchShape& shape : shapes) {
    SCOPED_TRACE(::testing::Message() << "parts " << shape.parts << " splits " << shape.splits);
    const bool columns = !c.full;
    GpuPairList list(cutoff, skin, c.full, columns, 0.05, c.n);  // tiny first buffers: they must grow
    list.set_shape(shape);
    list.build(launcher, {dsorted.data(), dtag.data(), c.n, dbox.data(), width ? dexcl.data() : nullptr, width},
               cells.view());
    PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
    const int first_capacity = (c.n + 1 + kMaxPairChunk - 1) / kMaxPairChunk * kMaxPairChunk;  // 1 per particle
    if (list.entries() > first_capacity)
      EXPECT_GT(list.growths(), 0) << "the list outgrew its first buffer without growing";

    // Entries: pairs and pads, in whole chunks; entry k's i is its chunk's first particle + a byte.
    const int count = list.entries(), chunk = list.chunk();
    chunks->insert(chunk);
    const SearchShape used = list.last_shape();
    if (shape.parts) EXPECT_EQ(used.parts, shape.parts);
    if (shape.splits) EXPECT_EQ(used.splits, shape.splits);
    if (shape.parts == 0 && shape.splits == 0) chosen->insert({used.parts, used.splits});
    EXPECT_EQ(list.capacity() % kMaxPairChunk, 0u);
    EXPECT_EQ(count % chunk, 0) << "the claims are not whole chunks";
    EXPECT_EQ(download(list.device_entries(), 1)[0], static_cast<unsigned long long>(count));
    const std::vector<int> gj = download(list.j(), count), first = download(list.chunk_first(), count / chunk);
    const std::vector<unsigned char> home = download(list.home(), count);
    std::vector<int> gi(count);
    for (int k = 0; k < count; ++k) {
      ASSERT_LT(home[k], 32) << "entry " << k << ": its i is not among its chunk's 32 particles";
      gi[k] = first[k / chunk] + home[k];
    }
    const std::vector<int> rs = download(list.row_start(), c.n), rc = download(list.row_count(), c.n);
    std::set<std::pair<int, int>> got;
    std::vector<int> seen(count, 0);
    for (int p = 0; p < c.n; ++p) {
      for (int k = rs[p]; k < rs[p] + rc[p]; ++k) {
        ASSERT_GE(k, 0);
        ASSERT_LT(k, count);
        ++seen[k];
        ASSERT_EQ(gi[k], p) << "row " << p << " holds a pair of another particle";
        if (k > rs[p]) ASSERT_LT(gj[k - 1], gj[k]) << "row " << p << " not sorted";
        if (!c.full) ASSERT_LT(p, gj[k]) << "half list with j < i";
        ASSERT_NE(p, gj[k]);
        const int a = order[p], b = order[gj[k]];
        got.insert({std::min(a, b), std::max(a, b)});
      }
    }
    int pads = 0;
    for (int k = 0; k < count; ++k) {
      if (gj[k] < 0) {  // a pad: in no row, and only at the end of a claim (a pair of the same chunk before it)
        ++pads;
        ASSERT_EQ(seen[k], 0) << "pad " << k << " in a row";
        ASSERT_NE(k % chunk, 0) << "chunk " << k / chunk << " begins with a pad";
        continue;
      }
      ASSERT_EQ(seen[k], 1) << "pair " << k << " in " << seen[k] << " rows";
    }
    EXPECT_EQ(list.count_pairs(), count - pads);
    EXPECT_EQ(static_cast<size_t>(list.count_pairs()), (c.full ? 2 : 1) * got.size()) << "a pair listed more than once";

    if (columns) {  // every pair once in its j's column, with its i
      const int width = list.col_width();
      const std::vector<int> cc = download(list.col_count(), c.n);
      const std::vector<ColumnEntry> cols = download(list.cols(), static_cast<size_t>(width) * c.n);
      std::vector<int> in_column(count, 0);
      long entries = 0;
      for (int p = 0; p < c.n; ++p) {
        ASSERT_LE(cc[p], width) << "column " << p << " longer than its width";
        for (int e = p * width; e < p * width + cc[p]; ++e) {
          const int k = cols[e].pair;
          ASSERT_GE(k, 0);
          ASSERT_LT(k, count);
          ++in_column[k];
          ++entries;
          EXPECT_EQ(gj[k], p) << "column " << p << " names pair " << k << " of another j";
          EXPECT_EQ(cols[e].partner, gi[k]);
        }
      }
      EXPECT_EQ(entries, list.count_pairs());
      for (int k = 0; k < count; ++k) ASSERT_EQ(in_column[k], gj[k] < 0 ? 0 : 1) << "entry " << k;
    }
    int missing = 0, extra = 0;
    for (const auto& p : want)
      if (!got.count(p)) ++missing;
    for (const auto& p : got)
      if (!allowed.count(p)) ++extra;
    if (c.expect_pairs)
      EXPECT_GT(list.count_pairs(), 0) << "a case meant to have pairs has none";
    else
      EXPECT_EQ(count, 0);
    EXPECT_EQ(missing, 0) << "pairs of the CPU list missing on the GPU";
    EXPECT_EQ(extra, 0) << "pairs on the GPU that the CPU list does not have";
  }
}

// Every shape of the search (neighbor/gpu_pair_list.cu: four or sixteen parts of a cell's
// candidates, its passes in one block or spread over several) gives the same list; the search's
// own choice first.
TEST(GpuPairList, EqualsCpuListAsASet) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  std::set<int> chunks;
  std::set<std::pair<int, int>> chosen;  // the shapes the search chose
  for (const Case& c : {Case{2000, 14.0, true, false, false}, Case{2000, 14.0, true, true, false},
                        Case{800, 6.0, true, false, true} /* 2 cells per direction */, Case{800, 6.0, true, true, true},
                        Case{1500, 20.0, false, false, false}, Case{1500, 20.0, false, true, true},
                        Case{5000, 9.0, true, false, false} /* 3 cells, dense */,
                        Case{300, 2.9, true, false, false} /* 1 cell per direction */,
                        Case{20, 6.0, true, false, false} /* fewer particles than a warp */,
                        Case{33, 8.0, false, true, true} /* 33 x 4 search threads: a partial warp */,
                        Case{10, 200.0, true, false, false, false} /* no pairs at all */,
                        Case{3000, 16.0, true, false, true, true, 1.0} /* a stencil reaching 3 cells */,
                        Case{3000, 16.0, true, true, false, true, 1.4} /* 2-3 cells, full list */,
                        Case{70000, 45.8, true, false, false} /* many warps' claims */}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " L " << c.L << (c.periodic ? " periodic" : " open")
                                      << (c.full ? " full" : " half") << (c.exclusions ? " exclusions" : "") << " grid "
                                      << c.grid);
    run_case(c, {SearchShape{}, SearchShape{4, 1}, SearchShape{16, 1}, SearchShape{4, 3}, SearchShape{16, 2}}, &chunks,
             &chosen);
  }
  // The search's own choices: sixteen parts for the small cases, four for the large one, and
  // cells split over blocks somewhere.
  bool wide = false, narrow = false, split = false;
  for (const auto& [parts, splits] : chosen) {
    wide |= parts == 16;
    narrow |= parts == 4;
    split |= splits > 1;
  }
  EXPECT_TRUE(wide && narrow && split) << "the cases do not cover the search's choices";
  // The cases span claims short and long enough for chunks of 4 (open, dilute), 8 and 32.
  for (int c : {4, 8, 32}) EXPECT_EQ(chunks.count(c), 1u) << "no case made chunks of " << c;
}

// The chunk size follows the pairs a claim is expected to hold: few pads where claims are long,
// small chunks where they are short (bytes of list per pair, neighbor/gpu_pair_list.cuh).
TEST(GpuPairList, ChunkSizeFollowsTheClaims) {
  EXPECT_EQ(1 << choose_chunk_shift(900.0), 32) << "an LJ liquid's claim (~21 particles x 43 pairs)";
  EXPECT_EQ(1 << choose_chunk_shift(20.0), 4) << "a polymer melt's claim (~3 beads x 6 WCA pairs)";
  EXPECT_EQ(1 << choose_chunk_shift(0.01), 4) << "a dilute gas";
  for (double p : {1.0, 10.0, 100.0, 1e4, 1e7}) {
    const int c = 1 << choose_chunk_shift(p);
    EXPECT_GE(c, 4);
    EXPECT_LE(c, kMaxPairChunk);
  }
  int last = 0;
  for (double p = 1; p < 1e6; p *= 1.5) {  // longer claims never take smaller chunks
    const int c = 1 << choose_chunk_shift(p);
    EXPECT_GE(c, last) << p;
    last = c;
  }
}

}  // namespace
}  // namespace pairmd
