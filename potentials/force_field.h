// The force field of a run: nonbonded pair terms with per-type-pair coefficients, and bond
// types. Backends turn it into evaluator parameter tables in their own precision.
#pragma once

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

struct ForceField {
  int ntypes = 1;
  std::vector<PairTerm> pair_terms;
  std::vector<BondType> bond_types;
  ExclusionPolicy exclusions = ExclusionPolicy::Bonds;
};

// Static description of the run that backends need besides the state.
struct NeighborSettings {
  double skin = 0.3;
  int initial_capacity_per_particle = 0;  // GPU pair list buffer; 0 = estimate from density
};

}  // namespace pairmd
