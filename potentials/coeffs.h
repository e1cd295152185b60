// User-level coefficients of one type pair (pair potentials) or one bond type (bonds), in
// double precision, as read from the config. Each evaluator turns them into its own compact
// Params in the floating type of the backend (double on the CPU, float on the GPU).
//
// Why one record for every pair potential rather than a struct per evaluator: it is the config
// language's record, not a potential's. Its keys mean the same for every potential that takes
// them (epsilon and sigma per type pair, the cutoff per pair or term, the prefactor k_e/eps_r
// from `dielectric` or `bjerrum_length`, kappa from `kappa` or `debye_length`), and the mixing
// rules combine per-type records the same way whatever the potential; which keys a potential
// takes is in its registry entry (potentials/registry.h). The per-evaluator parameters are the
// evaluator's `Params`, built once per run by `Eval::from`; only those reach a backend or device,
// so the record's unused fields cost nothing in the force loops. A potential with a coefficient
// of a new meaning adds a field here, its key in engine/config.cpp, and reads it in `from`.
#pragma once

#include <vector>

namespace pairmd {

struct PairCoeffs {
  double epsilon = 1.0;    // energy scale (LJ, WCA)
  double sigma = 1.0;      // length scale (LJ, WCA)
  double rcut = 0.0;       // cutoff of this type pair; 0 switches the pair off
  double kappa = 0.0;      // inverse screening length (Debye-Hueckel)
  double prefactor = 1.0;  // k_e / epsilon_r in the run's units (Coulomb, Debye-Hueckel)
  bool shift = false;      // subtract V(rcut) so the energy is continuous at the cutoff

  double ewald_alpha = 0.0;  // Ewald splitting parameter (coulomb_long; from electrostatics.accuracy)
};

// One bond type, or one pair of a pair list (force_field.pair_lists: the same record per pair).
// Which fields a bond potential takes is in its registry entry (kK, kR0, kEpsilon,
// kMaxExtension: the config keys k, r0, epsilon, max_extension).
struct BondCoeffs {
  double k = 0.0;   // spring constant (harmonic: V = k/2 (r - r0)^2; FENE: K)
  double r0 = 0.0;  // rest length (harmonic, fene_native), maximum extension R0 (fene), native distance (lj_native)
  double epsilon = 1.0;        // well depth (lj_native)
  double max_extension = 2.0;  // the largest |r - r0| (fene_native)
};

// One angle, dihedral or improper type: its coefficients in the order of LAMMPS's Coeffs lines
// for the same style (the evaluator's kCoeffs names them), angles in degrees as LAMMPS gives
// them. A repeated group (the terms [k, n, d] of a fourier dihedral) follows its count's place:
// `values` holds the groups one after the other, without the count.
struct BondedCoeffs {
  std::vector<double> values;
};

// What a coefficient of an angle, dihedral or improper potential is (host only; the config
// reader, the LAMMPS data reader and the docs read it): its config key, what it means (with its
// unit, as messages say it), its range and whether it is an integer.
struct BondedCoeffSpec {
  const char* name;
  const char* meaning;
  double lo, hi;
  bool integer;
  bool nonzero;  // 0 is not allowed (a sign: +1 or -1)
};

}  // namespace pairmd
