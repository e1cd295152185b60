// Particles sorted into cells on the GPU, the first half of every pair-list build.
//
// The box (open boxes: the particles' bounding box, read back once per build) is cut into cells
// at least `width` wide, each particle gets the cell of its position, and a stable CUB radix
// sort of the particle indices by cell gives the cell order. The backend renumbers its
// particles in that order (neighbor/cell_runs.h explains why the search then needs no sort),
// so cell c holds the particles [cell_start(c), cell_start(c + 1)) of the new numbering.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "base/box.h"
#include "cuda/device_buffer.h"
#include "cuda/launcher.cuh"
#include "neighbor/cell_runs.h"

namespace pairmd {

// The grid as a search reads it (device pointers, valid until the next build).
struct CellGridView {
  CellGridDims dims;
  double cell_width[3];   // length of a cell along x, y, z
  const int* cell_of;     // cell of each particle of the new numbering, ascending
  const int* cell_start;  // first particle of each cell; cell_start[cells] = n
};

class GpuCellOrder {
 public:
  GpuCellOrder();
  ~GpuCellOrder();
  GpuCellOrder(const GpuCellOrder&) = delete;
  GpuCellOrder& operator=(const GpuCellOrder&) = delete;

  // Bins and sorts n particles at pos (xyz in .x .y .z) into cells at least `width` wide: n /
  // system_size systems of system_size particles, particle i of system tag[i] / system_size, each
  // in a grid of its own (stacked along z, neighbor/cell_runs.h). The cell order keeps the
  // systems apart: system k's particles come k-th. An open box reads the particles' bounding box
  // back, so its launcher must issue at once. `box` is the box now, `device_box` the same box in
  // device memory: a periodic grid's cell sizes are read there, so the work (and a graph of it)
  // stays the same while the box changes but the number of cells does not.
  void build(Launcher& launcher, const float4* pos, const unsigned* tag, int n, int system_size,
             const BoxGeometry<float>& box, const BoxGeometry<float>* device_box, double width);

  // order()[k]: the index, before the sort, of the particle that comes k-th in cell order.
  const int* order() const { return order_.data(); }
  CellGridView view() const;
  size_t bytes() const;

 private:
  void read_bounding_box(Launcher& launcher, const float4* pos, int n, double lo[3], double len[3]);

  CellGridDims dims_{1, 1, 1, true};
  double width_[3] = {1, 1, 1};
  DeviceBuffer<int> cell_unsorted_, index_, cell_sorted_, order_, cell_start_;
  DeviceBuffer<int> bbox_;  // open boxes: ordered-int bounds
  DeviceBuffer<unsigned char> cub_temp_;
  int* host_bbox_ = nullptr;  // pinned, 6 entries
};

}  // namespace pairmd
