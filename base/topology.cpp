#include "base/topology.h"

#include <algorithm>

namespace pairmd {

std::vector<std::vector<int>> Topology::exclusions(size_t n, ExclusionPolicy policy) const {
  std::vector<std::vector<int>> bonded(n), excl(n);
  if (policy == ExclusionPolicy::None) return excl;
  for (const Bond& b : bonds) {
    bonded[b.i].push_back(b.j);
    bonded[b.j].push_back(b.i);
  }
  for (size_t i = 0; i < n; ++i) {
    excl[i] = bonded[i];
    if (policy == ExclusionPolicy::Angles) {
      for (int j : bonded[i])
        for (int k : bonded[j])
          if (k != static_cast<int>(i)) excl[i].push_back(k);
    }
    std::sort(excl[i].begin(), excl[i].end());
    excl[i].erase(std::unique(excl[i].begin(), excl[i].end()), excl[i].end());
  }
  return excl;
}

}  // namespace pairmd
