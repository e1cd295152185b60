// The run loop over a backend that leaves steps running (Backend::advance_async, as the CUDA
// backend does with its last chunk): observers see the same states as over a backend that
// finishes every call, and a blow-up found only when the steps are waited for ends the run as
// BlewUp, falling back to the last state every observer saw, whichever call finds it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "backends/cpu_backend.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// The CPU backend as the CUDA backend behaves with steps left running: advance_async() queues
// its steps and takes those of the call before (the CUDA backend reads the chunk it left running
// once the next is launched); wait(), which every read does first, takes the queued ones. With
// blow_up_at set, taking steps past it throws.
class LaggingBackend final : public Backend {
 public:
  LaggingBackend(const Model& m, const SystemState& s) : inner_(m, s) {}
  std::string name() const override { return "lagging " + inner_.name(); }
  void set_state(const SystemState& s) override {
    queued_ = 0;
    inner_.set_state(s);
  }
  void get_state(SystemState& s) override {
    wait();
    inner_.get_state(s);
  }
  void advance(int64_t n) override {
    advance_async(n);
    wait();
  }
  void advance_async(int64_t n) override {
    take_queued();
    queued_ = n;
  }
  void wait() override {
    if (queued_ == 0) return;
    ++waits;
    take_queued();
  }
  Observables observables() override {
    wait();
    return inner_.observables();
  }
  std::vector<Vec3d> forces() override {
    wait();
    return inner_.forces();
  }
  BackendStats stats() const override { return inner_.stats(); }
  void set_temperature(double t) override {
    wait();
    inner_.set_temperature(t);
  }

  int64_t blow_up_at = -1;
  int64_t fail_at = -1;  // taking steps past it throws something else than a blow-up
  int waits = 0;

 private:
  void take_queued() {
    if (queued_ == 0) return;
    SystemState s;
    inner_.get_state(s);
    const int64_t n = queued_;
    queued_ = 0;
    if (blow_up_at >= 0 && s.step + n >= blow_up_at)
      throw SimulationBlowup("step " + std::to_string(blow_up_at) + ": particle 0 moved too far (a test)");
    if (fail_at >= 0 && s.step + n >= fail_at) throw std::runtime_error("out of GPU memory growing a list (a test)");
    inner_.advance(n);
  }

  CpuBackend inner_;
  int64_t queued_ = 0;
};

// Records the steps it is shown and the positions there.
class Recorder final : public RunObserver {
 public:
  explicit Recorder(int64_t every) : every_(every) {}
  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext&, const Frame& f) override {
    steps.push_back(f.state.step);
    positions.push_back(f.state.position);
  }
  void finish(const RunContext&, const Frame& f) override { finished_at = f.state.step; }
  std::vector<int64_t> steps;
  std::vector<std::vector<Vec3d>> positions;
  int64_t finished_at = -1;

 private:
  int64_t every_;
};

struct Fixture {
  RunConfig cfg;
  BuiltSystem sys;
  Model model;
  Fixture() {
    cfg = parse_config(test::small_lj_config(60, "{every: 0}"), "small.yaml");
    sys = build_system(cfg);
    model = cfg.model;
    model.topology = sys.topology;
  }
};

TEST(Simulation, StepsLeftRunningShowTheSameStates) {
  Fixture f;
  auto run = [&](bool lagging, std::vector<std::vector<Vec3d>>& seen, std::vector<int64_t>& steps) {
    std::unique_ptr<Backend> b;
    if (lagging)
      b = std::make_unique<LaggingBackend>(f.model, f.sys.state);
    else
      b = std::make_unique<CpuBackend>(f.model, f.sys.state);
    Simulation sim(f.cfg, f.sys.topology, std::move(b));
    auto rec = std::make_unique<Recorder>(7);
    Recorder* r = rec.get();
    sim.add_observer(std::move(rec));
    sim.begin(60);
    for (int64_t s = 1; s <= 60; ++s) ASSERT_EQ(sim.advance_to(s).outcome, RunOutcome::Completed);  // a run(1) loop
    EXPECT_EQ(sim.end().outcome, RunOutcome::Completed);
    EXPECT_EQ(r->finished_at, 60);
    seen = r->positions;
    steps = r->steps;
  };
  std::vector<std::vector<Vec3d>> direct, lagged;
  std::vector<int64_t> direct_steps, lagged_steps;
  run(false, direct, direct_steps);
  run(true, lagged, lagged_steps);
  EXPECT_EQ(direct_steps, (std::vector<int64_t>{0, 7, 14, 21, 28, 35, 42, 49, 56}));
  EXPECT_EQ(lagged_steps, direct_steps);
  ASSERT_EQ(lagged.size(), direct.size());
  for (size_t k = 0; k < direct.size(); ++k)
    EXPECT_EQ(std::memcmp(lagged[k].data(), direct[k].data(), direct[k].size() * sizeof(Vec3d)), 0) << "frame " << k;
}

// Where the run stands after a blow-up (or, with `failure`, another error) at step 25 that only
// wait() finds.
struct LateBlowUp {
  Fixture f;
  LaggingBackend* backend = nullptr;
  Recorder* rec = nullptr;
  std::unique_ptr<Simulation> sim;
  explicit LateBlowUp(bool failure = false) {
    auto b = std::make_unique<LaggingBackend>(f.model, f.sys.state);
    backend = b.get();
    sim = std::make_unique<Simulation>(f.cfg, f.sys.topology, std::move(b));
    auto r = std::make_unique<Recorder>(10);
    rec = r.get();
    sim->add_observer(std::move(r));
    sim->begin(60);
    (failure ? backend->fail_at : backend->blow_up_at) = 25;
    for (int64_t s = 1; s <= 22; ++s) EXPECT_EQ(sim->advance_to(s).outcome, RunOutcome::Completed);
  }
  void expect_blown_up(const RunResult& r) {
    EXPECT_EQ(r.outcome, RunOutcome::BlewUp) << r.message;
    EXPECT_NE(r.message.find("step 25"), std::string::npos) << r.message;
    EXPECT_EQ(r.last_good_step, 20);  // the last step the observers saw
    EXPECT_TRUE(sim->ended());
    EXPECT_EQ(rec->finished_at, 20);
    EXPECT_EQ(sim->last_good_state().step, 20);
  }
};

TEST(Simulation, BlowUpFoundByTheNextAdvanceEndsTheRun) {
  LateBlowUp t;
  for (int64_t s = 23; s <= 25; ++s) EXPECT_EQ(t.sim->advance_to(s).outcome, RunOutcome::Completed);
  EXPECT_EQ(t.backend->waits, 2);            // steps 10 and 20, for the observer
  t.expect_blown_up(t.sim->advance_to(26));  // the step that waits for 25
}

TEST(Simulation, BlowUpFoundBySettleEndsTheRun) {
  LateBlowUp t;
  EXPECT_EQ(t.sim->settle().outcome, RunOutcome::Completed);  // steps 21, 22: fine
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  t.expect_blown_up(t.sim->settle());
  t.expect_blown_up(t.sim->end());  // the same result again
}

TEST(Simulation, BlowUpFoundAtTheEndEndsTheRun) {
  LateBlowUp t;
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  t.expect_blown_up(t.sim->end());
}

TEST(Simulation, BlowUpFoundAtAnInterruptionEndsTheRun) {
  LateBlowUp t;
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  t.expect_blown_up(t.sim->interrupt("a test"));
}

// Any other error of the steps left running (no memory for a list that grew, a CUDA error)
// fails the run where it is found, with the observers finished at the last good step: as it
// would have in the advance that took the steps.
void expect_failed(LateBlowUp& t, const RunResult& r) {
  EXPECT_EQ(r.outcome, RunOutcome::Failed) << r.message;
  EXPECT_NE(r.message.find("out of GPU memory"), std::string::npos) << r.message;
  EXPECT_EQ(r.last_good_step, 20);
  EXPECT_TRUE(t.sim->ended());
  EXPECT_EQ(t.rec->finished_at, 20);
}

TEST(Simulation, FailureFoundBySettleFailsTheRun) {
  LateBlowUp t(/*failure=*/true);
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  expect_failed(t, t.sim->settle());
  expect_failed(t, t.sim->end());  // the same result again
}

TEST(Simulation, FailureFoundAtTheEndFailsTheRun) {
  LateBlowUp t(/*failure=*/true);
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  expect_failed(t, t.sim->end());
}

TEST(Simulation, FailureFoundAtAnInterruptionFailsTheRun) {
  LateBlowUp t(/*failure=*/true);
  EXPECT_EQ(t.sim->advance_to(25).outcome, RunOutcome::Completed);
  expect_failed(t, t.sim->interrupt("a test"));
}

}  // namespace
}  // namespace pairmd
