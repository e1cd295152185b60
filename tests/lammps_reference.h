// LAMMPS's `run 0` on the bonded test molecules (issue #32), stored so that the C++ tests compare
// against it without LAMMPS: tests/data/lammps_bonded, written by
// `tests/python/check_lammps_bonded.py PAIRMD SCRATCH --save tests/data/lammps_bonded` (Debian's
// lammps 2021). Two cases: "styles" (every angle and dihedral style pairmd shares with LAMMPS,
// harmonic impropers, LJ and Coulomb with 1-4 pairs scaled) and "fourier" (multi-term fourier
// dihedrals, which LAMMPS summed as charmm dihedrals of weight 0). Each: pairmd's data file, its
// config (@DATA@ for the data file's path) and LAMMPS's thermo and forces by atom id.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "io/thermo_log.h"
#include "tests/test_support.h"

namespace pairmd::test {

struct LammpsReference {
  std::string name;
  TestSystem system;                     // built from the data file, as `pairmd run` builds it
  std::map<std::string, double> thermo;  // PotEng, E_vdwl, E_coul, E_bond, E_angle, E_dihed, E_impro, Press
  std::vector<Vec3d> forces;             // by atom id (pairmd's particle order for a data file)
};

inline std::vector<LammpsReference> lammps_references() {
  const std::string dir = std::string(PAIRMD_SOURCE_DIR) + "/tests/data/lammps_bonded/";
  std::vector<LammpsReference> out;
  for (const char* name : {"styles", "fourier"}) {
    LammpsReference r;
    r.name = name;
    std::ifstream y(dir + name + ".yaml");
    std::stringstream text;
    text << y.rdbuf();
    std::string yaml = text.str();
    EXPECT_FALSE(yaml.empty()) << "no " << dir << name << ".yaml";
    for (size_t at; (at = yaml.find("@DATA@")) != std::string::npos;) yaml.replace(at, 6, dir + "data." + name);
    r.system = make_system(yaml, {}, name);
    std::ifstream l(dir + name + ".lammps");
    for (std::string line; std::getline(l, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream w(line);
      std::string key;
      w >> key;
      if (key == "force") {
        long id = 0;
        Vec3d f{};
        w >> id >> f.x >> f.y >> f.z;
        r.forces.push_back(f);
      } else {
        w >> r.thermo[key];
      }
    }
    EXPECT_EQ(r.forces.size(), r.system.built.state.size()) << name;
    EXPECT_EQ(r.thermo.size(), 8u) << name;
    out.push_back(std::move(r));
  }
  return out;
}

// pairmd's observables under LAMMPS's thermo names (its energy columns, the pressure in the
// config's units; the velocities are zero).
inline std::map<std::string, double> lammps_named(const LammpsReference& r, const Observables& o) {
  const Model m = r.system.model();
  const std::vector<EnergyColumn> columns = energy_columns(m.force_field);
  const std::vector<double> values = energy_column_values(columns, energy_groups(m), o);
  const std::map<std::string, std::string> names = {{"energy_lj", "E_vdwl"},        {"energy_coulomb", "E_coul"},
                                                    {"energy_bond", "E_bond"},      {"energy_angle", "E_angle"},
                                                    {"energy_dihedral", "E_dihed"}, {"energy_improper", "E_impro"}};
  std::map<std::string, double> out;
  for (size_t c = 0; c < columns.size(); ++c) {
    auto it = names.find(columns[c].name);
    if (it != names.end()) out[it->second] = values[c];
  }
  out["PotEng"] = o.potential;
  const SystemState& s = r.system.built.state;
  out["Press"] = r.system.cfg.model.units.pressure_out * pressure(o, s.box.volume());
  return out;
}

// Every thermo quantity within energy_tol of LAMMPS's (relative to the largest of 1, its size and
// the largest term's: fp32 rounding scales with the terms, not their sum) and every force
// component within force_tol of the largest force.
inline void expect_matches_lammps(const LammpsReference& r, const Observables& o, const std::vector<Vec3d>& f,
                                  double energy_tol, double force_tol, const std::string& what) {
  const std::map<std::string, double> ours = lammps_named(r, o);
  double largest_term = 0;
  for (const char* k : {"E_vdwl", "E_coul", "E_bond", "E_angle", "E_dihed", "E_impro"})
    largest_term = std::max(largest_term, std::fabs(r.thermo.at(k)));
  for (const auto& [name, theirs] : r.thermo) {
    ASSERT_TRUE(ours.count(name)) << what << ": pairmd has no " << name;
    const double scale = std::max({1.0, std::fabs(theirs), name == "Press" ? 0.0 : largest_term});
    EXPECT_NEAR(ours.at(name), theirs, energy_tol * scale) << what << ": " << name;
    // not trivially equal: each kind of term is there
    if (name != "PotEng" && name != "Press" && name != "E_bond") EXPECT_GT(std::fabs(theirs), 1e-3) << name;
  }
  ASSERT_EQ(f.size(), r.forces.size()) << what;
  double largest = 0, err = 0;
  for (const Vec3d& x : r.forces) largest = std::max({largest, std::fabs(x.x), std::fabs(x.y), std::fabs(x.z)});
  for (size_t i = 0; i < f.size(); ++i) {
    const Vec3d d = f[i] - r.forces[i];
    err = std::max({err, std::fabs(d.x), std::fabs(d.y), std::fabs(d.z)});
  }
  std::printf("[lammps] %-28s max |dF| / max |F| = %.3g\n", what.c_str(), err / largest);
  EXPECT_LE(err, force_tol * largest) << what;
}

}  // namespace pairmd::test
