// Unit systems. Reduced LJ units (sigma, epsilon, m, tau; k_B = 1) and LAMMPS's "real" units
// (Angstrom, kcal/mol, fs, g/mol, e; temperatures in K, pressures in atm), so that a LAMMPS
// input's numbers (dt: 2.0 is 2 fs) and data files mean here what they mean there.
#pragma once

#include <string>

namespace pairmd {

struct Units {
  std::string name;
  double kB;              // Boltzmann constant, energy / temperature
  double force_to_accel;  // a = force_to_accel * F / m;  also mvv = force_to_accel * energy
  double coulomb;         // k_e in energy * length / charge^2
  double pressure_out;    // pressure in the output unit = pressure_out * energy / length^3

  static Units lj() { return {"lj", 1.0, 1.0, 1.0, 1.0}; }
  // As LAMMPS `units real`: 1 kcal/mol / (g/mol A) = 4.184e-4 A/fs^2 (LAMMPS's ftm2v),
  // k_e = 332.06371 kcal A / (mol e^2) (LAMMPS's qqr2e), 1 kcal/mol/A^3 = 68568.415 atm (nktv2p).
  static Units real() { return {"real", 0.0019872067, 4.184e-4, 332.06371, 68568.415}; }

  bool reduced() const { return name != "real"; }

  // Unit names for people: the thermo header, the CSV header, the log, .dx files.
  const char* energy_unit() const { return reduced() ? "epsilon" : "kcal/mol"; }
  const char* length_unit() const { return reduced() ? "sigma" : "Angstrom"; }
  const char* time_unit() const { return reduced() ? "tau" : "fs"; }
  const char* mass_unit() const { return reduced() ? "m" : "g/mol"; }
  const char* charge_unit() const { return reduced() ? "q*" : "e"; }
  const char* temperature_unit() const { return reduced() ? "epsilon/k_B" : "K"; }
  const char* pressure_unit() const { return reduced() ? "epsilon/sigma^3" : "atm"; }
  const char* velocity_unit() const { return reduced() ? "sigma/tau" : "Angstrom/fs"; }

  // The same in H5MD's unit grammar (modules/units: factors separated by spaces, powers as
  // signed integers), as MDAnalysis translates them. Reduced values carry no unit: "".
  const char* h5md_length() const { return reduced() ? "" : "Angstrom"; }
  const char* h5md_time() const { return reduced() ? "" : "fs"; }
  const char* h5md_velocity() const { return reduced() ? "" : "Angstrom fs-1"; }
  const char* h5md_force() const { return reduced() ? "" : "kcal mol-1 Angstrom-1"; }
  const char* h5md_energy() const { return reduced() ? "" : "kcal mol-1"; }
  const char* h5md_temperature() const { return reduced() ? "" : "K"; }
  const char* h5md_pressure() const { return reduced() ? "" : "atm"; }
  const char* h5md_mass() const { return reduced() ? "" : "u"; }
  const char* h5md_charge() const { return reduced() ? "" : "e"; }
};

}  // namespace pairmd
