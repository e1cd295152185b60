// Per-particle force slots of the pair-parallel strategies.
//
// Every pair k = (i, j) of a half list sorted by i owns two slots: one in particle i's slot
// range (for +f) and one in j's (for -f). Particle p has n_p = (pairs where p is j) +
// (pairs where p is i) slots: first the pairs where it is j, ordered by i, then those where it
// is i, in list order. The order is fixed by the sorted list alone, so the summation over a
// particle's slots is deterministic and, because pairs beyond the cutoff contribute exactly
// +0, independent of when the list was built.
//
// Slots are laid out as a sliced ELLPACK: particles in chunks of 32; chunk c is
// (width_c = max n_p in the chunk) rows of 32 float4, and slot s of particle p lives at
//   (chunk_base[p / 32] + s) * 32 + p % 32,
// so when thread p of the summation reads slot s, a warp reads 32 consecutive float4: every
// load of the summation is coalesced.
//
// The slot of p for pair k where p is j is its rank among the pairs with that j; ranks come
// from a stable CUB radix sort of pair indices by j (integer work only, once per list build).
#pragma once

#include <cuda_runtime.h>

#include "kernels/device_buffer.h"

namespace pairmd {

// What the summation needs to add up one term's slots.
struct SlotView {
  const float4* slots;
  const int* chunk_base;  // rows before each chunk of 32 particles
  const int* nslots;      // slots per particle
};

class SlotLayout {
 public:
  // From a half list sorted by i: i[k], j[k], and per-particle row_start/row_count (pairs of
  // particle p as i are [row_start[p], row_start[p] + row_count[p])).
  void build(const int* i, const int* j, const int* row_start, const int* row_count, int count, int n, cudaStream_t s);

  const int4* records() const { return records_.data(); }  // {i, j, slot of i, slot of j}
  float4* slots() { return slots_.data(); }
  int count() const { return count_; }
  SlotView view() const { return {slots_.data(), chunk_base_.data(), nslots_.data()}; }
  size_t bytes() const;

 private:
  int count_ = 0;
  DeviceBuffer<int> count_j_, col_start_, width_, order_, order_sorted_, keys_sorted_, nslots_, chunk_base_;
  DeviceBuffer<int4> records_;
  DeviceBuffer<float4> slots_;
  DeviceBuffer<unsigned char> cub_temp_;
  int* host_total_ = nullptr;
};

}  // namespace pairmd
