#include "neighbor/gpu_pair_list.cuh"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/block_reduce.cuh"
#include "neighbor/cell_runs.h"

namespace pairmd {

namespace {

// Threads per particle in the search: more threads in flight hide the latency of the
// candidate loop (measured in docs/benchmarks.md). They are neighbouring lanes of one warp.
constexpr int kSearchSplit = 4;
constexpr int kSearchBlock = 128;

struct SearchArgs {
  PairListInput in;
  CellGridDims dims;
  StencilReach reach;
  const int* cell_of;
  const int* cell_start;
  float rlist_sq;
  int staging;                    // partners a thread can stage in shared memory
  unsigned long long capacity;    // pairs the output arrays hold
  int* pi;
  int* pj;
  int* row_start;
  int* row_count;
  int* col_count;                 // columns only
  int* col_place;
  unsigned long long* counter;    // [0] pairs claimed, [1] most partners one thread found beyond staging
};

// One pass: walk, stage, claim, copy out. Inactive lanes (past the last particle) stay for the
// warp's shuffles.
template <bool kFull, bool kColumns>
__global__ void __launch_bounds__(kSearchBlock) search_kernel(SearchArgs a) {
  extern __shared__ int stage[];  // stage[m * blockDim.x + threadIdx.x]: no bank conflicts
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int i = static_cast<int>(t / kSearchSplit);
  const int part = static_cast<int>(t % kSearchSplit);
  const bool active = i < a.in.n;
  int found = 0;
  if (active) {
    const float4 xi = a.in.pos[i];
    const int c = a.cell_of[i];
    const int cx = c % a.dims.nx, cy = (c / a.dims.nx) % a.dims.ny, cz = c / (a.dims.nx * a.dims.ny);
    const int* ex = a.in.exclusion_width > 0 ? a.in.exclusions + static_cast<size_t>(a.in.tag[i]) * a.in.exclusion_width
                                             : nullptr;
    const Vec3<float> L = a.in.box.L;
    const int* cell_start = a.cell_start;
    for_each_candidate_range(a.dims, a.reach, [cell_start](int cell) { return __ldg(cell_start + cell); }, cx, cy, cz, i,
                             !kFull, part, kSearchSplit, [&](const CandidateRange& r) {
      for (int k = r.begin; k < r.end; ++k) {
        const float4 q = __ldg(a.in.pos + k);
        const float dx = shifted_separation(xi.x, q.x, r.sx, L.x);
        const float dy = shifted_separation(xi.y, q.y, r.sy, L.y);
        const float dz = shifted_separation(xi.z, q.z, r.sz, L.z);
        bool take = dx * dx + dy * dy + dz * dz < a.rlist_sq;
        if (kFull) take = take && k != i;
        if (take && ex) {
          const int tag_k = static_cast<int>(__ldg(a.in.tag + k));
          for (int e = 0; e < a.in.exclusion_width; ++e) take = take && ex[e] != tag_k;
        }
        if (take) {
          if (found < a.staging) stage[found * blockDim.x + threadIdx.x] = k;
          ++found;
        }
      }
    });
  }
  int incl = found;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  const bool overflowed = __any_sync(0xffffffffu, found > a.staging);
  if (found > a.staging) atomicMax(a.counter + 1, static_cast<unsigned long long>(found));
  // 64-bit claims, so an impossible total (> 2^31 pairs) is seen on the host, not wrapped.
  unsigned long long room = 0;
  if (lane == 31 && total > 0) room = atomicAdd(a.counter, static_cast<unsigned long long>(total));
  room = __shfl_sync(0xffffffffu, room, 31);
  int row = found;  // a particle's parts are kSearchSplit aligned lanes: add them up
#pragma unroll
  for (int o = 1; o < kSearchSplit; o <<= 1) row += __shfl_xor_sync(0xffffffffu, row, o);
  const unsigned long long first = room + incl - found;
  if (active && part == 0) {
    a.row_start[i] = static_cast<int>(first);
    a.row_count[i] = row;
  }
  if (!active || overflowed || room + total > a.capacity) return;  // the host grows and searches again
  for (int m = 0; m < found; ++m) {
    const int j = stage[m * blockDim.x + threadIdx.x];
    const size_t k = first + m;
    a.pj[k] = j;
    a.pi[k] = i;
    if (kColumns) a.col_place[k] = atomicAdd(a.col_count + j, 1);
  }
}

// Pair k goes to place col_place[k] of its j's column.
__global__ void scatter_columns_kernel(const int* pi, const int* pj, const int* col_place, const int* col_start, int count,
                                       int* col_pair, int* col_partner) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const int e = col_start[pj[k]] + col_place[k];
  col_pair[e] = k;
  col_partner[e] = pi[k];
}

int round_up(int v, int m) { return (v + m - 1) / m * m; }

}  // namespace

GpuPairList::GpuPairList(float cutoff, float skin, bool full, bool columns, double expected_per_particle, int n)
    : cutoff_(cutoff), skin_(skin), full_(full), columns_(columns) {
  const double per = std::max(1.0, expected_per_particle);
  capacity_ = static_cast<size_t>(per * std::max(n, 1)) + 1;
  // Chunks are a quarter of a row; fluctuations stay well inside twice that.
  staging_ = round_up(static_cast<int>(std::ceil(2.0 * per / kSearchSplit)) + 4, 4);
  int device = 0;
  PAIRMD_CUDA_CHECK(cudaGetDevice(&device));
  PAIRMD_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_counter_, 2 * sizeof(unsigned long long)));
  counter_.resize(2);
  PAIRMD_CUDA_CHECK(cudaMemset(counter_.data(), 0, 2 * sizeof(unsigned long long)));
}

GpuPairList::~GpuPairList() { cudaFreeHost(host_counter_); }

size_t GpuPairList::bytes() const {
  return i_.bytes() + j_.bytes() + row_start_.bytes() + row_count_.bytes() + col_count_.bytes() + col_start_.bytes() +
         col_place_.bytes() + col_pair_.bytes() + col_partner_.bytes() + counter_.bytes() + cub_temp_.bytes();
}

template <bool kFull, bool kColumns>
void launch_search(const SearchArgs& a, int threads_per_block, int shared, size_t threads, cudaStream_t stream) {
  const int blocks = static_cast<int>((threads + threads_per_block - 1) / threads_per_block);
  search_kernel<kFull, kColumns><<<blocks, threads_per_block, shared, stream>>>(a);
  PAIRMD_CHECK_LAUNCH();
}

void GpuPairList::search(const PairListInput& in, const CellGridView& grid, cudaStream_t stream) {
  const int n = in.n;
  const double rlist = static_cast<double>(cutoff_) + skin_;
  SearchArgs a{};
  a.in = in;
  a.dims = grid.dims;
  a.reach = {reach_for(rlist, grid.cell_width[0]), reach_for(rlist, grid.cell_width[1]),
             reach_for(rlist, grid.cell_width[2])};
  a.cell_of = grid.cell_of;
  a.cell_start = grid.cell_start;
  const float rl = cutoff_ + skin_;
  a.rlist_sq = rl * rl;
  a.counter = counter_.data();
  const size_t threads = static_cast<size_t>(n) * kSearchSplit;
  for (;;) {
    i_.resize(capacity_);
    j_.resize(capacity_);
    if (columns_) col_place_.resize(capacity_);
    // The staging buffer of a block: smaller blocks where a thread must stage many partners.
    int block = kSearchBlock;
    while (block > 32 && static_cast<size_t>(staging_) * block * sizeof(int) > static_cast<size_t>(max_shared_)) block /= 2;
    const size_t shared = static_cast<size_t>(staging_) * block * sizeof(int);
    if (shared > static_cast<size_t>(max_shared_))
      throw std::runtime_error("GPU pair list: a particle has more than " + std::to_string(kSearchSplit * (staging_ - 1)) +
                               " partners within cutoff + skin (" + std::to_string(rlist) +
                               "), more than one search thread can stage; use a shorter cutoff or skin");
    if (static_cast<int>(shared) > shared_set_) {
      PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<true, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_shared_));
      PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<false, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_shared_));
      PAIRMD_CUDA_CHECK(cudaFuncSetAttribute(search_kernel<false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_shared_));
      shared_set_ = max_shared_;
    }
    a.staging = staging_;
    a.capacity = capacity_;
    a.pi = i_.data();
    a.pj = j_.data();
    a.row_start = row_start_.data();
    a.row_count = row_count_.data();
    a.col_count = columns_ ? col_count_.data() : nullptr;
    a.col_place = columns_ ? col_place_.data() : nullptr;
    PAIRMD_CUDA_CHECK(cudaMemsetAsync(counter_.data(), 0, 2 * sizeof(unsigned long long), stream));
    if (columns_) PAIRMD_CUDA_CHECK(cudaMemsetAsync(col_count_.data(), 0, (n + 1) * sizeof(int), stream));
    if (full_) launch_search<true, false>(a, block, static_cast<int>(shared), threads, stream);
    else if (columns_) launch_search<false, true>(a, block, static_cast<int>(shared), threads, stream);
    else launch_search<false, false>(a, block, static_cast<int>(shared), threads, stream);
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_counter_, counter_.data(), 2 * sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, stream));
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
    const unsigned long long total = host_counter_[0], most = host_counter_[1];
    if (total > static_cast<unsigned long long>(INT_MAX))
      throw std::runtime_error("GPU pair list: " + std::to_string(total) +
                               " pairs exceed the 2^31 a list can index; use a shorter cutoff or skin, or fewer particles");
    bool again = false;
    if (most > static_cast<unsigned long long>(staging_)) {  // grow the staging, then search again
      staging_ = round_up(static_cast<int>(most + most / 4) + 4, 4);
      ++growths_;
      again = true;
    }
    if (total > capacity_) {  // nothing was written: grow first, so no pair is ever dropped
      capacity_ = static_cast<size_t>(total * 1.25) + 1;
      ++growths_;
      again = true;
    }
    if (!again) {
      count_ = static_cast<int>(total);
      return;
    }
  }
}

void GpuPairList::build(const PairListInput& in, const CellGridView& grid, cudaStream_t stream) {
  const int n = in.n;
  row_start_.resize(std::max(n, 1));
  row_count_.resize(std::max(n, 1));
  if (columns_) {
    col_count_.resize(n + 1);  // the extra 0 makes the scan's last entry the total
    col_start_.resize(n + 1);
  }
  if (n == 0) {
    count_ = 0;
    PAIRMD_CUDA_CHECK(cudaMemsetAsync(counter_.data(), 0, sizeof(unsigned long long), stream));
    ++builds_;
    return;
  }
  search(in, grid, stream);
  if (columns_) {
    col_pair_.resize(capacity_);
    col_partner_.resize(capacity_);
    size_t temp = 0;
    PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp, col_count_.data(), col_start_.data(), n + 1, stream));
    cub_temp_.reserve_grow(temp);
    temp = cub_temp_.capacity();
    PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), temp, col_count_.data(), col_start_.data(), n + 1, stream));
    if (count_ > 0) {
      scatter_columns_kernel<<<blocks_for(count_), kBlockSize, 0, stream>>>(i_.data(), j_.data(), col_place_.data(),
                                                                            col_start_.data(), count_, col_pair_.data(),
                                                                            col_partner_.data());
      PAIRMD_CHECK_LAUNCH();
    }
  }
  ++builds_;
}

}  // namespace pairmd
