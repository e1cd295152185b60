// Angle, dihedral and improper terms: every registered evaluator's forces (through the shared
// geometry, potentials/bonded_geometry.h) are minus the finite-difference gradient of its energy,
// add up to zero and have a zero virial; 1-2/1-3/1-4 pairs; the chains' angles; config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <filesystem>
#include <fstream>

#include "base/topology.h"
#include "engine/config.h"
#include "engine/start_file.h"
#include "io/checkpoint.h"
#include "io/h5md.h"
#include "io/start_readers.h"
#include "potentials/bonded_geometry.h"
#include "potentials/force_field.h"
#include "potentials/registry.h"
#include "tests/lammps_reference.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// A value of each coefficient inside its range that is not special (no 0, 90 or 180 degrees).
double sample(const BondedCoeffSpec& s, int k) {
  if (s.nonzero) return -1.0;  // the sign d of a harmonic dihedral
  if (s.integer) return std::min(s.hi, 2.0 + k);
  if (std::isfinite(s.hi)) return 0.6 * s.hi - 3.0 * k;  // an angle in degrees
  return (s.lo < 0 ? -1.3 : 2.1) + 0.45 * k;
}

template <typename Kind>
BondedCoeffs sample_coeffs(const BondedPotentialInfo<Kind>& info) {
  BondedCoeffs c;
  const int groups = info.max_repeats > 0 ? 3 : 1;
  for (int g = 0; g < groups; ++g)
    for (int q = 0; q < info.ncoeffs; ++q) c.values.push_back(sample(info.coeffs[q], g + q));
  return c;
}

Vec3d random_vector(std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  return Vec3d{scale * u(rng), scale * u(rng), scale * u(rng)};
}

// The energy of a term at positions x (3 or 4 particles) and its forces on each.
template <typename Eval>
double angle_energy(const std::vector<Vec3d>& x, const typename Eval::Params& p, std::vector<Vec3d>* f = nullptr,
                    double* virial = nullptr) {
  const AngleResult<double> r = angle_forces<Eval>(x[0] - x[1], x[2] - x[1], p);
  if (f) *f = {r.fi, Vec3d{0, 0, 0} - r.fi - r.fk, r.fk};
  if (virial) *virial = r.virial;
  return r.energy;
}

template <typename Eval>
double dihedral_energy(const std::vector<Vec3d>& x, const typename Eval::Params& p, std::vector<Vec3d>* f = nullptr,
                       double* virial = nullptr) {
  const DihedralResult<double> r = dihedral_forces<Eval>(x[1] - x[0], x[2] - x[1], x[3] - x[2], p);
  if (f) *f = {r.fi, r.t - r.fi, Vec3d{0, 0, 0} - r.t - r.fl, r.fl};
  if (virial) *virial = r.virial;
  return r.energy;
}

// Forces = -dE/dx by central differences, at random geometries away from straight angles (where
// LAMMPS's conventions hold sin theta >= 0.001).
template <typename Energy>
void check_gradient(const char* name, size_t atoms, Energy energy) {
  std::mt19937_64 rng(23);
  int checked = 0;
  for (int trial = 0; trial < 300 && checked < 100; ++trial) {
    std::vector<Vec3d> x(atoms);
    x[0] = {0, 0, 0};
    for (size_t a = 1; a < atoms; ++a) x[a] = x[a - 1] + random_vector(rng, 1.2);
    bool bent = true;  // every angle along the chain between 15 and 165 degrees
    for (size_t a = 1; a + 1 < atoms; ++a) {
      const Vec3d u = x[a - 1] - x[a], v = x[a + 1] - x[a];
      const double c = dot(u, v) / std::sqrt(dot(u, u) * dot(v, v));
      bent = bent && std::fabs(c) < std::cos(15.0 * kDegree);
    }
    if (!bent) continue;
    std::vector<Vec3d> f;
    double w = 0;
    energy(x, &f, &w);
    Vec3d total{0, 0, 0};
    double scale = 1.0;
    for (const Vec3d& fa : f) {
      total += fa;
      scale = std::max(scale, std::sqrt(dot(fa, fa)));
    }
    EXPECT_NEAR(std::sqrt(dot(total, total)), 0.0, 1e-12 * scale) << name << ": forces add up to zero";
    EXPECT_NEAR(w, 0.0, 1e-10 * scale) << name << ": the virial of an angle-only energy is zero";
    for (size_t a = 0; a < atoms; ++a)
      for (int d = 0; d < 3; ++d) {
        const double h = 1e-6;
        std::vector<Vec3d> xp = x, xm = x;
        double* cp = d == 0 ? &xp[a].x : d == 1 ? &xp[a].y : &xp[a].z;
        double* cm = d == 0 ? &xm[a].x : d == 1 ? &xm[a].y : &xm[a].z;
        *cp += h;
        *cm -= h;
        const double grad = (energy(xp, nullptr, nullptr) - energy(xm, nullptr, nullptr)) / (2 * h);
        const double fd = d == 0 ? f[a].x : d == 1 ? f[a].y : f[a].z;
        EXPECT_NEAR(fd, -grad, 1e-6 * scale) << name << ": particle " << a << ", component " << d;
      }
    ++checked;
  }
  EXPECT_GE(checked, 100) << name;
}

TEST(Bonded, EveryRegisteredAngleForceIsMinusEnergyGradient) {
  for (const auto& info : kAnglePotentials) {
    dispatch_bonded<double>(info.kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto p = Eval::from(sample_coeffs(info));
      check_gradient(info.name, 3, [&](const std::vector<Vec3d>& x, std::vector<Vec3d>* f, double* w) {
        return angle_energy<Eval>(x, p, f, w);
      });
    });
  }
}

TEST(Bonded, EveryRegisteredDihedralForceIsMinusEnergyGradient) {
  for (const auto& info : kDihedralPotentials) {
    dispatch_bonded<double>(info.kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto p = Eval::from(sample_coeffs(info));
      check_gradient(info.name, 4, [&](const std::vector<Vec3d>& x, std::vector<Vec3d>* f, double* w) {
        return dihedral_energy<Eval>(x, p, f, w);
      });
    });
  }
}

TEST(Bonded, EveryRegisteredImproperForceIsMinusEnergyGradient) {
  for (const auto& info : kImproperPotentials) {
    dispatch_bonded<double>(info.kind, [&](auto eval) {
      using Eval = decltype(eval);
      const auto p = Eval::from(sample_coeffs(info));
      check_gradient(info.name, 4, [&](const std::vector<Vec3d>& x, std::vector<Vec3d>* f, double* w) {
        return dihedral_energy<Eval>(x, p, f, w);
      });
    });
  }
}

// The angle and dihedral conventions (LAMMPS's): a straight chain has theta = 180 deg, a trans
// dihedral phi = 180 deg; phi's sign follows the IUPAC rule.
TEST(Bonded, AnglesAndDihedralsFollowLammpsConventions) {
  const auto harmonic = HarmonicAngle<double>::from({{1.0, 180.0}});
  EXPECT_NEAR(angle_energy<HarmonicAngle<double>>({{-1, 0, 0}, {0, 0, 0}, {1, 0, 0}}, harmonic), 0.0, 1e-12);
  const double right = angle_energy<HarmonicAngle<double>>({{1, 0, 0}, {0, 0, 0}, {0, 1, 0}}, harmonic);
  EXPECT_NEAR(right, std::pow(M_PI / 2, 2), 1e-12);
  const auto cosine = CosineAngle<double>::from({{2.0}});
  EXPECT_NEAR(angle_energy<CosineAngle<double>>({{-1, 0, 0}, {0, 0, 0}, {1, 0, 0}}, cosine), 0.0, 1e-12);
  // phi = +60 degrees: i and l on the same side, rotated right-handed about b2 = +z.
  const double a = 60.0 * kDegree;
  const std::vector<Vec3d> x = {{1, 0, 0}, {0, 0, 0}, {0, 0, 1}, {std::cos(a), std::sin(a), 1}};
  const auto quad = QuadraticDihedral<double>::from({{1.0, 0.0}});
  EXPECT_NEAR(dihedral_energy<QuadraticDihedral<double>>(x, quad), a * a, 1e-12);
  const auto q60 = QuadraticDihedral<double>::from({{1.0, -60.0}});
  EXPECT_NEAR(dihedral_energy<QuadraticDihedral<double>>(x, q60), std::pow(2 * a, 2), 1e-12) << "phi is +60, not -60";
  // Trans (phi = 180): the OPLS k1 term 1/2 k1 (1 + cos phi) vanishes.
  const std::vector<Vec3d> trans = {{1, 0, 0}, {0, 0, 0}, {0, 0, 1}, {-1, 0, 1}};
  const auto opls = OplsDihedral<double>::from({{3.0, 0.0, 0.0, 0.0}});
  EXPECT_NEAR(dihedral_energy<OplsDihedral<double>>(trans, opls), 0.0, 1e-12);
}

// 1-2, 1-3 and 1-4 pairs from the bond graph, each at its lowest order (a ring of 5).
TEST(Bonded, SpecialPairsTakeTheShortestPath) {
  Topology t;
  for (int i = 0; i < 5; ++i) t.bonds.push_back({i, (i + 1) % 5, 0});
  t.bonds.push_back({4, 5, 0});
  const std::vector<SpecialPair> p = t.special_pairs(6, 3);
  auto order = [&](int i, int j) {
    for (const SpecialPair& s : p)
      if (s.i == std::min(i, j) && s.j == std::max(i, j)) return s.order;
    return 0;
  };
  EXPECT_EQ(order(0, 1), 1);
  EXPECT_EQ(order(0, 4), 1) << "bonded through the ring's closing bond, not 1-5 the long way";
  EXPECT_EQ(order(0, 2), 2);
  EXPECT_EQ(order(0, 3), 2);
  EXPECT_EQ(order(0, 5), 2);
  EXPECT_EQ(order(1, 5), 3);
  EXPECT_EQ(order(2, 5), 3);
  for (size_t k = 1; k < p.size(); ++k)
    EXPECT_TRUE(p[k - 1].i < p[k].i || (p[k - 1].i == p[k].i && p[k - 1].j < p[k].j)) << "sorted, each once";
  EXPECT_EQ(t.special_pairs(6, 1).size(), 6u);
}

// exclusions: none|bonds|angles are special_bonds with weights 1 or 0; weights in between give
// scaled pairs, taken out of the neighbour lists.
TEST(Bonded, SpecialBondsExcludeOrScalePairs) {
  const std::string base = R"(
system:
  types: [{name: A}]
  chains: {count: 1, length: 6, density: 0.1, bond: b}
force_field:
  bonds: [{name: b, potential: harmonic, k: 100, r0: 1}]
  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A]}]}]
integrator: {kind: nve, dt: 0.001}
)";
  auto weights = [&](const std::string& extra) {
    return parse_config(base + extra, "t.yaml").model.force_field.special;
  };
  EXPECT_EQ(weights("").lj[0], 0.0);
  EXPECT_EQ(weights("").lj[1], 1.0);
  const SpecialBonds angles =
      parse_config(std::string(base).replace(base.find("force_field:"), 12, "force_field:\n  exclusions: angles"),
                   "t.yaml")
          .model.force_field.special;
  EXPECT_EQ(angles.coulomb[1], 0.0);
  EXPECT_EQ(angles.lj[2], 1.0);
  RunConfig cfg = parse_config(
      std::string(base).replace(base.find("force_field:"), 12,
                                "force_field:\n  special_bonds: {lj: [0, 0, 0.5], coulomb: [0, 0, 0.8333]}"),
      "t.yaml");
  Topology t;
  for (int i = 0; i < 5; ++i) t.bonds.push_back({i, i + 1, 0});
  const std::vector<ScaledPair> scaled = pair_term_scaled_pairs(cfg.model.force_field, t, 6, 0);
  ASSERT_EQ(scaled.size(), 3u);  // (0,3), (1,4), (2,5)
  EXPECT_EQ(scaled[0].i, 0);
  EXPECT_EQ(scaled[0].j, 3);
  EXPECT_EQ(scaled[0].weight, 0.5);
  const auto excl = pair_term_exclusions(cfg.model.force_field, t, 6, 0);
  EXPECT_EQ(excl[0], (std::vector<int>{1, 2, 3})) << "1-2 and 1-3 excluded, the scaled 1-4 pair too";
  EXPECT_EQ(excl[5], (std::vector<int>{2, 3, 4}));
}

// system.chains.angle / .dihedral: one angle per three consecutive beads, one dihedral per four.
TEST(Bonded, ChainsGetAnglesAndDihedrals) {
  const RunConfig cfg = parse_config(R"(
system:
  types: [{name: A}]
  chains: {count: 3, length: 10, density: 0.5, bond: b, angle: bend, dihedral: twist}
force_field:
  bonds: [{name: b, potential: harmonic, k: 100, r0: 1}]
  angles: [{name: bend, potential: cosine, k: 1.5}]
  dihedrals: [{name: twist, potential: fourier, terms: [[1.0, 1, 0], [0.5, 3, 180]]}]
integrator: {kind: nve, dt: 0.001}
)",
                                     "t.yaml");
  EXPECT_EQ(cfg.system.chains.angle_type, 0);
  EXPECT_EQ(cfg.system.chains.dihedral_type, 0);
  ASSERT_EQ(cfg.model.force_field.dihedral_types.size(), 1u);
  EXPECT_EQ(cfg.model.force_field.dihedral_types[0].coeffs.values, (std::vector<double>{1.0, 1, 0, 0.5, 3, 180}));
}

// Config errors name the key and what was expected.
TEST(Bonded, BadTypesAreClearErrors) {
  auto error_of = [](const std::string& ff) {
    try {
      parse_config("system: {types: [{name: A}], lattice: {cells: 2, density: 0.5}}\nforce_field:\n" + ff +
                       "\nintegrator: {kind: nve, dt: 0.001}\n",
                   "t.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("  angles: [{name: a, potential: harmonic, k: 1}]").find("missing required key 'theta0'"),
            std::string::npos);
  EXPECT_NE(error_of("  angles: [{name: a, potential: harmonic, k: 1, theta0: 200}]")
                .find("force_field.angles[0].theta0: expected theta0: the rest angle in degrees, 0 to 180, got 200"),
            std::string::npos);
  EXPECT_NE(error_of("  angles: [{name: a, potential: cosine, k: 1, theta0: 100}]")
                .find("theta0 does not apply to cosine (it takes k)"),
            std::string::npos);
  EXPECT_NE(error_of("  dihedrals: [{name: d, potential: harmonic, k: 1, d: 0, n: 2}]").find("the sign +1 or -1"),
            std::string::npos);
  EXPECT_NE(
      error_of("  dihedrals: [{name: d, potential: fourier, terms: []}]").find("a list of 1 to 6 terms [k, n, d]"),
      std::string::npos);
  EXPECT_NE(error_of("  angles: [{name: a, potential: bend, k: 1}]").find("expected one of harmonic, cosine"),
            std::string::npos);
  EXPECT_NE(error_of("  exclusions: none\n  special_bonds: {lj: [0, 0, 0], coulomb: [0, 0, 0]}")
                .find("give exclusions or special_bonds, not both"),
            std::string::npos);
  EXPECT_NE(error_of("  angles: file").find("the system has no file"), std::string::npos);
}

// A LAMMPS data file of one bent chain of 4 atoms with an angle and a dihedral; `edit` changes a
// line of it (a bad atom, a style pairmd does not have, a missing type).
std::string chain_data(const std::string& angle_coeffs, const std::string& angles, const std::string& dihedral_coeffs) {
  return "test\n\n4 atoms\n3 bonds\n2 angles\n1 dihedrals\n1 atom types\n1 bond types\n2 angle types\n"
         "1 dihedral types\n\n0 20 xlo xhi\n0 20 ylo yhi\n0 20 zlo zhi\n\nMasses\n\n1 1.0\n\n" +
         angle_coeffs + "\n" + dihedral_coeffs +
         "\nAtoms # molecular\n\n1 1 1 5 5 5\n2 1 1 6 5 5\n3 1 1 6.5 6 5\n4 1 1 7.5 6 5.5\n\n"
         "Bonds\n\n1 1 1 2\n2 1 2 3\n3 1 3 4\n\n" +
         angles + "\nDihedrals\n\n1 1 1 2 3 4\n";
}

const char* kGoodAngleCoeffs = "Angle Coeffs # hybrid\n\n1 harmonic 20 110\n2 cosine 2.0\n";
const char* kGoodAngles = "Angles\n\n1 1 1 2 3\n2 2 2 3 4\n";
const char* kGoodDihedralCoeffs = "Dihedral Coeffs # opls\n\n1 1.0 -0.5 0.3 0.1\n";

// `pairmd run` on a chain data file with angles: file, dihedrals: file: the exit code, what it
// said, and whether it wrote anything.
struct Outcome {
  int exit_code;
  std::string message;
  bool wrote;
};
Outcome run_chain(const std::string& data) {
  test::ScratchDir dir("bonded");
  {
    std::ofstream(dir / "chain.data") << data;
    std::ofstream(dir / "run.yaml") << "steps: 10\nsystem:\n  types: [{name: A}]\n  file: {path: chain.data}\n"
                                       "force_field:\n  bonds: [{name: b, potential: harmonic, k: 100, r0: 1}]\n"
                                       "  angles: file\n  dihedrals: file\nintegrator: {kind: nve, dt: 0.001}\n"
                                       "output: {progress: off}\nbackend: cpu\n";
  }
  const test::ChildResult r = test::run_pairmd({"run", "run.yaml", "--output", "out"}, dir.path);
  bool wrote = false;
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    wrote = wrote || e.path().filename().string().rfind("out", 0) == 0;
  return {r.exit_code, r.err, wrote};
}

// LAMMPS's `run 0` on molecules with every shared angle, dihedral and improper style and scaled
// 1-4 pairs (tests/lammps_reference.h): energies by term, pressure and forces to round-off,
// without LAMMPS (python.lammps_bonded runs LAMMPS itself where it is installed).
TEST(Bonded, LammpsRunZeroReference) {
  for (const test::LammpsReference& r : test::lammps_references()) {
    SCOPED_TRACE(r.name);
    CpuBackend cpu(r.system.model(), r.system.built.state);
    test::expect_matches_lammps(r, cpu.observables(), cpu.forces(), 1e-9, 1e-9, "cpu " + r.name);
  }
}

// The terms of `got`, named by `got_names` (by order where empty), are those of `want`, named by
// `want_names`.
template <typename Term>
void expect_same_terms(const std::vector<Term>& want, const std::vector<std::string>& want_names,
                       const std::vector<Term>& got, const std::vector<std::string>& got_names,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_FALSE(want.empty()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    const Term &a = want[k], &b = got[k];
    EXPECT_EQ(std::memcmp(&a, &b, sizeof(Term) - sizeof(int)), 0) << what << " " << k << ": other particles";
    if (got_names.empty())
      EXPECT_EQ(b.type, a.type) << what << " " << k;
    else
      EXPECT_EQ(got_names.at(b.type), want_names.at(a.type)) << what << " " << k;
  }
}

template <typename Type>
std::vector<std::string> names_of(const std::vector<Type>& types) {
  std::vector<std::string> n;
  for (const Type& t : types) n.push_back(t.name);
  return n;
}

// Topology out and back (issue #32): a run from the LAMMPS data file with angles, dihedrals and
// impropers of several types writes them to its GSD trajectory (angles/, dihedrals/, impropers/
// with the type names), its H5MD trajectory (connectivity/) and its checkpoint; each reads back
// as the run's own topology, and the run restarts from its checkpoint.
TEST(Bonded, TopologyGoesOutToEveryFileAndComesBack) {
  test::ScratchDir dir("bonded_out");
  const std::string src = std::string(PAIRMD_SOURCE_DIR) + "/tests/data/lammps_bonded/";
  std::string yaml = test::read_text(src + "styles.yaml");
  for (size_t at; (at = yaml.find("@DATA@")) != std::string::npos;) yaml.replace(at, 6, src + "data.styles");
  test::write_text(dir / "run.yaml", yaml);
  const test::ChildResult r =
      test::run_pairmd({"run", "run.yaml", "--output", "out", "--set", "output.gsd={every: 1}"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunConfig cfg = parse_config(yaml, dir / "run.yaml");
  const ForceField& ff = cfg.model.force_field;
  const Topology t = load_start_file(cfg).topology;
  const auto an = names_of(ff.angle_types), dn = names_of(ff.dihedral_types), in = names_of(ff.improper_types);

  const StartStructure g = read_gsd_frame(dir / "out.gsd", 0);
  expect_same_terms(t.angles, an, g.topology.angles, g.angle_type_names, "gsd angle");
  expect_same_terms(t.dihedrals, dn, g.topology.dihedrals, g.dihedral_type_names, "gsd dihedral");
  expect_same_terms(t.impropers, in, g.topology.impropers, g.improper_type_names, "gsd improper");

  const H5mdFrame h = read_h5md_frame(dir / "out.h5", 0);
  expect_same_terms(t.angles, an, h.topology.angles, {}, "h5md angle");
  expect_same_terms(t.dihedrals, dn, h.topology.dihedrals, {}, "h5md dihedral");
  expect_same_terms(t.impropers, in, h.topology.impropers, {}, "h5md improper");

  const Checkpoint ck = read_checkpoint(dir / "out.checkpoint.h5");
  expect_same_terms(t.angles, an, ck.topology.angles, {}, "checkpoint angle");
  expect_same_terms(t.dihedrals, dn, ck.topology.dihedrals, {}, "checkpoint dihedral");
  expect_same_terms(t.impropers, in, ck.topology.impropers, {}, "checkpoint improper");
  const test::ChildResult again = test::run_pairmd({"run", "--restart", "out.checkpoint.h5", "--steps", "3"}, dir.path);
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST(Bonded, LammpsDataFileAnglesAndCoefficientsRun) {
  const Outcome o = run_chain(chain_data(kGoodAngleCoeffs, kGoodAngles, kGoodDihedralCoeffs));
  EXPECT_EQ(o.exit_code, 0) << o.message;
  EXPECT_TRUE(o.wrote);
}

// Bad input: a clear error naming the file, the line and the term; exit 2; nothing written.
TEST(Bonded, BadBondedInputIsRefusedWithFileAndLine) {
  struct Case {
    std::string data, expected;
  };
  const Case cases[] = {
      {chain_data(kGoodAngleCoeffs, "Angles\n\n1 1 1 2 3\n2 2 2 3 9\n", kGoodDihedralCoeffs),
       "system.file.path: chain.data:45: Angles: atom 9 is not in the Atoms section"},
      {chain_data("Angle Coeffs # hybrid\n\n1 harmonic 20 110\n2 class2 110 1 2 3\n", kGoodAngles, kGoodDihedralCoeffs),
       "force_field.angles: file: chain.data:23: Angle Coeffs: angle style 'class2' is not one pairmd has (harmonic, "
       "cosine, cosine/squared)"},
      {chain_data("Angle Coeffs # hybrid\n\n1 harmonic 20 110\n", kGoodAngles, kGoodDihedralCoeffs),
       "Angle Coeffs has 1 lines, the header promises 2"},
      {chain_data(kGoodAngleCoeffs, kGoodAngles, "Dihedral Coeffs # nharmonic\n\n1 3 1.0 2.0 3.0\n"),
       "Dihedral Coeffs: dihedral style 'nharmonic' is not one pairmd has"},
      {chain_data(kGoodAngleCoeffs, kGoodAngles, "Dihedral Coeffs\n\n1 1.0 -0.5 0.3 0.1\n"),
       "Dihedral Coeffs names no style"},
      {chain_data(kGoodAngleCoeffs, kGoodAngles, "Dihedral Coeffs # charmm\n\n1 1.0 3 0 0.5\n"),
       "charmm with a 1-4 weight w other than 0"},
      {chain_data("Angle Coeffs # harmonic\n\n1 20 110\n2 20 200\n", kGoodAngles, kGoodDihedralCoeffs),
       "chain.data:23: Angle Coeffs: angle type 2 (harmonic): theta0 = 200, expected the rest angle in degrees"},
  };
  for (const Case& c : cases) {
    const Outcome o = run_chain(c.data);
    EXPECT_EQ(o.exit_code, 2) << o.message;
    EXPECT_NE(o.message.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in:\n" << o.message;
    EXPECT_FALSE(o.wrote) << c.expected;
  }
}

// Angles whose types the config does not give (and no `file`): the reason, and how to fix it.
TEST(Bonded, AnglesWithoutTypesAreRefused) {
  test::ScratchDir dir("bonded");
  std::ofstream(dir / "chain.data") << chain_data(kGoodAngleCoeffs, kGoodAngles, kGoodDihedralCoeffs);
  RunConfig cfg = parse_config("system:\n  types: [{name: A}]\n  file: {path: " + (dir / "chain.data") +
                                   "}\nforce_field:\n  bonds: [{name: b, potential: harmonic, k: 100, r0: 1}]\n"
                                   "  dihedrals: file\nintegrator: {kind: nve, dt: 0.001}\n",
                               "run.yaml");
  try {
    build_system(cfg);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the file has 2 angles but force_field.angles defines no angle types"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pairmd
