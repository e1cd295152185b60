#include "neighbor/gpu_cell_order.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <cstring>

#include "cuda/block_reduce.cuh"

namespace pairmd {

namespace {

// Ordered-int encoding of floats, so that integer atomicMin/Max compare them correctly.
__device__ __forceinline__ int float_order(float f) {
  const int b = __float_as_int(f);
  return b >= 0 ? b : b ^ 0x7fffffff;
}
float order_float(int b) {
  const int f = b >= 0 ? b : b ^ 0x7fffffff;
  float r;
  std::memcpy(&r, &f, sizeof r);
  return r;
}

__global__ void bounding_box_kernel(const float4* pos, int n, int* out /* min xyz, max xyz */) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 p = t < n ? pos[t] : pos[0];
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

// Particle i is of system tag[i] / system_size: its cell is in that system's layers of the
// stacked grid (neighbor/cell_runs.h). A periodic box's corner and cells per length are those of
// the box in device memory (as the host computes them: in double, rounded once), an open box's
// the arguments.
__global__ void assign_cells_kernel(const float4* pos, const unsigned* tag, int n, int system_size,
                                    const BoxGeometry<float>* box, float3 lo, float3 inv, CellGridDims g, int* cell,
                                    int* index) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (g.periodic) {
    const BoxGeometry<float> b = *box;
    lo = make_float3(b.lo.x, b.lo.y, b.lo.z);
    inv = make_float3(static_cast<float>(g.nx / static_cast<double>(b.L.x)),
                      static_cast<float>(g.ny / static_cast<double>(b.L.y)),
                      static_cast<float>(g.nz / static_cast<double>(b.L.z)));
  }
  const float4 p = pos[i];
  const int cx = cell_coordinate(p.x, lo.x, inv.x, g.nx);
  const int cy = cell_coordinate(p.y, lo.y, inv.y, g.ny);
  const int cz = cell_coordinate(p.z, lo.z, inv.z, g.nz) + static_cast<int>(tag[i] / system_size) * g.nz;
  cell[i] = (cz * g.ny + cy) * g.nx + cx;
  index[i] = i;
}

// cell_start[c] = the first place in cell order whose cell is c or later (a binary search in
// the sorted cells), so empty cells get empty ranges and cell_start[cells] = n.
__global__ void cell_start_kernel(const int* cell_sorted, int n, int cells, int* cell_start) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > cells) return;
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (cell_sorted[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  cell_start[c] = lo;
}

}  // namespace

GpuCellOrder::GpuCellOrder() { PAIRMD_CUDA_CHECK(cudaMallocHost(&host_bbox_, 6 * sizeof(int))); }
GpuCellOrder::~GpuCellOrder() { cudaFreeHost(host_bbox_); }

size_t GpuCellOrder::bytes() const {
  return cell_unsorted_.bytes() + index_.bytes() + cell_sorted_.bytes() + order_.bytes() + cell_start_.bytes() +
         bbox_.bytes() + cub_temp_.bytes();
}

CellGridView GpuCellOrder::view() const {
  return {dims_, {width_[0], width_[1], width_[2]}, cell_sorted_.data(), cell_start_.data()};
}

void GpuCellOrder::build(Launcher& launcher, const float4* pos, const unsigned* tag, int n, int system_size,
                         const BoxGeometry<float>& box, const BoxGeometry<float>* device_box, double width) {
  const int systems = n > 0 ? n / system_size : 1;
  double lo[3] = {box.lo.x, box.lo.y, box.lo.z};
  double len[3] = {box.L.x, box.L.y, box.L.z};
  if (!box.periodic && n > 0) read_bounding_box(launcher, pos, n, lo, len);
  const int m = n > 0 ? system_size : 0;  // the grid is sized for one system
  const int nx = cells_along(len[0], width, m), ny = cells_along(len[1], width, m), nz = cells_along(len[2], width, m);
  dims_ = {nx, ny, nz, box.periodic, systems};
  const int dims[3] = {nx, ny, nz};
  for (int d = 0; d < 3; ++d) width_[d] = len[d] / dims[d];
  // A periodic grid reads these from device_box (the same values while the box is this one).
  const float3 flo = box.periodic
                         ? make_float3(0.f, 0.f, 0.f)
                         : make_float3(static_cast<float>(lo[0]), static_cast<float>(lo[1]), static_cast<float>(lo[2]));
  const float3 inv = box.periodic ? make_float3(0.f, 0.f, 0.f)
                                  : make_float3(static_cast<float>(nx / len[0]), static_cast<float>(ny / len[1]),
                                                static_cast<float>(nz / len[2]));
  const int cells = dims_.cells();

  cell_unsorted_.resize(n);
  index_.resize(n);
  cell_sorted_.resize(n);
  order_.resize(n);
  cell_start_.resize(cells + 1);
  if (n > 0) {
    launcher.kernel(PAIRMD_HERE, assign_cells_kernel, blocks_for(n), kBlockSize, 0, pos, tag, n, system_size,
                    device_box, flo, inv, dims_, cell_unsorted_.data(), index_.data());
    // Stable: particles of one cell keep their order, so the order is a function of the
    // positions and the previous order alone.
    const int bits = bits_for(cells);
    size_t temp = 0;
    PAIRMD_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp, cell_unsorted_.data(), cell_sorted_.data(),
                                                      index_.data(), order_.data(), n, 0, bits));
    cub_temp_.reserve_grow(temp);
    temp = cub_temp_.capacity();
    unsigned char* scratch = cub_temp_.data();
    int *keys_in = cell_unsorted_.data(), *keys_out = cell_sorted_.data(), *values_in = index_.data(),
        *values_out = order_.data();
    launcher.call(
        PAIRMD_HERE,
        [=](cudaStream_t s) {
          size_t bytes = temp;
          return cub::DeviceRadixSort::SortPairs(scratch, bytes, keys_in, keys_out, values_in, values_out, n, 0, bits,
                                                 s);
        },
        scratch, temp, keys_in, keys_out, values_in, values_out, n, bits);
  }
  launcher.kernel(PAIRMD_HERE, cell_start_kernel, blocks_for(cells + 1), kBlockSize, 0, cell_sorted_.data(), n, cells,
                  cell_start_.data());
}

// Open boundaries: the grid covers the particles' bounding box, read back (the host waits).
void GpuCellOrder::read_bounding_box(Launcher& launcher, const float4* pos, int n, double lo[3], double len[3]) {
  int init[6];
  for (int d = 0; d < 3; ++d) {
    init[d] = 0x7fffffff;
    init[3 + d] = static_cast<int>(0x80000000u);
  }
  bbox_.resize(6);
  launcher.copy(PAIRMD_HERE, bbox_.data(), init, sizeof init, cudaMemcpyHostToDevice);
  launcher.kernel(PAIRMD_HERE, bounding_box_kernel, blocks_for(n), kBlockSize, 0, pos, n, bbox_.data());
  launcher.copy(PAIRMD_HERE, host_bbox_, bbox_.data(), 6 * sizeof(int), cudaMemcpyDeviceToHost);
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(launcher.stream()));
  for (int d = 0; d < 3; ++d) {
    lo[d] = order_float(host_bbox_[d]);
    len[d] = order_float(host_bbox_[3 + d]) - lo[d] + 1e-4;
  }
}

}  // namespace pairmd
