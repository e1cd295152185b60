// The energy minimiser (engine/minimize.h, docs/minimize.md): FIRE's convergence and its
// downhill guarantee on every target (the CPU reference here, each GPU strategy in
// pairmd_gpu_tests), each stopping rule, system.relax's steepest descent as it always was, the
// `minimize` section's bad input, and `pairmd minimize` (its files start runs; SIGINT).
//
// GPU bounds: positions are float there, so a coordinate near the box edge L = 8.4 is rounded by
// half an ulp, 5e-7; the stiffest bond of the melt (FENE + WCA at r = 0.97) has a curvature of
// about 9e2, so rounding alone leaves forces of ~5e-4 per bond, ~1e-3 per bead: the GPU's ftol
// is 1e-2. Its energies are fixed-point sums of float pair energies, whose round-off the
// minimiser takes as 1e-6 of the energy (engine/minimize.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <regex>
#include <thread>

#include "base/bond_images.h"
#include "engine/minimize.h"
#include "engine/simulation.h"
#include "io/checkpoint.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::Target;

// 20 chains of 25 beads as random walks at melt density: overlapping (max |F| ~ 1e4), not
// minimised by the build.
const char* kMelt = R"(
units: lj
system:
  types: [{name: M, mass: 1.0}]
  chains: {count: 20, length: 25, density: 0.85, bond: fene, seed: 3}
minimize: {algorithm: none}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30.0, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 0.5, seed: 5}
neighbor: {skin: 0.4}
)";

MinimizeSpec fire_spec(double ftol) {
  RunConfig cfg = parse_config(std::string(kMelt), "melt.yaml", {"minimize.algorithm=fire"});
  MinimizeSpec s = cfg.minimize;
  s.ftol = ftol;
  s.max_iterations = 100000;
  s.max_evaluations = 100000;
  return s;
}

class Minimize : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
    melt_ = test::make_system(kMelt, {}, "melt");
  }
  std::unique_ptr<Backend> backend() const {
    return test::make_target_backend(GetParam(), melt_.model(), melt_.built.state);
  }
  double ftol() const { return GetParam().fp32 ? 1e-2 : 1e-4; }
  test::TestSystem melt_;
};

TEST_P(Minimize, FireConvergesFromOverlappingRandomWalks) {
  auto b = backend();
  SystemState before;  // as the backend holds it (float on the GPU)
  b->get_state(before);
  const MinimizeReport r = minimize(*b, fire_spec(ftol()), melt_.cfg.model.units);
  EXPECT_EQ(r.stop, MinimizeStop::ForceTolerance) << minimize_stop_name(r.stop);
  EXPECT_GT(r.max_force_start, 1e3);  // the walks do overlap
  EXPECT_LT(r.max_force_end, ftol());
  EXPECT_LT(r.energy_end, r.energy_start);
  EXPECT_LT(r.evaluations, 20000);
  // One evaluation per iteration, the start's, and one more where the last trial was taken back.
  EXPECT_GE(r.evaluations, r.iterations + 1);
  EXPECT_LE(r.evaluations, r.iterations + 2);
  // The backend is left at the state reported: the CPU reference finds the same small forces.
  SystemState s;
  b->get_state(s);
  CpuBackend reference(melt_.model(), s);
  double fmax = 0;
  for (const Vec3d& f : reference.forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
  EXPECT_LT(fmax, GetParam().fp32 ? 0.1 : 1e-4 * 1.0001);
  // Bonds stay whole in unwrapped coordinates (position + image x L; base/bond_images.h): the
  // images count the crossings of every move. The walks start whole and FENE holds bonds < 1.5.
  EXPECT_LT(longest_unwrapped_bond(before, melt_.built.topology), 1.5);
  EXPECT_LT(longest_unwrapped_bond(s, melt_.built.topology), 1.5);
  int64_t crossed = 0;
  for (size_t i = 0; i < s.size(); ++i)
    crossed +=
        s.image[i].x != before.image[i].x || s.image[i].y != before.image[i].y || s.image[i].z != before.image[i].z;
  EXPECT_GT(crossed, 0);  // some beads did cross the boundary (so the check means something)
  // Velocities and step are untouched by the minimisation.
  ASSERT_EQ(s.size(), before.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s.velocity[i].x, before.velocity[i].x) << i;
    EXPECT_EQ(s.velocity[i].z, before.velocity[i].z) << i;
  }
  EXPECT_EQ(s.step, before.step);
}

TEST_P(Minimize, EnergyNeverRisesAcrossAcceptedSteps) {
  auto b = backend();
  std::vector<double> accepted;
  const MinimizeReport r = minimize(*b, fire_spec(ftol()), melt_.cfg.model.units, [&](const MinimizeStatus& s) {
    if (s.accepted) accepted.push_back(s.energy);
  });
  ASSERT_GT(accepted.size(), 100u);
  EXPECT_GT(r.rejected, 0);  // FIRE did overshoot; those steps were taken back
  EXPECT_EQ(r.uphill, 0);    // WCA and FENE are smooth: no step was kept with the energy up
  const double round_off = GetParam().fp32 ? 1e-6 : 1e-12;
  double before = r.energy_start;
  int64_t k = 0;
  for (double e : accepted) {
    ASSERT_LE(e, before + round_off * std::fabs(before)) << "accepted step " << k;
    before = e;
    ++k;
  }
}

// The melt as a config of `pairmd run` / `pairmd minimize`, with `minimize` (a YAML line) instead
// of kMelt's none.
std::string melt_config(const std::string& minimize, int steps = 20) {
  std::string y = std::string(kMelt).replace(std::string(kMelt).find("minimize: {algorithm: none}"), 27, minimize);
  return "title: melt\nsteps: " + std::to_string(steps) + "\n" + y +
         "output: {thermo_every: 10, trajectory: {every: 10}, gsd: {every: 10}}\n";
}

// A replica ensemble of the melt: K independent replicas, as threads of one process without
// mpirun (docs/ensembles.md); each replica builds and minimises its own system.
std::string melt_ensemble_config(const std::string& minimize, const std::string& backend, int replicas) {
  return melt_config(minimize, 10) + "backend: " + backend + "\nreplicas: {count: " + std::to_string(replicas) +
         ", mode: independent}\n";
}

// The CPU reference runs here (CI); the CUDA backend, once per registered strategy, in
// pairmd_gpu_tests.
#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, Minimize, ::testing::ValuesIn(test::gpu_targets()), test::target_name);

// ---- the pairmd program on the GPU -----------------------------------------------------------

// `pairmd minimize` on the CUDA backend (the run's default strategy): its checkpoint holds a state
// whose forces, by the CPU reference, are near the GPU's float floor.
TEST(MinimizeCommandGpu, MinimisesOnTheGpuAndWritesTheState) {
  PAIRMD_REQUIRE_GPU();
  test::ScratchDir dir("minimize_cmd_gpu");
  test::write_text(dir / "melt.yaml", melt_config("minimize: {ftol: 1.0e-2}") + "backend: cuda\n");
  const test::ChildResult m = test::run_pairmd({"minimize", "melt.yaml"}, dir.path);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("backend: cuda"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("minimize: fire stopped by ftol (max |F| < 0.01)"), std::string::npos) << m.out;
  const Checkpoint ck = read_checkpoint(dir / "melt.checkpoint.h5");
  const RunConfig cfg = parse_config(melt_config("minimize: {algorithm: none}"), "c.yaml");
  Model model = cfg.model;
  model.topology = ck.topology;
  CpuBackend b(model, ck.state);
  double fmax = 0;
  for (const Vec3d& f : b.forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
  EXPECT_LT(fmax, 0.1);
  EXPECT_LT(longest_unwrapped_bond(ck.state, ck.topology), 1.5);
}

// The replicas of an ensemble on the GPU, as threads of one process: each replica minimises its
// own system on a CUDA backend of its own (at the same time as the others), then the K systems run
// in one ensemble backend.
TEST(MinimizeCommandGpu, ReplicasInThreadsEachMinimiseTheirSystem) {
  PAIRMD_REQUIRE_GPU();
  test::ScratchDir dir("minimize_replicas_gpu");
  test::write_text(dir / "melt.yaml", melt_ensemble_config("minimize: {ftol: 1.0e-2}", "cuda", 3));
  const test::ChildResult r = test::run_pairmd({"run", "melt.yaml"}, dir.path, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done: 3 replicas at step 10"), std::string::npos) << r.out;
  for (int k = 0; k < 3; ++k) {
    const std::string log = test::read_text(dir / ("melt.r" + std::to_string(k) + ".log"));
    EXPECT_NE(log.find("minimize: fire stopped by ftol (max |F| < 0.01)"), std::string::npos) << k << "\n" << log;
  }
}
#else
INSTANTIATE_TEST_SUITE_P(Cpu, Minimize, ::testing::Values(test::cpu_target()), test::target_name);

// ---- the CPU reference alone ----------------------------------------------------------------

struct Melt {
  test::TestSystem sys = test::make_system(kMelt, {}, "melt");
  std::unique_ptr<CpuBackend> backend = sys.backend();
  MinimizeReport run(const MinimizeSpec& spec, const std::function<void(const MinimizeStatus&)>& f = {}) {
    return minimize(*backend, spec, sys.cfg.model.units, f);
  }
};

TEST(MinimizeRules, EtolStopsWhenTheEnergyChangesLessThanItsShare) {
  Melt m;
  MinimizeSpec spec = fire_spec(0);
  spec.etol = 1e-7;
  std::vector<double> e;
  const MinimizeReport r = m.run(spec, [&](const MinimizeStatus& s) {
    if (s.accepted) e.push_back(s.energy);
  });
  ASSERT_EQ(r.stop, MinimizeStop::EnergyTolerance) << minimize_stop_name(r.stop);
  ASSERT_GE(e.size(), 2u);
  const double a = e[e.size() - 2], b = e.back();
  EXPECT_LT(std::fabs(b - a), 1e-7 * 0.5 * (std::fabs(a) + std::fabs(b) + 1e-8));
  EXPECT_GT(r.max_force_end, 1e-4);  // well before the force rule would have stopped it
  EXPECT_LT(r.iterations, spec.max_iterations);
}

TEST(MinimizeRules, MaxIterationsAndMaxEvaluationsStopIt) {
  MinimizeSpec spec = fire_spec(0);
  spec.max_iterations = 57;
  Melt a;
  const MinimizeReport r = a.run(spec);
  EXPECT_EQ(r.stop, MinimizeStop::MaxIterations);
  EXPECT_EQ(r.iterations, 57);
  spec = fire_spec(0);
  spec.max_evaluations = 31;
  Melt b;
  const MinimizeReport q = b.run(spec);
  EXPECT_EQ(q.stop, MinimizeStop::MaxEvaluations);
  EXPECT_LE(q.evaluations, 31 + 1);  // the last may go back to the best state
  EXPECT_GE(q.evaluations, 31);
}

TEST(MinimizeRules, FtolStopsAtOnceWhenTheStartIsAlreadyBelowIt) {
  Melt m;
  const MinimizeReport r = m.run(fire_spec(1e9));
  EXPECT_EQ(r.stop, MinimizeStop::ForceTolerance);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(r.evaluations, 1);
}

TEST(MinimizeRules, AStopSignalEndsItAtTheNextIteration) {
  Melt m;
  int64_t signalled_at = -1;
  const MinimizeReport r = m.run(fire_spec(0), [&](const MinimizeStatus& s) {
    if (s.iteration == 40) {
      g_stop_signal.store(SIGINT);
      signalled_at = s.iteration;
    }
  });
  g_stop_signal.store(0);
  EXPECT_EQ(signalled_at, 40);
  EXPECT_EQ(r.stop, MinimizeStop::Interrupted);
  EXPECT_EQ(r.iterations, 40);
  EXPECT_LT(r.energy_end, r.energy_start);
}

TEST(MinimizeRules, NonFiniteStartMovesNothing) {
  test::TestSystem two = test::make_system(
      "system:\n  types: [{name: A}]\n  lattice: {kind: sc, cells: 6, density: 0.5}\nminimize: {algorithm: none}\n"
      "force_field:\n  pair: [{potential: lj, cutoff: 2.5, coeffs: [{types: [A, A], epsilon: 1, sigma: 1}]}]\n"
      "integrator: {kind: langevin, dt: 0.005, temperature: 1}\n");
  two.built.state.position[1] = two.built.state.position[0];
  auto b = two.backend();
  const MinimizeReport r = minimize(*b, fire_spec(1e-4), two.cfg.model.units);
  EXPECT_EQ(r.stop, MinimizeStop::NonFinite);
  EXPECT_EQ(r.iterations, 0);
  SystemState s;
  b->get_state(s);
  EXPECT_EQ(s.position[1].x, two.built.state.position[1].x);
}

// A backend of several systems (the CUDA backend of an ensemble: its state is K systems one after
// another) is refused: minimising their sum would move all with one step and stop them by one
// rule. Its systems are minimised one by one through their members (tests/test_ensemble.cpp).
class SeveralSystems final : public Backend {
 public:
  explicit SeveralSystems(std::unique_ptr<Backend> b) : b_(std::move(b)) {}
  std::string name() const override { return "cuda ensemble"; }
  int systems() const override { return 3; }
  void set_state(const SystemState& s) override { b_->set_state(s); }
  void get_state(SystemState& s) override { b_->get_state(s); }
  void advance(int64_t n) override { b_->advance(n); }
  Observables observables() override { return b_->observables(); }
  std::vector<Vec3d> forces() override { return b_->forces(); }
  BackendStats stats() const override { return b_->stats(); }
  void set_temperature(double t) override { b_->set_temperature(t); }

 private:
  std::unique_ptr<Backend> b_;
};

TEST(MinimizeRules, ABackendOfSeveralSystemsIsRefused) {
  Melt m;
  SystemState before;
  m.backend->get_state(before);
  SeveralSystems three(std::move(m.backend));
  try {
    minimize(three, fire_spec(1e-4), m.sys.cfg.model.units);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("minimize: the backend 'cuda ensemble' holds 3 systems of an ensemble; each "
                                         "is minimised on its own (through its member"),
              std::string::npos)
        << e.what();
  }
  SystemState after;
  three.get_state(after);
  EXPECT_EQ(after.position[0].x, before.position[0].x);  // nothing moved
}

// The issue's measure: force evaluations to max |F| < 1e-4. FIRE gets there; the old relax
// (steepest descent with system.relax's default step, 0.02) is nowhere near after as many, nor
// after four times as many: its fixed step leaves the largest force at ~10.
TEST(MinimizeRules, FireNeedsFewerForceEvaluationsThanTheOldRelax) {
  Melt fire;
  const MinimizeReport f = fire.run(fire_spec(1e-4));
  ASSERT_EQ(f.stop, MinimizeStop::ForceTolerance) << minimize_stop_name(f.stop);
  MinimizeSpec relax = fire_spec(1e-4);
  relax.algorithm = MinimizeAlgorithm::SteepestDescent;
  relax.max_move = 0.02;
  for (int64_t times : {1, 4}) {
    relax.max_evaluations = times * f.evaluations;
    Melt old;
    const MinimizeReport r = old.run(relax);
    EXPECT_EQ(r.stop, MinimizeStop::MaxEvaluations) << minimize_stop_name(r.stop);
    EXPECT_GT(r.max_force_end, 1.0) << times << " x FIRE's " << f.evaluations << " evaluations";
    EXPECT_GT(r.energy_end, f.energy_end);
  }
}

// system.relax as it was before `minimize` (engine/system_builder.cpp, relax()): the alias runs
// the same arithmetic, so configs that use it build the same system, bit for bit.
void old_relax(SystemState& s, const Model& model, int steps, double max_move) {
  CpuBackend backend(model, s);
  for (int k = 0; k < steps; ++k) {
    const std::vector<Vec3d> f = backend.forces();
    double fmax = 0;
    for (const Vec3d& fi : f) fmax = std::max(fmax, dot(fi, fi));
    fmax = std::sqrt(fmax);
    if (!(fmax > 0) || !std::isfinite(fmax)) break;
    const double scale = max_move / fmax;
    for (size_t i = 0; i < s.size(); ++i) {
      s.position[i] += scale * f[i];
      s.box.wrap(s.position[i], s.image[i]);
    }
    backend.move_to(s.position, s.image);
  }
}

TEST(MinimizeRelax, SystemRelaxIsTheOldSteepestDescentBitForBit) {
  const std::string yaml =
      std::string(kMelt).replace(std::string(kMelt).find("minimize: {algorithm: none}"), 27, "backend: cpu\n");
  const std::string relaxed =
      std::string(yaml).replace(yaml.find("  chains:"), 0, "  relax: {steps: 150, max_move: 0.02}\n");
  const RunConfig cfg = parse_config(relaxed, "r.yaml");
  EXPECT_EQ(cfg.minimize.algorithm, MinimizeAlgorithm::SteepestDescent);
  const BuiltSystem built = build_system(cfg);
  BuildOptions none;
  none.minimize = false;
  BuiltSystem reference = build_system(cfg, none);
  Model model = cfg.model;
  model.topology = reference.topology;
  old_relax(reference.state, model, 150, 0.02);
  ASSERT_EQ(built.state.size(), reference.state.size());
  for (size_t i = 0; i < built.state.size(); ++i) {
    ASSERT_EQ(built.state.position[i].x, reference.state.position[i].x) << i;
    ASSERT_EQ(built.state.position[i].y, reference.state.position[i].y) << i;
    ASSERT_EQ(built.state.position[i].z, reference.state.position[i].z) << i;
    ASSERT_EQ(built.state.image[i].x, reference.state.image[i].x) << i;
  }
  // The log says what the alias is.
  std::string notes;
  for (const std::string& n : built.notes) notes += n + "\n";
  EXPECT_NE(notes.find("system.relax is an alias of minimize: {algorithm: steepest_descent, max_iterations: 150, "
                       "max_move: 0.02, ftol: 0, etol: 0}"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("minimize: steepest_descent stopped by max_iterations after 150 iterations"), std::string::npos)
      << notes;
}

TEST(MinimizeConfig, ChainsAreMinimisedByDefaultAndOtherStartsAreNot) {
  const std::string chains = std::string(kMelt).replace(std::string(kMelt).find("minimize: {algorithm: none}"), 27, "");
  const RunConfig c = parse_config(chains, "c.yaml");
  EXPECT_EQ(c.minimize.algorithm, MinimizeAlgorithm::Fire);
  EXPECT_EQ(c.minimize.dt, 0.01);  // integrator.dt
  EXPECT_EQ(c.minimize.dtmax, 0.1);
  const RunConfig l = parse_config(test::lj_yaml(3, 0.8, "langevin", 1.0), "l.yaml");
  EXPECT_EQ(l.minimize.algorithm, MinimizeAlgorithm::None);
  const RunConfig m = parse_config(test::lj_yaml(3, 0.8, "langevin", 1.0) + "minimize:\n", "m.yaml");
  EXPECT_EQ(m.minimize.algorithm, MinimizeAlgorithm::Fire);
  EXPECT_EQ(m.minimize.ftol, 0.1);
}

TEST(MinimizeConfig, BadInputNamesTheKey) {
  const std::string base = test::lj_yaml(4, 0.8, "langevin", 1.0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"minimize: {ftol: -1}", "minimize.ftol: expected a force >= 0 (0: off), got -1"},
      {"minimize: {etol: 1}", "minimize.etol: expected a relative energy change in [0, 1)"},
      {"minimize: {etol: -0.1}", "minimize.etol: expected a relative energy change in [0, 1)"},
      {"minimize: {max_iterations: -5}", "minimize.max_iterations: expected an integer >= 0, got -5"},
      {"minimize: {max_iterations: 2.5}", "minimize.max_iterations: expected an integer >= 0"},
      {"minimize: {max_evaluations: 0}", "minimize.max_evaluations: expected an integer >= 1, got 0"},
      {"minimize: {max_move: 0}", "minimize.max_move: expected a number > 0, got 0"},
      {"minimize: {dt: 0}", "minimize.dt: expected a number > 0, got 0"},
      {"minimize: {dt: 0.01, dtmax: 0.005}", "minimize.dtmax: expected a number >= minimize.dt"},
      {"minimize: {dt: 0.01, dtmin: 0.02}", "minimize.dtmin: expected a number <= minimize.dt"},
      {"minimize: {dt_grow: 1}", "minimize.dt_grow: expected a number > 1, got 1"},
      {"minimize: {dt_shrink: 1}", "minimize.dt_shrink: expected a number in (0, 1), got 1"},
      {"minimize: {alpha0: 0}", "minimize.alpha0: expected a number in (0, 1), got 0"},
      {"minimize: {algorithm: cg}", "minimize.algorithm: expected one of fire, steepest_descent, none, got 'cg'"},
      {"minimize: {step: 3}", "minimize.step: unknown key"},
      {"minimize: {algorithm: steepest_descent, dtmax: 1}", "minimize.dtmax: dtmax is a setting of algorithm fire"},
      {"minimize: [1, 2]", "minimize: expected a mapping"},
  };
  for (const auto& [section, expected] : cases) {
    try {
      parse_config(base + section + "\n", "bad.yaml");
      ADD_FAILURE() << section << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << section << "\n" << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("bad.yaml:", 0), 0u) << e.what();
    }
  }
  // system.relax and minimize at once: one of them.
  const std::string both = std::string(kMelt).replace(std::string(kMelt).find("  chains:"), 0, "  relax: {steps: 5}\n");
  try {
    parse_config(both, "both.yaml");
    ADD_FAILURE() << "relax and minimize: no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("both.yaml:", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(": minimize: system.relax is an older spelling of minimize"),
              std::string::npos)
        << e.what();
  }
  // A max_move of half the box or more: when the box is known.
  try {
    build_system(parse_config(base + "minimize: {max_move: 50}\n", "box.yaml"));
    ADD_FAILURE() << "max_move 50: no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("minimize.max_move: 50 is not less than half the smallest box edge"),
              std::string::npos)
        << e.what();
  }
}

// A LAMMPS data file of particles at random places (as `create_atoms random` makes them: some
// nearly on top of each other) is minimised from `system.file` to max |F| < 1e-4.
TEST(MinimizeStart, FireConvergesFromALammpsDataFileOfRandomPositions) {
  test::ScratchDir dir("minimize_data");
  const int n = 400;
  const double L = std::cbrt(n / 0.8442);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(0.0, L);
  std::ostringstream d;
  d << "random atoms\n\n"
    << n << " atoms\n1 atom types\n\n0 " << L << " xlo xhi\n0 " << L << " ylo yhi\n0 " << L
    << " zlo zhi\n\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n";
  d.precision(17);
  for (int i = 0; i < n; ++i) d << i + 1 << " 1 " << u(rng) << " " << u(rng) << " " << u(rng) << "\n";
  test::write_text(dir / "random.data", d.str());
  const std::string yaml = "system:\n  types: [{name: A}]\n  file: {path: " + (dir / "random.data") +
                           "}\nminimize: {ftol: 1.0e-4, max_iterations: 100000}\nbackend: cpu\n"
                           "force_field:\n  pair: [{potential: lj, cutoff: 2.5, shift: true, coeffs: [{types: [A, "
                           "A], epsilon: 1, sigma: 1}]}]\nintegrator: {kind: langevin, dt: 0.005, temperature: 1}\n"
                           "neighbor: {skin: 0.3}\n";
  const RunConfig cfg = parse_config(yaml, "data.yaml");
  const BuiltSystem sys = build_system(cfg);
  std::string notes;
  for (const std::string& note : sys.notes) notes += note + "\n";
  EXPECT_NE(notes.find("minimize: fire stopped by ftol (max |F| < 0.0001)"), std::string::npos) << notes;
  CpuBackend check(make_model(cfg, sys), sys.state);
  double fmax = 0;
  for (const Vec3d& f : check.forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
  EXPECT_LT(fmax, 1e-4);
  // The old relax (steepest descent, step 0.02) with as many force evaluations is far from it.
  std::smatch count;
  ASSERT_TRUE(std::regex_search(notes, count, std::regex(" ([0-9]+) force evaluations"))) << notes;
  const RunConfig old = parse_config(yaml, "data.yaml",
                                     {"minimize.algorithm=steepest_descent", "minimize.max_move=0.02",
                                      "minimize.max_iterations=100000", "minimize.max_evaluations=" + count[1].str()});
  std::string old_notes;
  for (const std::string& note : build_system(old).notes) old_notes += note + "\n";
  std::smatch end;
  ASSERT_TRUE(std::regex_search(old_notes, end, std::regex("max \\|F\\| [^ ]+ -> ([^ ]+) "))) << old_notes;
  EXPECT_NE(old_notes.find("steepest_descent stopped by max_evaluations"), std::string::npos) << old_notes;
  EXPECT_GT(std::stod(end[1].str()), 1.0) << old_notes;
}

// ---- the pairmd program ---------------------------------------------------------------------

TEST(MinimizeCommand, WritesTheMinimisedStateAsFilesThatStartRuns) {
  test::ScratchDir dir("minimize_cmd");
  // The CPU backend, whose double forces the check below recomputes (with `auto` a GPU's float
  // forces met ftol and the CPU's read 1.06e-3 on the H100).
  test::write_text(dir / "melt.yaml", melt_config("minimize: {ftol: 1.0e-3}") + "backend: cpu\n");
  const test::ChildResult m = test::run_pairmd({"minimize", "melt.yaml"}, dir.path);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("minimize: fire stopped by ftol (max |F| < 0.001)"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("minimised state: melt.checkpoint.h5"), std::string::npos) << m.out;
  EXPECT_NE(test::read_text(dir / "melt.log").find("minimize: fire stopped by ftol"), std::string::npos);
  for (const char* f : {"melt.checkpoint.h5", "melt.h5", "melt.gsd", "melt.thermo.csv"})
    EXPECT_TRUE(test::file_exists(dir / f)) << f;
  const Checkpoint ck = read_checkpoint(dir / "melt.checkpoint.h5");
  EXPECT_EQ(ck.state.step, 0);
  {  // the checkpoint holds a minimised state
    const RunConfig cfg = parse_config(melt_config("minimize: {algorithm: none}"), "c.yaml");
    Model model = cfg.model;
    model.topology = ck.topology;
    CpuBackend b(model, ck.state);
    double fmax = 0;
    for (const Vec3d& f : b.forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
    EXPECT_LT(fmax, 1e-3);
  }
  // pairmd run --restart goes on into the config's dynamics, in the same files.
  const test::ChildResult r = test::run_pairmd({"run", "melt.yaml", "--restart", "melt.checkpoint.h5"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done: step 20"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("minimize:"), std::string::npos) << "a restart does not minimise again\n" << r.out;
  // system.file starts a new run from the GSD frame.
  std::string from = melt_config("minimize: {algorithm: none}");
  const size_t a = from.find("  chains:"), b = from.find('\n', a);
  from.replace(a, b - a, "  file: {path: melt.gsd, frame: 0}");
  test::write_text(dir / "from_gsd.yaml", from);
  const test::ChildResult g = test::run_pairmd({"run", "from_gsd.yaml"}, dir.path);
  ASSERT_EQ(g.exit_code, 0) << g.out << g.err;
  EXPECT_NE(g.out.find("done: step 20"), std::string::npos) << g.out;
}

TEST(MinimizeCommand, RefusesBadInputWithExit2AndWritesNothing) {
  test::ScratchDir dir("minimize_bad");
  test::write_text(dir / "melt.yaml", melt_config("minimize: {ftol: -1}"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"minimize", "melt.yaml"}, std::vector<std::string>{"run", "melt.yaml"},
        std::vector<std::string>{"check", "melt.yaml"}}) {
    const test::ChildResult r = test::run_pairmd(args, dir.path);
    EXPECT_EQ(r.exit_code, 2) << args[0] << "\n" << r.err;
    EXPECT_EQ(r.err.find("melt.yaml:"), 0u) << args[0] << "\n" << r.err;
    EXPECT_NE(r.err.find(": minimize.ftol: expected a force >= 0 (0: off), got -1"), std::string::npos)
        << args[0] << "\n"
        << r.err;
  }
  const test::ChildResult s =
      test::run_pairmd({"minimize", "melt.yaml", "--set", "minimize.ftol=0.1", "--set", "minimize.dt=-2"}, dir.path);
  EXPECT_EQ(s.exit_code, 2) << s.err;
  EXPECT_NE(s.err.find("--set minimize.dt=-2: minimize.dt: expected a number > 0, got -2"), std::string::npos) << s.err;
  std::vector<std::string> files = dir.files();
  files.erase(
      std::remove_if(files.begin(), files.end(), [](const std::string& f) { return f.rfind("child.", 0) == 0; }),
      files.end());
  EXPECT_EQ(files, std::vector<std::string>{"melt.yaml"});
}

// A replica ensemble: `pairmd run` minimises each replica's system (here as threads of one
// process); `pairmd minimize`, which writes one system, refuses it and says so.
TEST(MinimizeCommand, EveryReplicaOfAnEnsembleMinimisesItsOwnSystem) {
  test::ScratchDir dir("minimize_replicas");
  test::write_text(dir / "melt.yaml", melt_ensemble_config("minimize: {ftol: 1.0e-3}", "cpu", 2));
  const test::ChildResult m = test::run_pairmd({"minimize", "melt.yaml"}, dir.path);
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find("melt.yaml:"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find(": replicas: pairmd minimize minimises one system, and this config runs an ensemble of 2 "
                       "replicas: pairmd run melt.yaml minimises each replica's system before its dynamics"),
            std::string::npos)
      << m.err;
  std::vector<std::string> files = dir.files();
  files.erase(
      std::remove_if(files.begin(), files.end(), [](const std::string& f) { return f.rfind("child.", 0) == 0; }),
      files.end());
  EXPECT_EQ(files, std::vector<std::string>{"melt.yaml"});

  const test::ChildResult r = test::run_pairmd({"run", "melt.yaml"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done: 2 replicas at step 10"), std::string::npos) << r.out;
  for (int k = 0; k < 2; ++k) {
    const std::string log = test::read_text(dir / ("melt.r" + std::to_string(k) + ".log"));
    EXPECT_NE(log.find("minimize: fire stopped by ftol (max |F| < 0.001)"), std::string::npos) << k << "\n" << log;
    // The replica's start is the minimised system: its first thermo row has the minimum's energy.
    const std::string::size_type at = log.find(" -> ", log.find("minimize: fire stopped"));
    ASSERT_NE(at, std::string::npos) << log;
    const double minimum = std::stod(log.substr(at + 4));
    const std::string thermo = test::read_text(dir / ("melt.r" + std::to_string(k) + ".thermo.csv"));
    const std::string::size_type row = thermo.find("\n0,");  // step 0: step,time,temperature,potential_energy
    ASSERT_NE(row, std::string::npos) << thermo;
    size_t field = row + 1;
    for (int c = 0; c < 3; ++c) field = thermo.find(',', field) + 1;
    EXPECT_NEAR(std::stod(thermo.substr(field)), minimum, 1e-7 * std::fabs(minimum)) << thermo;
  }
}

// place-ions --trajectory writes a config that starts from a frame: the frame is the state the ions
// were placed against, so the config's minimisation goes with its old source.
TEST(MinimizeCommand, PlaceIonsFromATrajectoryDropsTheMinimisation) {
  test::ScratchDir dir("minimize_ions");
  test::write_text(dir / "charged.yaml", R"(
units: lj
steps: 10
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  chains: {count: 4, length: 10, density: 0.05, bond: spring, counterion_type: C, seed: 9}
minimize: {ftol: 1.0}
force_field:
  bonds: [{name: spring, potential: harmonic, k: 100.0, r0: 1.0}]
  pair:
    - {potential: wca, coeffs: [{types: [M, M], epsilon: 1, sigma: 1}, {types: [M, C], epsilon: 1, sigma: 1}, {types: [C, C], epsilon: 1, sigma: 1}]}
    - {potential: debye_huckel, cutoff: 5.0, bjerrum_length: 1.0, debye_length: 2.0, shift: true}
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, seed: 3}
output: {trajectory: {every: 10}}
)");
  ASSERT_EQ(test::run_pairmd({"run", "charged.yaml"}, dir.path).exit_code, 0);
  const test::ChildResult r = test::run_pairmd(
      {"place-ions", "--config", "charged.yaml", "--trajectory", "charged.h5", "--count", "1", "--type", "C",
       "--min-distance", "1", "--kernel", "cpu", "--spacing", "1", "--out", "ions.yaml"},
      dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string written = test::read_text(dir / "ions.yaml");
  EXPECT_EQ(written.find("minimize"), std::string::npos) << written;
  EXPECT_EQ(parse_config(written, "ions.yaml").minimize.algorithm, MinimizeAlgorithm::None);
}

TEST(MinimizeCommand, SigintStopsTheMinimisationAndWritesNothing) {
  test::ScratchDir dir("minimize_sigint");
  // No stopping rule short of a million iterations: only the signal ends it. Its progress line
  // (output.progress: on) says when it runs.
  std::string yaml = melt_config("minimize: {ftol: 0, max_iterations: 1000000, max_evaluations: 1000000}");
  yaml.replace(yaml.find("output: {"), 9, "output: {progress: on, ");
  test::write_text(dir / "melt.yaml", yaml);
  test::Child c({test::pairmd_binary(), "minimize", "melt.yaml"}, dir.path);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.err().find("minimize: iteration") == std::string::npos && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(c.err().find("minimize: iteration"), std::string::npos) << c.out() << c.err();
  c.signal(SIGINT);
  const test::ChildResult r = c.wait(60);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 130) << r.out << r.err;
  EXPECT_NE(r.err.find("pairmd minimize: interrupted (signal 2) during the minimisation, before the run began; "
                       "nothing was written"),
            std::string::npos)
      << r.err;
  for (const std::string& f : dir.files())
    EXPECT_TRUE(f == "melt.yaml" || f.rfind("child.", 0) == 0) << f << " was left";  // the lock file too is gone
}

#endif  // PAIRMD_PHYSICS_ON_GPU

}  // namespace
}  // namespace pairmd
