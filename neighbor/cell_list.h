// Cell list of the CPU reference backend: particles binned into cells at least `min_cell`
// wide, so all partners within min_cell of a particle are in its own or the 26 adjacent cells.
#pragma once

#include <array>
#include <vector>

#include "engine/box.h"
#include "engine/vec3.h"

namespace pairmd {

class CellList {
 public:
  // Bins the positions. For open boundaries the grid covers the particles' bounding box.
  void build(const std::vector<Vec3d>& x, const Box& box, double min_cell);

  int num_cells() const { return dims_[0] * dims_[1] * dims_[2]; }
  // Particles of cell c are order()[start(c)] .. order()[start(c + 1) - 1], in index order.
  int start(int c) const { return cell_start_[c]; }
  const std::vector<int>& order() const { return order_; }
  int cell_of(int particle) const { return cell_of_[particle]; }
  // The distinct cells adjacent to c (itself included); fewer than 27 in small periodic boxes.
  const std::vector<int>& neighbours(int c) const { return stencil_[c]; }

 private:
  std::array<int, 3> dims_{1, 1, 1};
  std::vector<int> cell_start_, order_, cell_of_;
  std::vector<std::vector<int>> stencil_;
  std::array<int, 3> stencil_dims_{0, 0, 0};
  bool stencil_periodic_ = true;
};

}  // namespace pairmd
