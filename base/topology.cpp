#include "base/topology.h"

#include <algorithm>

namespace pairmd {

std::vector<SpecialPair> Topology::special_pairs(size_t n, int max_order) const {
  std::vector<SpecialPair> out;
  if (max_order < 1 || bonds.empty()) return out;
  std::vector<std::vector<int>> bonded(n);
  for (const Bond& b : bonds) {
    if (b.i == b.j) continue;
    bonded[b.i].push_back(b.j);
    bonded[b.j].push_back(b.i);
  }
  // A breadth-first walk of depth max_order from each particle: the first time a partner is met
  // is its shortest path, so its lowest order.
  std::vector<int> seen(n, -1), frontier, next;
  for (size_t i = 0; i < n; ++i) {
    if (bonded[i].empty()) continue;
    const int self = static_cast<int>(i);
    seen[i] = self;
    frontier.assign(1, self);
    std::vector<SpecialPair> mine;
    for (int order = 1; order <= max_order && !frontier.empty(); ++order) {
      next.clear();
      for (int a : frontier)
        for (int b : bonded[a]) {
          if (seen[b] == self) continue;
          seen[b] = self;
          next.push_back(b);
          if (b > self) mine.push_back({self, b, order});
        }
      frontier.swap(next);
    }
    std::sort(mine.begin(), mine.end(), [](const SpecialPair& a, const SpecialPair& b) { return a.j < b.j; });
    out.insert(out.end(), mine.begin(), mine.end());
  }
  return out;
}

}  // namespace pairmd
