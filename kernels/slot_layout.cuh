// Per-particle force slots of the pair-parallel strategies.
//
// Every pair k = (i, j) of a half list sorted by (i, j) owns two slots, one for +f on i and one
// for -f on j, so no two threads ever write the same place and no atomics are needed:
//   i side: slot k of a pair-ordered array. Pairs are sorted by i, so particle i's i-side
//           slots are contiguous ([row_start(i), row_start(i) + row_count(i))) and the pair
//           kernel's writes to them are coalesced.
//   j side: a sliced ELLPACK. Particles come in chunks of 32; chunk c is width_c = (largest
//           number of pairs in which a particle of the chunk is j) rows of 32 float4, and the
//           r-th pair in which p is j writes to (chunk_base[p / 32] + r) * 32 + p % 32. When
//           thread p of the summation reads its r-th slot, a warp reads 32 consecutive float4:
//           these loads are coalesced.
// The summation adds p's j-side slots (partners i < p, ascending) then its i-side slots
// (partners j > p, ascending). That order is fixed by the canonical list alone, so the sum is
// deterministic and, because pairs beyond the cutoff contribute exactly +0, independent of when
// the list was built.
//
// The rank r of pair k among the pairs with the same j comes from a stable CUB radix sort of
// pair indices by j (integer work only, once per list build).
#pragma once

#include <cuda_runtime.h>

#include "kernels/device_buffer.h"

namespace pairmd {

// What the summation needs to add up one term's slots.
struct SlotView {
  const float4* jslots;   // j side, sliced ELLPACK
  const int* chunk_base;  // rows before each chunk of 32 particles
  const int* njslots;     // j-side slots per particle
  const float4* islots;   // i side, one per pair, in pair order
  const int* row_start;   // first pair of each particle as i
  const int* row_count;   // pairs of each particle as i
};

class SlotLayout {
 public:
  // From a half list sorted by i: i[k], j[k], and per-particle row_start/row_count (pairs of
  // particle p as i are [row_start[p], row_start[p] + row_count[p])).
  void build(const int* i, const int* j, const int* row_start, const int* row_count, int count, int n, cudaStream_t s);

  const int* jslot_of_pair() const { return jslot_.data(); }  // j-side slot of each pair
  float4* jslots() { return jslots_.data(); }
  float4* islots() { return islots_.data(); }
  int count() const { return count_; }
  SlotView view() const {
    return {jslots_.data(), chunk_base_.data(), count_j_.data(), islots_.data(), row_start_, row_count_};
  }
  size_t bytes() const;

 private:
  int count_ = 0;
  const int* row_start_ = nullptr;
  const int* row_count_ = nullptr;
  DeviceBuffer<int> count_j_, col_start_, width_, order_, order_sorted_, keys_sorted_, chunk_base_;
  DeviceBuffer<int> jslot_;
  DeviceBuffer<float4> jslots_, islots_;
  DeviceBuffer<unsigned char> cub_temp_;
  int* host_total_ = nullptr;
};

}  // namespace pairmd
