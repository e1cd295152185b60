// The force field of a run: nonbonded pair terms with per-type-pair coefficients, bond, angle,
// dihedral and improper types, pair lists (named pairs with coefficients of their own), and the
// weights of the pair terms on bonded neighbours. Backends turn it into evaluator parameter
// tables in their own precision.
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

// An angle, dihedral or improper type: a registered potential and its coefficients.
template <typename Kind>
struct BondedType {
  std::string name;
  Kind kind;
  BondedCoeffs coeffs;
};
using AngleType = BondedType<AngleKind>;
using DihedralType = BondedType<DihedralKind>;
using ImproperType = BondedType<ImproperKind>;

// The weight of the pair terms on 1-2, 1-3 and 1-4 pairs (Topology::special_pairs), as LAMMPS's
// special_bonds lj/coul w12 w13 w14 (OpenMM's exceptions): 0 leaves the pair out of the term's
// neighbour list, 1 keeps it as any other pair, anything between is evaluated by itself, once,
// with its energy and force times the weight (and added to the term's energy). Terms of charges
// (coulomb, debye_huckel, coulomb_long) take the coulomb weights, the others (lj, wca, repulsive_r6) the lj
// ones. `force_field.exclusions` sets both: none [1, 1, 1], bonds [0, 1, 1], angles [0, 0, 1].
struct SpecialBonds {
  double lj[3] = {0.0, 1.0, 1.0};
  double coulomb[3] = {0.0, 1.0, 1.0};
  const double* weights(bool charged) const { return charged ? coulomb : lj; }
  // The highest order with a weight other than 1 (0: every pair is an ordinary pair).
  int max_order() const;
};

struct ForceField {
  int ntypes = 1;
  std::vector<PairTerm> pair_terms;
  std::vector<BondType> bond_types;
  std::vector<AngleType> angle_types;
  std::vector<DihedralType> dihedral_types;
  std::vector<ImproperType> improper_types;
  std::vector<PairList> pair_lists;
  SpecialBonds special;
};

// The partners left out of pair term `term`'s neighbour list, per particle (sorted, each once):
// the 1-2, 1-3, 1-4 pairs whose weight for the term is not 1 (those of weight 0 are left out,
// the others are evaluated as scaled pairs: below) and the pairs of every pair list that names
// the term in its exclude_from. What both backends' neighbour lists skip.
std::vector<std::vector<int>> pair_term_exclusions(const ForceField& ff, const Topology& topology, size_t n,
                                                   size_t term);

// A bonded neighbour pair that pair term evaluates with a weight (0 < weight < 1).
struct ScaledPair {
  int i, j;
  double weight;
};

// The scaled pairs of pair term `term` (sorted by (i, j)): its 1-2, 1-3, 1-4 pairs of weight
// strictly between 0 and 1, less those a pair list leaves out of the term.
std::vector<ScaledPair> pair_term_scaled_pairs(const ForceField& ff, const Topology& topology, size_t n, size_t term);

// Static description of the run that backends need besides the state.
struct NeighborSettings {
  double skin = 0.3;
  bool skin_auto = false;  // `skin: auto`: the CUDA backend times candidate skins at start (backends/tuning.h);
                           // `skin` is then the CPU backend's (and the log's first) value
  int initial_capacity_per_particle = 0;  // GPU pair list buffer; 0 = estimate from density
};

}  // namespace pairmd
