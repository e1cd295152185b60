#include "neighbor/gpu_pair_list.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/block_reduce.cuh"

namespace pairmd {

int bits_for(int n) {
  int b = 1;
  while (b < 31 && (1 << b) < n) ++b;
  return b;
}

namespace {

__device__ __forceinline__ Vec3<float> xyz(float4 p) { return {p.x, p.y, p.z}; }

// Ordered-int encoding of floats so integer atomicMin/Max compare them correctly.
__device__ __forceinline__ int float_order(float f) {
  const int b = __float_as_int(f);
  return b >= 0 ? b : b ^ 0x7fffffff;
}
__host__ __device__ inline float order_float(int b) {
  const int f = b >= 0 ? b : b ^ 0x7fffffff;
#ifdef __CUDA_ARCH__
  return __int_as_float(f);
#else
  float r;
  std::memcpy(&r, &f, sizeof r);
  return r;
#endif
}

__global__ void bounding_box_kernel(const float4* pos, int n, int* out /* min xyz, max xyz */) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float4 p = t < n ? pos[t] : pos[0];
  const float v[3] = {p.x, p.y, p.z};
  for (int d = 0; d < 3; ++d) {
    const float lo = block_reduce(v[d], MinOp{}, v[d]);
    const float hi = block_reduce(v[d], MaxOp{}, v[d]);
    if (threadIdx.x == 0) {
      atomicMin(out + d, float_order(lo));
      atomicMax(out + 3 + d, float_order(hi));
    }
  }
}

__global__ void assign_cells_kernel(const float4* pos, int n, float3 lo, float3 inv, int3 dims, int* cell_of, int* index) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float4 p = pos[i];
  const int cx = min(dims.x - 1, max(0, __float2int_rd((p.x - lo.x) * inv.x)));
  const int cy = min(dims.y - 1, max(0, __float2int_rd((p.y - lo.y) * inv.y)));
  const int cz = min(dims.z - 1, max(0, __float2int_rd((p.z - lo.z) * inv.z)));
  cell_of[i] = (cz * dims.y + cy) * dims.x + cx;
  index[i] = i;
}

__global__ void cell_bounds_kernel(const int* cell_sorted, int n, int* start, int* end) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const int c = cell_sorted[t];
  if (t == 0 || cell_sorted[t - 1] != c) start[c] = t;
  if (t == n - 1 || cell_sorted[t + 1] != c) end[c] = t + 1;
}

struct CellGrid {
  const int* cell_of;
  const int* particles;     // particle indices in cell order
  const float4* cell_pos;   // their positions, in the same order: a cell's candidates are contiguous
  const unsigned* cell_tag; // their tags
  const int* start;
  const int* end;
  int3 dims;
  bool periodic;
};

__global__ void gather_cell_order_kernel(const float4* pos, const unsigned* tag, const int* particles, int n,
                                         float4* cell_pos, unsigned* cell_tag) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const int i = particles[k];
  cell_pos[k] = pos[i];
  cell_tag[k] = tag[i];
}

// Work item t of a search: particle particles[t / 27] against neighbour cell t % 27. Returns
// false when that neighbour cell does not exist (open boundary) or repeats another one (a
// periodic direction of 1 or 2 cells, where the -1 and +1 shifts meet).
__device__ __forceinline__ bool neighbour_cell(const CellGrid& g, int i, int shift, int& cell) {
  const int c = g.cell_of[i];
  int x = c % g.dims.x, y = (c / g.dims.x) % g.dims.y, z = c / (g.dims.x * g.dims.y);
  const int o[3] = {shift % 3 - 1, (shift / 3) % 3 - 1, shift / 9 - 1};
  int* q[3] = {&x, &y, &z};
  const int n[3] = {g.dims.x, g.dims.y, g.dims.z};
  for (int d = 0; d < 3; ++d) {
    if (g.periodic) {
      if (n[d] == 1 && o[d] != 0) return false;
      if (n[d] == 2 && o[d] == 1) return false;
      *q[d] = (*q[d] + o[d] + n[d]) % n[d];
    } else {
      *q[d] += o[d];
      if (*q[d] < 0 || *q[d] >= n[d]) return false;
    }
  }
  cell = (z * g.dims.y + y) * g.dims.x + x;
  return true;
}

// Calls f(j) for every partner j of particle i in one cell within rlist (j > i for half lists).
template <bool kFull, typename F>
__device__ __forceinline__ void for_each_partner_in_cell(int i, int cell, const PairListInput& in, const CellGrid& g,
                                                         float rlist_sq, F&& f) {
  const float4 pi = in.pos[i];
  const unsigned tag_i = in.tag[i];
  const int e = g.end[cell];
  for (int k = g.start[cell]; k < e; ++k) {
    const int j = g.particles[k];
    if (kFull ? j == i : j <= i) continue;
    const float4 pj = g.cell_pos[k];
    const Vec3<float> d = in.box.min_image(xyz(pi) - xyz(pj));
    if (dot(d, d) >= rlist_sq) continue;
    bool excluded = false;
    if (in.exclusion_width > 0) {
      const unsigned tag_j = g.cell_tag[k];
      const int* ex = in.exclusions + static_cast<size_t>(tag_i) * in.exclusion_width;
      for (int q = 0; q < in.exclusion_width; ++q) excluded |= ex[q] == static_cast<int>(tag_j);
    }
    if (!excluded) f(j);
  }
}

// One thread per (particle, neighbour cell): 27 times the parallelism of a thread per particle,
// and each thread's loop is one cell long.
template <bool kFull>
__global__ void count_pairs_kernel(PairListInput in, CellGrid g, float rlist_sq, int* row_count, int* item_offset,
                                   int* counter) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  int count = 0, cell;
  int i = -1;
  if (t < 27L * in.n) {
    i = g.particles[t / 27];
    if (neighbour_cell(g, i, static_cast<int>(t % 27), cell))
      for_each_partner_in_cell<kFull>(i, cell, in, g, rlist_sq, [&](int) { ++count; });
    if (count) atomicAdd(row_count + i, count);  // integer: the total does not depend on order
  }
  // One integer atomicAdd per warp claims room for all its threads' pairs.
  int incl = count;
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  int base = 0;
  if (lane == 31 && total > 0) base = atomicAdd(counter, total);
  base = __shfl_sync(0xffffffffu, base, 31);
  if (i >= 0) item_offset[t] = base + incl - count;
}

template <bool kFull>
__global__ void write_pairs_kernel(PairListInput in, CellGrid g, float rlist_sq, const int* item_offset, int* pi, int* pj) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= 27L * in.n) return;
  const int i = g.particles[t / 27];
  int cell;
  if (!neighbour_cell(g, i, static_cast<int>(t % 27), cell)) return;
  int out = item_offset[t];
  for_each_partner_in_cell<kFull>(i, cell, in, g, rlist_sq, [&](int j) {
    pi[out] = i;
    pj[out] = j;
    ++out;
  });
}

inline int blocks_for(size_t n) { return static_cast<int>((n + kBlockSize - 1) / kBlockSize); }

}  // namespace

GpuPairList::GpuPairList(float cutoff, float skin, bool full, size_t initial_capacity)
    : cutoff_(cutoff), skin_(skin), full_(full), capacity_(std::max<size_t>(initial_capacity, 1)) {
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_counter_, sizeof(int)));
  counter_.resize(1);
  bounds_.resize(6);
}

size_t GpuPairList::bytes() const {
  return cell_of_.bytes() + cell_sorted_.bytes() + cell_index_.bytes() + cell_particles_.bytes() + cell_start_.bytes() +
         cell_end_.bytes() + cell_pos_.bytes() + cell_tag_.bytes() + row_count_.bytes() + row_offset_.bytes() + row_start_.bytes() + i_unsorted_.bytes() +
         j_unsorted_.bytes() + i_sorted_.bytes() + j_sorted_.bytes() + cub_temp_.bytes();
}

void GpuPairList::build_cells(const PairListInput& in, cudaStream_t stream) {
  const float rlist = cutoff_ + skin_;
  float lo[3] = {in.box.lo.x, in.box.lo.y, in.box.lo.z};
  float len[3] = {in.box.L.x, in.box.L.y, in.box.L.z};
  if (!in.box.periodic) {
    // Open boundaries: the grid covers the particles' bounding box, read back once per build.
    int init[6];
    for (int d = 0; d < 3; ++d) {
      init[d] = 0x7fffffff;
      init[3 + d] = static_cast<int>(0x80000000u);
    }
    DeviceBuffer<int> box(6);
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(box.data(), init, sizeof init, cudaMemcpyHostToDevice, stream));
    bounding_box_kernel<<<blocks_for(in.n), kBlockSize, 0, stream>>>(in.pos, in.n, box.data());
    PAIRMD_CHECK_LAUNCH();
    int out[6];
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(out, box.data(), sizeof out, cudaMemcpyDeviceToHost, stream));
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int d = 0; d < 3; ++d) {
      lo[d] = order_float(out[d]);
      len[d] = order_float(out[3 + d]) - lo[d] + 1e-4f;
    }
  }
  // About two cells per particle at most, so far-flung particles cannot blow the grid up.
  const double max_per_dim = std::cbrt(2.0 * std::max(in.n, 1)) + 1;
  for (int d = 0; d < 3; ++d) {
    int k = static_cast<int>(std::floor(len[d] / rlist));
    dims_[d] = std::max(1, std::min(k, static_cast<int>(max_per_dim)));
  }
  cell_lo_ = make_float3(lo[0], lo[1], lo[2]);
  cell_inv_ = make_float3(dims_[0] / len[0], dims_[1] / len[1], dims_[2] / len[2]);
  const int ncell = dims_[0] * dims_[1] * dims_[2];

  const int n = in.n;
  cell_of_.resize(n);
  cell_sorted_.resize(n);
  cell_index_.resize(n);
  cell_particles_.resize(n);
  cell_start_.resize(ncell);
  cell_end_.resize(ncell);
  assign_cells_kernel<<<blocks_for(n), kBlockSize, 0, stream>>>(in.pos, n, cell_lo_, cell_inv_,
                                                                 make_int3(dims_[0], dims_[1], dims_[2]),
                                                                 cell_of_.data(), cell_index_.data());
  PAIRMD_CHECK_LAUNCH();
  size_t temp = 0;
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, cell_of_.data(), cell_sorted_.data(), cell_index_.data(),
                                                    cell_particles_.data(), n, 0, bits_for(ncell), stream));
  cub_temp_.reserve_grow(temp);
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp_.data(), temp, cell_of_.data(), cell_sorted_.data(),
                                                    cell_index_.data(), cell_particles_.data(), n, 0, bits_for(ncell), stream));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(cell_start_.data(), 0, ncell * sizeof(int), stream));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(cell_end_.data(), 0, ncell * sizeof(int), stream));
  cell_bounds_kernel<<<blocks_for(n), kBlockSize, 0, stream>>>(cell_sorted_.data(), n, cell_start_.data(), cell_end_.data());
  PAIRMD_CHECK_LAUNCH();
  cell_pos_.resize(n);
  cell_tag_.resize(n);
  gather_cell_order_kernel<<<blocks_for(n), kBlockSize, 0, stream>>>(in.pos, in.tag, cell_particles_.data(), n,
                                                                     cell_pos_.data(), cell_tag_.data());
  PAIRMD_CHECK_LAUNCH();
}

void GpuPairList::build(const PairListInput& in, cudaStream_t stream) {
  const int n = in.n;
  if (n == 0) {
    count_ = 0;
    return;
  }
  build_cells(in, stream);
  const CellGrid g{cell_of_.data(), cell_particles_.data(), cell_pos_.data(), cell_tag_.data(), cell_start_.data(),
                   cell_end_.data(), make_int3(dims_[0], dims_[1], dims_[2]), in.box.periodic};
  const float rlist = cutoff_ + skin_;
  const float rlist_sq = rlist * rlist;
  row_count_.resize(n + 1);  // the extra 0 makes the scan's last entry the total
  row_offset_.resize(27 * static_cast<size_t>(n));
  row_start_.resize(n + 1);
  const size_t items = 27 * static_cast<size_t>(n);
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(counter_.data(), 0, sizeof(int), stream));
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(row_count_.data(), 0, (n + 1) * sizeof(int), stream));
  if (full_) count_pairs_kernel<true><<<blocks_for(items), kBlockSize, 0, stream>>>(in, g, rlist_sq, row_count_.data(), row_offset_.data(), counter_.data());
  else count_pairs_kernel<false><<<blocks_for(items), kBlockSize, 0, stream>>>(in, g, rlist_sq, row_count_.data(), row_offset_.data(), counter_.data());
  PAIRMD_CHECK_LAUNCH();
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_counter_, counter_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  count_ = *host_counter_;

  // Nothing has been written yet: grow first, so no pair is ever dropped.
  if (static_cast<size_t>(count_) > capacity_) {
    capacity_ = static_cast<size_t>(count_ * 1.25) + 1;
    ++growths_;
  }
  i_unsorted_.resize(capacity_);
  j_unsorted_.resize(capacity_);
  i_sorted_.resize(capacity_);
  j_sorted_.resize(capacity_);
  if (full_) write_pairs_kernel<true><<<blocks_for(items), kBlockSize, 0, stream>>>(in, g, rlist_sq, row_offset_.data(), i_unsorted_.data(), j_unsorted_.data());
  else write_pairs_kernel<false><<<blocks_for(items), kBlockSize, 0, stream>>>(in, g, rlist_sq, row_offset_.data(), i_unsorted_.data(), j_unsorted_.data());
  PAIRMD_CHECK_LAUNCH();

  // Sort by particle index (CUB radix sort on the bits that particle indices use), then sort
  // each row by partner (CUB segmented sort): the list is canonical, whatever order the warps
  // claimed their room in and whatever the cell grid looked like.
  size_t temp_sort = 0, temp_scan = 0, temp_rows = 0;
  const int bits = bits_for(n);
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_sort, i_unsorted_.data(), i_sorted_.data(),
                                                    j_unsorted_.data(), j_unsorted_.data(), count_, 0, bits, stream));
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_scan, row_count_.data(), row_start_.data(), n + 1, stream));
  PAIRMD_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(nullptr, temp_rows, j_unsorted_.data(), j_sorted_.data(), count_, n,
                                                       row_start_.data(), row_start_.data() + 1, stream));
  cub_temp_.reserve_grow(std::max({temp_sort, temp_scan, temp_rows}));
  // The pair sort's values land in i_unsorted_'s buffer reused as scratch for j by row.
  int* j_by_row = i_unsorted_.data();
  temp_sort = temp_scan = temp_rows = cub_temp_.capacity();
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(cub_temp_.data(), temp_sort, i_unsorted_.data(), i_sorted_.data(),
                                                    j_unsorted_.data(), j_sorted_.data(), count_, 0, bits, stream));
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(j_by_row, j_sorted_.data(), count_ * sizeof(int), cudaMemcpyDeviceToDevice, stream));
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), temp_scan, row_count_.data(), row_start_.data(), n + 1, stream));
  PAIRMD_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(cub_temp_.data(), temp_rows, j_by_row, j_sorted_.data(), count_, n,
                                                       row_start_.data(), row_start_.data() + 1, stream));
  ++builds_;
}

}  // namespace pairmd
