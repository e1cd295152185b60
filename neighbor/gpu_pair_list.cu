#include "neighbor/gpu_pair_list.cuh"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include "cuda/block_reduce.cuh"
#include "neighbor/cell_runs.h"

namespace pairmd {

namespace {

// Parts of a cell's candidate sequence, one warp each: a block per (cell, 32 home particles).
// Four where the grid has blocks enough to fill the GPU; sixteen where it has not (a small
// system, a few thousand particles: a block per multiprocessor, one warp per scheduler, whose
// walk is a chain of dependent instructions; Nsight at 4,000 particles: 4 % of the issue slots
// busy). Each warp then walks a sixteenth of the candidates, and the schedulers have four warps
// to switch between.
constexpr int kSearchParts = 4, kWideParts = 16;
// Candidates whose positions a warp loads at once in the search.
constexpr int kSearchBatch = 8;
// Staged pairs a lane copies out at once (their column claims in flight together).
constexpr int kCopyBatch = 4;

// The kernel's static shared arrays (count, offset, first_of, skip: 1.5 KB with four parts, 6 KB
// with sixteen), rounded up: the dynamic staging gets what the device allows beyond them.
constexpr size_t static_shared(int parts) { return 3 * 32 * sizeof(int) * parts + 512; }
// Shared memory the driver keeps per block.
constexpr size_t kDriverSharedPerBlock = 1024;

// Sum of v over lanes 0..lane of the warp (every lane calls it).
__device__ __forceinline__ int warp_inclusive_sum(int v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += y;
  }
  return v;
}

struct SearchArgs {
  PairListInput in;
  CellGridDims dims;
  StencilReach reach;
  const int* cell_start;
  float rlist_sq;
  int part_room;                // partners one part can stage for one home particle
  int group;                    // home particles per block pass: 32, fewer where rows are long
  int splits;                   // blocks per cell: block q takes passes q, q + splits, ...
  unsigned long long capacity;  // entries the output arrays hold (a multiple of the chunk)
  int* pj;
  unsigned char* home;  // i - chunk_first of each entry
  int* chunk_first;
  int chunk_shift;  // log2 of the entries per chunk
  int* row_start;
  int* row_count;
  ColumnEntry* cols;  // null: no columns (full lists, non-slot strategies)
  int* col_count;
  int col_width;                // column p is cols[p * col_width, + col_count[p])
  unsigned long long* counter;  // [0] entries claimed, [1] the most partners a part found beyond
                                // its staging, [2] the longest column beyond col_width
  int* short_flag;              // set to 1 when anything did not fit (the list is then incomplete)
};

// A block per cell (or per pass of a cell, below), kParts warps (kSearchParts or kWideParts):
// lane l of every warp stands for home particle l of the cell, and warp w walks the w-th of
// kParts consecutive chunks of the cell's candidate sequence (neighbor/cell_runs.h), the same
// for all its lanes (one load serves the warp, and the lanes run the same loop). Each lane
// stages the partners it finds, in ascending order, in shared memory. Then the block claims
// room for all the cell's rows with one integer atomicAdd and the warps copy their parts there,
// so every row is its parts in order: sorted, no sort.
// Cells of more than `group` (32, or fewer where rows are so long that 32 staged rows would not
// fit in shared memory) particles are done `group` home particles at a time, the passes shared
// among `splits` blocks per cell (one where the grid is large: the passes then run one after
// another in a block; more where it is small, so that a cell of 33 particles does not take
// twice as long as one of 32 while the GPU waits for it).
// With columns, the copy-out also files each pair in its j's column: a place claimed with an
// integer atomicAdd on the column's count, in a column of fixed width (no scan, no second pass
// over the pairs). A column longer than the width is reported and the host widens and searches
// again, as for rows.
// Blocks per multiprocessor, kMinBlocks: where the staging allows no more than five (long rows:
// 38 KB at 1M particles of the LJ liquid), five, and the registers that leaves (up to 102)
// keep the walk free of spills; the compiler's own choice, 64 registers, spilled in the
// candidate loop, to local memory that mostly missed the small L1 beside the staging (Nsight:
// 12M local requests per 1M-particle search). Where the staging is small (short rows: a
// polymer melt's WCA), eight blocks with 64 registers and some spills are faster.
// The wide kernel (kWideParts warps) runs where the grid is small: two blocks per multiprocessor
// (64 registers), so that a cell's passes split over two blocks still fit in one wave.
constexpr int kLongRowBlocks = 5, kShortRowBlocks = 8, kWideBlocks = 2;
// Grids with fewer cells than this per multiprocessor spread a cell's passes over blocks.
constexpr int kSplitCellsPerSm = 16;

// Where a search block keeps its pass over `homes` home particles from g0 (shared memory): the
// staged partners, and per part and home the count found, where the row's part goes, and where
// each home's staged pairs start in the part's numbering.
struct SearchPass {
  int* stage;  // part w, entry m of home l at [(w * part_room + m) * (group + 1) + l]
  int (*count)[32];
  int (*offset)[32];
  int (*first_of)[32];
  int stride;  // group + 1: a padded stride, so that the lanes of a warp hit different banks
  int g0, homes;
};

// The walk of this lane's home particle over part `part` of the cell's candidate sequence: the
// partners within reach staged in ascending order (as many as fit); returns how many it found.
template <bool kFull, int kParts, int kMinBlocks>
__device__ __forceinline__ int stage_partners(const SearchArgs& a, const SearchPass& s, int cx, int cy, int cz,
                                              const Vec3<float>& L, int lane, int part) {
  const int* cell_start = a.cell_start;
  const int h = s.g0 + lane;
  int found = 0;
  const float4 xh = a.in.pos[h];
  const int* ex =
      a.in.exclusion_width > 0 ? a.in.exclusions + static_cast<size_t>(a.in.tag[h]) * a.in.exclusion_width : nullptr;
  for_each_candidate_range(
      a.dims, a.reach, [cell_start](int cell) { return __ldg(cell_start + cell); }, cx, cy, cz, !kFull, part, kParts,
      [&](const CandidateRange& r) {
        // The home particle shifted by the range's image; whole periodic directions take the
        // minimum image per candidate (neighbor/cell_runs.h, shifted_separation).
        const float ox = r.sx == kAnyImage ? xh.x : xh.x - static_cast<float>(r.sx) * L.x;
        const float oy = r.sy == kAnyImage ? xh.y : xh.y - static_cast<float>(r.sy) * L.y;
        const float oz = r.sz == kAnyImage ? xh.z : xh.z - static_cast<float>(r.sz) * L.z;
        const bool any = r.sx == kAnyImage || r.sy == kAnyImage || r.sz == kAnyImage;
        const auto visit = [&](int k, float4 q) {
          float dx = ox - q.x, dy = oy - q.y, dz = oz - q.z;
          if (any) {
            if (r.sx == kAnyImage) dx = shifted_separation(dx, 0.f, kAnyImage, L.x);
            if (r.sy == kAnyImage) dy = shifted_separation(dy, 0.f, kAnyImage, L.y);
            if (r.sz == kAnyImage) dz = shifted_separation(dz, 0.f, kAnyImage, L.z);
          }
          bool take = dx * dx + dy * dy + dz * dz < a.rlist_sq && (kFull ? k != h : k > h);
          if (take && ex) {
            const int tag_k = static_cast<int>(__ldg(a.in.tag + k));
            for (int e = 0; e < a.in.exclusion_width; ++e) take = take && ex[e] != tag_k;
          }
          if (take) {
            if (found < a.part_room) s.stage[(part * a.part_room + found) * s.stride + lane] = k;
            ++found;
          }
        };
        // kSearchBatch candidates loaded before any is looked at: the body branches (the
        // staging, exclusions), and unrolled the compiler issued each load just before its
        // use, so every candidate waited out an L2 round trip on its own.
        // (Four in the short-row kernel: its 64 registers hold no more.)
        constexpr int batch = kMinBlocks == kLongRowBlocks ? kSearchBatch : 4;
        int k = r.begin;
        for (; k + batch <= r.end; k += batch) {
          float4 q[batch];
#pragma unroll
          for (int u = 0; u < batch; ++u) q[u] = __ldg(a.in.pos + k + u);
#pragma unroll
          for (int u = 0; u < batch; ++u) visit(k + u, q[u]);
        }
        for (; k < r.end; ++k) visit(k, __ldg(a.in.pos + k));
      });
  return found;
}

// Warp 0: each home's row (the sum of its parts), one claim of room for all the pass's rows,
// where each part goes, and the chunks' first particle. `skip` is set where something did not
// fit (the host grows and searches again).
template <int kParts>
__device__ __forceinline__ void claim_rows(const SearchArgs& a, const SearchPass& s, int lane, bool& skip) {
  const int h = s.g0 + lane;
  int row = 0, longest = 0;
#pragma unroll
  for (int w = 0; w < kParts; ++w) {
    row += s.count[w][lane];
    longest = max(longest, s.count[w][lane]);
  }
  if (longest > a.part_room) atomicMax(a.counter + 1, static_cast<unsigned long long>(longest));
  const bool overflowed = __any_sync(0xffffffffu, longest > a.part_room);
  const int incl = warp_inclusive_sum(row, lane);
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  // Whole chunks: the group's rows then fill chunks of their own, whose i are g0 + a byte.
  const int chunk = 1 << a.chunk_shift, padded = (total + chunk - 1) >> a.chunk_shift << a.chunk_shift;
  unsigned long long room = 0;
  if (lane == 31 && total > 0) room = atomicAdd(a.counter, static_cast<unsigned long long>(padded));
  room = __shfl_sync(0xffffffffu, room, 31);
  int next = static_cast<int>(room) + incl - row;
  if (lane < s.homes) {
    a.row_start[h] = next;
    a.row_count[h] = row;
  }
#pragma unroll
  for (int w = 0; w < kParts; ++w) {
    s.offset[w][lane] = next;
    next += s.count[w][lane];
  }
  const bool fits = !overflowed && room + padded <= a.capacity;
  if (lane == 0) {
    skip = !fits;
    if (skip) atomicExch(a.short_flag, 1);
  }
  if (fits && total > 0) {  // the chunks' first particle, and the pads after the last row
    for (int q = lane; q < padded >> a.chunk_shift; q += 32) a.chunk_first[(room >> a.chunk_shift) + q] = s.g0;
    if (lane < padded - total) {
      a.pj[room + total + lane] = -1;
      a.home[room + total + lane] = 0;
    }
  }
}

// The copy-out of part `part`, flattened: the part's staged pairs of all home particles are
// numbered f = first[i] + m (home i, its m-th partner in this part), and the lanes take
// kCopyBatch consecutive blocks of 32 of them at once. Every lane has work (a part of a row is
// about ten pairs, a third of a warp, so a loop over home particles left two thirds idle), and
// the column claims of kCopyBatch pairs per lane, returning atomics, are in flight together.
__device__ __forceinline__ void copy_out(const SearchArgs& a, const SearchPass& s, int lane, int part) {
  int* first = s.first_of[part];
  const int n_l = lane < s.homes ? s.count[part][lane] : 0;
  const int incl = warp_inclusive_sum(n_l, lane);
  first[lane] = lane < s.homes ? incl - n_l : INT_MAX;  // homes past the cell's end: never found
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  __syncwarp();
  for (int f0 = 0; f0 < total; f0 += 32 * kCopyBatch) {
    int j[kCopyBatch], at[kCopyBatch], home[kCopyBatch], place[kCopyBatch];
#pragma unroll
    for (int u = 0; u < kCopyBatch; ++u) {
      const int f = f0 + 32 * u + lane;
      at[u] = -1;
      if (f >= total) continue;
      // The home whose pairs hold f: the last i with first[i] <= f (homes without pairs
      // share their first with the next one, so the last is one with pairs).
      int i = 0;
#pragma unroll
      for (int q = 16; q > 0; q >>= 1)
        if (first[i + q] <= f) i += q;
      const int m = f - first[i];
      home[u] = s.g0 + i;
      j[u] = s.stage[(part * a.part_room + m) * s.stride + i];
      at[u] = s.offset[part][i] + m;
      a.pj[at[u]] = j[u];
      a.home[at[u]] = static_cast<unsigned char>(i);  // home[u] - g0: under 32
      if (a.cols) place[u] = atomicAdd(a.col_count + j[u], 1);
    }
    if (a.cols) {
#pragma unroll
      for (int u = 0; u < kCopyBatch; ++u) {
        if (at[u] < 0) continue;
        if (place[u] < a.col_width)
          a.cols[static_cast<size_t>(j[u]) * a.col_width + place[u]] = ColumnEntry{at[u], home[u]};
        else {
          atomicMax(a.counter + 2, static_cast<unsigned long long>(place[u] + 1));
          atomicExch(a.short_flag, 1);
        }
      }
    }
  }
}

template <bool kFull, int kParts, int kMinBlocks>
__global__ void __launch_bounds__(kParts * 32, kMinBlocks) search_kernel(SearchArgs a) {
  extern __shared__ int stage[];
  __shared__ int count[kParts][32], offset[kParts][32], first_of[kParts][32];
  __shared__ bool skip;
  const int lane = threadIdx.x & 31, part = threadIdx.x >> 5;
  const int cells = a.dims.cells(), c = blockIdx.x % cells, split = blockIdx.x / cells;
  const int cx = c % a.dims.nx, cy = (c / a.dims.nx) % a.dims.ny, cz = c / (a.dims.nx * a.dims.ny);
  const int cell_first = a.cell_start[c], cell_end = a.cell_start[c + 1];
  const Vec3<float> L = a.in.box->L;
  SearchPass s{stage, count, offset, first_of, a.group + 1, 0, 0};
  for (s.g0 = cell_first + split * a.group; s.g0 < cell_end; s.g0 += a.splits * a.group) {
    s.homes = min(a.group, cell_end - s.g0);
    count[part][lane] = lane < s.homes ? stage_partners<kFull, kParts, kMinBlocks>(a, s, cx, cy, cz, L, lane, part) : 0;
    __syncthreads();
    if (part == 0) claim_rows<kParts>(a, s, lane, skip);  // rows, the claim, and where each part goes
    __syncthreads();
    if (!skip) copy_out(a, s, lane, part);
    __syncthreads();  // the staging is reused by the next group
  }
}

int round_up(int v, int m) { return (v + m - 1) / m * m; }
size_t chunk_round_up(size_t v) { return (v + kMaxPairChunk - 1) / kMaxPairChunk * kMaxPairChunk; }
// The entries a search may claim: the output arrays' capacity, but below 2^31 (the kernels index
// entries with int), so a list that would pass it grows instead and settle() reports the limit.
unsigned long long claimable(size_t capacity) {
  return std::min<unsigned long long>(capacity,
                                      static_cast<unsigned long long>(INT_MAX) / kMaxPairChunk * kMaxPairChunk);
}

template <bool kFull>
void launch_search(Launcher& launcher, const SearchArgs& a, int shared, bool wide, bool short_rows, int blocks) {
  if (wide)
    launcher.kernel(PAIRMD_HERE, search_kernel<kFull, kWideParts, kWideBlocks>, blocks, kWideParts * 32, shared, a);
  else if (short_rows)
    launcher.kernel(PAIRMD_HERE, search_kernel<kFull, kSearchParts, kShortRowBlocks>, blocks, kSearchParts * 32, shared,
                    a);
  else
    launcher.kernel(PAIRMD_HERE, search_kernel<kFull, kSearchParts, kLongRowBlocks>, blocks, kSearchParts * 32, shared,
                    a);
}

template <bool kFull>
void allow_shared(int bytes) {
  constexpr auto attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
  PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<kFull, kSearchParts, kShortRowBlocks>, attr, bytes));
  PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<kFull, kSearchParts, kLongRowBlocks>, attr, bytes));
  PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<kFull, kWideParts, kWideBlocks>, attr, bytes));
}

// A part's staging for a row of about `per` partners split into `parts` parts, with room for
// fluctuations.
int part_room_for(double per, int parts) { return round_up(static_cast<int>(std::ceil(1.5 * per / parts)) + 8, 8); }

}  // namespace

int choose_chunk_shift(double pairs_per_claim) {
  int best = 2;
  double best_bytes = 1e300;
  for (int shift = 2; (1 << shift) <= kMaxPairChunk; ++shift) {
    const double chunk = 1 << shift;
    const double bytes = (5.0 + 4.0 / chunk) * (1.0 + 0.5 * (chunk - 1.0) / std::max(1.0, pairs_per_claim));
    if (bytes < best_bytes) {
      best_bytes = bytes;
      best = shift;
    }
  }
  return best;
}

GpuPairList::GpuPairList(float cutoff, float skin, bool full, bool columns, double expected_per_particle, int n)
    : cutoff_(cutoff), skin_(skin), full_(full), columns_(columns) {
  const double per = std::max(1.0, expected_per_particle);
  capacity_ = chunk_round_up(static_cast<size_t>(per * std::max(n, 1)) + 1);
  staging_[0] = part_room_for(per, kSearchParts);
  staging_[1] = part_room_for(per, kWideParts);
  // A column holds a particle's partners of lower index: about half of a full row.
  col_width_ = round_up(static_cast<int>(std::ceil(0.75 * per)) + 8, 8);
  int device = 0;
  PAIRMD_CUDA_CHECK(cudaGetDevice(&device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&sm_shared_, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_counter_, kCounters * sizeof(unsigned long long)));
  counter_.resize(kCounters);
  PAIRMD_CUDA_CHECK(cudaMemset(counter_.data(), 0, kCounters * sizeof(unsigned long long)));
}

GpuPairList::~GpuPairList() { cudaFreeHost(host_counter_); }

size_t GpuPairList::bytes() const {
  return j_.bytes() + home_.bytes() + chunk_first_.bytes() + row_start_.bytes() + row_count_.bytes() +
         col_count_.bytes() + cols_.bytes() + counter_.bytes();
}

void GpuPairList::enqueue_search(Launcher& launcher, const PairListInput& in, const CellGridView& grid,
                                 int* short_flag) {
  const double rlist = static_cast<double>(cutoff_) + skin_;
  SearchArgs a{};
  a.in = in;
  a.dims = grid.dims;
  a.reach = {reach_for(rlist, grid.cell_width[0]), reach_for(rlist, grid.cell_width[1]),
             reach_for(rlist, grid.cell_width[2])};
  a.cell_start = grid.cell_start;
  const float rl = cutoff_ + skin_;
  a.rlist_sq = rl * rl;
  a.counter = counter_.data();
  a.short_flag = short_flag;
  const int cells = grid.dims.cells();
  j_.resize(capacity_);
  home_.resize(capacity_);
  // A claim holds the rows of a cell's particles, at most 32 of them at a time, each with the
  // partners of a sphere of radius rlist at the cells' mean density (half of them in a half list).
  const double per_cell = static_cast<double>(in.n) / cells;
  const double partners = (4.0 / 3.0) * M_PI * rlist * rlist * rlist * (full_ ? 1.0 : 0.5) * per_cell /
                          (grid.cell_width[0] * grid.cell_width[1] * grid.cell_width[2]);
  chunk_shift_ = choose_chunk_shift(std::min(32.0, per_cell) * partners);
  chunk_first_.resize(capacity_ >> chunk_shift_);
  // The passes of `g` home particles the fullest cells are likely to need (the mean and four
  // standard deviations of a Poisson count; fuller cells take more passes, only later).
  const double fullest = per_cell + 4.0 * std::sqrt(per_cell) + 1.0;
  const auto passes_of = [fullest](int g) { return std::max(1, static_cast<int>(std::ceil(fullest / g))); };
  const int passes = passes_of(32);
  // Sixteen parts where four would leave most of the GPU idle: under a quarter of its threads
  // even with every pass in a block of its own.
  wide_ = shape_.parts > 0 ? shape_.parts == kWideParts
                           : static_cast<long long>(cells) * passes * kSearchParts * 32 < 512LL * sms_;
  const int parts = wide_ ? kWideParts : kSearchParts, room = staging_[wide_];
  // The staging of a block: fewer home particles per pass where rows are long. (One limit for
  // both kernels: the wide one's static arrays are the larger.)
  const size_t limit = static_cast<size_t>(max_shared_) - static_shared(kWideParts);
  int group = 32;
  const auto shared_for = [&](int g) { return static_cast<size_t>(parts) * room * (g + 1) * sizeof(int); };
  while (group > 1 && shared_for(group) > limit) group /= 2;
  if (shared_for(group) > limit)
    throw std::runtime_error("GPU pair list: a particle has more than " + std::to_string(parts * room) +
                             " partners within cutoff + skin (" + std::to_string(rlist) +
                             "), more than the search can stage; use a shorter cutoff or skin");
  const size_t shared = shared_for(group);
  if (static_cast<int>(shared) > shared_set_) {
    allow_shared<true>(static_cast<int>(limit));
    allow_shared<false>(static_cast<int>(limit));
    shared_set_ = static_cast<int>(limit);
  }
  // Room for kShortRowBlocks blocks on a multiprocessor: the short-row kernel.
  const bool short_rows =
      !wide_ && static_cast<size_t>(kShortRowBlocks) * (shared + static_shared(parts) + kDriverSharedPerBlock) <=
                    static_cast<size_t>(sm_shared_);
  // In grids of fewer than kSplitCellsPerSm cells per multiprocessor, a block per pass its
  // fullest cells are likely to need: the blocks of a cell's later passes run beside its first
  // instead of after it, and those with no particles left return at once. (In larger grids the
  // blocks queue up anyway, and the empty ones cost: 3 % of the step at 1M particles.)
  splits_ = shape_.splits > 0 ? shape_.splits : cells < kSplitCellsPerSm * sms_ ? passes_of(group) : 1;
  a.group = group;
  a.splits = splits_;
  a.part_room = room;
  a.capacity = claimable(capacity_);
  a.pj = j_.data();
  a.home = home_.data();
  a.chunk_first = chunk_first_.data();
  a.chunk_shift = chunk_shift_;
  a.row_start = row_start_.data();
  a.row_count = row_count_.data();
  if (columns_) {
    cols_.resize(static_cast<size_t>(col_width_) * in.n);
    a.cols = cols_.data();
    a.col_count = col_count_.data();
    a.col_width = col_width_;
    launcher.memset(PAIRMD_HERE, col_count_.data(), 0, in.n * sizeof(int));
  }
  launcher.memset(PAIRMD_HERE, counter_.data(), 0, kCounters * sizeof(unsigned long long));
  const int blocks = cells * splits_;
  if (full_)
    launch_search<true>(launcher, a, static_cast<int>(shared), wide_, short_rows, blocks);
  else
    launch_search<false>(launcher, a, static_cast<int>(shared), wide_, short_rows, blocks);
  launcher.copy(PAIRMD_HERE, host_counter_, counter_.data(), kCounters * sizeof(unsigned long long),
                cudaMemcpyDeviceToHost);
  unsettled_ = true;
}

bool GpuPairList::settle() {
  if (!unsettled_) return true;
  unsettled_ = false;
  const unsigned long long total = host_counter_[0], longest = host_counter_[1], longest_col = host_counter_[2];
  if (total > static_cast<unsigned long long>(INT_MAX))
    throw std::runtime_error(
        "GPU pair list: " + std::to_string(total) +
        " entries exceed the 2^31 a list can index; use a shorter cutoff or skin, or fewer particles");
  bool fits = true;
  int& room = staging_[wide_];                            // the kernel's that searched
  if (longest > static_cast<unsigned long long>(room)) {  // a part did not fit: more room
    room = round_up(static_cast<int>(longest + longest / 4) + 8, 8);
    ++growths_;
    fits = false;
  }
  if (longest_col > static_cast<unsigned long long>(col_width_)) {  // a column did not fit: wider columns
    col_width_ = round_up(static_cast<int>(longest_col + longest_col / 8) + 4,
                          8);  // every particle pays for the width: less headroom
    ++growths_;
    fits = false;
  }
  if (total > capacity_) {  // the claims beyond the buffer wrote nothing: grow, so no pair is ever dropped
    capacity_ = chunk_round_up(static_cast<size_t>(total * 1.25) + 1);
    ++growths_;
    fits = false;
  }
  if (fits) entries_ = static_cast<int>(total);
  return fits;
}

void GpuPairList::set_shape(const SearchShape& shape) {
  if (shape.parts != 0 && shape.parts != kSearchParts && shape.parts != kWideParts)
    throw std::invalid_argument("GPU pair list: a search block has " + std::to_string(kSearchParts) + " or " +
                                std::to_string(kWideParts) + " parts, not " + std::to_string(shape.parts));
  if (shape.splits < 0 || shape.splits > 64)
    throw std::invalid_argument("GPU pair list: blocks per cell from 1 to 64 (0: chosen), not " +
                                std::to_string(shape.splits));
  shape_ = shape;
}

SearchShape GpuPairList::last_shape() const { return {wide_ ? kWideParts : kSearchParts, splits_}; }

long long GpuPairList::count_pairs() const {
  if (n_ == 0) return 0;
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
  return thrust::reduce(thrust::device, row_count_.data(), row_count_.data() + n_, 0LL);
}

void GpuPairList::prepare(int n) {
  n_ = n;
  row_start_.resize(std::max(n, 1));
  row_count_.resize(std::max(n, 1));
  if (columns_) col_count_.resize(std::max(n, 1));
  short_flag_.resize(1);
}

bool GpuPairList::enqueue_build(Launcher& launcher, const PairListInput& in, const CellGridView& grid,
                                int* short_flag) {
  prepare(in.n);
  ++builds_;
  if (in.n == 0) {
    entries_ = 0;
    launcher.memset(PAIRMD_HERE, counter_.data(), 0, sizeof(unsigned long long));
    return false;
  }
  enqueue_search(launcher, in, grid, short_flag);
  return true;
}

void GpuPairList::build(Launcher& launcher, const PairListInput& in, const CellGridView& grid) {
  prepare(in.n);
  ++builds_;
  if (in.n == 0) {
    entries_ = 0;
    launcher.memset(PAIRMD_HERE, counter_.data(), 0, sizeof(unsigned long long));
    return;
  }
  do {
    enqueue_search(launcher, in, grid, short_flag_.data());
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(launcher.stream()));
  } while (!settle());
}

}  // namespace pairmd
