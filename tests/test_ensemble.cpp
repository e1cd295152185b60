// Ensembles (backends/ensemble.h): K systems advanced together must each run the trajectory they
// run alone, with their own temperature and seed, on every target: the CPU ensemble (K CPU
// backends; pairmd_tests) and the CUDA ensemble with every strategy (one CudaBackend over the K
// systems; pairmd_gpu_tests, skipped with the reason where there is no GPU). The systems are the
// example systems (an LJ liquid, a bead-spring melt with bonds and a charged solution), so pairs
// that would join two systems, bonds, exclusions and the thermostat are all in play; each
// system starts from its own jiggled state.
//
// Deterministic targets: positions, velocities and images bit for bit against the single run,
// and the observables of each system (energies are exact fixed-point sums; the kinetic energy is
// summed per system in tag order, as alone). Float-atomic targets: the order of their additions
// differs from run to run, so the same bound as Physics' kSameRun.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "backends/ensemble.h"
#include "backends/lockstep_ensemble.h"
#include "backends/tuning.h"
#include "engine/minimize.h"
#include "engine/simulation.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::Target;

class Ensembles : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "cuda") PAIRMD_REQUIRE_GPU();
  }
  Model model(const test::TestSystem& s) const {
    Model m = s.model();
    if (!GetParam().strategy.empty()) m.strategy = GetParam().strategy;
    return m;
  }
};

constexpr int kSystems = 3;

std::vector<SystemState> starts(const test::TestSystem& s) {
  std::vector<SystemState> v;
  for (int k = 0; k < kSystems; ++k) {
    SystemState st = s.built.state;
    test::jiggle(st, 0.02, 100 + k);
    v.push_back(st);
  }
  return v;
}

std::vector<EnsembleSystem> settings(const test::TestSystem& s) {
  std::vector<EnsembleSystem> v;
  for (int k = 0; k < kSystems; ++k)
    v.push_back({s.cfg.model.integrator.temperature * (1.0 + 0.1 * k), s.cfg.model.integrator.seed + 7 * k});
  return v;
}

// The model of system `one` of an ensemble run alone: its temperature and seed.
Model alone_model(const Model& m, const EnsembleSystem& one) {
  Model alone = m;
  alone.integrator.temperature = one.temperature;
  alone.integrator.seed = one.seed;
  return alone;
}

void expect_same(const Target& t, const SystemState& a, const SystemState& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(a.step, b.step) << what;
  if (t.deterministic) {
    EXPECT_EQ(std::memcmp(a.position.data(), b.position.data(), a.size() * sizeof(Vec3d)), 0) << what;
    EXPECT_EQ(std::memcmp(a.velocity.data(), b.velocity.data(), a.size() * sizeof(Vec3d)), 0) << what;
    EXPECT_EQ(std::memcmp(a.image.data(), b.image.data(), a.size() * sizeof(Int3)), 0) << what;
  } else {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const Vec3d d = a.unwrapped(i) - b.unwrapped(i);
      m = std::max(m, std::sqrt(dot(d, d)));
    }
    EXPECT_LT(m, 1e-3) << what;
  }
}

// The systems of `s` run together for `steps` steps, each against its run alone.
void expect_each_runs_alone(const Target& t, const test::TestSystem& s, const Model& m, int64_t steps) {
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  std::unique_ptr<Ensemble> e = make_ensemble(t.backend, m, st, sys);
  ASSERT_EQ(e->size(), kSystems);
  e->advance(steps);
  for (int k = 0; k < kSystems; ++k) {
    const Model alone = alone_model(m, sys[k]);
    auto single = make_backend(t.backend, alone, st[k]);
    single->advance(steps);
    SystemState a, b;
    single->get_state(a);
    e->get_state(k, b);
    expect_same(t, a, b, "system " + std::to_string(k));
    const Observables oa = single->observables(), ob = e->observables(k);
    ASSERT_EQ(oa.potential_by_term.size(), ob.potential_by_term.size());
    if (t.deterministic) {
      EXPECT_EQ(oa.potential, ob.potential) << "system " << k;
      EXPECT_EQ(oa.virial, ob.virial) << "system " << k;
      EXPECT_EQ(oa.kinetic, ob.kinetic) << "system " << k;
      for (size_t term = 0; term < oa.potential_by_term.size(); ++term)
        EXPECT_EQ(oa.potential_by_term[term], ob.potential_by_term[term]) << "system " << k << ", term " << term;
    } else {
      EXPECT_NEAR(oa.potential, ob.potential, 1e-4 * std::fabs(oa.potential) + 1e-3) << "system " << k;
      for (size_t term = 0; term < oa.potential_by_term.size(); ++term)
        EXPECT_NEAR(oa.potential_by_term[term], ob.potential_by_term[term],
                    1e-4 * std::fabs(oa.potential_by_term[term]) + 1e-3)
            << "system " << k << ", term " << term;
    }
    const std::vector<Vec3d> fa = single->forces(), fb = e->forces(k);
    ASSERT_EQ(fa.size(), fb.size());
    if (t.deterministic) EXPECT_EQ(std::memcmp(fa.data(), fb.data(), fa.size() * sizeof(Vec3d)), 0) << "system " << k;
  }
}

TEST_P(Ensembles, EverySystemRunsAsItWouldAlone) {
  for (const test::TestSystem& s : test::example_systems()) {
    SCOPED_TRACE(s.name);
    // Float-atomic sums differ from run to run in the last bits, and the dense melt's chaos
    // grows that to 1e-2 in 300 steps: those targets are compared after 30.
    expect_each_runs_alone(GetParam(), s, model(s), GetParam().deterministic ? 300 : 30);
  }
}

// Angles, dihedrals, impropers and pairs scaled on 1-3 and 1-4 neighbours (issue #32): each
// copy's terms on its own particles, each term's energy in its own system.
TEST_P(Ensembles, BondedSystemsRunAsTheyWouldAlone) {
  const test::TestSystem s = test::bonded_system();
  ASSERT_FALSE(s.built.topology.angles.empty());
  ASSERT_FALSE(s.built.topology.dihedrals.empty());
  ASSERT_FALSE(s.built.topology.impropers.empty());
  expect_each_runs_alone(GetParam(), s, model(s), GetParam().deterministic ? 300 : 30);
}

// A temperature change of one system (a replica exchange) changes that system and no other.
TEST_P(Ensembles, ATemperatureChangeIsOneSystems) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const Model m = model(s);
  const std::vector<SystemState> st = starts(s);
  std::vector<EnsembleSystem> sys = settings(s);
  std::unique_ptr<Ensemble> e = make_ensemble(t.backend, m, st, sys);
  e->advance(50);
  e->set_temperature(1, 2.5);
  e->advance(100);
  for (int k : {0, 1}) {
    const Model alone = alone_model(m, sys[k]);
    auto single = make_backend(t.backend, alone, st[k]);
    single->advance(50);
    if (k == 1) single->set_temperature(2.5);
    single->advance(100);
    SystemState a, b;
    single->get_state(a);
    e->get_state(k, b);
    expect_same(t, a, b, "system " + std::to_string(k));
  }
}

// A velocity rescale of one system (a replica moved to another temperature) scales that system
// only, on the device, and gives what the host's get_state / scale / set_state gives: system 1
// of the ensemble, a single backend scaled on the device and one scaled through the host (the
// Backend default) all end at the same state, bit for bit on deterministic targets.
TEST_P(Ensembles, AVelocityRescaleIsOneSystemsAndMatchesTheHostPath) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const Model m = model(s);
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  std::unique_ptr<Ensemble> e = make_ensemble(t.backend, m, st, sys);
  e->advance(50);
  e->scale_velocities(1, 1.3);
  e->advance(60);
  for (int k : {0, 1}) {
    const Model alone = alone_model(m, sys[k]);
    auto device = make_backend(t.backend, alone, st[k]);
    auto host = make_backend(t.backend, alone, st[k]);
    device->advance(50);
    host->advance(50);
    if (k == 1) {
      device->scale_velocities(1.3);
      host->Backend::scale_velocities(1.3);
    }
    device->advance(60);
    host->advance(60);
    SystemState a, b, c;
    device->get_state(a);
    host->get_state(b);
    e->get_state(k, c);
    expect_same(t, a, c, "system " + std::to_string(k) + ", ensemble");
    expect_same(t, a, b, "system " + std::to_string(k) + ", host path");
  }
}

// Several systems' swaps at once (Ensemble::change_temperatures, one upload and one kernel on the
// GPU) leave each system as a backend of its own left by set_temperature and the host's velocity
// scaling (Backend::scale_velocities: download, scale, upload), bit for bit on deterministic
// targets; a system named twice in one batch is refused on the GPU.
TEST_P(Ensembles, TemperatureChangesTogetherEqualEachSystemAlone) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const Model m = model(s);
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  const std::vector<TemperatureChange> changes = {
      {2, 1.9, 1.25}, {0, 2.4, 1.0}, {1, std::nan(""), 0.8}};  // both, temperature only, factor only
  std::unique_ptr<Ensemble> e = make_ensemble(t.backend, m, st, sys);
  e->advance(50);
  e->change_temperatures(changes);
  e->advance(60);
  for (const TemperatureChange& c : changes) {
    const int k = c.system;
    auto single = make_backend(t.backend, alone_model(m, sys[k]), st[k]);
    single->advance(50);
    if (!std::isnan(c.temperature)) single->set_temperature(c.temperature);
    if (c.velocity_factor != 1.0) single->Backend::scale_velocities(c.velocity_factor);
    single->advance(60);
    SystemState a, b;
    single->get_state(a);
    e->get_state(k, b);
    expect_same(t, a, b, "system " + std::to_string(k));
  }
  EXPECT_THROW(e->change_temperatures({{kSystems, 1.0, 1.0}}), std::out_of_range);
  if (t.backend == "cuda") EXPECT_THROW(e->change_temperatures({{1, 1.0, 1.1}, {1, 1.2, 1.0}}), std::invalid_argument);
}

// An ensemble that counts what reaches it (the CPU ensemble does the work).
class CountingEnsemble final : public Ensemble {
 public:
  explicit CountingEnsemble(std::unique_ptr<Ensemble> e) : e_(std::move(e)) {}
  std::string name() const override { return e_->name(); }
  int size() const override { return e_->size(); }
  void advance(int64_t n) override { e_->advance(n); }
  void get_state(int k, SystemState& s) override { e_->get_state(k, s); }
  void set_state(int k, const SystemState& s) override { e_->set_state(k, s); }
  Observables observables(int k) override { return e_->observables(k); }
  std::vector<Vec3d> forces(int k) override { return e_->forces(k); }
  void set_temperature(int k, double t) override {
    ++single_calls;
    e_->set_temperature(k, t);
  }
  void scale_velocities(int k, double f) override {
    ++single_calls;
    e_->scale_velocities(k, f);
  }
  void change_temperatures(const std::vector<TemperatureChange>& c) override {
    if (fail_changes) throw std::runtime_error("the device is gone");
    batches.push_back(c.size());
    e_->change_temperatures(c);
  }
  BackendStats stats() const override { return e_->stats(); }
  int single_calls = 0;
  std::vector<size_t> batches;
  bool fail_changes = false;

 private:
  std::unique_ptr<Ensemble> e_;
};

// The members' swaps at a meeting (Simulation::change_temperature: set_temperature, then
// scale_velocities) reach the ensemble as one batch when it next moves, and the systems end as
// with the swaps made one by one. A second scaling of a system before the ensemble is used
// applies the first (two roundings, as two calls make).
TEST(LockstepEnsemble, MembersSwapsReachTheEnsembleAsOneBatch) {
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const Model m = s.model();
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  auto counting = std::make_unique<CountingEnsemble>(make_ensemble("cpu", m, st, sys));
  CountingEnsemble& seen = *counting;
  LockstepEnsemble lock(std::move(counting), st[0].step);
  std::vector<std::unique_ptr<Backend>> members;
  for (int k = 0; k < kSystems; ++k) members.push_back(lock.member(k));
  auto move_all = [&](int64_t n) {
    std::vector<std::thread> threads;
    for (int k = 0; k < kSystems; ++k) threads.emplace_back([&, k] { members[k]->advance(n); });
    for (std::thread& th : threads) th.join();
  };
  move_all(40);
  for (int k = 0; k < kSystems; ++k) {
    members[k]->set_temperature(1.0 + 0.3 * k);
    members[k]->scale_velocities(1.1 - 0.05 * k);
  }
  EXPECT_TRUE(seen.batches.empty());  // nothing applied yet
  move_all(40);
  EXPECT_EQ(seen.single_calls, 0);
  ASSERT_EQ(seen.batches.size(), 1u);
  EXPECT_EQ(seen.batches[0], static_cast<size_t>(kSystems));
  members[1]->scale_velocities(1.2);
  members[1]->scale_velocities(0.9);  // applies the 1.2 first
  ASSERT_EQ(seen.batches.size(), 2u);
  SystemState read;
  members[0]->get_state(read);  // a read applies the pending 0.9
  ASSERT_EQ(seen.batches.size(), 3u);

  std::unique_ptr<Ensemble> ref = make_ensemble("cpu", m, st, sys);
  ref->advance(40);
  for (int k = 0; k < kSystems; ++k) {
    ref->set_temperature(k, 1.0 + 0.3 * k);
    ref->scale_velocities(k, 1.1 - 0.05 * k);
  }
  ref->advance(40);
  ref->scale_velocities(1, 1.2);
  ref->scale_velocities(1, 0.9);
  for (int k = 0; k < kSystems; ++k) {
    SystemState a, b;
    ref->get_state(k, a);
    members[k]->get_state(b);
    expect_same(test::cpu_target(), a, b, "system " + std::to_string(k));
  }
}

// Swaps that cannot be applied fail every member, as a failed step does: the member whose read
// applied them gets the error, and another member's next move gets it too, rather than running
// on at a temperature its replica has left.
TEST(LockstepEnsemble, SwapsThatFailFailEveryMember) {
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const std::vector<SystemState> st = starts(s);
  auto counting = std::make_unique<CountingEnsemble>(make_ensemble("cpu", s.model(), st, settings(s)));
  CountingEnsemble& seen = *counting;
  LockstepEnsemble lock(std::move(counting), st[0].step);
  std::vector<std::unique_ptr<Backend>> members;
  for (int k = 0; k < kSystems; ++k) members.push_back(lock.member(k));
  members[0]->set_temperature(2.0);
  seen.fail_changes = true;
  SystemState x;
  EXPECT_THROW(members[1]->get_state(x), std::runtime_error);
  EXPECT_THROW(members[2]->advance(10), std::runtime_error);
}

// The systems as Backends of their own, each driven by a Simulation in a thread of its own (as the
// replicas of an ensemble in one process are): every run sees its system's states at the steps
// its observers ask for, and one that ends early does not hold the others back.
TEST_P(Ensembles, LockstepMembersRunInThreadsAndMayLeaveEarly) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const Model m = model(s);
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  LockstepEnsemble lock(make_ensemble(t.backend, m, st, sys), st[0].step);
  std::vector<SystemState> ends(kSystems);
  std::vector<RunResult> results(kSystems);
  std::vector<std::thread> threads;
  for (int k = 0; k < kSystems; ++k)
    threads.emplace_back([&, k] {
      RunConfig cfg = s.cfg;
      cfg.output.thermo_every = 40;
      Simulation sim(cfg, s.built.topology, lock.member(k));
      // System 2 stops at step 120, the others go on to 200.
      results[k] = sim.run(k == 2 ? 120 : 200);
      sim.backend().get_state(ends[k]);
    });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < kSystems; ++k) {
    EXPECT_EQ(results[k].outcome, RunOutcome::Completed) << results[k].message;
    const Model alone = alone_model(m, sys[k]);
    auto single = make_backend(t.backend, alone, st[k]);
    single->advance(k == 2 ? 120 : 200);
    SystemState a;
    single->get_state(a);
    if (k == 2) {
      EXPECT_EQ(ends[k].step, 120);
    } else {
      expect_same(t, a, ends[k], "system " + std::to_string(k));
    }
  }
}

// Members that ask for one step at a time, as fast as they can: a member whose target the
// ensemble reached but that has not woken yet must not be taken for one asking to move (that
// moved the ensemble by zero steps forever, holding the lock: a hang on the GPU, issue #31).
TEST_P(Ensembles, LockstepMembersAskingStepByStepNeverHang) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kLjLiquid, {}, "lj");
  const std::vector<SystemState> st = starts(s);
  LockstepEnsemble lock(make_ensemble(t.backend, model(s), st, settings(s)), st[0].step);
  constexpr int kSteps = 400;
  std::vector<std::thread> threads;
  std::vector<int64_t> reached(kSystems, 0);
  for (int k = 0; k < kSystems; ++k)
    threads.emplace_back([&, k] {
      std::unique_ptr<Backend> b = lock.member(k);
      for (int i = 0; i < kSteps; ++i) b->advance(1);
      SystemState x;
      b->get_state(x);
      reached[k] = x.step;
    });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < kSystems; ++k) EXPECT_EQ(reached[k], st[0].step + kSteps) << "system " << k;
}

// The energy minimiser moves one system of an ensemble through its member (Backend::move_to of
// system k alone; engine/minimize.h): each system reaches the force tolerance as it does on a
// backend of its own, and the others do not move. The minimised ensemble then runs on.
TEST_P(Ensembles, EachSystemIsMinimisedOnItsOwnThroughItsMember) {
  const Target& t = GetParam();
  const test::TestSystem s = test::make_system(test::kKremerGrest, {}, "kremer_grest");
  const Model m = model(s);
  std::vector<SystemState> st;
  for (int k = 0; k < kSystems; ++k) {
    SystemState x = s.built.state;
    test::jiggle(x, 0.1, 200 + k);  // overlaps: forces of ~10^3
    st.push_back(x);
  }
  const std::vector<EnsembleSystem> sys = settings(s);
  LockstepEnsemble lock(make_ensemble(t.backend, m, st, sys), st[0].step);
  std::vector<std::unique_ptr<Backend>> members;
  for (int k = 0; k < kSystems; ++k) members.push_back(lock.member(k));
  MinimizeSpec spec = s.cfg.minimize;  // FIRE with the defaults (chains)
  ASSERT_EQ(spec.algorithm, MinimizeAlgorithm::Fire);
  spec.ftol = t.fp32 ? 1e-2 : 1e-4;  // float positions on the GPU (tests/test_minimize.cpp)
  spec.max_iterations = spec.max_evaluations = 100000;
  for (int k = 0; k < kSystems; ++k) {
    SCOPED_TRACE("system " + std::to_string(k));
    std::vector<SystemState> before(kSystems);
    for (int j = 0; j < kSystems; ++j) members[j]->get_state(before[j]);
    const MinimizeReport r = minimize(*members[k], spec, s.cfg.model.units);
    EXPECT_EQ(r.stop, MinimizeStop::ForceTolerance) << minimize_stop_name(r.stop);
    EXPECT_GT(r.max_force_start, 100.0);
    EXPECT_LT(r.max_force_end, spec.ftol);
    // As on a backend of its own: the same bits on the CPU, the same minimum on the GPU.
    auto single = make_backend(t.backend, m, st[k]);
    const MinimizeReport a = minimize(*single, spec, s.cfg.model.units);
    SystemState alone, member;
    single->get_state(alone);
    members[k]->get_state(member);
    if (!t.fp32 && t.deterministic) {
      EXPECT_EQ(a.evaluations, r.evaluations);
      EXPECT_EQ(a.energy_end, r.energy_end);
      expect_same(t, alone, member, "minimised");
    } else {
      EXPECT_NEAR(a.energy_end, r.energy_end, 1e-5 * std::fabs(a.energy_end));
    }
    EXPECT_EQ(member.step, before[k].step);
    EXPECT_EQ(std::memcmp(member.velocity.data(), before[k].velocity.data(), member.size() * sizeof(Vec3d)), 0);
    for (int j = 0; j < kSystems; ++j) {
      if (j == k) continue;
      SystemState other;
      members[j]->get_state(other);
      EXPECT_EQ(std::memcmp(other.position.data(), before[j].position.data(), other.size() * sizeof(Vec3d)), 0)
          << "system " << j << " moved";
      EXPECT_EQ(std::memcmp(other.image.data(), before[j].image.data(), other.size() * sizeof(Int3)), 0);
    }
  }
  // Each system still at its minimum once all are minimised, and the ensemble runs on from them.
  // The float-atomic strategies sum the forces in another order at each evaluation: the minimiser
  // stops at the first evaluation below ftol, and the next one may read a few 1e-6 more (H100:
  // pair_atomic 0.010002 against 0.01), so they get 1 % of room.
  const double fmax_bound = t.deterministic ? spec.ftol : 1.01 * spec.ftol;
  for (int k = 0; k < kSystems; ++k) {
    double fmax = 0;
    for (const Vec3d& f : members[k]->forces()) fmax = std::max(fmax, std::sqrt(dot(f, f)));
    EXPECT_LT(fmax, fmax_bound) << "system " << k;
  }
  std::vector<std::thread> threads;
  for (int k = 0; k < kSystems; ++k) threads.emplace_back([&, k] { members[k]->advance(50); });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < kSystems; ++k) {
    SystemState x;
    members[k]->get_state(x);
    EXPECT_EQ(x.step, st[k].step + 50);
    EXPECT_TRUE(std::isfinite(members[k]->observables().potential));
  }
}

// K x N that cannot fit in the GPU's memory is refused before anything is allocated, with the
// estimate and the largest K that fits (ten million copies of 4,000 particles: ~60 TB).
TEST(EnsembleModel, AnEnsembleTooBigForTheGpuIsRefusedWithTheLargestThatFits) {
  PAIRMD_REQUIRE_GPU();
  const test::TestSystem s = test::make_system(test::lj_yaml(10, 0.8442, "langevin", 1.2), {}, "lj");
  const std::string why = ensemble_memory_problem(s.model(), s.built.state, 10000000);
  EXPECT_NE(why.find("at most"), std::string::npos) << why;
  EXPECT_NE(why.find("GB of GPU memory"), std::string::npos) << why;
  EXPECT_EQ(ensemble_memory_problem(s.model(), s.built.state, 4), "");
}

TEST(EnsembleModel, ReplicatedBondsAndPairListsStayInTheirSystem) {
  const test::TestSystem s = test::make_system(test::kKremerGrest, {}, "kg");
  const int n = static_cast<int>(s.built.state.size());
  const Model one = s.model();
  const Model three = replicate_model(one, 3, n);
  ASSERT_EQ(three.topology.bonds.size(), 3 * one.topology.bonds.size());
  for (size_t b = 0; b < three.topology.bonds.size(); ++b) {
    const Bond& x = three.topology.bonds[b];
    EXPECT_EQ(x.i / n, x.j / n) << "bond " << b << " joins two systems";
    const Bond& o = one.topology.bonds[b % one.topology.bonds.size()];
    EXPECT_EQ(x.i % n, o.i);
    EXPECT_EQ(x.type, o.type);
  }
  std::vector<SystemState> states(3, s.built.state);
  states[1].step = 5;
  EXPECT_THROW(concatenate_states(states), std::invalid_argument);
  states[1].step = s.built.state.step;
  const SystemState all = concatenate_states(states);
  EXPECT_EQ(all.size(), 3u * n);
  const SystemState back = system_state(all, 2, n);
  EXPECT_EQ(std::memcmp(back.position.data(), s.built.state.position.data(), n * sizeof(Vec3d)), 0);
}

// replicate_model: copy k of every angle, dihedral and improper on particles [k n, (k + 1) n),
// and so the 1-2/1-3/1-4 pairs (found from the replicated bonds) of each copy on its own.
TEST(EnsembleModel, ReplicatedAnglesDihedralsAndImpropersStayInTheirSystem) {
  const test::TestSystem s = test::bonded_system();
  const int n = static_cast<int>(s.built.state.size());
  const Model one = s.model();
  const Model three = replicate_model(one, 3, n);
  const Topology &a = one.topology, &b = three.topology;
  ASSERT_FALSE(a.angles.empty());
  ASSERT_FALSE(a.dihedrals.empty());
  ASSERT_FALSE(a.impropers.empty());
  ASSERT_EQ(b.angles.size(), 3 * a.angles.size());
  ASSERT_EQ(b.dihedrals.size(), 3 * a.dihedrals.size());
  ASSERT_EQ(b.impropers.size(), 3 * a.impropers.size());
  for (size_t t = 0; t < b.angles.size(); ++t) {
    const Angle &x = b.angles[t], &o = a.angles[t % a.angles.size()];
    const int k = static_cast<int>(t / a.angles.size());
    EXPECT_EQ(x.i, o.i + k * n);
    EXPECT_EQ(x.j, o.j + k * n);
    EXPECT_EQ(x.k, o.k + k * n);
    EXPECT_EQ(x.type, o.type);
  }
  auto check_quads = [n](const std::vector<Dihedral>& mine, const std::vector<Dihedral>& theirs) {
    for (size_t t = 0; t < mine.size(); ++t) {
      const Dihedral &x = mine[t], &o = theirs[t % theirs.size()];
      const int k = static_cast<int>(t / theirs.size());
      EXPECT_EQ(x.i, o.i + k * n);
      EXPECT_EQ(x.j, o.j + k * n);
      EXPECT_EQ(x.k, o.k + k * n);
      EXPECT_EQ(x.l, o.l + k * n);
      EXPECT_EQ(x.type, o.type);
    }
  };
  check_quads(b.dihedrals, a.dihedrals);
  check_quads(b.impropers, a.impropers);
  const std::vector<SpecialPair> sa = a.special_pairs(n, 3), sb = b.special_pairs(3 * n, 3);
  ASSERT_EQ(sb.size(), 3 * sa.size());
  for (const SpecialPair& p : sb) EXPECT_EQ(p.i / n, p.j / n) << "a special pair joins two systems";
}

// force.strategy auto and neighbor.skin auto (backends/tuning.h): the ensemble is tuned (the log
// says so) and each of its systems still runs bit for bit as it runs alone at other fixed
// settings, atom_gather at the largest skin the box allows.
TEST(EnsembleTuning, ATunedEnsembleRunsAsEachSystemDoesAtOtherFixedSettings) {
  PAIRMD_REQUIRE_GPU();
  const std::vector<test::TestSystem> systems = test::example_systems();
  const test::TestSystem& s = systems.front();
  Model tuned = s.model();
  tuned.strategy = kAutoStrategy;
  tuned.neighbor.skin_auto = true;
  Model fixed = s.model();
  fixed.strategy = "atom_gather";
  fixed.neighbor.skin = auto_skin_candidates(fixed, s.built.state.box).back();
  const std::vector<SystemState> st = starts(s);
  const std::vector<EnsembleSystem> sys = settings(s);
  ::testing::internal::CaptureStdout();
  std::unique_ptr<Ensemble> e = make_ensemble("cuda", tuned, st, sys);
  const std::string log = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(log.find("tuning: chose"), std::string::npos) << log;
  e->advance(300);
  for (int k = 0; k < kSystems; ++k) {
    auto single = make_backend("cuda", alone_model(fixed, sys[k]), st[k]);
    single->advance(300);
    SystemState a, b;
    single->get_state(a);
    e->get_state(k, b);
    expect_same(Target{"cuda", "atom_gather", true, true}, a, b, "system " + std::to_string(k));
  }
}

#ifdef PAIRMD_PHYSICS_ON_GPU
INSTANTIATE_TEST_SUITE_P(Cuda, Ensembles, ::testing::ValuesIn(test::gpu_targets()), test::target_name);
#else
INSTANTIATE_TEST_SUITE_P(Cpu, Ensembles, ::testing::Values(test::cpu_target()), test::target_name);
#endif

}  // namespace
}  // namespace pairmd
