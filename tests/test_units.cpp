// Units users recognise: `units: real` is LAMMPS's real (fs, atm, LAMMPS's constants), every
// printed and written number says its unit, a checkpoint from when real time was ps is refused
// with what to do, and `check` warns about a time step that does not fit the unit system.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/time_step_check.h"
#include "io/checkpoint_run.h"
#include "io/thermo_log.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// Argon as in LAMMPS's `units real` examples: dt 2 fs, T 120 K.
std::string argon(double dt, const std::string& integrator = "langevin") {
  return "units: real\n"
         "system:\n  types: [{name: Ar, mass: 39.948}]\n  lattice: {kind: fcc, cells: 4, density: 0.021}\n"
         "force_field:\n  pair:\n    - {potential: lj, cutoff: 8.5, coeffs: [{types: [Ar, Ar], epsilon: 0.238, sigma: "
         "3.405}]}\n"
         "integrator: {kind: " +
         integrator + ", dt: " + std::to_string(dt) + ", temperature: 120, friction: 0.01, seed: 3}\n";
}

TEST(Units, RealIsLammpsReal) {
  const Units u = Units::real();
  // LAMMPS src/update.cpp, units real: boltz, ftm2v = 1 / 48.88821291^2, qqr2e, nktv2p.
  EXPECT_DOUBLE_EQ(u.kB, 0.0019872067);
  EXPECT_NEAR(u.force_to_accel, 1.0 / 48.88821291 / 48.88821291, 1e-9);
  EXPECT_DOUBLE_EQ(u.coulomb, 332.06371);
  EXPECT_DOUBLE_EQ(u.pressure_out, 68568.415);
  EXPECT_STREQ(u.time_unit(), "fs");
  EXPECT_STREQ(u.pressure_unit(), "atm");
  EXPECT_STREQ(u.h5md_velocity(), "Angstrom fs-1");
  // An argon atom at 120 K moves sqrt(kT/m) ~ 1.6e-3 A/fs (160 m/s): kinetic energy in kcal/mol
  // from g/mol and A/fs needs the same factor the integrator uses.
  const double v = std::sqrt(u.kB * 120 * u.force_to_accel / 39.948);
  EXPECT_NEAR(v * 1e5, 158.0, 1.0);  // A/fs -> m/s
}

TEST(Units, CsvHeaderNamesEveryUnit) {
  const RunConfig real = parse_config(argon(2.0), "ar.yaml");
  EXPECT_EQ(csv_header(real),
            "step,time[fs],temperature[K],potential_energy[kcal/mol],kinetic_energy[kcal/mol],total_energy[kcal/mol],"
            "pressure[atm],volume[Angstrom^3],density[1/Angstrom^3],steps_per_second,energy_lj[kcal/mol]");
  const RunConfig lj = parse_config(test::lj_yaml(4, 0.8442, "langevin", 1.2), "lj.yaml");
  EXPECT_EQ(csv_header(lj),
            "step,time[tau],temperature[epsilon/k_B],potential_energy[epsilon],kinetic_energy[epsilon],"
            "total_energy[epsilon],pressure[epsilon/sigma^3],volume[sigma^3],density[1/sigma^3],steps_per_second,"
            "energy_lj[epsilon]");
}

TEST(Units, TimeStepWarningsFitTheUnitSystem) {
  auto warnings = [](const std::string& yaml) {
    const test::TestSystem s = test::make_system(yaml);
    return time_step_warnings(s.cfg, s.built.state, s.built.topology);
  };
  // LAMMPS habits in real units are fine; the same number in ps (0.002) and a far too large
  // one are not.
  EXPECT_TRUE(warnings(argon(2.0)).empty());
  const auto small = warnings(argon(0.002));
  ASSERT_EQ(small.size(), 1u);
  EXPECT_NE(small[0].find("very small"), std::string::npos) << small[0];
  EXPECT_NE(small[0].find("meant in ps"), std::string::npos) << small[0];
  const auto large = warnings(argon(100.0));
  ASSERT_EQ(large.size(), 1u);
  EXPECT_NE(large[0].find("integrator.dt 100 fs is large"), std::string::npos) << large[0];
  // Reduced units: the usual 0.005 tau is fine, a real-units habit (2.0) is not; Brownian
  // dynamics is not looked at.
  EXPECT_TRUE(warnings(test::lj_yaml(4, 0.8442, "langevin", 1.2, 0.005)).empty());
  EXPECT_FALSE(warnings(test::lj_yaml(4, 0.8442, "langevin", 1.2, 2.0)).empty());
  EXPECT_TRUE(warnings(test::lj_yaml(4, 0.8442, "brownian", 1.2, 2.0)).empty());
  // The shipped examples pass without a warning.
  for (const char* name : {"lj_liquid", "kremer_grest", "polyelectrolyte"}) {
    RunConfig cfg = load_config(std::string(PAIRMD_SOURCE_DIR) + "/configs/" + name + ".yaml");
    cfg.minimize.algorithm = MinimizeAlgorithm::None;
    const BuiltSystem b = build_system(cfg);
    EXPECT_TRUE(time_step_warnings(cfg, b.state, b.topology).empty()) << name;
  }
}

TEST(Units, BondPeriodsAreChecked) {
  const std::string yaml =
      "units: real\n"
      "system:\n  types: [{name: C, mass: 12.011}, {name: H, mass: 1.008}]\n"
      "  chains: {count: 4, length: 2, density: 0.01, bond: CH, bond_length: 1.09, monomer_type: C}\n"
      "force_field:\n  bonds: [{name: CH, potential: harmonic, k: 680, r0: 1.09}]\n"
      "integrator: {kind: nve, dt: 2.0}\n";
  const test::TestSystem s = test::make_system(yaml);
  // A C-C "bond" with k = 680 kcal/mol/A^2 (LAMMPS's K is half of it: V = K (r - r0)^2, pairmd
  // writes k/2): period 2 pi sqrt(mu / k) = 2 pi sqrt(6.0 / (680 * 4.184e-4)) ~ 29 fs.
  const TimeScales ts = time_scales(s.cfg, s.built.state, s.built.topology);
  EXPECT_NEAR(ts.bond, 2 * M_PI * std::sqrt(12.011 / 2 / (680 * 4.184e-4)), 1e-9);
  EXPECT_TRUE(time_step_warnings(s.cfg, s.built.state, s.built.topology).empty());
  const test::TestSystem fast = test::make_system(yaml, {"integrator.dt=3"});
  const auto w = time_step_warnings(fast.cfg, fast.built.state, fast.built.topology);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("bond type CH"), std::string::npos) << w[0];
}

TEST(Units, CheckpointFromWhenRealTimeWasPsIsRefused) {
  const RunConfig real = parse_config(argon(2.0), "ar.yaml");
  Checkpoint ck;
  ck.time_unit = "fs";
  EXPECT_NO_THROW(check_checkpoint_units(ck, real, "ar.checkpoint.h5"));
  ck.time_unit = "";  // written before the unit was stored: real time was ps then
  try {
    check_checkpoint_units(ck, real, "ar.checkpoint.h5");
    FAIL() << "an old real-units checkpoint was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("written with time in ps"), std::string::npos) << e.what();
  }
  const RunConfig lj = parse_config(test::lj_yaml(4, 0.8442, "langevin", 1.2), "lj.yaml");
  EXPECT_NO_THROW(check_checkpoint_units(ck, lj, "lj.checkpoint.h5"));
}

}  // namespace
}  // namespace pairmd
