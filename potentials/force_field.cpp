#include "potentials/force_field.h"

#include <algorithm>
#include <stdexcept>

namespace pairmd {

double PairTerm::max_cutoff() const {
  double rc = 0.0;
  for (const PairCoeffs& c : coeffs) rc = std::max(rc, pair_cutoff(kind, c));
  return rc;
}

const char* bond_field_name(BondField f) {
  switch (f) {
    case BondField::K:
      return "k";
    case BondField::R0:
      return "r0";
    case BondField::Epsilon:
      return "epsilon";
    case BondField::MaxExtension:
      return "max_extension";
  }
  return "?";
}

void set_bond_field(BondCoeffs& c, BondField f, double value) {
  switch (f) {
    case BondField::K:
      c.k = value;
      return;
    case BondField::R0:
      c.r0 = value;
      return;
    case BondField::Epsilon:
      c.epsilon = value;
      return;
    case BondField::MaxExtension:
      c.max_extension = value;
      return;
  }
  throw std::logic_error("unknown bond field");
}

BondCoeffs PairList::coeffs(size_t k) const {
  BondCoeffs c = defaults;
  const size_t nc = columns.size();
  for (size_t q = 0; q < nc; ++q) set_bond_field(c, columns[q], data->values[k * nc + q]);
  return c;
}

bool PairList::excluded_from(size_t term) const {
  return std::find(exclude_from.begin(), exclude_from.end(), static_cast<int>(term)) != exclude_from.end();
}

std::vector<std::vector<int>> pair_term_exclusions(const ForceField& ff, const Topology& topology, size_t n,
                                                   size_t term) {
  std::vector<std::vector<int>> excl = topology.exclusions(n, ff.exclusions);
  bool added = false;
  for (const PairList& list : ff.pair_lists) {
    if (!list.excluded_from(term)) continue;
    for (const Bond& b : list.data->pairs) {
      excl[b.i].push_back(b.j);
      excl[b.j].push_back(b.i);
    }
    added = true;
  }
  if (added)
    for (std::vector<int>& e : excl) {
      std::sort(e.begin(), e.end());
      e.erase(std::unique(e.begin(), e.end()), e.end());
    }
  return excl;
}

}  // namespace pairmd
