// Evaluator parameters of one term, packed as raw bytes so that drivers can hold tables of
// any evaluator side by side (and copy them to a device as they are). Built once per run.
#pragma once

#include <cstring>
#include <vector>

#include "potentials/force_field.h"

namespace pairmd {

class ParamTable {
 public:
  template <typename Params>
  static ParamTable from(const std::vector<Params>& p) {
    ParamTable t;
    t.bytes_.resize(p.size() * sizeof(Params));
    if (!p.empty()) std::memcpy(t.bytes_.data(), p.data(), t.bytes_.size());
    return t;
  }
  template <typename Params>
  const Params* as() const {
    return reinterpret_cast<const Params*>(bytes_.data());
  }
  const void* data() const { return bytes_.data(); }
  size_t bytes() const { return bytes_.size(); }

 private:
  std::vector<unsigned char> bytes_;
};

// Per-type-pair table of a pair term for evaluator type Eval (any precision).
template <typename Eval>
ParamTable make_pair_table(const PairTerm& term) {
  std::vector<typename Eval::Params> p;
  p.reserve(term.coeffs.size());
  for (const PairCoeffs& c : term.coeffs) p.push_back(Eval::from(c));
  return ParamTable::from(p);
}

// Per-bond-type table of the bond types of one kind; index by bond type.
template <typename Eval>
ParamTable make_bond_table(const ForceField& ff) {
  std::vector<typename Eval::Params> p;
  for (const BondType& b : ff.bond_types) p.push_back(Eval::from(b.coeffs));
  return ParamTable::from(p);
}

// Per-pair table of a pair list for evaluator type Eval; index by the pair (Bond::type).
template <typename Eval>
ParamTable make_pair_list_table(const PairList& list) {
  std::vector<typename Eval::Params> p;
  p.reserve(list.size());
  for (size_t k = 0; k < list.size(); ++k) p.push_back(Eval::from(list.coeffs(k)));
  return ParamTable::from(p);
}

// Per-type table of the angle, dihedral or improper types for the evaluator of `kind`; index by
// type (the records of types of other kinds are left empty: their terms use their own tables).
template <typename Eval, typename Kind>
ParamTable make_bonded_table(const std::vector<BondedType<Kind>>& types, Kind kind) {
  std::vector<typename Eval::Params> p;
  p.reserve(types.size());
  for (const BondedType<Kind>& t : types) p.push_back(t.kind == kind ? Eval::from(t.coeffs) : typename Eval::Params{});
  return ParamTable::from(p);
}

}  // namespace pairmd
