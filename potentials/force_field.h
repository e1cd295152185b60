// The force field of a run: nonbonded pair terms with per-type-pair coefficients, bond types,
// and pair lists (named pairs with coefficients of their own). Backends turn it into evaluator
// parameter tables in their own precision.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/topology.h"
#include "potentials/coeffs.h"
#include "potentials/registry.h"

namespace pairmd {

struct PairTerm {
  PairKind kind;
  std::vector<PairCoeffs> coeffs;  // ntypes * ntypes, symmetric; coeffs[a * ntypes + b]
  double max_cutoff() const;       // the largest cutoff over type pairs (what the list needs)
};

struct BondType {
  std::string name;
  BondKind kind;
  BondCoeffs coeffs;
};

// A coefficient of a bond potential that a pair list may give per pair (a column of its pairs).
enum class BondField { K, R0, Epsilon, MaxExtension };
const char* bond_field_name(BondField f);  // the config key: "k", "r0", "epsilon", "max_extension"
void set_bond_field(BondCoeffs& c, BondField f, double value);

// The pairs of a pair list and their per-pair values: pair k joins particles (tags) pairs[k].i
// and pairs[k].j, and pairs[k].type == k (the index of its own parameters, which is how the
// bond drivers of both backends read them: table[type]). values holds columns.size() numbers
// per pair. Held by a shared pointer: a Model is copied several times per run, and a pair list
// of a large assembly has millions of pairs.
struct PairListData {
  std::vector<Bond> pairs;
  std::vector<double> values;
};

// force_field.pair_lists[k]: a static list of specific pairs, each with its own coefficients,
// evaluated with a registered bond potential (per-pair parameters: the native distance of each
// contact of a structure-based model, the rest length of each spring of an elastic network).
struct PairList {
  std::string name;
  BondKind kind = BondKind::Harmonic;
  BondCoeffs defaults;             // the coefficients every pair shares
  std::vector<BondField> columns;  // the coefficients each pair gives itself
  std::shared_ptr<const PairListData> data = std::make_shared<PairListData>();
  std::vector<int> exclude_from;  // pair terms (indices) that leave these pairs out

  size_t size() const { return data->pairs.size(); }
  BondCoeffs coeffs(size_t k) const;  // pair k's coefficients: the defaults and its columns
  bool excluded_from(size_t term) const;
};

struct ForceField {
  int ntypes = 1;
  std::vector<PairTerm> pair_terms;
  std::vector<BondType> bond_types;
  std::vector<PairList> pair_lists;
  ExclusionPolicy exclusions = ExclusionPolicy::Bonds;
};

// The partners left out of pair term `term`, per particle (sorted, each once): the bonded
// exclusions of ff.exclusions and the pairs of every pair list that names the term in its
// exclude_from. What both backends' neighbour lists skip.
std::vector<std::vector<int>> pair_term_exclusions(const ForceField& ff, const Topology& topology, size_t n,
                                                   size_t term);

// Static description of the run that backends need besides the state.
struct NeighborSettings {
  double skin = 0.3;
  int initial_capacity_per_particle = 0;  // GPU pair list buffer; 0 = estimate from density
};

}  // namespace pairmd
