// Coarse-grained proteins (issue #20): pair lists with per-pair parameters, the SOP model, pulling.
//
// Part 1 runs on every target, as tests/test_physics.cpp does (the CPU reference here, each
// registered GPU strategy in pairmd_gpu_tests, which skip with the reason where there is no
// GPU): the forces of a SOP system (FENE and native-contact pair lists, the repulsion with the
// pair lists' pairs left out of it, the pulling springs) against the CPU reference and against
// finite differences of the energy, and the energy term by term against the same energy
// computed here pair by pair. The system is an assembly of 8 copies of a two-helix protein in a
// periodic box: the GPU renumbers particles in cell order, so every per-pair parameter must
// reach its pair through the tag/rank maps.
//
// Part 2 (CPU, pairmd_tests only): the SOP model built from a real structure (PDB 1TII, chain D:
// the B subunit of E. coli heat-labile enterotoxin IIb, 98 residues, shipped by Debian's
// pymol-data in /usr/share/pymol/test/dat; scripts/setup.sh installs it; the tests skip, saying
// so, where it is absent): its native energy, its native contacts at low temperature, its
// unfolding under a force ramp; that the model is SOP-GPU's (disulfide bridges as covalent
// bonds, its FENE k and repulsion cutoff); and sop-build's errors for missing C-alpha atoms,
// chain gaps, alternate locations, NaN or overlapping C-alpha atoms and an output that is the
// structure file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/pulling.h"
#include "engine/sop_model.h"
#include "engine/system_builder.h"
#include "io/sop_files.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::Target;

// ---- a SOP system and its energy, computed here ---------------------------------------------

// An alpha helix of n residues along z about (cx, cy): radius 2.3 A, rise 1.5 A and 100 degrees
// per residue (consecutive C-alpha atoms 3.83 A apart).
std::vector<Vec3d> helix(int n, double cx, double cy, double phase) {
  std::vector<Vec3d> x;
  for (int i = 0; i < n; ++i) {
    const double a = phase + i * 100.0 * M_PI / 180.0;
    x.push_back({cx + 2.3 * std::cos(a), cy + 2.3 * std::sin(a), 1.5 * i});
  }
  return x;
}

// Two helices 9 A apart (contacts within and between them), `copies` copies.
SopModel two_helix_model(const SopParameters& p) {
  return build_sop_model({helix(40, 0, 0, 0), helix(40, 9.0, 0, 1.0)}, {"A", "B"}, p);
}

// Writes the model's files into `dir` and loads the config as `pairmd run` does. `edit` may
// change the config text first.
test::TestSystem load_sop(const SopModel& m, const SopParameters& p, const std::string& dir,
                          const std::string& edit_from = "", const std::string& edit_to = "") {
  const std::string yaml = dir + "/sop.yaml";
  std::string text = write_sop_system(m, p, yaml, "test", {"test"}, "test");
  if (!edit_from.empty()) {
    const size_t at = text.find(edit_from);
    EXPECT_NE(at, std::string::npos) << edit_from;
    if (at != std::string::npos) text.replace(at, edit_from.size(), edit_to);
    test::write_text(yaml, text);
  }
  test::TestSystem s;
  s.name = "sop";
  s.cfg = load_config(yaml);
  s.built = build_system(s.cfg);
  return s;
}

// The SOP energy of a state, pair by pair from the model (no engine code): FENE about r0 for the
// covalent bonds, eps_h [(r0/r)^12 - 2 (r0/r)^6] for the native contacts, eps_l (sigma/r)^6 below
// rc, not shifted (SOP-GPU's), for every other pair (minimum image where periodic).
struct SopEnergy {
  double backbone = 0, native = 0, repulsion = 0, repulsion_of_native = 0;
};

SopEnergy sop_energy(const SopModel& m, const SopParameters& p, const SystemState& s) {
  const size_t n = s.size();
  auto r_of = [&](int i, int j) {
    Vec3d d = s.position[i] - s.position[j];
    if (s.box.periodic) {
      d.x -= s.box.L.x * std::round(d.x / s.box.L.x);
      d.y -= s.box.L.y * std::round(d.y / s.box.L.y);
      d.z -= s.box.L.z * std::round(d.z / s.box.L.z);
    }
    return std::sqrt(dot(d, d));
  };
  auto repulsion = [&](double r) { return r < p.repulsion_cutoff ? p.epsilon_l * std::pow(p.sigma / r, 6) : 0.0; };
  SopEnergy e;
  std::vector<std::vector<int>> listed(n);
  for (size_t k = 0; k < m.backbone.size(); ++k) {
    const double x = (r_of(m.backbone[k].i, m.backbone[k].j) - m.backbone_r0[k]) / p.bond_max_extension;
    e.backbone += -0.5 * p.bond_k * p.bond_max_extension * p.bond_max_extension * std::log(1 - x * x);
    listed[m.backbone[k].i].push_back(m.backbone[k].j);
  }
  for (size_t k = 0; k < m.native.size(); ++k) {
    const double r = r_of(m.native[k].i, m.native[k].j);
    const double q6 = std::pow(m.native_r0[k] / r, 6);
    e.native += p.epsilon_h * (q6 * q6 - 2 * q6);
    e.repulsion_of_native += repulsion(r);
    listed[m.native[k].i].push_back(m.native[k].j);
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j)
      if (std::find(listed[i].begin(), listed[i].end(), static_cast<int>(j)) == listed[i].end())
        e.repulsion += repulsion(r_of(static_cast<int>(i), static_cast<int>(j)));
  return e;
}

double rms(const std::vector<Vec3d>& f) {
  double s = 0;
  for (const Vec3d& v : f) s += dot(v, v);
  return std::sqrt(s / std::max<size_t>(f.size(), 1));
}

// ---- part 1: every target ----------------------------------------------------------------------

class SopForces : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
    p_.copies = 8;
    p_.tethered = 0;
    p_.pulled = 39;
    p_.pull_spring = 2.0;  // stiff, so the pulling forces are as large as the others once jiggled
    model_ = two_helix_model(p_);
  }
  const Target& target() const { return GetParam(); }
  // The system jiggled by up to 0.4 A (every pair list term and the pulling springs nonzero).
  SystemState jiggled(const test::TestSystem& s) const {
    SystemState st = s.built.state;
    test::jiggle(st, 0.4, 17);
    return st;
  }
  SopParameters p_;
  SopModel model_;
};

// The setting: 640 beads, 8 copies of two 40-residue helices in a periodic box, 78 x 8
// backbone bonds and the native contacts (i, i+3), (i, i+4) and between the helices, each with
// its own r0. The energy by term (repulsion, the backbone list, the native list, the pulling)
// against sop_energy(): fp64 (CPU) to 1e-9 relative; fp32 (GPU) pair energies summed in fixed
// point or double: 1e-5 of the sum of magnitudes (as GpuBackend.EnergyAndVirialMatchCpu).
TEST_P(SopForces, EnergyByTermMatchesPairByPairSum) {
  test::ScratchDir dir("sop_energy");
  const test::TestSystem s = load_sop(model_, p_, dir.path);
  const SystemState st = jiggled(s);
  const Observables o = test::make_target_backend(target(), s.model(), st)->observables();
  const SopEnergy e = sop_energy(model_, p_, st);
  ASSERT_EQ(o.potential_by_term.size(), 4u);  // repulsion, backbone, native, pulling
  const double scale = std::fabs(e.backbone) + std::fabs(e.native) + std::fabs(e.repulsion) + 1.0;
  const double tol = target().fp32 ? 1e-5 * scale : 1e-9 * scale;
  EXPECT_NEAR(o.potential_by_term[0], e.repulsion, tol);
  EXPECT_NEAR(o.potential_by_term[1], e.backbone, tol);
  EXPECT_NEAR(o.potential_by_term[2], e.native, tol);
  EXPECT_GT(o.potential_by_term[3], 0.0) << "the jiggled pulled and tethered beads are off their springs' rest";
  std::printf("[sop energy] %s: repulsion %.6g (%.6g), backbone %.6g (%.6g), native %.6g (%.6g), pulling %.6g\n",
              target().label().c_str(), o.potential_by_term[0], e.repulsion, o.potential_by_term[1], e.backbone,
              o.potential_by_term[2], e.native, o.potential_by_term[3]);
}

// One protein alone, as sop-build writes it: an open box and the 20 A repulsion cutoff. On the GPU
// the first pair list was sized for a density of one bead per A^3 there (37,000 partners a bead,
// more than the search could stage: every GPU run of a sop-build model failed). Forces as in
// ForcesMatchCpuAndFiniteDifferences, and 200 Brownian steps run.
TEST_P(SopForces, OneProteinInAnOpenBoxRuns) {
  test::ScratchDir dir("sop_open");
  SopParameters p = p_;
  p.copies = 1;
  const SopModel one = two_helix_model(p);
  ASSERT_FALSE(one.box.periodic);
  const test::TestSystem s = load_sop(one, p, dir.path);
  ASSERT_GE(s.cfg.model.force_field.pair_terms.at(0).max_cutoff(), 20.0);
  const SystemState st = jiggled(s);
  auto b = test::make_target_backend(target(), s.model(), st);
  const std::vector<Vec3d> f = b->forces(), ref = CpuBackend(s.model(), st).forces();
  const double f_rms = rms(ref);
  double max_err = 0;
  for (size_t i = 0; i < f.size(); ++i) max_err = std::max(max_err, std::sqrt(dot(f[i] - ref[i], f[i] - ref[i])));
  EXPECT_LT(max_err / f_rms, target().fp32 ? 2e-3 : 1e-12);
  b->advance(200);
  SystemState end;
  b->get_state(end);
  EXPECT_EQ(end.step, st.step + 200);
}

// Exclusions per pair term: with `exclude_from: none` on the native list, the repulsion term
// takes the native pairs in as well: it grows by exactly their repulsion, computed here.
TEST_P(SopForces, ExcludeFromNoneAddsTheListsPairsToTheRepulsion) {
  test::ScratchDir dir("sop_excl");
  const test::TestSystem s = load_sop(model_, p_, dir.path, "      file: " + dir.path + "/sop.native.pairs",
                                      "      file: " + dir.path + "/sop.native.pairs\n      exclude_from: none");
  const SystemState st = jiggled(s);
  const Observables o = test::make_target_backend(target(), s.model(), st)->observables();
  const SopEnergy e = sop_energy(model_, p_, st);
  ASSERT_GT(e.repulsion_of_native, 1.0);
  const double tol = (target().fp32 ? 1e-5 : 1e-9) * (std::fabs(e.repulsion) + e.repulsion_of_native + 1.0);
  EXPECT_NEAR(o.potential_by_term[0], e.repulsion + e.repulsion_of_native, tol);
}

// Forces against the CPU reference (fp32 bounds of GpuBackend.ForcesMatchCpuOnEveryExampleAndStrategy:
// max 2e-3 and RMS 2e-4 of the RMS force) and against central finite differences of the CPU
// energy, h = 1e-5 A (truncation h^2 V''' ~ 1e-8, rounding 1e-16 |E| / h ~ 1e-9: tolerance 1e-6
// max(1, |F|) on the CPU; on the GPU the fp32 force bound, 2e-3 max(F_rms, |F|)). Every tenth
// bead and both pulled and tethered beads of the first copy are checked.
TEST_P(SopForces, ForcesMatchCpuAndFiniteDifferences) {
  test::ScratchDir dir("sop_forces");
  const test::TestSystem s = load_sop(model_, p_, dir.path);
  const SystemState st = jiggled(s);
  const std::vector<Vec3d> f = test::make_target_backend(target(), s.model(), st)->forces();
  CpuBackend reference(s.model(), st);
  const std::vector<Vec3d> ref = reference.forces();
  ASSERT_EQ(f.size(), ref.size());
  const double f_rms = rms(ref);
  ASSERT_GT(f_rms, 0.0);
  double max_err = 0, sum_sq = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const Vec3d d = f[i] - ref[i];
    max_err = std::max(max_err, std::sqrt(dot(d, d)));
    sum_sq += dot(d, d);
  }
  const double rms_err = std::sqrt(sum_sq / f.size());
  std::printf("[sop forces] %s: max |dF|/F_rms = %.3g, rms |dF|/F_rms = %.3g\n", target().label().c_str(),
              max_err / f_rms, rms_err / f_rms);
  EXPECT_LT(max_err / f_rms, target().fp32 ? 2e-3 : 1e-12);
  EXPECT_LT(rms_err / f_rms, target().fp32 ? 2e-4 : 1e-12);

  // The pulled bead feels its spring: its force differs from the force without the pulling.
  Model unpulled = s.model();
  unpulled.pulling = PullSettings{};
  const std::vector<Vec3d> f0 = CpuBackend(unpulled, st).forces();
  const Vec3d pull = ref[p_.pulled] - f0[p_.pulled];
  EXPECT_GT(std::sqrt(dot(pull, pull)), 0.1) << "the pulling spring acts on bead " << p_.pulled;

  std::vector<size_t> beads;
  for (size_t i = 0; i < st.size(); i += 10) beads.push_back(i);
  beads.push_back(p_.pulled);
  const double h = 1e-5;
  double worst = 0;
  for (size_t i : beads)
    for (int d = 0; d < 3; ++d) {
      SystemState a = st, b = st;
      double* xa = d == 0 ? &a.position[i].x : d == 1 ? &a.position[i].y : &a.position[i].z;
      double* xb = d == 0 ? &b.position[i].x : d == 1 ? &b.position[i].y : &b.position[i].z;
      *xa += h;
      *xb -= h;
      reference.set_state(a);
      const double up = reference.observables().potential;
      reference.set_state(b);
      const double um = reference.observables().potential;
      const double fd = -(up - um) / (2 * h);
      const double fi = d == 0 ? f[i].x : d == 1 ? f[i].y : f[i].z;
      const double tol = target().fp32 ? 2e-3 * std::max(f_rms, std::fabs(fi)) : 1e-6 * std::max(1.0, std::fabs(fi));
      worst = std::max(worst, std::fabs(fi - fd) / tol);
      EXPECT_NEAR(fi, fd, tol) << "bead " << i << " component " << d;
    }
  std::printf("[sop forces] %s: the largest |F - F_fd| is %.3g of the tolerance\n", target().label().c_str(), worst);
}

// A few hundred steps of overdamped dynamics on the target follow the CPU's over the first steps
// (the same noise: both backends draw it per particle tag and step) and keep every bead on its
// backbone: what the GPU does with the cell order between list rebuilds. fp32 runs part from
// the CPU's by rounding; after 20 steps of Brownian dynamics (not chaotic over so few steps, the
// contraction of the stiff modes damps it) the beads are within 1e-3 A.
TEST_P(SopForces, BrownianStepsFollowTheCpu) {
  test::ScratchDir dir("sop_steps");
  const test::TestSystem s = load_sop(model_, p_, dir.path);
  auto b = test::make_target_backend(target(), s.model(), s.built.state);
  CpuBackend cpu(s.model(), s.built.state);
  b->advance(20);
  cpu.advance(20);
  SystemState x, y;
  b->get_state(x);
  cpu.get_state(y);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const Vec3d d = x.unwrapped(i) - y.unwrapped(i);
    worst = std::max(worst, std::sqrt(dot(d, d)));
  }
  std::printf("[sop steps] %s: max |x - x_cpu| after 20 steps = %.3g A\n", target().label().c_str(), worst);
  EXPECT_LT(worst, target().fp32 ? 1e-3 : 1e-12);
}

#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, SopForces, ::testing::ValuesIn(test::gpu_targets()), test::target_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, SopForces, ::testing::Values(test::cpu_target()), test::target_name);
#endif

// ---- part 2: the SOP model of a real protein, sop-build (CPU) ----------------------------------
#ifndef PAIRMD_PHYSICS_ON_GPU

// PAIRMD_SOP_PDB names another copy of the file (scripts/device_run.sh: the bundle's).
const std::string kStructure =
    std::getenv("PAIRMD_SOP_PDB") ? std::getenv("PAIRMD_SOP_PDB") : "/usr/share/pymol/test/dat/1tii.pdb";

#define REQUIRE_STRUCTURE()                                                                            \
  do {                                                                                                 \
    if (!test::file_exists(kStructure))                                                                \
      GTEST_SKIP() << kStructure << " is absent: install Debian's pymol-data (scripts/setup.sh does)"; \
  } while (0)

// The C-alpha atoms of one chain, read here by the PDB's columns (not by gemmi): x 31-38,
// y 39-46, z 47-54, chain 22, atom name 13-16, residue number 23-26 (into `numbers`).
std::vector<Vec3d> calpha_columns(const std::string& path, char chain, std::vector<int>* numbers = nullptr) {
  std::ifstream in(path);
  std::vector<Vec3d> x;
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, 6, "ATOM  ") == 0 && line.substr(12, 4) == " CA " && line[21] == chain) {
      x.push_back({std::stod(line.substr(30, 8)), std::stod(line.substr(38, 8)), std::stod(line.substr(46, 8))});
      if (numbers) numbers->push_back(std::stoi(line.substr(22, 4)));
    }
  return x;
}

// The disulfide bridges within one chain, read by the PDB's columns: SSBOND records, chains in
// columns 16 and 30, residue numbers 18-21 and 32-35; as bead indices of that chain.
std::vector<SopBridge> ssbond_columns(const std::string& path, char chain) {
  std::vector<int> numbers;
  calpha_columns(path, chain, &numbers);
  auto bead = [&](int number) {
    return static_cast<int>(std::find(numbers.begin(), numbers.end(), number) - numbers.begin());
  };
  std::ifstream in(path);
  std::vector<SopBridge> bridges;
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, 6, "SSBOND") == 0 && line[15] == chain && line[29] == chain)
      bridges.push_back({bead(std::stoi(line.substr(17, 4))), bead(std::stoi(line.substr(31, 4)))});
  return bridges;
}

// A config that sop-build wrote into `dir`, loaded there (its files are relative to the working
// directory, as `pairmd run` in that directory reads them).
struct LoadedSop {
  RunConfig cfg;
  BuiltSystem sys;
};
LoadedSop load_in(const std::string& dir, const std::string& yaml) {
  const std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  LoadedSop l;
  try {
    l.cfg = load_config(yaml);
    l.sys = build_system(l.cfg);
  } catch (...) {
    std::filesystem::current_path(here);
    throw;
  }
  std::filesystem::current_path(here);
  return l;
}

// sop-build in `dir` with `args`; the result of the run.
test::ChildResult sop_build(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "sop-build");
  return test::run_pairmd(args, dir);
}

// Fraction of native contacts within 1.2 r0 (Q).
double native_fraction(const SopModel& m, const SystemState& s) {
  int formed = 0;
  for (size_t k = 0; k < m.native.size(); ++k) {
    const Vec3d d = s.unwrapped(m.native[k].i) - s.unwrapped(m.native[k].j);
    formed += std::sqrt(dot(d, d)) < 1.2 * m.native_r0[k];
  }
  return static_cast<double>(formed) / m.native.size();
}

// The model of chain D, as sop-build builds it: its disulfide bridge a covalent bond.
SopModel chain_d(const SopParameters& p) {
  return build_sop_model({calpha_columns(kStructure, 'D')}, {"D"}, p, ssbond_columns(kStructure, 'D'));
}

// sop-build of chain D: 98 beads, the contacts counted here from the PDB's columns (|i - j| > 2,
// r < 8 A, not the disulfide bridge Cys10-Cys81), and the native state's energy: -eps_h per
// contact (each at its own r0), FENE zero at r0, and the repulsion of every other pair computed
// here. The written config runs as is.
TEST(Sop, NativeEnergyOfARealProteinIsMinusEpsHPerContactPlusRepulsion) {
  REQUIRE_STRUCTURE();
  test::ScratchDir dir("sop_native");
  const test::ChildResult r = sop_build(dir.path, {kStructure, "--chains", "D", "-o", "d.yaml", "--epsilon-h", "1.7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Vec3d> x = calpha_columns(kStructure, 'D');
  ASSERT_EQ(x.size(), 98u);
  const std::vector<SopBridge> bridges = ssbond_columns(kStructure, 'D');
  ASSERT_EQ(bridges.size(), 1u);
  int contacts = 0;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = i + 3; j < x.size(); ++j) {
      const Vec3d d = x[i] - x[j];
      const bool bridged = static_cast<int>(i) == bridges[0].i && static_cast<int>(j) == bridges[0].j;
      contacts += std::sqrt(dot(d, d)) < 8.0 && !bridged;
    }
  EXPECT_NE(r.out.find(std::to_string(contacts) + " native contacts"), std::string::npos) << r.out;

  SopParameters p;
  p.epsilon_h = 1.7;
  const SopModel m = chain_d(p);
  ASSERT_EQ(static_cast<int>(m.native.size()), contacts);
  const LoadedSop l = load_in(dir.path, "d.yaml");
  const RunConfig& cfg = l.cfg;
  const BuiltSystem& sys = l.sys;
  ASSERT_EQ(sys.state.size(), 98u);
  CpuBackend cpu(make_model(cfg, sys), sys.state);
  const Observables o = cpu.observables();
  const SopEnergy e = sop_energy(m, p, sys.state);
  EXPECT_NEAR(e.backbone, 0.0, 1e-12);
  EXPECT_NEAR(e.native, -1.7 * contacts, 1e-9);
  EXPECT_GT(e.repulsion, 0.5);
  EXPECT_NEAR(o.potential_by_term[1], 0.0, 1e-9);
  EXPECT_NEAR(o.potential_by_term[2], -1.7 * contacts, 1e-6);
  EXPECT_NEAR(o.potential_by_term[0], e.repulsion, 1e-6);
  EXPECT_NEAR(o.potential, -1.7 * contacts + e.repulsion, 1e-6);

  // And it runs as written (a short run; exit 0).
  const test::ChildResult run = test::run_pairmd({"run", "d.yaml", "--set", "steps=200"}, dir.path);
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

// The model of chain D is SOP-GPU's (its code's defaults, github.com/BarsegovGroup/SOP-GPU):
// the disulfide bridge Cys10-Cys81 (PDB SSBOND record) is a covalent bond like the backbone,
// 97 + 1 = 98 FENE bonds (beads 9 and 80), and not a native contact; the FENE k is 20
// kcal/(mol A^2) (kspring_cov); the repulsion is cut at 20 A (pairs_cutoff), not shifted.
TEST(Sop, ModelOf1TiiChainDIsSopGpus) {
  REQUIRE_STRUCTURE();
  test::ScratchDir dir("sop_sopgpu");
  const test::ChildResult r = sop_build(dir.path, {kStructure, "--chains", "D", "-o", "d.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("98 covalent bonds (97 backbone, 1 disulfide)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("disulfide bridge: chain D CYS 10 - chain D CYS 81"), std::string::npos) << r.out;
  const LoadedSop l = load_in(dir.path, "d.yaml");
  const ForceField& ff = l.cfg.model.force_field;
  ASSERT_EQ(ff.pair_lists.size(), 2u);
  const PairList& covalent = ff.pair_lists[0];
  ASSERT_EQ(covalent.size(), 98u);
  auto holds_bridge = [](const PairList& list) {
    for (const Bond& b : list.data->pairs)
      if (b.i == 9 && b.j == 80) return true;
    return false;
  };
  EXPECT_TRUE(holds_bridge(covalent)) << "beads 9 and 80 (Cys10, Cys81) are bonded";
  EXPECT_FALSE(holds_bridge(ff.pair_lists[1])) << "the bridge is not a native contact";
  EXPECT_EQ(covalent.kind, BondKind::FeneNative);
  EXPECT_DOUBLE_EQ(covalent.defaults.k, 20.0);
  EXPECT_DOUBLE_EQ(covalent.defaults.max_extension, 2.0);
  ASSERT_EQ(ff.pair_terms.size(), 1u);
  EXPECT_EQ(ff.pair_terms[0].kind, PairKind::RepulsiveR6);
  ASSERT_FALSE(ff.pair_terms[0].coeffs.empty());
  EXPECT_DOUBLE_EQ(ff.pair_terms[0].coeffs[0].rcut, 20.0);
  EXPECT_FALSE(ff.pair_terms[0].coeffs[0].shift);
}

// Overdamped dynamics of chain D for 12000 steps of 40 fs (0.5 ns). At 150 K with eps_h = 1.5
// kcal/mol (eps_h / k_B T = 5), the native contacts hold: Q, the fraction within 1.2 r0, stays
// above 0.9 (measured ~0.97). The test can fail: the same run with eps_h = 0.3 (eps_h / k_B T =
// 1 at 150 K) loses them (Q < 0.7; measured ~0.4), as a model with wrong r0 or a missing
// contact list would.
TEST(Sop, NativeContactsStayAtLowTemperature) {
  REQUIRE_STRUCTURE();
  auto final_q = [](double eps_h) {
    SopParameters p;
    p.temperature = 150;
    p.epsilon_h = eps_h;
    p.trajectory_every = 0;
    const SopModel m = chain_d(p);
    test::ScratchDir dir("sop_lowt");
    const test::TestSystem s = load_sop(m, p, dir.path);
    CpuBackend cpu(s.model(), s.built.state);
    double q_min = 1;
    for (int block = 0; block < 12; ++block) {
      cpu.advance(1000);
      SystemState st;
      cpu.get_state(st);
      q_min = std::min(q_min, native_fraction(m, st));
    }
    std::printf("[sop low T] eps_h %.2f at 150 K: lowest Q over 0.5 ns = %.3f\n", eps_h, q_min);
    return q_min;
  };
  EXPECT_GT(final_q(1.5), 0.9);
  EXPECT_LT(final_q(0.3), 0.7);
}

// A force ramp on chain D (bead 0 tethered, bead 97 pulled; spring 0.35 kcal/(mol A^2), 0.1
// A/ps = 10 m/s) at 300 K, underdamped Langevin (gamma 1/ps, dt 20 fs, 50000 steps = 1 ns): the
// force rises while the native structure resists, then drops as it gives way (a peak), and the
// parts on the force's path end unfolded. Checked on the force smoothed over 5 rows of 250
// steps: a maximum followed by a fall of at least 25 % of it, with Q from > 0.99 at the start to
// < 0.65 at the end, at least 0.1 below its value at the peak (measured 0.51 at the end, 0.79
// at the peak). (Measured: the largest peak 5.8 kcal/(mol A) = 400 pN at an extension of 61 A,
// then a fall of 4.0; the bridge Cys10-Cys81 holds the chain's middle 70 residues out of the
// force's path. Overdamped at the default friction, 16.7/ps, the same speed is ten times the
// native forces in drag, which hides the peaks: a test of the model at that speed needs the
// lower friction.)
TEST(Sop, UnfoldsUnderAForceRampWithAForcePeak) {
  REQUIRE_STRUCTURE();
  SopParameters p;
  p.tethered = 0;
  p.pulled = 97;
  p.pull_spring = 0.35;
  p.pull_speed = 0.1;  // A/ps
  p.integrator = "langevin";
  p.trajectory_every = 0;
  const SopModel m = chain_d(p);
  test::ScratchDir dir("sop_pull");
  const test::TestSystem s = load_sop(m, p, dir.path);
  CpuBackend cpu(s.model(), s.built.state);
  std::vector<double> force, extension, q;
  SystemState st;
  cpu.get_state(st);
  const double q0 = native_fraction(m, st);
  for (int row = 0; row < 200; ++row) {
    cpu.advance(250);
    cpu.get_state(st);
    const PullReading r = read_pull(s.built.pulling, st);
    force.push_back(r.force);
    extension.push_back(r.extension);
    q.push_back(native_fraction(m, st));
  }
  std::vector<double> smooth(force.size());
  for (size_t k = 0; k < force.size(); ++k) {
    double sum = 0;
    int count = 0;
    for (size_t j = k >= 2 ? k - 2 : 0; j <= k + 2 && j < force.size(); ++j) sum += force[j], ++count;
    smooth[k] = sum / count;
  }
  // The largest drop after a maximum.
  size_t peak = 0, best_peak = 0;
  double best_drop = 0;
  for (size_t k = 0; k < smooth.size(); ++k) {
    if (smooth[k] > smooth[peak]) peak = k;
    if (smooth[peak] - smooth[k] > best_drop) best_drop = smooth[peak] - smooth[k], best_peak = peak;
  }
  for (size_t k = 0; k < force.size(); k += 20)
    std::printf("[sop pull] extension %6.1f A  force %6.2f kcal/(mol A)  Q %.2f\n", extension[k], smooth[k], q[k]);
  std::printf(
      "[sop pull] peak %.2f kcal/(mol A) = %.0f pN at extension %.1f A, then a drop of %.2f; Q %.2f at the "
      "peak, %.2f at the end\n",
      smooth[best_peak], smooth[best_peak] * 69.48, extension[best_peak], best_drop, q[best_peak], q.back());
  EXPECT_GT(q0, 0.99);
  EXPECT_GT(smooth[best_peak], 1.0);
  EXPECT_GT(best_drop, 0.25 * smooth[best_peak]);
  EXPECT_LT(q.back(), 0.65);
  EXPECT_LT(q.back(), q[best_peak] - 0.1) << "contacts break after the peak";
  EXPECT_GT(extension.back(), extension.front() + 50);
}

// A PDB of three alanines, written here; `middle` replaces the second residue's lines.
std::string three_residues(const std::string& middle) {
  return "ATOM      1  N   ALA A   1       0.000   0.000   0.000  1.00  0.00           N\n"
         "ATOM      2  CA  ALA A   1       1.458   0.000   0.000  1.00  0.00           C\n"
         "ATOM      3  C   ALA A   1       2.009   1.420   0.000  1.00  0.00           C\n" +
         middle +
         "ATOM      7  N   ALA A   3       7.000   3.000   0.000  1.00  0.00           N\n"
         "ATOM      8  CA  ALA A   3       8.300   3.000   0.000  1.00  0.00           C\n"
         "ATOM      9  C   ALA A   3       9.000   4.200   0.000  1.00  0.00           C\n"
         "END\n";
}

const char* kMiddle =
    "ATOM      4  N   ALA A   2       3.300   1.600   0.000  1.00  0.00           N\n"
    "ATOM      5  CA  ALA A   2       4.900   1.700   0.000  1.00  0.00           C\n"
    "ATOM      6  C   ALA A   2       5.600   2.900   0.000  1.00  0.00           C\n";

// gemmi reads the files; sop-build refuses what the SOP model cannot use, with the file, the
// line and the residue, exit 2 and nothing written; the options that decide instead work.
TEST(Sop, BuildRefusesMissingCalphaGapsAndAlternateLocations) {
  test::ScratchDir dir("sop_errors");
  auto refused = [&](const std::string& pdb, const std::vector<std::string>& expect,
                     const std::vector<std::string>& extra = {}) {
    test::write_text(dir / "x.pdb", pdb);
    std::vector<std::string> args{"x.pdb", "-o", "x.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::ChildResult r = sop_build(dir.path, args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const std::string& e : expect) EXPECT_NE(r.err.find(e), std::string::npos) << "'" << e << "' in: " << r.err;
    EXPECT_FALSE(test::file_exists(dir / "x.yaml"));
    EXPECT_FALSE(test::file_exists(dir / "x.start.h5"));
  };
  // The three residues as they are: fine.
  test::write_text(dir / "ok.pdb", three_residues(kMiddle));
  const test::ChildResult ok = sop_build(dir.path, {"ok.pdb", "-o", "ok.yaml"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  // No CA in residue 2 (line 4 is its first atom).
  refused(three_residues("ATOM      4  N   ALA A   2       3.300   1.600   0.000  1.00  0.00           N\n"
                         "ATOM      6  C   ALA A   2       5.600   2.900   0.000  1.00  0.00           C\n"),
          {"x.pdb:4:", "chain A residue ALA 2", "no C-alpha atom"});
  // Residue 2 missing: residues 1 and 3 are 7.4 A apart, a gap (line 4 is residue 3's first atom).
  refused(three_residues(""), {"x.pdb:4:", "residue ALA 1 and ALA 3", "residues are missing", "--gaps split"});
  // Two locations of residue 2's CA.
  const std::string alt =
      "ATOM      4  N   ALA A   2       3.300   1.600   0.000  1.00  0.00           N\n"
      "ATOM      5  CA AALA A   2       4.900   1.700   0.000  0.60  0.00           C\n"
      "ATOM      6  CA BALA A   2       4.800   1.900   0.300  0.40  0.00           C\n"
      "ATOM      7  C   ALA A   2       5.600   2.900   0.000  1.00  0.00           C\n";
  refused(three_residues(alt), {"x.pdb:4:", "chain A residue ALA 2", "alternate locations A, B", "--altloc highest"});
  refused(three_residues(kMiddle), {"--altloc: expected error or highest"}, {"--altloc", "first"});

  // The options that decide: the CA of the highest occupancy; the pieces as chains.
  test::write_text(dir / "alt.pdb", three_residues(alt));
  const test::ChildResult a = sop_build(dir.path, {"alt.pdb", "-o", "alt.yaml", "--altloc", "highest"});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("took A (occupancy 0.60)"), std::string::npos) << a.out;
  test::write_text(dir / "gap.pdb", three_residues(""));
  const test::ChildResult g = sop_build(dir.path, {"gap.pdb", "-o", "gap.yaml", "--gaps", "split"});
  EXPECT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("chains A (1), A#2 (1)"), std::string::npos) << g.out;

  // A real file: chain A of 1TII lacks residue 47.
  if (test::file_exists(kStructure)) {
    const test::ChildResult r = sop_build(dir.path, {kStructure, "-o", "t.yaml"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("chain A residue THR 46 and THR 48"), std::string::npos) << r.err;
  }
}

// A NaN C-alpha position or two C-alpha atoms on each other are the structure file's fault:
// sop-build names the file, the line and the residues (exit 2, nothing written), not the pair
// list it would have written from them.
TEST(Sop, BuildRefusesNanAndOverlappingCalphasNamingTheStructureFile) {
  test::ScratchDir dir("sop_degenerate");
  auto refused = [&](const std::string& pdb, const std::vector<std::string>& expect) {
    test::write_text(dir / "x.pdb", pdb);
    const test::ChildResult r = sop_build(dir.path, {"x.pdb", "-o", "x.yaml"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const std::string& e : expect) EXPECT_NE(r.err.find(e), std::string::npos) << "'" << e << "' in: " << r.err;
    EXPECT_EQ(r.err.find(".pairs"), std::string::npos) << r.err;
    for (const char* f : {"x.yaml", "x.start.h5", "x.backbone.pairs", "x.native.pairs"})
      EXPECT_FALSE(test::file_exists(dir / f)) << f << ": nothing is written";
  };
  // Residue 2's CA at x = nan (line 5; its first atom is on line 4).
  refused(three_residues("ATOM      4  N   ALA A   2       3.300   1.600   0.000  1.00  0.00           N\n"
                         "ATOM      5  CA  ALA A   2         nan   1.700   0.000  1.00  0.00           C\n"
                         "ATOM      6  C   ALA A   2       5.600   2.900   0.000  1.00  0.00           C\n"),
          {"x.pdb:4:", "chain A residue ALA 2", "not a number"});
  // Residue 3's CA where residue 2's is (consecutive: no chain gap to see).
  std::string same = three_residues(kMiddle);
  const std::string ca3 = "   8.300   3.000   0.000";
  same.replace(same.find(ca3), ca3.size(), "   4.900   1.700   0.000");
  refused(same, {"x.pdb:7:", "chain A residue ALA 2 and chain A residue ALA 3", "0 A apart"});
}

// `sop-build X.pdb -o X.pdb --overwrite` would replace the structure with the config: an output
// that is the structure file (or a link to it) is refused, --overwrite or not, and the file is
// left as it was.
TEST(Sop, BuildRefusesAnOutputThatIsItsStructureFile) {
  test::ScratchDir dir("sop_same_file");
  const std::string pdb = three_residues(kMiddle);
  test::write_text(dir / "x.pdb", pdb);
  std::filesystem::create_symlink("x.pdb", dir / "link.yaml");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"x.pdb", "-o", "x.pdb", "--overwrite"},
                                               {"x.pdb", "-o", "x.pdb"},
                                               {"x.pdb", "-o", "link.yaml", "--overwrite"},
                                               {"link.yaml", "-o", "x.pdb", "--overwrite"}}) {
    const test::ChildResult r = sop_build(dir.path, args);
    EXPECT_EQ(r.exit_code, 2) << args[2] << ": " << r.err;
    EXPECT_NE(r.err.find("is the structure file"), std::string::npos) << r.err;
    EXPECT_EQ(test::read_text(dir / "x.pdb"), pdb) << "the structure is as it was";
    EXPECT_FALSE(test::file_exists(dir / "x.pdb.start.h5"));
  }
}

// A chain of 8 residues on a helix (C-alpha atoms 3.83 A apart), as PDB text, with `ssbond`
// records in front, and chain B, a copy of it 6 A away, where `two_chains`.
std::string helix_pdb(const std::string& ssbond, bool two_chains = false) {
  std::string text = ssbond;
  int serial = 0;
  for (const char chain : two_chains ? std::string("AB") : std::string("A")) {
    const std::vector<Vec3d> x = helix(8, chain == 'A' ? 0.0 : 6.0, 0, 0);
    for (size_t k = 0; k < x.size(); ++k)
      for (const char* atom : {" N  ", " CA ", " C  "}) {
        const double dx = std::string(atom) == " CA " ? 0.0 : (atom[1] == 'N' ? -0.8 : 0.8);
        char line[100];
        std::snprintf(line, sizeof line, "ATOM  %5d %s CYS %c%4d    %8.3f%8.3f%8.3f  1.00  0.00           %c\n",
                      ++serial, atom, chain, static_cast<int>(k + 1), x[k].x + dx, x[k].y, x[k].z, atom[1]);
        text += line;
      }
  }
  return text + "END\n";
}

std::string ssbond(int serial, char chain1, int residue1, char chain2, int residue2) {
  char line[100];
  std::snprintf(line, sizeof line, "SSBOND %3d CYS %c %4d    CYS %c %4d\n", serial, chain1, residue1, chain2, residue2);
  return line;
}

// The chain of helix_pdb() as mmCIF text, with one disulfide bridge in _struct_conn between
// residues `a` and `b`.
std::string helix_cif(int a, int b) {
  std::string text =
      "data_helix\nloop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.type_symbol\n_atom_site.label_atom_id\n"
      "_atom_site.label_alt_id\n_atom_site.label_comp_id\n_atom_site.label_asym_id\n_atom_site.label_entity_id\n"
      "_atom_site.label_seq_id\n_atom_site.pdbx_PDB_ins_code\n_atom_site.Cartn_x\n_atom_site.Cartn_y\n"
      "_atom_site.Cartn_z\n_atom_site.occupancy\n_atom_site.B_iso_or_equiv\n_atom_site.auth_seq_id\n"
      "_atom_site.auth_asym_id\n_atom_site.pdbx_PDB_model_num\n";
  const std::vector<Vec3d> x = helix(8, 0, 0, 0);
  int serial = 0;
  for (size_t k = 0; k < x.size(); ++k)
    for (const char* atom : {"N", "CA", "C"}) {
      const double dx = std::string(atom) == "CA" ? 0.0 : (atom[0] == 'N' ? -0.8 : 0.8);
      char line[160];
      std::snprintf(line, sizeof line, "ATOM %d %c %s . CYS A 1 %d ? %.3f %.3f %.3f 1.00 0.00 %d A 1\n", ++serial,
                    atom[0], atom, static_cast<int>(k + 1), x[k].x + dx, x[k].y, x[k].z, static_cast<int>(k + 1));
      text += line;
    }
  text +=
      "loop_\n_struct_conn.id\n_struct_conn.conn_type_id\n_struct_conn.ptnr1_auth_asym_id\n"
      "_struct_conn.ptnr1_label_comp_id\n_struct_conn.ptnr1_label_atom_id\n_struct_conn.ptnr1_auth_seq_id\n"
      "_struct_conn.ptnr2_auth_asym_id\n_struct_conn.ptnr2_label_comp_id\n_struct_conn.ptnr2_label_atom_id\n"
      "_struct_conn.ptnr2_auth_seq_id\n";
  return text + "disulf1 disulf A CYS SG " + std::to_string(a) + " A CYS SG " + std::to_string(b) + "\n";
}

// The covalent bonds of sop-build's model of `pdb`, as "i-j" (the covalent pair list's file).
std::vector<std::string> covalent_pairs(const std::string& dir) {
  std::ifstream in(dir + "/m.backbone.pairs");
  std::vector<std::string> pairs;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') {
      std::istringstream s(line);
      int i = 0, j = 0;
      s >> i >> j;
      pairs.push_back(std::to_string(i) + "-" + std::to_string(j));
    }
  return pairs;
}

// SSBOND records (and an mmCIF file's _struct_conn) become covalent bonds (within a chain and
// between chains); --disulfides none leaves them out; a bridge that cannot be taken is left out
// with a note saying why: a chain not taken, its residues already bonded, its C-alpha atoms too
// far apart (more than 10 A).
TEST(Sop, DisulfideBridgesAreCovalentBondsOrLeftOutWithANote) {
  test::ScratchDir dir("sop_ssbond");
  auto build = [&](const std::string& pdb, std::vector<std::string> extra = {}) {
    test::write_text(dir / "m.pdb", pdb);
    std::vector<std::string> args{"m.pdb", "-o", "m.yaml", "--overwrite"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::ChildResult r = sop_build(dir.path, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  // Residues 1 and 5 (beads 0 and 4, 6.2 A apart): the 8th covalent bond, not a native contact.
  test::ChildResult r = build(helix_pdb(ssbond(1, 'A', 1, 'A', 5)));
  std::vector<std::string> bonds = covalent_pairs(dir.path);
  ASSERT_EQ(bonds.size(), 8u);
  EXPECT_EQ(bonds.back(), "0-4");
  EXPECT_NE(r.out.find("8 covalent bonds (7 backbone, 1 disulfide)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("disulfide bridge: chain A CYS 1 - chain A CYS 5"), std::string::npos) << r.out;
  EXPECT_EQ(test::read_text(dir / "m.native.pairs").find("\n0 4 "), std::string::npos);
  EXPECT_NE(test::read_text(dir / "m.yaml").find("disulfide bridge, a covalent bond: chain A CYS 1 - chain A CYS 5"),
            std::string::npos);
  // --disulfides none: the backbone only; the pair is a native contact again.
  r = build(helix_pdb(ssbond(1, 'A', 1, 'A', 5)), {"--disulfides", "none"});
  EXPECT_EQ(covalent_pairs(dir.path).size(), 7u);
  EXPECT_NE(test::read_text(dir / "m.native.pairs").find("\n0 4 "), std::string::npos);
  // Between chains A and B (beads 2 and 8 + 2): a bond of the two chains' model; with chain A
  // alone it is left out, and said.
  const std::string between = helix_pdb(ssbond(1, 'A', 3, 'B', 3), true);
  build(between);
  bonds = covalent_pairs(dir.path);
  ASSERT_EQ(bonds.size(), 15u);
  EXPECT_EQ(bonds.back(), "2-10");
  r = build(between, {"--chains", "A"});
  EXPECT_EQ(covalent_pairs(dir.path).size(), 7u);
  EXPECT_NE(r.out.find("A CYS 3 - B CYS 3: left out (one of its chains is not taken)"), std::string::npos) << r.out;
  // Consecutive residues (bonded already) and residues 1 and 8 (C-alpha atoms 13.5 A apart).
  r = build(helix_pdb(ssbond(1, 'A', 2, 'A', 3) + ssbond(2, 'A', 1, 'A', 8)));
  EXPECT_EQ(covalent_pairs(dir.path).size(), 7u);
  EXPECT_NE(r.out.find("A CYS 2 - A CYS 3: left out (the residues are bonded along the chain already)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("chain A CYS 1 - chain A CYS 8: disulfide bridge left out: its C-alpha atoms are"),
            std::string::npos)
      << r.out;
  // An mmCIF file's bridge (_struct_conn of type disulf).
  test::write_text(dir / "m.cif", helix_cif(1, 5));
  r = sop_build(dir.path, {"m.cif", "-o", "m.yaml", "--overwrite"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  bonds = covalent_pairs(dir.path);
  ASSERT_EQ(bonds.size(), 8u) << r.out;
  EXPECT_EQ(bonds.back(), "0-4");
  // A bad value of the option.
  test::write_text(dir / "m.pdb", helix_pdb(""));
  const test::ChildResult bad = sop_build(dir.path, {"m.pdb", "-o", "n.yaml", "--disulfides", "yes"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--disulfides: expected bonds or none, got 'yes'"), std::string::npos) << bad.err;
}

// --copies: the assembly of a benchmark, K copies on a lattice in a periodic box, each with its
// own pair lists; the pentamer D-H of 1TII as one model, contacts between its chains included.
TEST(Sop, CopiesAndSeveralChains) {
  REQUIRE_STRUCTURE();
  test::ScratchDir dir("sop_copies");
  const test::ChildResult r = sop_build(dir.path, {kStructure, "--chains", "D", "--copies", "27", "-o", "c.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const LoadedSop l = load_in(dir.path, "c.yaml");
  const RunConfig& cfg = l.cfg;
  const BuiltSystem& sys = l.sys;
  EXPECT_EQ(sys.state.size(), 27u * 98u);
  EXPECT_TRUE(sys.state.box.periodic);
  ASSERT_EQ(cfg.model.force_field.pair_lists.size(), 2u);
  EXPECT_EQ(cfg.model.force_field.pair_lists[0].size(), 27u * 98u);  // 97 backbone bonds and the bridge each
  SopParameters p;
  EXPECT_EQ(cfg.model.force_field.pair_lists[1].size(), 27u * chain_d(p).native.size());
  // The copies do not touch: the energy is 27 times one copy's.
  CpuBackend cpu(make_model(cfg, sys), sys.state);
  const test::ChildResult one = sop_build(dir.path, {kStructure, "--chains", "D", "-o", "one.yaml"});
  ASSERT_EQ(one.exit_code, 0);
  const LoadedSop l1 = load_in(dir.path, "one.yaml");
  EXPECT_NEAR(cpu.observables().potential,
              27 * CpuBackend(make_model(l1.cfg, l1.sys), l1.sys.state).observables().potential, 1e-6);

  const test::ChildResult five = sop_build(dir.path, {kStructure, "--chains", "D,E,F,G,H", "-o", "p.yaml"});
  ASSERT_EQ(five.exit_code, 0) << five.err;
  EXPECT_NE(five.out.find("490 beads"), std::string::npos) << five.out;
  EXPECT_NE(five.out.find("490 covalent bonds (485 backbone, 5 disulfides)"), std::string::npos) << five.out;
  EXPECT_NE(five.out.find("disulfide bridge: chain H CYS 10 - chain H CYS 81"), std::string::npos) << five.out;
}

// A short pulled run writes PREFIX.pull.csv (a row every pulling.every steps, the constant
// force in its force column) and the force-extension plot PREFIX.pull.svg.
TEST(Sop, PulledRunWritesCsvAndPlot) {
  REQUIRE_STRUCTURE();
  test::ScratchDir dir("sop_run");
  ASSERT_EQ(sop_build(dir.path, {kStructure, "--chains", "D", "-o", "d.yaml", "--pull", "--pull-mode", "constant",
                                 "--pull-force", "2.0", "--pull-every", "50", "--steps", "500"})
                .exit_code,
            0);
  const test::ChildResult r = test::run_pairmd({"run", "d.yaml"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream csv(dir / "d.pull.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "step,time,anchor_shift,end_to_end,extension,force");
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_EQ(line.substr(line.rfind(',') + 1), "2") << line;
  }
  EXPECT_EQ(rows, 11);
  const std::string svg = test::read_text(dir / "d.pull.svg");
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("extension (A)"), std::string::npos);
}

// Pulling statistics: `sop-build --independent K --pull` writes K independent runs of the protein
// (a replicas section; without mpirun the runs are threads of one process, docs/ensembles.md),
// each with its own force-extension log, and the run ends with each run's rupture force in
// BASE.rupture.csv and their mean and spread. The runs differ (seed + k), so their largest forces do.
TEST(Sop, IndependentPulledRunsGiveTheirRuptureForces) {
  if (!test::file_exists(kStructure)) GTEST_SKIP() << "no " << kStructure << " (Debian's pymol-data)";
  test::ScratchDir dir("sop_independent");
  const test::ChildResult b = sop_build(
      dir.path, {kStructure, "--chains", "D", "--pull", "--integrator", "langevin", "--independent", "3", "--steps",
                 "600", "--pull-every", "50", "--thermo-every", "200", "--trajectory-every", "0", "-o", "ind.yaml"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(test::read_text(dir / "ind.yaml").find("mode: independent"), std::string::npos);
  const test::ChildResult r =
      test::run_pairmd({"run", "ind.yaml", "--backend", "cpu", "--set", "output.progress=off"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rupture forces of 3 runs: mean"), std::string::npos) << r.out;
  const std::string csv = test::read_text(dir / "ind.rupture.csv");
  std::vector<double> forces;
  std::stringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "replica,step,extension[Angstrom],force[kcal/mol/Angstrom]");
  while (std::getline(lines, line)) forces.push_back(std::stod(line.substr(line.rfind(',') + 1)));
  ASSERT_EQ(forces.size(), 3u) << csv;
  EXPECT_NE(forces[0], forces[1]) << "independent runs: seed + k";
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(test::file_exists(dir / ("ind.r" + std::to_string(k) + ".pull.csv")));
}

#endif  // PAIRMD_PHYSICS_ON_GPU

}  // namespace
}  // namespace pairmd
