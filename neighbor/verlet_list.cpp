#include "neighbor/verlet_list.h"

#include <algorithm>
#include <cmath>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pairmd {

namespace {

bool excluded(const std::vector<int>& excluded_partners, int j) {
  return std::binary_search(excluded_partners.begin(), excluded_partners.end(), j);
}

// Rows are short (tens of partners) and made of a few ascending runs (one per cell): insertion
// sort beats std::sort's partitioning there.
void insertion_sort(int* a, int n) {
  for (int k = 1; k < n; ++k) {
    const int v = a[k];
    int m = k;
    for (; m > 0 && a[m - 1] > v; --m) a[m] = a[m - 1];
    a[m] = v;
  }
}

}  // namespace

// Exact criterion: a pair (i, j) left out of the list was at least rc + skin apart at the
// build, and since then has come closer by at most d_i + d_j <= d_max1 + d_max2 (the two
// largest displacements). While that sum is below the skin, every pair within the cutoff is
// still in the list. This is the same guarantee as "rebuild when one particle moved skin / 2",
// a little less eager when only one particle moved far.
//
// After box scaling (rescale) by s_a per edge since the build, the reference positions were
// scaled too, so d_i is the displacement from particle i's scaled position at the build, and the
// pair's scaled separation is at least s (rc + skin) with s the smallest s_a: every pair within
// the cutoff is in the list while d_max1 + d_max2 < s (rc + skin) - rc. A compressed box thus
// leaves less room, and one compressed by rc / (rc + skin) none: it rebuilds at once.
bool VerletList::needs_rebuild(const std::vector<Vec3d>& x, const Box& box) const {
  if (x_at_build_.size() != x.size()) return true;
  double allowed = skin_;
  if (box.periodic && (box.L.x != box_at_build_.L.x || box.L.y != box_at_build_.L.y || box.L.z != box_at_build_.L.z)) {
    const double s = std::min({box.L.x / box_at_build_.L.x, box.L.y / box_at_build_.L.y, box.L.z / box_at_build_.L.z});
    allowed = s * (cutoff_ + skin_) - cutoff_;
    if (!(allowed > 0)) return true;
  }
  double first = 0.0, second = 0.0;  // the two largest squared displacements
  for (size_t i = 0; i < x.size(); ++i) {
    const Vec3d d = box.min_image(x[i] - x_at_build_[i]);
    const double dsq = dot(d, d);
    if (!(dsq <= second)) {  // also catches NaN: rebuild, and the backend reports the blow-up
      if (!(dsq <= first)) {
        second = first;
        first = dsq;
      } else {
        second = dsq;
      }
    }
  }
  if (!(first == first) || !(second == second)) return true;
  return std::sqrt(first) + std::sqrt(second) > allowed;
}

void VerletList::rescale(const Box& from, const Box& to) {
  const Vec3d s{to.L.x / from.L.x, to.L.y / from.L.y, to.L.z / from.L.z};
  for (Vec3d& x : x_at_build_)
    x = {to.lo.x + s.x * (x.x - from.lo.x), to.lo.y + s.y * (x.y - from.lo.y), to.lo.z + s.z * (x.z - from.lo.z)};
}

bool VerletList::update(const std::vector<Vec3d>& x, const Box& box, const std::vector<std::vector<int>>& exclusions) {
  if (!needs_rebuild(x, box)) return false;
  build(x, box, exclusions);
  return true;
}

namespace {

// What the rows of one build read: the cells, the positions in cell order, the list's reach.
struct RowInputs {
  const CellList& cells;
  const int* order;  // particle of each cell-order slot
  const Vec3d* xc;   // positions in cell order
  const Box& box;
  bool exact;  // the cells' image shifts are exact (else minimum image per pair)
  double rlist_sq;
  const std::vector<std::vector<int>>& exclusions;
};

// The partners j > i within reach of particle i (cell-order slot a) among the stencil's cells,
// written to `out`; returns how many. Every candidate is written; it is kept by advancing the end
// (no branch to mispredict on the distance test). cursor[s]: the first partner above the previous
// i of candidate cell s, which only moves forward (cells hold their particles in ascending index).
int partners_within(const RowInputs& in, const std::vector<CellList::Neighbour>& stencil,
                    std::vector<const int*>& cursor, int a, int* out) {
  const int i = in.order[a];
  const Vec3d xi = in.xc[a];
  int kept = 0;
  for (size_t s = 0; s < stencil.size(); ++s) {
    const int* last = in.order + in.cells.start(stencil[s].cell + 1);
    const int* p = cursor[s];
    while (p != last && *p <= i) ++p;
    cursor[s] = p;
    const Vec3d* xj = in.xc + (p - in.order);
    if (in.exact) {
      const Vec3d xs = xi - stencil[s].shift;  // i moved next to this cell's image
      for (; p != last; ++p, ++xj) {
        const Vec3d d = xs - *xj;
        out[kept] = *p;
        kept += dot(d, d) < in.rlist_sq;
      }
    } else {
      for (; p != last; ++p, ++xj) {
        const Vec3d d = in.box.min_image(xi - *xj);
        out[kept] = *p;
        kept += dot(d, d) < in.rlist_sq;
      }
    }
  }
  return kept;
}

// The rows of the particles of cells [cell_begin, cell_end), appended to `rows`: where each row
// starts there (row_start[i]) and its length (offsets[i + 1]).
void build_rows(const RowInputs& in, int cell_begin, int cell_end, std::vector<int>& rows, std::vector<int>& row_start,
                std::vector<int>& offsets) {
  std::vector<const int*> cursor;  // per candidate cell: first partner above the current i
  std::vector<int> row;            // the row being built (room for every candidate)
  for (int c = cell_begin; c < cell_end; ++c) {
    const std::vector<CellList::Neighbour>& stencil = in.cells.neighbours(c);
    size_t candidates = 0;
    cursor.resize(stencil.size());
    for (size_t s = 0; s < stencil.size(); ++s) {
      cursor[s] = in.order + in.cells.start(stencil[s].cell);
      candidates += static_cast<size_t>(in.cells.start(stencil[s].cell + 1) - in.cells.start(stencil[s].cell));
    }
    // The particles of c in ascending index.
    for (int a = in.cells.start(c); a < in.cells.start(c + 1); ++a) {
      const int i = in.order[a];
      if (row.size() < candidates) row.resize(candidates);
      int* out = row.data();
      int kept = partners_within(in, stencil, cursor, a, out);
      if (!in.exclusions.empty() && !in.exclusions[i].empty()) {
        const std::vector<int>& ex = in.exclusions[i];
        kept = static_cast<int>(std::remove_if(out, out + kept, [&](int j) { return excluded(ex, j); }) - out);
      }
      // Ascending partners: the force sums then depend on particle indices only, not on the
      // cells at build time (restarts are bitwise reproducible), and read memory in order.
      insertion_sort(out, kept);
      row_start[i] = static_cast<int>(rows.size());
      rows.insert(rows.end(), out, out + kept);
      offsets[i + 1] = kept;
    }
  }
}

}  // namespace

// One pass over the cells, split into contiguous blocks of cells, one per thread. The
// particles of a cell share their 27 candidate cells, whose positions (copied into cell order)
// then stay in the cache. Each particle's row goes to its thread's buffer, and the rows are
// finally copied into place by particle index, so the list is the same for any number of
// threads.
void VerletList::build(const std::vector<Vec3d>& x, const Box& box, const std::vector<std::vector<int>>& exclusions) {
  const int n = static_cast<int>(x.size());
  const double rlist = cutoff_ + skin_;
  cells_.build(x, box, rlist);
  const int* order = cells_.order().data();
  x_cell_order_.resize(n);
  for (int k = 0; k < n; ++k) x_cell_order_[k] = x[order[k]];
  const RowInputs in{cells_, order, x_cell_order_.data(), box, cells_.shifts_exact(), rlist * rlist, exclusions};
  const int ncells = cells_.num_cells();

  offsets_.assign(n + 1, 0);
  row_start_.resize(n);
#ifdef _OPENMP
  const int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
#else
  const int threads = 1;
#endif
  thread_rows_.resize(threads);
#pragma omp parallel num_threads(threads)
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int t = 0, nt = 1;
#endif
    const int cell_begin = static_cast<int>(static_cast<long>(ncells) * t / nt);
    const int cell_end = static_cast<int>(static_cast<long>(ncells) * (t + 1) / nt);
    std::vector<int>& rows = thread_rows_[t];
    rows.clear();
    build_rows(in, cell_begin, cell_end, rows, row_start_, offsets_);
#pragma omp barrier
#pragma omp single
    {
      for (int i = 0; i < n; ++i) offsets_[i + 1] += offsets_[i];
      neighbors_.resize(offsets_[n]);
    }
    for (int c = cell_begin; c < cell_end; ++c)
      for (int a = cells_.start(c); a < cells_.start(c + 1); ++a) {
        const int i = order[a];
        std::copy(rows.begin() + row_start_[i], rows.begin() + row_start_[i] + (offsets_[i + 1] - offsets_[i]),
                  neighbors_.begin() + offsets_[i]);
      }
  }
  x_at_build_ = x;
  box_at_build_ = box;
  ++builds_;
}

}  // namespace pairmd
