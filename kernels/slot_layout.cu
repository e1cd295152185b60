#include "kernels/slot_layout.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "kernels/block_reduce.cuh"
#include "neighbor/gpu_pair_list.cuh"

namespace pairmd {

namespace {

__global__ void count_j_kernel(const int* j, int count, int* col_count, int* order) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  atomicAdd(col_count + j[k], 1);  // an integer histogram: the result does not depend on order
  order[k] = k;
}

}  // namespace

size_t SlotLayout::bytes() const {
  return col_count_.bytes() + col_start_.bytes() + order_.bytes() + keys_sorted_.bytes() + col_pair_.bytes() +
         slots_.bytes() + cub_temp_.bytes();
}

void SlotLayout::build(const int* j, const int* row_start, const int* row_count, int count, int n,
                       cudaStream_t s) {
  // The list is sorted by i: the stable sort by j below keeps ascending i inside each group.
  count_ = count;
  row_start_ = row_start;
  row_count_ = row_count;
  const size_t room = std::max(count, 1);
  col_count_.resize(n);
  col_start_.resize(n);
  order_.reserve_grow(room);
  keys_sorted_.reserve_grow(room);
  col_pair_.reserve_grow(room);
  slots_.reserve_grow(room);
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(col_count_.data(), 0, n * sizeof(int), s));
  if (count > 0) {
    count_j_kernel<<<blocks_for(count), kBlockSize, 0, s>>>(j, count, col_count_.data(), order_.data());
    PAIRMD_CHECK_LAUNCH();
  }
  size_t t1 = 0, t2 = 0;
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t1, col_count_.data(), col_start_.data(), n, s));
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, t2, j, keys_sorted_.data(), order_.data(), col_pair_.data(),
                                                    count, 0, bits_for(n), s));
  cub_temp_.reserve_grow(std::max(t1, t2));
  size_t t = cub_temp_.capacity();
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), t, col_count_.data(), col_start_.data(), n, s));
  if (count > 0) {
    t = cub_temp_.capacity();
    // Stable: pairs with the same j keep their (ascending) order by i.
    PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp_.data(), t, j, keys_sorted_.data(), order_.data(),
                                                      col_pair_.data(), count, 0, bits_for(n), s));
  }
}

}  // namespace pairmd
