#include "neighbor/gpu_pair_list.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/block_reduce.cuh"
#include "neighbor/cell_walk.h"
#include "neighbor/pair_keys.h"

namespace pairmd {

namespace {

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

// Positions in cell order, the particle index in w (the search needs no type).
__global__ void gather_cell_order_kernel(const float4* pos, const unsigned* tag, const int* particles, int n,
                                         float4* cell_pos, unsigned* cell_tag) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const int i = particles[k];
  const float4 p = pos[i];
  cell_pos[k] = make_float4(p.x, p.y, p.z, __int_as_float(i));
  cell_tag[k] = tag[i];
}

// The cell list as the walk (neighbor/cell_walk.h) reads it.
struct CellGrid {
  const float4* cell_pos;    // xyz + particle index bits, in cell order: a cell's candidates are contiguous
  const unsigned* cell_tag;  // their tags
  const int* cell_of;        // the cell of each, ascending
  const int* starts;         // [starts[c], ends[c]) are cell c's particles (0, 0 when empty)
  const int* ends;
  CellDims dims;

  __device__ int start(int c) const { return starts[c]; }
  __device__ int end(int c) const { return ends[c]; }
  __device__ unsigned tag(int k) const { return cell_tag[k]; }
  __device__ WalkCandidate candidate(int k) const {
    const float4 p = cell_pos[k];  // one 16-byte load: position and index
    return {{p.x, p.y, p.z}, __float_as_int(p.w)};
  }
};

// The search gives each particle kSplit neighbouring threads, each walking every kSplit-th
// cell of the stencil: more threads in flight hide the latency of the candidate loop
// (measured in docs/benchmarks.md). Thread t takes part t % kSplit of the (t / kSplit)-th
// particle in cell order, so a warp holds 32 / kSplit particles from one or a few home cells,
// and lanes with the same home cell and part load the same candidates.
constexpr int kSearchSplit = 4;

// What one search thread walks with: its particle and its exclusions.
struct SearchThread {
  int h;          // the particle's place in cell order
  int part;       // which stencil cells: part, part + kSplit, ...
  int i;          // the particle's index
  Vec3<float> x;  // and position
  const int* ex;  // its exclusion row (by tag)
};

template <int kSplit>
__device__ __forceinline__ SearchThread search_thread(const PairListInput& in, const CellGrid& g, long t, int h) {
  const float4 p = g.cell_pos[h];
  const int* ex = in.exclusion_width > 0 ? in.exclusions + static_cast<size_t>(g.cell_tag[h]) * in.exclusion_width : nullptr;
  return {h, static_cast<int>(t % kSplit), __float_as_int(p.w), {p.x, p.y, p.z}, ex};
}

// Pass 1: pairs per thread, and room claimed with one integer atomicAdd per warp. Inside the
// room a warp claims, lanes follow in order: each particle's parts end up contiguous. With the
// full stencil a particle's parts add up to its row length (its partners j > i), written here;
// the half shell finds some of i's pairs from j's side, so its row lengths come after the sort.
template <bool kFull, CellStencil kStencil, int kSplit>
__global__ void count_pairs_kernel(PairListInput in, CellGrid g, float rlist_sq, int* row_count, int* lane_offset,
                                   int* lane_end, unsigned long long* counter) {
  static_assert(kSplit > 0 && (kSplit & (kSplit - 1)) == 0 && kSplit <= 32, "parts must tile a warp");
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int h = static_cast<int>(t / kSplit);
  const bool active = h < in.n;  // the whole warp stays for the shuffles below
  const SearchThread s = search_thread<kSplit>(in, g, t, active ? h : in.n - 1);
  int count = 0;
  for_each_partner<kFull, kStencil, kSplit>(g, g.dims, in.box, s.h, g.cell_of[s.h], s.part, s.x, s.i, s.ex,
                                            in.exclusion_width, active, rlist_sq, [&](int) { ++count; });
  int incl = count;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  // 64-bit claims, so an impossible total (> 2^31 pairs) is seen on the host, not wrapped.
  unsigned long long room = 0;
  if (lane == 31 && total > 0) room = atomicAdd(counter, static_cast<unsigned long long>(total));
  room = __shfl_sync(0xffffffffu, room, 31);
  int row = count;  // full stencil: the particle's parts are lanes aligned to kSplit, add them up
  if (kStencil == CellStencil::Full) {
#pragma unroll
    for (int o = 1; o < kSplit; o <<= 1) row += __shfl_xor_sync(0xffffffffu, row, o);
  }
  if (active) {
    if (kStencil == CellStencil::Full && s.part == 0) row_count[s.i] = row;
    lane_offset[t] = static_cast<int>(room + incl - count);
    lane_end[t] = static_cast<int>(room + incl);
  }
}

// Pass 2: the same walk; each thread writes its pairs into the room its warp claimed. The half
// shell meets a pair from either side: the key is (min, max), as in a half list.
template <bool kFull, CellStencil kStencil, int kSplit, typename Key>
__global__ void write_pairs_kernel(PairListInput in, CellGrid g, float rlist_sq, const int* lane_offset,
                                   const int* lane_end, int bits, Key* keys, unsigned long long* disagreed) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int h = static_cast<int>(t / kSplit);
  if (h >= in.n) return;
  const SearchThread s = search_thread<kSplit>(in, g, t, h);
  int out = lane_offset[t];
  const int end = lane_end[t];
  // Never past the room counted in pass 1 (the walks are the same code, so they agree).
  for_each_partner<kFull, kStencil, kSplit>(g, g.dims, in.box, s.h, g.cell_of[s.h], s.part, s.x, s.i, s.ex,
                                            in.exclusion_width, true, rlist_sq, [&](int j) {
    if (out < end)
      keys[out] = kStencil == CellStencil::HalfShell ? half_list_key<Key>(s.i, j, bits) : pair_key<Key>(s.i, j, bits);
    ++out;
  });
  if (out != end) atomicOr(disagreed, 1ull);
}

template <typename Key>
__global__ void decode_pairs_kernel(const Key* keys, int count, int bits, int* pi, int* pj) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const Key key = keys[k];
  pi[k] = key_first(key, bits);
  pj[k] = key_second(key, bits);
}

// Row offsets and lengths from the sorted keys, where the search did not count rows (the half
// shell): two binary searches per particle; p = n gives the total.
template <typename Key>
__global__ void rows_from_keys_kernel(const Key* keys, int count, int bits, int n, int* row_start, int* row_count) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p > n) return;
  int start, length;
  row_in_keys(keys, count, bits, n, p, start, length);
  row_start[p] = start;
  row_count[p] = length;
}

}  // namespace

GpuPairList::GpuPairList(float cutoff, float skin, bool full, size_t initial_capacity, CellStencil stencil)
    : cutoff_(cutoff), skin_(skin), full_(full), stencil_(stencil), capacity_(std::max<size_t>(initial_capacity, 1)) {
  PAIRMD_CUDA_CHECK(cudaMallocHost(&host_counter_, 2 * sizeof(unsigned long long)));
  counter_.resize(2);
  PAIRMD_CUDA_CHECK(cudaMemset(counter_.data(), 0, 2 * sizeof(unsigned long long)));
}

GpuPairList::~GpuPairList() { cudaFreeHost(host_counter_); }

size_t GpuPairList::bytes() const {
  return cell_of_.bytes() + cell_sorted_.bytes() + cell_index_.bytes() + cell_particles_.bytes() + cell_start_.bytes() +
         cell_end_.bytes() + cell_pos_.bytes() + cell_tag_.bytes() + row_count_.bytes() + row_start_.bytes() +
         lane_offset_.bytes() + lane_end_.bytes() + bbox_.bytes() + keys_.bytes() + keys_sorted_.bytes() + i_.bytes() + j_.bytes() + cub_temp_.bytes();
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
    bbox_.resize(6);
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(bbox_.data(), init, sizeof init, cudaMemcpyHostToDevice, stream));
    bounding_box_kernel<<<blocks_for(in.n), kBlockSize, 0, stream>>>(in.pos, in.n, bbox_.data());
    PAIRMD_CHECK_LAUNCH();
    int out[6];
    PAIRMD_CUDA_CHECK(cudaMemcpyAsync(out, bbox_.data(), sizeof out, cudaMemcpyDeviceToHost, stream));
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int d = 0; d < 3; ++d) {
      lo[d] = order_float(out[d]);
      len[d] = order_float(out[3 + d]) - lo[d] + 1e-4f;
    }
  }
  for (int d = 0; d < 3; ++d) dims_[d] = cells_along(len[d], rlist, in.n);
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
  // Keys (i << b) | j: 32 bits while 2b <= 32 (up to 65,536 particles), else 64.
  if (2 * bits_for(n) <= 32) write_sort_decode<unsigned>(in, stream);
  else write_sort_decode<unsigned long long>(in, stream);
  ++builds_;
}

template <CellStencil S>
using StencilConstant = std::integral_constant<CellStencil, S>;

// Calls fn(kFull, kStencil) with the search this build runs, as compile-time constants.
template <typename Fn>
void with_search(bool full, CellStencil stencil, Fn&& fn) {
  if (full) fn(std::true_type{}, StencilConstant<CellStencil::Full>{});
  else if (stencil == CellStencil::HalfShell) fn(std::false_type{}, StencilConstant<CellStencil::HalfShell>{});
  else fn(std::false_type{}, StencilConstant<CellStencil::Full>{});
}

template <typename Key>
void GpuPairList::write_sort_decode(const PairListInput& in, cudaStream_t stream) {
  const int n = in.n;
  const CellDims dims{dims_[0], dims_[1], dims_[2], in.box.periodic};
  const CellGrid g{cell_pos_.data(), cell_tag_.data(), cell_sorted_.data(), cell_start_.data(), cell_end_.data(), dims};
  // The half shell where asked for and exact (a half list, no periodic direction of 2 cells).
  used_stencil_ = !full_ && stencil_ == CellStencil::HalfShell && half_shell_exact(dims) ? CellStencil::HalfShell
                                                                                          : CellStencil::Full;
  const float rlist = cutoff_ + skin_;
  const float rlist_sq = rlist * rlist;
  row_count_.resize(n + 1);  // the extra 0 makes the scan's last entry the total
  row_start_.resize(n + 1);
  const size_t threads = static_cast<size_t>(n) * kSearchSplit;
  lane_offset_.resize(threads);
  lane_end_.resize(threads);
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(counter_.data(), 0, sizeof(unsigned long long), stream));  // [1] stays
  PAIRMD_CUDA_CHECK(cudaMemsetAsync(row_count_.data(), 0, (n + 1) * sizeof(int), stream));
  with_search(full_, used_stencil_, [&](auto full, auto stencil) {
    count_pairs_kernel<decltype(full)::value, decltype(stencil)::value, kSearchSplit>
        <<<blocks_for(threads), kBlockSize, 0, stream>>>(in, g, rlist_sq, row_count_.data(), lane_offset_.data(),
                                                         lane_end_.data(), counter_.data());
    PAIRMD_CHECK_LAUNCH();
  });
  PAIRMD_CUDA_CHECK(cudaMemcpyAsync(host_counter_, counter_.data(), 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                    stream));
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host_counter_[1] != 0)
    throw std::logic_error("GPU pair list: the count and write passes of the previous build disagreed (a bug; please "
                           "report it with the config)");
  if (host_counter_[0] > static_cast<unsigned long long>(std::numeric_limits<int>::max()))
    throw std::runtime_error("GPU pair list: " + std::to_string(host_counter_[0]) +
                             " pairs exceed the 2^31 a list can index; use a shorter cutoff or skin, or fewer particles");
  count_ = static_cast<int>(host_counter_[0]);

  // Nothing has been written yet: grow first, so no pair is ever dropped.
  if (static_cast<size_t>(count_) > capacity_) {
    capacity_ = static_cast<size_t>(count_ * 1.25) + 1;
    ++growths_;
  }
  keys_.resize(capacity_ * sizeof(Key));
  keys_sorted_.resize(capacity_ * sizeof(Key));
  i_.resize(capacity_);
  j_.resize(capacity_);
  Key* keys = reinterpret_cast<Key*>(keys_.data());
  Key* sorted = reinterpret_cast<Key*>(keys_sorted_.data());
  const int bits = bits_for(n);
  with_search(full_, used_stencil_, [&](auto full, auto stencil) {
    write_pairs_kernel<decltype(full)::value, decltype(stencil)::value, kSearchSplit, Key>
        <<<blocks_for(threads), kBlockSize, 0, stream>>>(in, g, rlist_sq, lane_offset_.data(), lane_end_.data(), bits,
                                                         keys, counter_.data() + 1);
    PAIRMD_CHECK_LAUNCH();
  });

  // One radix sort over the 2b key bits: by i, and inside each row by j. The list is
  // canonical, whatever order the warps claimed their room in, whatever the cell grid and
  // whichever stencil found the pairs.
  size_t temp_sort = 0, temp_scan = 0;
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_sort, keys, sorted, count_, 0, 2 * bits, stream));
  PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_scan, row_count_.data(), row_start_.data(), n + 1, stream));
  cub_temp_.reserve_grow(std::max(temp_sort, temp_scan));
  temp_sort = temp_scan = cub_temp_.capacity();
  PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(cub_temp_.data(), temp_sort, keys, sorted, count_, 0, 2 * bits, stream));
  if (used_stencil_ == CellStencil::Full) {
    PAIRMD_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(cub_temp_.data(), temp_scan, row_count_.data(), row_start_.data(), n + 1, stream));
  } else {
    rows_from_keys_kernel<Key><<<blocks_for(n + 1), kBlockSize, 0, stream>>>(sorted, count_, bits, n, row_start_.data(),
                                                                             row_count_.data());
    PAIRMD_CHECK_LAUNCH();
  }
  if (count_ > 0) {
    decode_pairs_kernel<Key><<<blocks_for(count_), kBlockSize, 0, stream>>>(sorted, count_, bits, i_.data(), j_.data());
    PAIRMD_CHECK_LAUNCH();
  }
}

}  // namespace pairmd
