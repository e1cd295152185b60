#include "engine/simulation.h"

#include <algorithm>
#include <chrono>
#include <csignal>

namespace pairmd {

std::atomic<int> g_stop_signal{0};

namespace {
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }
}  // namespace

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

double degrees_of_freedom(const RunConfig& cfg, size_t n) {
  const bool nve = cfg.model.integrator.kind == IntegratorKind::VelocityVerlet;
  return nve && cfg.system.periodic && n > 1 ? 3.0 * n - 3.0 : 3.0 * n;
}

Simulation::Simulation(const RunConfig& cfg, Topology topology, std::unique_ptr<Backend> backend)
    : cfg_(cfg), topology_(std::move(topology)), backend_(std::move(backend)) {}

void Simulation::add_observer(std::unique_ptr<RunObserver> observer) { observers_.push_back(std::move(observer)); }

RunResult Simulation::run(int64_t last_step) {
  SystemState state;
  backend_->get_state(state);
  const RunContext ctx{cfg_, topology_, *backend_, state.step, last_step};
  const double dt = cfg_.model.integrator.dt;

  // The last state every observer has seen: what a blow-up or an interruption falls back to.
  SystemState good = state;
  Observables good_obs = backend_->observables();
  auto show = [&](int64_t step, bool all) {
    bool any = all;
    for (const auto& o : observers_) any = any || o->next_step(step - 1) == step;
    if (!any) return;
    backend_->get_state(state);
    const Observables obs = backend_->observables();
    const Frame frame{state, obs, state.step * dt};
    for (const auto& o : observers_)
      if (all || o->next_step(step - 1) == step) o->observe(ctx, frame);
    good = state;
    good_obs = obs;
  };
  // The state after the last chunk, for finish() when no observer asked for this step.
  auto capture = [&]() {
    backend_->get_state(state);
    good = state;
    good_obs = backend_->observables();
  };
  RunResult result;
  // Every observer finishes, even when one of them fails (the checkpoint still gets written).
  auto finish_all = [&]() {
    const Frame frame{good, good_obs, good.step * dt};
    for (const auto& o : observers_) {
      try {
        o->finish(ctx, frame);
      } catch (const std::exception& e) {
        result.finish_errors.push_back(e.what());
      }
    }
  };

  int64_t step = state.step;
  double seconds_per_step = 0.0;
  try {
    show(state.step, true);
    while (step < last_step) {
      int64_t next = last_step;
      for (const auto& o : observers_) next = std::min(next, o->next_step(step));
      // Advance in chunks of about a quarter second so that signals and the progress line are
      // handled promptly even when frames are far apart.
      int64_t chunk = next - step;
      if (seconds_per_step > 0) chunk = std::min<int64_t>(chunk, std::max<int64_t>(1, static_cast<int64_t>(0.25 / seconds_per_step)));
      const auto t0 = std::chrono::steady_clock::now();
      try {
        backend_->advance(chunk);
      } catch (const SimulationBlowup& e) {
        result.outcome = RunOutcome::BlewUp;
        result.message = e.what();
        result.last_good_step = good.step;
        finish_all();
        return result;
      }
      seconds_per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / chunk;
      step += chunk;
      if (step == next) show(step, false);
      if (progress_) progress_->progress(ctx, step);
      if (g_stop_signal.load() != 0) {
        if (good.step != step) capture();  // the state at the finished step is good
        result.outcome = RunOutcome::Interrupted;
        result.message = std::string("stopped by signal ") + std::to_string(g_stop_signal.load()) + " at step " +
                         std::to_string(step);
        result.last_good_step = step;
        finish_all();
        return result;
      }
    }
    if (good.step != step) capture();
  } catch (const std::exception& e) {
    // An observer could not write (disk full, file gone): stop with the last state every
    // observer has seen.
    result.outcome = RunOutcome::Failed;
    result.message = e.what();
    result.last_good_step = good.step;
    finish_all();
    return result;
  }
  result.last_good_step = step;
  finish_all();
  if (!result.finish_errors.empty()) {
    result.outcome = RunOutcome::Failed;
    result.message = result.finish_errors.front();
  }
  return result;
}

}  // namespace pairmd
