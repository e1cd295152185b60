// Verlet pair list built on the GPU, over particles stored in cell order
// (neighbor/gpu_cell_order.cuh).
//
//   1. Search: a block per cell. Lane l of each warp stands for the cell's particle l; the
//      cell's candidates, in ascending index order (neighbor/cell_runs.h), are cut into four
//      consecutive parts, one per warp, so all lanes of a warp walk the same candidates (one
//      load serves the warp). Each lane stages the partners it finds (within cutoff + skin,
//      bonded exclusions left out), in order, in shared memory. Small grids, which would leave
//      the GPU idle, take sixteen parts, and a block per 32 home particles of a cell
//      (SearchShape).
//   2. Claim: the block claims room for all its cell's rows with one integer atomicAdd on a
//      global counter; each row is its four parts in order, so it is sorted by partner index,
//      with no sort. The cells' rows lie wherever their claims landed (row_start says where);
//      a cell's rows are consecutive, in particle order. Claims come in whole chunks of 4 to
//      32 entries (the last one padded), so every chunk holds the rows of at most 32
//      consecutive particles, and an entry's i is stored as one byte, its offset from the
//      chunk's first particle (PairListView::i): 5 bytes and a chunk's share per entry instead
//      of 8, which is most of what the per-pair kernels read. The chunk size follows the pairs
//      a claim is expected to hold at the cells' mean density (choose_chunk_shift): long claims
//      (a dense liquid's ~900 pairs) take 32, where the pads are few; short ones (a polymer
//      melt's ~20 WCA pairs per cell) take 4, where padding to 16 would add ~40 % more entries.
//   3. Grow, never drop: when the claims exceed the buffer, or a row is longer than its
//      staging, nothing is written; the host grows what was short and searches again. Growths
//      are counted and reported. The step loop does not wait for the search
//      (enqueue_build): a search that did not fit raises a device flag that halts the step
//      chunk after it before any step is taken, and the host learns of it, grows and searches
//      again (settle) at the chunk's end, where it waits anyway.
//   4. Columns (the slot strategies): for every particle j, the pairs in which it is j. The
//      search files each pair as it writes it: a place in its j's column claimed with an
//      integer atomicAdd, in columns of a fixed width (no scan, no scatter, no second pass; a
//      column longer than the width is step 3's case: widen and search again). No sort: the
//      order inside a column is whatever the atomics gave, and the fixed-point force sums
//      (kernels/fixed_point.h) do not depend on it.
//
// Half lists hold each pair once (i < j in the cell-order numbering); full lists hold both
// directions (atom-parallel use).
#pragma once

#include <cstdint>
#include <vector>

#include "base/box.h"
#include "cuda/device_buffer.h"
#include "cuda/launcher.cuh"
#include "neighbor/gpu_cell_order.cuh"

namespace pairmd {

// A column entry: the pair (its entry in the list) and its i.
struct alignas(8) ColumnEntry {
  int pair;
  int partner;
};

// Entries per chunk of the list's storage (see 2. above): a power of two up to kMaxPairChunk.
constexpr int kMaxPairChunk = 32;

// The chunk size (log2) for claims of about `pairs_per_claim` pairs: the one with the fewest
// bytes of list per pair, (5 + 4 / chunk) bytes per entry times the entries per pair with half a
// chunk of pads per claim.
int choose_chunk_shift(double pairs_per_claim);

// The list as the per-pair kernels read it: entries [0, *entries) are pairs and pads. Entry k
// is the pair (i(k), j[k]), or a pad when j[k] < 0 (the end of a claim: skip it).
struct PairListView {
  const int* j;
  const unsigned char* home;          // i(k) - chunk_first[k >> chunk_shift]
  const int* chunk_first;             // the first particle of each chunk's rows
  const unsigned long long* entries;  // on the device
  int chunk_shift;                    // log2 of the entries per chunk

  __device__ __forceinline__ int i(long long k) const {
    return __ldg(chunk_first + (k >> chunk_shift)) + static_cast<int>(__ldg(home + k));
  }
};

// How the search spreads its work over blocks (neighbor/gpu_pair_list.cu): 0 leaves the choice
// to the search (the grid's size against the device's); set for tests and measurements.
struct SearchShape {
  int parts = 0;   // warps per block, each walking that share of a cell's candidates: 4 or 16
  int splits = 0;  // blocks per cell, taking its passes of 32 home particles in turn
};

struct PairListInput {
  const float4* pos;    // xyz + type bits, in cell order
  const unsigned* tag;  // the user's index of each particle (exclusions are by tag)
  int n;
  const BoxGeometry<float>* box;  // in device memory (a barostat changes it between builds)
  const int* exclusions;          // [tag * exclusion_width + e] = excluded partner tag or -1
  int exclusion_width;            // 0: no exclusions
};

class GpuPairList {
 public:
  // `expected_per_particle` sizes the first buffers (partners per particle in this list).
  GpuPairList(float cutoff, float skin, bool full, bool columns, double expected_per_particle, int n);
  ~GpuPairList();
  GpuPairList(const GpuPairList&) = delete;
  GpuPairList& operator=(const GpuPairList&) = delete;

  // Builds the list and waits: it is complete on return (the launcher must issue at once).
  void build(Launcher& launcher, const PairListInput& in, const CellGridView& grid);
  // Enqueues the search without waiting: when something does not fit, the search sets
  // *short_flag (device memory) to 1 and the list is incomplete. Call settle() after the
  // stream has been synchronised, before the next build. Returns false when there was
  // nothing to search (no particles).
  bool enqueue_build(Launcher& launcher, const PairListInput& in, const CellGridView& grid, int* short_flag);
  // After a synchronisation: true if the last enqueued search fit (entries() is then valid); false
  // if it did not, in which case the buffers have grown and the list must be built again.
  bool settle();
  bool unsettled() const { return unsettled_; }
  // An enqueued search that never ran (the plan it was kept in failed to issue): forget it, back
  // to the unsettled state from before it.
  void abandon_build(bool was_unsettled) {
    --builds_;
    unsettled_ = was_unsettled;
  }

  // Entry k is pair (view().i(k), j()[k]), or a pad (j()[k] < 0); particle p's row is entries
  // [row_start(p), row_start(p) + row_count(p)), ascending j (never a pad).
  PairListView view() const { return {j_.data(), home_.data(), chunk_first_.data(), counter_.data(), chunk_shift_}; }
  int chunk() const { return 1 << chunk_shift_; }  // entries per chunk (of the last search)
  const int* j() const { return j_.data(); }
  const unsigned char* home() const { return home_.data(); }
  const int* chunk_first() const { return chunk_first_.data(); }
  const int* row_start() const { return row_start_.data(); }
  const int* row_count() const { return row_count_.data(); }
  // Columns: entries [p * col_width(), p * col_width() + col_count(p)) of cols() are the pairs
  // k with j()[k] == p, and their i.
  int col_width() const { return col_width_; }
  const int* col_count() const { return col_count_.data(); }
  const ColumnEntry* cols() const { return cols_.data(); }

  // The pairs of the last search (the sum of its row lengths): a reduction on the device after
  // waiting for the whole device, for tests and statistics; the step loop never needs it.
  long long count_pairs() const;
  int entries() const { return entries_; }  // pairs and pads
  // The entry count on the device, for kernels launched over capacity() (CUDA graphs keep their
  // launch sizes between builds).
  const unsigned long long* device_entries() const { return counter_.data(); }
  size_t capacity() const { return capacity_; }  // entries, a multiple of kMaxPairChunk
  bool full() const { return full_; }
  float cutoff() const { return cutoff_; }
  float skin() const { return skin_; }

  // Fixes how later searches spread their work (SearchShape's zeros: the search chooses).
  void set_shape(const SearchShape& shape);
  // How the last search spread its work.
  SearchShape last_shape() const;

  int64_t builds() const { return builds_; }
  int64_t growths() const { return growths_; }
  int staging() const { return staging_[wide_]; }  // partners a part of a row can stage in the last search
  size_t bytes() const;

 private:
  void prepare(int n);
  void enqueue_search(Launcher& launcher, const PairListInput& in, const CellGridView& grid, int* short_flag);

  float cutoff_, skin_;
  bool full_, columns_;
  size_t capacity_;
  int staging_[2];  // the partners a part can stage: four parts, sixteen
  int col_width_;
  int entries_ = 0;
  int n_ = 0;  // particles of the last build
  int chunk_shift_ = 4;
  bool unsettled_ = false;  // a search was enqueued and its counters not read yet
  int64_t builds_ = 0, growths_ = 0;
  SearchShape shape_;
  bool wide_ = false;  // the last search: sixteen parts
  int splits_ = 1;     // the last search: blocks per cell
  int sms_ = 1;
  int max_shared_ = 0;          // the device's largest dynamic shared memory per block
  int sm_shared_ = 0;           // shared memory per multiprocessor
  int shared_set_ = 48 * 1024;  // what the search kernels may use now
  static constexpr int kCounters = 3;

  DeviceBuffer<int> j_, chunk_first_, row_start_, row_count_;
  DeviceBuffer<unsigned char> home_;
  DeviceBuffer<int> col_count_, short_flag_;
  DeviceBuffer<ColumnEntry> cols_;
  DeviceBuffer<unsigned long long> counter_;    // [0] entries claimed, [1] the longest row part beyond
                                                // its staging, [2] the longest column beyond col_width_
  unsigned long long* host_counter_ = nullptr;  // pinned, kCounters entries
};

}  // namespace pairmd
