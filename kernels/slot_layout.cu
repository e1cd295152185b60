#include "kernels/slot_layout.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "kernels/block_reduce.cuh"
#include "neighbor/gpu_pair_list.cuh"

namespace pairmd {

namespace {

inline int blocks_for(size_t n) { return static_cast<int>((n + kBlockSize - 1) / kBlockSize); }

__global__ void count_j_kernel(const int* j, int count, int* count_j, int* order) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  atomicAdd(count_j + j[k], 1);  // an integer histogram: the result does not depend on order
  order[k] = k;
}

// Width of each chunk of 32 particles (the last entry, one past the chunks, is 0 so the
// exclusive scan yields the total).
__global__ void chunk_width_kernel(const int* count_j, int n, int* width, int nchunks) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > nchunks) return;
  int w = 0;
  if (c < nchunks)
    for (int p = c * 32; p < min(n, c * 32 + 32); ++p) w = max(w, count_j[p]);
  width[c] = w;
}

__device__ __forceinline__ int slot_address(const int* chunk_base, int p, int s) {
  return (chunk_base[p >> 5] + s) * 32 + (p & 31);
}

__global__ void j_side_kernel(const int* j_sorted, const int* order_sorted, const int* col_start, const int* chunk_base,
                              int count, int* jslot) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  const int b = j_sorted[t];
  jslot[order_sorted[t]] = slot_address(chunk_base, b, t - col_start[b]);
}

}  // namespace

size_t SlotLayout::bytes() const {
  return count_j_.bytes() + col_start_.bytes() + width_.bytes() + order_.bytes() + order_sorted_.bytes() +
         keys_sorted_.bytes() + chunk_base_.bytes() + jslot_.bytes() + jslots_.bytes() + islots_.bytes() + cub_temp_.bytes();
}

void SlotLayout::build(const int* i, const int* j, const int* row_start, const int* row_count, int count, int n,
                       cudaStream_t s) {
  if (!host_total_) PAIRMD_CUDA_CHECK(cudaMallocHost(&host_total_, sizeof(int)));
  count_ = count;
  row_start_ = row_start;
  row_count_ = row_count;
  const int nchunks = (n + 31) / 32;
  count_j_.resize(n);
  col_start_.resize(n);
  chunk_base_.resize(nchunks + 1);
  order_.resize(std::max(count, 1));
  order_sorted_.resize(std::max(count, 1));
  keys_sorted_.resize(std::max(count, 1));
  jslot_.resize(std::max(count, 1));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(count_j_.data(), 0, n * sizeof(int), s));
  if (count > 0) {
    count_j_kernel<<<blocks_for(count), kBlockSize, 0, s>>>(j, count, count_j_.data(), order_.data());
    PAIRMD_CHECK_LAUNCH();
  }
  DeviceBuffer<int>& width = width_;
  width.resize(nchunks + 1);
  chunk_width_kernel<<<blocks_for(nchunks + 1), kBlockSize, 0, s>>>(count_j_.data(), n, width.data(), nchunks);
  PAIRMD_CHECK_LAUNCH();

  size_t t1 = 0, t2 = 0, t3 = 0;
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t1, count_j_.data(), col_start_.data(), n, s));
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t2, width.data(), chunk_base_.data(), nchunks + 1, s));
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, t3, j, keys_sorted_.data(), order_.data(), order_sorted_.data(),
                                                    count, 0, bits_for(n), s));
  cub_temp_.reserve_grow(std::max({t1, t2, t3}));
  size_t t = cub_temp_.capacity();
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), t, count_j_.data(), col_start_.data(), n, s));
  t = cub_temp_.capacity();
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), t, width.data(), chunk_base_.data(), nchunks + 1, s));
  if (count > 0) {
    t = cub_temp_.capacity();
    // Stable: pairs with the same j keep their order by i.
    PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp_.data(), t, j, keys_sorted_.data(), order_.data(),
                                                      order_sorted_.data(), count, 0, bits_for(n), s));
  }
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_total_, chunk_base_.data() + nchunks, sizeof(int), cudaMemcpyDeviceToHost, s));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(s));
  jslots_.reserve_grow(static_cast<size_t>(*host_total_) * 32 + 1);
  islots_.reserve_grow(std::max(count, 1));
  if (count > 0) {
    j_side_kernel<<<blocks_for(count), kBlockSize, 0, s>>>(keys_sorted_.data(), order_sorted_.data(), col_start_.data(),
                                                           chunk_base_.data(), count, jslot_.data());
    PAIRMD_CHECK_LAUNCH();
  }
}

}  // namespace pairmd
