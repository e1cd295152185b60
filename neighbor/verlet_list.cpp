#include "neighbor/verlet_list.h"

#include <algorithm>

namespace pairmd {

namespace {

bool excluded(const std::vector<std::vector<int>>& exclusions, int i, int j) {
  if (exclusions.empty()) return false;
  const std::vector<int>& e = exclusions[i];
  return !e.empty() && std::binary_search(e.begin(), e.end(), j);
}

}  // namespace

bool VerletList::needs_rebuild(const std::vector<Vec3d>& x, const Box& box) const {
  if (x_at_build_.size() != x.size()) return true;
  const double limit_sq = 0.25 * skin_ * skin_;
  for (size_t i = 0; i < x.size(); ++i) {
    const Vec3d d = box.min_image(x[i] - x_at_build_[i]);
    if (dot(d, d) > limit_sq) return true;
  }
  return false;
}

bool VerletList::update(const std::vector<Vec3d>& x, const Box& box,
                        const std::vector<std::vector<int>>& exclusions) {
  if (!needs_rebuild(x, box)) return false;
  build(x, box, exclusions);
  return true;
}

void VerletList::build(const std::vector<Vec3d>& x, const Box& box,
                       const std::vector<std::vector<int>>& exclusions) {
  const int n = static_cast<int>(x.size());
  const double rlist = cutoff_ + skin_;
  const double rlist_sq = rlist * rlist;
  cells_.build(x, box, rlist);
  const std::vector<int>& order = cells_.order();

  // Two passes (count, then fill) so that both can run in parallel over particles.
  offsets_.assign(n + 1, 0);
  auto visit = [&](int i, auto&& emit) {
    const Vec3d xi = x[i];
    for (int c : cells_.neighbours(cells_.cell_of(i))) {
      for (int k = cells_.start(c); k < cells_.start(c + 1); ++k) {
        const int j = order[k];
        if (j <= i) continue;
        const Vec3d d = box.min_image(xi - x[j]);
        if (dot(d, d) < rlist_sq && !excluded(exclusions, i, j)) emit(j);
      }
    }
  };
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    int count = 0;
    visit(i, [&](int) { ++count; });
    offsets_[i + 1] = count;
  }
  for (int i = 0; i < n; ++i) offsets_[i + 1] += offsets_[i];
  neighbors_.resize(offsets_[n]);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    int* out = neighbors_.data() + offsets_[i];
    visit(i, [&](int j) { *out++ = j; });
    // Ascending partners: deterministic and kinder to the cache in the force loop.
    std::sort(neighbors_.data() + offsets_[i], out);
  }
  x_at_build_ = x;
  ++builds_;
}

}  // namespace pairmd
