// Verlet pair list built on the GPU, over particles stored in cell order
// (neighbor/gpu_cell_order.cuh).
//
//   1. Search: four threads per particle, each a consecutive chunk of the particle's candidates,
//      which neighbor/cell_runs.h visits in ascending index order. A thread stages the partners
//      it finds (within cutoff + skin, bonded exclusions left out) in shared memory.
//   2. Claim: each warp claims room for all its lanes' partners with one integer atomicAdd on a
//      global counter; inside that room the lanes follow in order, so a particle's four chunks
//      are contiguous and its row is sorted by partner index, with no sort. The rows of
//      different warps lie wherever their claims landed (row_start says where).
//   3. Grow, never drop: when the claims exceed the buffer, or a thread found more partners than
//      it could stage, nothing is written; the host grows what was short and searches again.
//      Growths are counted and reported.
//   4. Columns (the slot strategies): while copying its partners out, a thread also takes a
//      place in each partner's column with an integer atomicAdd; a scan of the column lengths
//      and one scatter then list, for every particle j, the pairs in which it is j. Their order
//      is whatever the atomics gave: the fixed-point force sums (kernels/fixed_point.h) do not
//      depend on it.
//
// Half lists hold each pair once (i < j in the cell-order numbering); full lists hold both
// directions (atom-parallel use).
#pragma once

#include <cstdint>

#include "engine/box.h"
#include "kernels/device_buffer.h"
#include "neighbor/gpu_cell_order.cuh"

namespace pairmd {

struct PairListInput {
  const float4* pos;        // xyz + type bits, in cell order
  const unsigned* tag;      // the user's index of each particle (exclusions are by tag)
  int n;
  BoxGeometry<float> box;
  const int* exclusions;    // [tag * exclusion_width + e] = excluded partner tag or -1
  int exclusion_width;      // 0: no exclusions
};

class GpuPairList {
 public:
  // `expected_per_particle` sizes the first buffers (partners per particle in this list).
  GpuPairList(float cutoff, float skin, bool full, bool columns, double expected_per_particle, int n);
  ~GpuPairList();
  GpuPairList(const GpuPairList&) = delete;
  GpuPairList& operator=(const GpuPairList&) = delete;

  void build(const PairListInput& in, const CellGridView& grid, cudaStream_t stream);

  // Pair k is (i()[k], j()[k]); particle p's row is [row_start(p), row_start(p) + row_count(p)),
  // ascending j.
  const int* i() const { return i_.data(); }
  const int* j() const { return j_.data(); }
  const int* row_start() const { return row_start_.data(); }
  const int* row_count() const { return row_count_.data(); }
  // Columns: entries [col_start(p), col_start(p) + col_count(p)) of col_pair / col_partner are
  // the pairs k with j()[k] == p and their i.
  const int* col_start() const { return col_start_.data(); }
  const int* col_count() const { return col_count_.data(); }
  const int* col_pair() const { return col_pair_.data(); }
  const int* col_partner() const { return col_partner_.data(); }

  int count() const { return count_; }
  // The pair count on the device, for kernels launched over capacity() (CUDA graphs keep their
  // launch sizes between builds).
  const unsigned long long* device_count() const { return counter_.data(); }
  size_t capacity() const { return capacity_; }
  bool full() const { return full_; }
  float cutoff() const { return cutoff_; }
  float skin() const { return skin_; }

  int64_t builds() const { return builds_; }
  int64_t growths() const { return growths_; }
  int staging() const { return staging_; }   // partners a search thread can stage
  size_t bytes() const;

 private:
  void search(const PairListInput& in, const CellGridView& grid, cudaStream_t stream);

  float cutoff_, skin_;
  bool full_, columns_;
  size_t capacity_;
  int staging_;
  int count_ = 0;
  int64_t builds_ = 0, growths_ = 0;
  int max_shared_ = 0;        // the device's largest dynamic shared memory per block
  int shared_set_ = 48 * 1024;  // what the search kernels may use now

  DeviceBuffer<int> i_, j_, row_start_, row_count_;
  DeviceBuffer<int> col_count_, col_start_, col_place_, col_pair_, col_partner_;
  DeviceBuffer<unsigned long long> counter_;  // [0] pairs claimed, [1] most partners one thread found
  DeviceBuffer<unsigned char> cub_temp_;
  unsigned long long* host_counter_ = nullptr;  // pinned, 2 entries
};

}  // namespace pairmd
