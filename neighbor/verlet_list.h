// Verlet (neighbour) list of the CPU reference backend: a half list (each pair once, j > i)
// of all pairs closer than cutoff + skin, in compressed rows, each row in ascending partner
// index. It stays valid until the two largest displacements since the build add up to more
// than the skin, and rebuilds itself then. A box that a barostat scales is followed (rescale):
// the positions at the build scale with it, and the skin allowed shrinks with the box.
#pragma once

#include <cstdint>
#include <vector>

#include "base/box.h"
#include "base/vec3.h"
#include "neighbor/cell_list.h"

namespace pairmd {

class VerletList {
 public:
  // `threads`: OpenMP threads of the build (the list is the same for any count); 0: OpenMP's.
  VerletList(double cutoff, double skin, int threads = 0) : cutoff_(cutoff), skin_(skin), threads_(threads) {}

  // Rebuild if needed; returns true if it rebuilt. `exclusions` may be empty (none excluded).
  bool update(const std::vector<Vec3d>& x, const Box& box, const std::vector<std::vector<int>>& exclusions);
  void build(const std::vector<Vec3d>& x, const Box& box, const std::vector<std::vector<int>>& exclusions);
  bool needs_rebuild(const std::vector<Vec3d>& x, const Box& box) const;
  // The box was scaled from `from` to `to` about its lower corner, and every particle with it
  // (integrators/barostat.h): the positions at the build are mapped the same way, so that the
  // displacements measured by needs_rebuild() are those the dynamics made.
  void rescale(const Box& from, const Box& to);

  // Partners of i: neighbors()[offsets()[i]] .. neighbors()[offsets()[i + 1] - 1].
  const std::vector<int>& offsets() const { return offsets_; }
  const std::vector<int>& neighbors() const { return neighbors_; }
  int64_t builds() const { return builds_; }
  double cutoff() const { return cutoff_; }
  double skin() const { return skin_; }

 private:
  double cutoff_, skin_;
  int threads_;
  CellList cells_;
  std::vector<int> offsets_, neighbors_;
  std::vector<Vec3d> x_at_build_;  // mapped along by rescale()
  Box box_at_build_{};
  std::vector<Vec3d> x_cell_order_;            // positions in cell order (build scratch)
  std::vector<std::vector<int>> thread_rows_;  // per-thread rows (build scratch)
  std::vector<int> row_start_;                 // where each row lies in its thread's buffer
  int64_t builds_ = 0;
};

}  // namespace pairmd
