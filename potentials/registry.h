// The one place where potentials are registered: a new pair potential or bond is one header
// plus one line here. Drivers (CPU reference, every GPU strategy) dispatch on the kind through
// these lists, so they never name a potential themselves; the config reader, `pairmd check
// --help`, the docs tables (checked by tests/test_registries.cpp) and the tests read the tables
// below, built from each evaluator's traits (kName, kFormula, ...: see lennard_jones.h).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "potentials/coulomb.h"
#include "potentials/coulomb_long.h"
#include "potentials/debye_huckel.h"
#include "potentials/fene_bond.h"
#include "potentials/fene_native_bond.h"
#include "potentials/harmonic_bond.h"
#include "potentials/lennard_jones.h"
#include "potentials/lj_native_bond.h"
#include "potentials/repulsive_r6.h"

namespace pairmd {

// X(enum name, evaluator template)
#define PAIRMD_PAIR_POTENTIALS(X) \
  X(LennardJones, LennardJones)   \
  X(WCA, WCA)                     \
  X(Coulomb, Coulomb)             \
  X(DebyeHuckel, DebyeHuckel)     \
  X(RepulsiveR6, RepulsiveR6)     \
  X(CoulombLong, CoulombLong)

// Bonds: potentials of a named pair with no cutoff, evaluated per bond type or, in a pair list
// (force_field.pair_lists), with coefficients of each pair's own.
#define PAIRMD_BONDS(X)         \
  X(Harmonic, HarmonicBond)     \
  X(Fene, FeneBond)             \
  X(FeneNative, FeneNativeBond) \
  X(LjNative, LjNativeBond)

enum class PairKind {
#define PAIRMD_ENUM(name, eval) name,
  PAIRMD_PAIR_POTENTIALS(PAIRMD_ENUM)
#undef PAIRMD_ENUM
};

enum class BondKind {
#define PAIRMD_ENUM(name, eval) name,
  PAIRMD_BONDS(PAIRMD_ENUM)
#undef PAIRMD_ENUM
};

inline const char* pair_kind_name(PairKind k) {
  switch (k) {
#define PAIRMD_CASE(name, eval) \
  case PairKind::name:          \
    return eval<double>::kName;
    PAIRMD_PAIR_POTENTIALS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  return "?";
}

inline const char* bond_kind_name(BondKind k) {
  switch (k) {
#define PAIRMD_CASE(name, eval) \
  case BondKind::name:          \
    return eval<double>::kName;
    PAIRMD_BONDS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  return "?";
}

// What the config language and the docs know of a pair potential (host only).
struct PairPotentialInfo {
  PairKind kind;
  const char* name;          // the config value of `potential`
  const char* formula;       // one line for --help and the docs
  bool charged;              // V depends on q_i q_j: `dielectric` / `bjerrum_length`; coeffs only cut per pair
  bool screened;             // takes `kappa` or `debye_length`
  const char* fixed_cutoff;  // non-null: no `cutoff` key (term or pair); why, for the message
  const char* fixed_shift;   // non-null: no `shift` key; why
};

inline const PairPotentialInfo kPairPotentials[] = {
#define PAIRMD_INFO(name, eval)                                                                              \
  {PairKind::name,          eval<double>::kName,        eval<double>::kFormula,   eval<double>::kUsesCharge, \
   eval<double>::kScreened, eval<double>::kFixedCutoff, eval<double>::kFixedShift},
    PAIRMD_PAIR_POTENTIALS(PAIRMD_INFO)
#undef PAIRMD_INFO
};

// What the config language and the docs know of a bond potential (host only). The coefficients
// are keys of a bond type and of a pair list (per term or per pair); a null text means the
// potential does not take that key.
struct BondPotentialInfo {
  BondKind kind;
  const char* name;           // the config value of a bond type's `potential`
  const char* formula;        // one line for --help and the docs
  const char* k;              // what k is ("a spring constant > 0"), or null
  const char* r0;             // what r0 is, as messages say it ("a rest length >= 0")
  bool r0_positive;           // r0 must be > 0 (else >= 0)
  const char* epsilon;        // what epsilon is (>= 0), or null
  const char* max_extension;  // what max_extension is (> 0), or null
};

inline const BondPotentialInfo kBondPotentials[] = {
#define PAIRMD_INFO(name, eval)                                                            \
  {BondKind::name,    eval<double>::kName,       eval<double>::kFormula, eval<double>::kK, \
   eval<double>::kR0, eval<double>::kR0Positive, eval<double>::kEpsilon, eval<double>::kMaxExtension},
    PAIRMD_BONDS(PAIRMD_INFO)
#undef PAIRMD_INFO
};

inline const PairPotentialInfo& pair_potential_info(PairKind k) {
  for (const PairPotentialInfo& i : kPairPotentials)
    if (i.kind == k) return i;
  throw std::logic_error("unknown pair kind");
}

// The registered entries of that name, or nullptr.
inline const PairPotentialInfo* find_pair_potential(const std::string& name) {
  for (const PairPotentialInfo& i : kPairPotentials)
    if (name == i.name) return &i;
  return nullptr;
}
inline const BondPotentialInfo* find_bond_potential(const std::string& name) {
  for (const BondPotentialInfo& i : kBondPotentials)
    if (name == i.name) return &i;
  return nullptr;
}

// The pair terms' cutoff of one type pair (what its neighbour list needs), through the
// evaluator: most take the configured cutoff, WCA derives it from sigma.
inline double pair_cutoff(PairKind kind, const PairCoeffs& c);

// Calls f(Evaluator<Real>{}) with the evaluator of `kind`; f is a generic lambda.
template <typename Real, typename F>
decltype(auto) dispatch_pair(PairKind kind, F&& f) {
  switch (kind) {
#define PAIRMD_CASE(name, eval) \
  case PairKind::name:          \
    return f(eval<Real>{});
    PAIRMD_PAIR_POTENTIALS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  throw std::logic_error("unknown pair kind");
}

template <typename Real, typename F>
decltype(auto) dispatch_bond(BondKind kind, F&& f) {
  switch (kind) {
#define PAIRMD_CASE(name, eval) \
  case BondKind::name:          \
    return f(eval<Real>{});
    PAIRMD_BONDS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  throw std::logic_error("unknown bond kind");
}

inline double pair_cutoff(PairKind kind, const PairCoeffs& c) {
  return dispatch_pair<double>(kind, [&](auto eval) { return decltype(eval)::cutoff(c); });
}

}  // namespace pairmd
