// Verlet pair list built on the GPU.
//
//   1. Cell list: particles binned into cells at least cutoff + skin wide by a stable CUB radix
//      sort of particle indices by cell; positions (with the particle index in w) are copied
//      into cell order, so a cell's candidates are contiguous.
//   2. Count: four neighbouring threads per particle, particles taken in cell order; each
//      thread walks every fourth cell of the stencil (neighbor/cell_walk.h): the 27 cells
//      around the particle's, or, for half lists on request, the half shell of 14, which meets
//      each pair from one side only (not yet measured on a GPU, so not the default). Lanes of
//      a warp that share a home cell and a part load the same candidates (broadcasts; in the
//      half shell's own cell each starts after its own particle). With the
//      full stencil the four parts' counts add up, by shuffles, to the row length (no atomic).
//      Each warp claims room for all its lanes' pairs with one integer atomicAdd on a global
//      counter, lanes in order inside it.
//   3. If the claims exceed the buffer, the buffer grows before anything is written: no pair
//      is ever dropped (growths are counted).
//   4. Write: the same walk again; each thread writes its pairs as keys (i << b) | j (i < j
//      in half lists, whichever side found the pair) into its claimed room and no further
//      (b = bits of a particle index: 32-bit keys up to 65,536 particles). Should the two
//      walks ever disagree, the next build stops with an error.
//   5. Sort: one CUB radix sort of the keys over their 2b bits orders the list by i and each
//      row by j; with the half shell a binary search per particle in the sorted keys then
//      gives the row lengths. The list is canonical: it depends neither on which warp won the
//      atomics, nor on the cell grid at build time, nor on the stencil. A sequential sum over
//      each row (slots, gather) is then deterministic and, since pairs beyond the cutoff add
//      exactly zero, independent of when the list was built.
//
// Half lists hold each pair once (j > i); full lists hold both directions (atom-parallel use).
#pragma once

#include <cstdint>

#include "engine/box.h"
#include "kernels/device_buffer.h"
#include "neighbor/cell_walk.h"
#include "neighbor/pair_keys.h"

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
  // `stencil` HalfShell applies to half lists where no periodic direction has exactly 2
  // cells (half_shell_exact); elsewhere the build walks the full stencil.
  GpuPairList(float cutoff, float skin, bool full, size_t initial_capacity,
              CellStencil stencil = CellStencil::Full);
  ~GpuPairList();
  GpuPairList(const GpuPairList&) = delete;
  GpuPairList& operator=(const GpuPairList&) = delete;

  void build(const PairListInput& in, cudaStream_t stream);

  // Sorted by (i, j): pairs [row_start(i), row_start(i) + row_count(i)) belong to particle i.
  const int* i() const { return i_.data(); }
  const int* j() const { return j_.data(); }
  int count() const { return count_; }
  const int* row_start() const { return row_start_.data(); }
  const int* row_count() const { return row_count_.data(); }
  bool full() const { return full_; }
  CellStencil stencil_used() const { return used_stencil_; }  // by the last build
  float cutoff() const { return cutoff_; }
  float skin() const { return skin_; }

  int64_t builds() const { return builds_; }
  int64_t growths() const { return growths_; }
  size_t capacity() const { return capacity_; }
  size_t bytes() const;

 private:
  void build_cells(const PairListInput& in, cudaStream_t stream);
  template <typename Key>
  void write_sort_decode(const PairListInput& in, cudaStream_t stream);

  float cutoff_, skin_;
  bool full_;
  CellStencil stencil_, used_stencil_ = CellStencil::Full;
  size_t capacity_;
  int count_ = 0;
  int64_t builds_ = 0, growths_ = 0;

  // Cell list
  int dims_[3] = {1, 1, 1};
  float3 cell_lo_{0, 0, 0}, cell_inv_{1, 1, 1};
  DeviceBuffer<int> cell_of_, cell_sorted_, cell_index_, cell_particles_, cell_start_, cell_end_;
  DeviceBuffer<float4> cell_pos_;   // xyz + particle index bits, in cell order
  DeviceBuffer<unsigned> cell_tag_;
  // Pairs
  DeviceBuffer<int> row_count_, row_start_;
  DeviceBuffer<int> lane_offset_, lane_end_;          // room of each search thread
  DeviceBuffer<unsigned long long> counter_;          // [0] pairs claimed, [1] passes disagreed
  DeviceBuffer<unsigned char> keys_, keys_sorted_;    // 32- or 64-bit keys
  DeviceBuffer<int> i_, j_;
  DeviceBuffer<int> bbox_;                            // open boxes: ordered-int bounds
  DeviceBuffer<unsigned char> cub_temp_;
  unsigned long long* host_counter_ = nullptr;        // pinned, 2 entries
};


}  // namespace pairmd
