// Verlet pair list built on the GPU.
//
//   1. Cell list: particles binned into cells at least cutoff + skin wide by a stable CUB radix
//      sort of particle indices by cell, so the order inside a cell is deterministic.
//   2. Count: one thread per (particle, neighbour cell) pair, particles in cell order for
//      locality, counts the partners in that cell; each warp claims room for its threads'
//      pairs with one integer atomicAdd on a global counter.
//   3. If the claims exceed the buffer, the buffer grows before anything is written: no pair
//      is ever dropped (growths are counted).
//   4. Write: each thread writes its pairs (i, j) into its claimed room.
//   5. Sort: a CUB radix sort by i (on the bits particle indices use), then each row sorted by
//      j (CUB segmented sort). The list is canonical: it depends neither on which warp won the atomics nor on the
//      cell grid at build time, so every sum over it is deterministic, and (since pairs beyond
//      the cutoff add exactly zero) independent of when the list was built.
//
// Half lists hold each pair once (j > i); full lists hold both directions (atom-parallel use).
#pragma once

#include <cstdint>

#include "engine/box.h"
#include "kernels/device_buffer.h"

namespace pairmd {

struct PairListInput {
  const float4* pos;        // xyz + type bits
  const unsigned* tag;      // creation index of each particle (exclusions are by tag)
  int n;
  BoxGeometry<float> box;
  const int* exclusions;    // [tag * exclusion_width + e] = excluded partner tag or -1
  int exclusion_width;      // 0: no exclusions
};

class GpuPairList {
 public:
  GpuPairList(float cutoff, float skin, bool full, size_t initial_capacity);

  void build(const PairListInput& in, cudaStream_t stream);

  // Sorted by i: pairs [row_start(i), row_start(i) + row_count(i)) belong to particle i.
  const int* i() const { return i_sorted_.data(); }
  const int* j() const { return j_sorted_.data(); }
  int* i() { return i_sorted_.data(); }
  int* j() { return j_sorted_.data(); }
  int count() const { return count_; }
  const int* row_start() const { return row_start_.data(); }
  const int* row_count() const { return row_count_.data(); }
  bool full() const { return full_; }
  float cutoff() const { return cutoff_; }
  float skin() const { return skin_; }

  int64_t builds() const { return builds_; }
  int64_t growths() const { return growths_; }
  size_t capacity() const { return capacity_; }
  size_t bytes() const;

 private:
  void build_cells(const PairListInput& in, cudaStream_t stream);

  float cutoff_, skin_;
  bool full_;
  size_t capacity_;
  int count_ = 0;
  int64_t builds_ = 0, growths_ = 0;

  // Cell list
  int dims_[3] = {1, 1, 1};
  float3 cell_lo_{0, 0, 0}, cell_inv_{1, 1, 1};
  DeviceBuffer<int> cell_of_, cell_sorted_, cell_index_, cell_particles_, cell_start_, cell_end_;
  DeviceBuffer<float4> cell_pos_;
  DeviceBuffer<unsigned> cell_tag_;
  DeviceBuffer<float> bounds_;  // open boundaries: particle bounding box
  // Pairs
  DeviceBuffer<int> row_count_, row_offset_ /* per search item */, row_start_, counter_;
  DeviceBuffer<int> i_unsorted_, j_unsorted_, i_sorted_, j_sorted_;
  DeviceBuffer<unsigned char> cub_temp_;
  int* host_counter_ = nullptr;  // pinned
};

int bits_for(int n);  // bits needed for keys in [0, n)

}  // namespace pairmd
