// Unit systems. Reduced LJ units (sigma, epsilon, m, tau; k_B = 1) and "real" units
// (Angstrom, kcal/mol, ps, amu, e; temperatures in K).
#pragma once

#include <string>

namespace pairmd {

struct Units {
  std::string name;
  double kB;              // Boltzmann constant, energy / temperature
  double force_to_accel;  // a = force_to_accel * F / m;  also mvv = force_to_accel * energy
  double coulomb;         // k_e in energy * length / charge^2

  static Units lj() { return {"lj", 1.0, 1.0, 1.0}; }
  // 1 kcal/mol / (amu A) = 418.4 A/ps^2; k_e = 332.0637 kcal A / (mol e^2).
  static Units real() { return {"real", 0.0019872041, 418.4, 332.0637}; }

  // Energy, length, time, mass, charge, temperature unit names (for output files).
  const char* energy_unit() const { return name == "real" ? "kcal/mol" : "epsilon"; }
  const char* length_unit() const { return name == "real" ? "angstrom" : "sigma"; }
  const char* time_unit() const { return name == "real" ? "ps" : "tau"; }
  const char* mass_unit() const { return name == "real" ? "amu" : "m"; }
  const char* charge_unit() const { return name == "real" ? "e" : "q*"; }
  const char* temperature_unit() const { return name == "real" ? "K" : "epsilon/k_B"; }
};

}  // namespace pairmd
