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
  // Pair terms in config order (their scaled 1-2/1-3/1-4 pairs included), then bond kinds, then
  // pair lists in config order, then angle, dihedral and improper kinds (each in order of first
  // appearance), then the pulling (when the run pulls): backends/backend.h, energy_groups().
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
