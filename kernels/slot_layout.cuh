// Per-particle force slots of the pair-parallel strategies.
//
// Pair k = (i, j) of a half list sorted by (i, j) writes its force f (on i) into slot k of a
// pair-ordered array; -f, its force on j, is the same slot read with the sign flipped. So each
// pair owns its slot, no two threads ever write the same place, and no atomics are needed:
//   i side: particle i's slots are contiguous ([row_start(i), row_start(i) + row_count(i))),
//           and the pair kernel's writes are coalesced, one 16-byte store per pair.
//   j side: particle j's slots are named by a list of pair indices (col_pair), in ascending
//           order of the partner i, built once per list build by a stable CUB radix sort of
//           the pair indices by j.
// Writing f once and reading it negated on the j side gives bitwise the sums a second,
// separate -f slot would (IEEE negation is exact and a - b == a + (-b)), and halves the slot
// traffic. The earlier layout with a second slot per pair is measured in docs/benchmarks.md.
//
// The summation (SlotForce, integrators/gpu_integrate.cuh) forms two partial sums, one thread
// each: p's j-side slots (partners i < p, ascending, subtracted) and its i-side slots
// (partners j > p, ascending), over all terms; the force is their sum. Each order is fixed by
// the canonical list alone, so the force is deterministic and, because pairs beyond the
// cutoff contribute exactly 0, independent of when the list was built.
#pragma once

#include <cuda_runtime.h>

#include "kernels/device_buffer.h"

namespace pairmd {

// What the summation needs to add up one term's slots.
struct SlotView {
  const float4* slots;     // force on i of each pair, in pair order
  const int* row_start;    // first pair of each particle as i
  const int* row_count;    // pairs of each particle as i
  const int* col_start;    // first entry of each particle's j-side list in col_pair
  const int* col_count;    // pairs of each particle as j
  const int* col_pair;     // pair indices, grouped by j, ascending i inside a group
};

class SlotLayout {
 public:
  // From a half list sorted by (i, j) on the device: the partners j[k] and per-particle
  // row_start/row_count (pairs of particle p as i are [row_start[p], row_start[p] + row_count[p])).
  void build(const int* j, const int* row_start, const int* row_count, int count, int n, cudaStream_t s);

  float4* slots() { return slots_.data(); }
  int count() const { return count_; }
  SlotView view() const {
    return {slots_.data(), row_start_, row_count_, col_start_.data(), col_count_.data(), col_pair_.data()};
  }
  size_t bytes() const;

 private:
  int count_ = 0;
  const int* row_start_ = nullptr;
  const int* row_count_ = nullptr;
  DeviceBuffer<int> col_count_, col_start_, order_, keys_sorted_, col_pair_;
  DeviceBuffer<float4> slots_;
  DeviceBuffer<unsigned char> cub_temp_;
};

}  // namespace pairmd
