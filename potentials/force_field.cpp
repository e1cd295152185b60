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

int SpecialBonds::max_order() const {
  for (int order = 3; order >= 1; --order)
    if (lj[order - 1] != 1.0 || coulomb[order - 1] != 1.0) return order;
  return 0;
}

namespace {

const double* term_weights(const ForceField& ff, size_t term) {
  return ff.special.weights(pair_potential_info(ff.pair_terms.at(term).kind).charged);
}

// The highest order whose weight for the term is not 1.
int term_max_order(const double* w) {
  for (int order = 3; order >= 1; --order)
    if (w[order - 1] != 1.0) return order;
  return 0;
}

}  // namespace

std::vector<std::vector<int>> pair_term_exclusions(const ForceField& ff, const Topology& topology, size_t n,
                                                   size_t term) {
  std::vector<std::vector<int>> excl(n);
  const double* w = term_weights(ff, term);
  for (const SpecialPair& p : topology.special_pairs(n, term_max_order(w))) {
    if (w[p.order - 1] == 1.0) continue;
    excl[p.i].push_back(p.j);
    excl[p.j].push_back(p.i);
  }
  for (const PairList& list : ff.pair_lists) {
    if (!list.excluded_from(term)) continue;
    for (const Bond& b : list.data->pairs) {
      excl[b.i].push_back(b.j);
      excl[b.j].push_back(b.i);
    }
  }
  for (std::vector<int>& e : excl) {
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
  }
  return excl;
}

std::vector<ScaledPair> pair_term_scaled_pairs(const ForceField& ff, const Topology& topology, size_t n, size_t term) {
  const double* w = term_weights(ff, term);
  std::vector<ScaledPair> out;
  for (const SpecialPair& p : topology.special_pairs(n, term_max_order(w))) {
    const double weight = w[p.order - 1];
    if (weight > 0.0 && weight < 1.0) out.push_back({p.i, p.j, weight});
  }
  if (out.empty()) return out;
  // A pair list that leaves a pair out of the term wins over its bonded weight.
  std::vector<std::pair<int, int>> listed;
  for (const PairList& list : ff.pair_lists)
    if (list.excluded_from(term))
      for (const Bond& b : list.data->pairs) listed.emplace_back(std::min(b.i, b.j), std::max(b.i, b.j));
  if (listed.empty()) return out;
  std::sort(listed.begin(), listed.end());
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const ScaledPair& p) {
                             return std::binary_search(listed.begin(), listed.end(), std::make_pair(p.i, p.j));
                           }),
            out.end());
  return out;
}

}  // namespace pairmd
