// The GPU Verlet pair list holds exactly the pairs of the CPU list (as a set), is sorted by
// (i, j), and has consistent row offsets; for half and full lists, with exclusions, in
// periodic and open boxes, at sizes with 2 and many cells per direction, with fewer particles
// than a warp, with no pairs, and above 65,536 particles (64-bit sort keys). Half lists built
// with the half-shell stencil are the same arrays as with the full one.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "engine/backend.h"
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
};

void run_case(const Case& c) {
  std::mt19937_64 rng(c.n * 7 + c.full);
  std::uniform_real_distribution<double> u(0.0, c.L);
  Box box;
  box.lo = {0, 0, 0};
  box.L = {c.L, c.L, c.L};
  box.periodic = c.periodic;
  std::vector<Vec3d> x(c.n);
  for (auto& p : x) p = {u(rng), u(rng), u(rng)};
  // Exclusions: chain-like 1-2 partners.
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

  std::vector<float4> pos(c.n);
  std::vector<unsigned> tag(c.n);
  for (int i = 0; i < c.n; ++i) {
    pos[i] = make_float4(float(x[i].x), float(x[i].y), float(x[i].z), 0.f);
    tag[i] = i;
  }
  int width = c.exclusions ? 2 : 0;
  std::vector<int> table(static_cast<size_t>(c.n) * std::max(width, 1), -1);
  for (int i = 0; i < c.n && width; ++i)
    for (size_t k = 0; k < excl[i].size(); ++k) table[i * width + k] = excl[i][k];
  DeviceBuffer<float4> dpos;
  DeviceBuffer<unsigned> dtag;
  DeviceBuffer<int> dexcl;
  dpos.upload(pos);
  dtag.upload(tag);
  dexcl.upload(table);
  BoxGeometry<float> fbox{{0.f, 0.f, 0.f}, {float(c.L), float(c.L), float(c.L)}, c.periodic};
  GpuPairList list(cutoff, skin, c.full, 16);  // tiny capacity: must grow
  list.build({dpos.data(), dtag.data(), c.n, fbox, width ? dexcl.data() : nullptr, width}, nullptr);
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
  if (list.count() > 16) EXPECT_GT(list.growths(), 0);

  const int count = list.count();
  std::vector<int> gi(count), gj(count), rs(c.n), rc(c.n);
  PAIRMD_CUDA_CHECK(cudaMemcpy(gi.data(), list.i(), count * sizeof(int), cudaMemcpyDeviceToHost));
  PAIRMD_CUDA_CHECK(cudaMemcpy(gj.data(), list.j(), count * sizeof(int), cudaMemcpyDeviceToHost));
  PAIRMD_CUDA_CHECK(cudaMemcpy(rs.data(), list.row_start(), c.n * sizeof(int), cudaMemcpyDeviceToHost));
  PAIRMD_CUDA_CHECK(cudaMemcpy(rc.data(), list.row_count(), c.n * sizeof(int), cudaMemcpyDeviceToHost));
  std::set<std::pair<int, int>> got;
  for (int k = 0; k < count; ++k) {
    if (k > 0) ASSERT_TRUE(gi[k - 1] < gi[k] || (gi[k - 1] == gi[k] && gj[k - 1] < gj[k])) << "not sorted by (i, j) at " << k;
    ASSERT_GE(k, rs[gi[k]]);
    ASSERT_LT(k, rs[gi[k]] + rc[gi[k]]);
    if (c.full) {
      if (gi[k] < gj[k]) got.insert({gi[k], gj[k]});
    } else {
      ASSERT_LT(gi[k], gj[k]);
      got.insert({gi[k], gj[k]});
    }
  }
  if (c.full) EXPECT_EQ(count % 2, 0);

  // The half-shell stencil (half lists) finds the same pairs from one side each: after the sort
  // the list must be the very same arrays, row offsets and lengths included. Where a periodic
  // direction has 2 cells the build falls back to the full stencil.
  if (!c.full) {
    GpuPairList shell(cutoff, skin, false, 16, CellStencil::HalfShell);
    shell.build({dpos.data(), dtag.data(), c.n, fbox, width ? dexcl.data() : nullptr, width}, nullptr);
    PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
    const int cells = cells_along(float(c.L), float(cutoff + skin), c.n);  // the build's grid
    const bool exact = !c.periodic || cells != 2;
    EXPECT_EQ(shell.stencil_used(), exact ? CellStencil::HalfShell : CellStencil::Full);
    ASSERT_EQ(shell.count(), count) << "half shell";
    std::vector<int> si(count), sj(count), srs(c.n + 1), src(c.n + 1), rs1(c.n + 1), rc1(c.n + 1);
    PAIRMD_CUDA_CHECK(cudaMemcpy(si.data(), shell.i(), count * sizeof(int), cudaMemcpyDeviceToHost));
    PAIRMD_CUDA_CHECK(cudaMemcpy(sj.data(), shell.j(), count * sizeof(int), cudaMemcpyDeviceToHost));
    PAIRMD_CUDA_CHECK(cudaMemcpy(srs.data(), shell.row_start(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    PAIRMD_CUDA_CHECK(cudaMemcpy(src.data(), shell.row_count(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    PAIRMD_CUDA_CHECK(cudaMemcpy(rs1.data(), list.row_start(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    PAIRMD_CUDA_CHECK(cudaMemcpy(rc1.data(), list.row_count(), (c.n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(si, gi) << "half shell: i";
    EXPECT_EQ(sj, gj) << "half shell: j";
    EXPECT_EQ(srs, rs1) << "half shell: row starts (the last one is the total)";
    EXPECT_EQ(src, rc1) << "half shell: row lengths";
  }
  int missing = 0, extra = 0;
  for (const auto& p : want)
    if (!got.count(p)) ++missing;
  for (const auto& p : got)
    if (!allowed.count(p)) ++extra;
  if (c.expect_pairs) EXPECT_GT(count, 0) << "a case meant to have pairs has none";
  else EXPECT_EQ(count, 0);
  EXPECT_EQ(missing, 0) << "pairs of the CPU list missing on the GPU";
  EXPECT_EQ(extra, 0) << "pairs on the GPU that the CPU list does not have";
}

TEST(GpuPairList, EqualsCpuListAsASet) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (const Case& c : {Case{2000, 14.0, true, false, false}, Case{2000, 14.0, true, true, false},
                        Case{800, 6.0, true, false, true} /* 2 cells per direction */,
                        Case{800, 6.0, true, true, true}, Case{1500, 20.0, false, false, false},
                        Case{1500, 20.0, false, true, true}, Case{5000, 9.0, true, false, false} /* 3 cells, dense */,
                        Case{20, 6.0, true, false, false} /* fewer particles than a warp */,
                        Case{33, 8.0, false, true, true} /* 33 x 4 search threads: a partial warp */,
                        Case{10, 200.0, true, false, false, false} /* no pairs at all */,
                        Case{70000, 45.8, true, false, false} /* 64-bit keys (> 65,536 particles) */}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " L " << c.L << (c.periodic ? " periodic" : " open")
                                      << (c.full ? " full" : " half") << (c.exclusions ? " exclusions" : ""));
    run_case(c);
  }
}

}  // namespace
}  // namespace pairmd
