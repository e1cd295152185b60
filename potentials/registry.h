// The one place where potentials are registered: a new pair potential or bond is one header
// plus one line here. Drivers (CPU reference, every GPU strategy) dispatch on the kind through
// these lists, so they never name a potential themselves.
#pragma once

#include <stdexcept>
#include <string>

#include "potentials/coulomb.h"
#include "potentials/debye_huckel.h"
#include "potentials/fene_bond.h"
#include "potentials/harmonic_bond.h"
#include "potentials/lennard_jones.h"

namespace pairmd {

// X(enum name, evaluator template)
#define PAIRMD_PAIR_POTENTIALS(X) \
  X(LennardJones, LennardJones)   \
  X(WCA, WCA)                     \
  X(Coulomb, Coulomb)             \
  X(DebyeHuckel, DebyeHuckel)

#define PAIRMD_BONDS(X)            \
  X(Harmonic, HarmonicBond)        \
  X(Fene, FeneBond)

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

}  // namespace pairmd
