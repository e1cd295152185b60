// The one place where potentials are registered: a new pair potential or bond is one header
// plus one line here. Drivers (CPU reference, every GPU strategy) dispatch on the kind through
// these lists, so they never name a potential themselves; the config reader, `pairmd check
// --help`, the docs tables (checked by tests/test_registries.cpp) and the tests read the tables
// below, built from each evaluator's traits (kName, kFormula, ...: see lennard_jones.h).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "potentials/angle_potentials.h"
#include "potentials/coulomb.h"
#include "potentials/coulomb_long.h"
#include "potentials/debye_huckel.h"
#include "potentials/dihedral_potentials.h"
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

// Angle, dihedral and improper terms: potentials of three or four named particles, per type
// (force_field.angles, .dihedrals, .impropers). Names are pairmd's; each evaluator also names the
// LAMMPS style of the same form (kLammpsStyle), which LAMMPS data files' Coeffs sections use.
#define PAIRMD_ANGLES(X)     \
  X(Harmonic, HarmonicAngle) \
  X(Cosine, CosineAngle)     \
  X(CosineSquared, CosineSquaredAngle)

#define PAIRMD_DIHEDRALS(X)               \
  X(Harmonic, HarmonicDihedral)           \
  X(Fourier, FourierDihedral)             \
  X(Opls, OplsDihedral)                   \
  X(MultiHarmonic, MultiHarmonicDihedral) \
  X(Quadratic, QuadraticDihedral)

#define PAIRMD_IMPROPERS(X) X(Harmonic, HarmonicImproper)

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

enum class AngleKind {
#define PAIRMD_ENUM(name, eval) name,
  PAIRMD_ANGLES(PAIRMD_ENUM)
#undef PAIRMD_ENUM
};

enum class DihedralKind {
#define PAIRMD_ENUM(name, eval) name,
  PAIRMD_DIHEDRALS(PAIRMD_ENUM)
#undef PAIRMD_ENUM
};

enum class ImproperKind {
#define PAIRMD_ENUM(name, eval) name,
  PAIRMD_IMPROPERS(PAIRMD_ENUM)
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

// What the config language, the LAMMPS data reader and the docs know of an angle, dihedral or
// improper potential (host only).
template <typename Kind>
struct BondedPotentialInfo {
  Kind kind;
  const char* name;               // the config value of `potential`
  const char* lammps_style;       // the LAMMPS style of the same form and coefficients
  const char* formula;            // one line for --help and the docs
  const BondedCoeffSpec* coeffs;  // in LAMMPS's order (a repeated group: one group)
  int ncoeffs;
  int max_repeats;  // 0: the coefficients once; else a group given 1..max_repeats times (`terms`)
};

#define PAIRMD_BONDED_INFO(Kind, name, eval)                                  \
  {Kind::name,                                                                \
   eval<double>::kName,                                                       \
   eval<double>::kLammpsStyle,                                                \
   eval<double>::kFormula,                                                    \
   eval<double>::kCoeffs,                                                     \
   static_cast<int>(sizeof(eval<double>::kCoeffs) / sizeof(BondedCoeffSpec)), \
   eval<double>::kRepeat},
#define PAIRMD_ANGLE_INFO(name, eval) PAIRMD_BONDED_INFO(AngleKind, name, eval)
#define PAIRMD_DIHEDRAL_INFO(name, eval) PAIRMD_BONDED_INFO(DihedralKind, name, eval)
#define PAIRMD_IMPROPER_INFO(name, eval) PAIRMD_BONDED_INFO(ImproperKind, name, eval)
inline const BondedPotentialInfo<AngleKind> kAnglePotentials[] = {PAIRMD_ANGLES(PAIRMD_ANGLE_INFO)};
inline const BondedPotentialInfo<DihedralKind> kDihedralPotentials[] = {PAIRMD_DIHEDRALS(PAIRMD_DIHEDRAL_INFO)};
inline const BondedPotentialInfo<ImproperKind> kImproperPotentials[] = {PAIRMD_IMPROPERS(PAIRMD_IMPROPER_INFO)};
#undef PAIRMD_ANGLE_INFO
#undef PAIRMD_DIHEDRAL_INFO
#undef PAIRMD_IMPROPER_INFO
#undef PAIRMD_BONDED_INFO

template <typename Kind, size_t N>
const BondedPotentialInfo<Kind>& bonded_info(const BondedPotentialInfo<Kind> (&registry)[N], Kind k) {
  for (const auto& i : registry)
    if (i.kind == k) return i;
  throw std::logic_error("unknown angle, dihedral or improper kind");
}
inline const BondedPotentialInfo<AngleKind>& potential_info(AngleKind k) { return bonded_info(kAnglePotentials, k); }
inline const BondedPotentialInfo<DihedralKind>& potential_info(DihedralKind k) {
  return bonded_info(kDihedralPotentials, k);
}
inline const BondedPotentialInfo<ImproperKind>& potential_info(ImproperKind k) {
  return bonded_info(kImproperPotentials, k);
}

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

template <typename Real, typename F>
decltype(auto) dispatch_bonded(AngleKind kind, F&& f) {
  switch (kind) {
#define PAIRMD_CASE(name, eval) \
  case AngleKind::name:         \
    return f(eval<Real>{});
    PAIRMD_ANGLES(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  throw std::logic_error("unknown angle kind");
}

template <typename Real, typename F>
decltype(auto) dispatch_bonded(DihedralKind kind, F&& f) {
  switch (kind) {
#define PAIRMD_CASE(name, eval) \
  case DihedralKind::name:      \
    return f(eval<Real>{});
    PAIRMD_DIHEDRALS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  throw std::logic_error("unknown dihedral kind");
}

template <typename Real, typename F>
decltype(auto) dispatch_bonded(ImproperKind kind, F&& f) {
  switch (kind) {
#define PAIRMD_CASE(name, eval) \
  case ImproperKind::name:      \
    return f(eval<Real>{});
    PAIRMD_IMPROPERS(PAIRMD_CASE)
#undef PAIRMD_CASE
  }
  throw std::logic_error("unknown improper kind");
}

inline double pair_cutoff(PairKind kind, const PairCoeffs& c) {
  return dispatch_pair<double>(kind, [&](auto eval) { return decltype(eval)::cutoff(c); });
}

}  // namespace pairmd
