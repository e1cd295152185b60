// Instantaneous thermodynamic observables of a state.
#pragma once

#include <cstdint>
#include <vector>

namespace pairmd {

struct Observables {
  int64_t step = 0;
  double potential = 0.0;  // total potential energy
  double kinetic = 0.0;    // total kinetic energy
  double virial = 0.0;     // W = sum over pairs of r_ij . f_ij
  // Pair terms in config order, then bond kinds, then pair lists in config order, then the
  // pulling (when the run pulls).
  std::vector<double> potential_by_term;
  double momentum[3] = {0, 0, 0};

  double total() const { return potential + kinetic; }
};

// Temperature and pressure from the observables; degrees of freedom depend on the integrator
// (a thermostat couples all 3N; NVE with zero total momentum has 3N - 3).
double temperature(const Observables& o, double dof, double kB);
// P = (2 KE + W) / (3 V); NaN for open boundaries (no volume).
double pressure(const Observables& o, double volume);

}  // namespace pairmd
