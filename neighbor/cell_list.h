// Cell list of the CPU reference backend: particles binned into cells at least `min_cell`
// wide, so all partners within min_cell of a particle are in its own or the 26 adjacent cells.
#pragma once

#include <array>
#include <vector>

#include "base/box.h"
#include "base/vec3.h"

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
  // A cell adjacent to another, and the shift that brings its particles next to that cell
  // (a multiple of the box edges where the stencil wraps around a periodic box).
  struct Neighbour {
    int cell;
    Vec3d shift;
  };
  // The distinct cells adjacent to c (itself included); fewer than 27 in small periodic boxes.
  const std::vector<Neighbour>& neighbours(int c) const { return stencil_[c]; }
  // True when the shifts are the exact periodic images: at least 3 cells along every periodic
  // direction (or open boundaries). Otherwise one cell can be adjacent through two images and
  // callers must take the minimum image of each separation.
  bool shifts_exact() const { return shifts_exact_; }

 private:
  std::array<int, 3> dims_{1, 1, 1};
  std::vector<int> cell_start_, order_, cell_of_;
  std::vector<std::vector<Neighbour>> stencil_;
  std::array<int, 3> stencil_dims_{0, 0, 0};
  Vec3d stencil_box_{0, 0, 0};
  bool stencil_periodic_ = true;
  bool shifts_exact_ = true;
};

}  // namespace pairmd
