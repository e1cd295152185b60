#include "engine/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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

// A run in progress: the current state and the last good one (the last state every observer
// has seen, or captured: what a blow-up or an interruption falls back to).
struct Simulation::Live {
  Live(const RunConfig& cfg, const Topology& topology, Backend& backend, int64_t first, int64_t last)
      : ctx{cfg, topology, backend, first, last}, step(first) {}
  RunContext ctx;
  int64_t step;
  SystemState state, good;
  Observables good_obs{};
  Observables now_obs{};
  int64_t now_obs_step = -1;  // the step now_obs is of (-1: none)
  double seconds_per_step = 0.0;
  RunResult result;
  bool failed = false;  // advance() or show() recorded a failure in result
};

Simulation::Simulation(const RunConfig& cfg, Topology topology, std::unique_ptr<Backend> backend)
    : cfg_(cfg), topology_(std::move(topology)), backend_(std::move(backend)) {}

Simulation::~Simulation() = default;

void Simulation::add_observer(std::unique_ptr<RunObserver> observer) { observers_.push_back(std::move(observer)); }

int64_t Simulation::step() const { return live_ ? live_->step : 0; }
int64_t Simulation::good_step() const { return live_ ? live_->good.step : 0; }

int64_t Simulation::next_observed_step() const {
  int64_t next = INT64_MAX;
  for (const auto& o : observers_) next = std::min(next, o->next_step(live_->step));
  return next;
}

const Observables& Simulation::observables_now() {
  Live& l = *live_;
  if (l.now_obs_step != l.step) {
    l.now_obs = backend_->observables();
    l.now_obs_step = l.step;
  }
  return l.now_obs;
}

bool Simulation::start(int64_t last_step) {
  SystemState state;
  backend_->get_state(state);
  live_ = std::make_unique<Live>(cfg_, topology_, *backend_, state.step, last_step);
  live_->state = state;
  live_->good = state;
  live_->good_obs = observables_now();
  return show(true);
}

bool Simulation::show(bool all) {
  Live& l = *live_;
  if (l.failed) return false;
  bool any = all;
  for (const auto& o : observers_) any = any || o->next_step(l.step - 1) == l.step;
  if (!any) return true;
  try {
    backend_->get_state(l.state);
    const Observables obs = observables_now();
    const Frame frame{l.state, obs, l.state.step * cfg_.model.integrator.dt};
    for (const auto& o : observers_)
      if (all || o->next_step(l.step - 1) == l.step) o->observe(l.ctx, frame);
    l.good = l.state;
    l.good_obs = obs;
  } catch (const std::exception& e) {
    // An observer could not write (disk full, file gone): stop with the last state every
    // observer has seen.
    l.failed = true;
    l.result.outcome = RunOutcome::Failed;
    l.result.message = e.what();
    return false;
  }
  return true;
}

void Simulation::capture() {
  Live& l = *live_;
  if (l.failed) return;
  backend_->get_state(l.state);
  l.good = l.state;
  l.good_obs = observables_now();
}

bool Simulation::advance(int64_t nsteps, bool stop_on_signal) {
  Live& l = *live_;
  if (l.failed) return false;
  const int64_t target = l.step + nsteps;
  while (l.step < target) {
    // Chunks of about a quarter second, so that signals and the progress line are handled
    // promptly even when frames are far apart.
    int64_t chunk = target - l.step;
    if (l.seconds_per_step > 0)
      chunk = std::min<int64_t>(chunk, std::max<int64_t>(1, static_cast<int64_t>(0.25 / l.seconds_per_step)));
    const auto t0 = std::chrono::steady_clock::now();
    try {
      backend_->advance(chunk);
    } catch (const SimulationBlowup& e) {
      l.failed = true;
      l.result.outcome = RunOutcome::BlewUp;
      l.result.message = e.what();
      return false;
    }
    l.seconds_per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / chunk;
    l.step += chunk;
    if (progress_) progress_->progress(l.ctx, l.step);
    if (stop_on_signal && g_stop_signal.load() != 0) break;
  }
  return true;
}

void Simulation::change_temperature(double t_old, double t_new) {
  Live& l = *live_;
  backend_->set_temperature(t_new);
  if (t_new == t_old) return;
  backend_->get_state(l.state);
  const double f = std::sqrt(t_new / t_old);
  for (Vec3d& v : l.state.velocity) v = f * v;
  backend_->set_state(l.state);
  l.now_obs_step = -1;
}

RunResult Simulation::finish(RunOutcome outcome, const std::string& message) {
  Live& l = *live_;
  RunResult& result = l.result;
  if (!l.failed) {
    result.outcome = outcome;
    result.message = message;
  }
  result.last_good_step = l.good.step;
  // Every observer finishes, even when one of them fails (the checkpoint still gets written).
  const Frame frame{l.good, l.good_obs, l.good.step * cfg_.model.integrator.dt};
  for (const auto& o : observers_) {
    try {
      o->finish(l.ctx, frame);
    } catch (const std::exception& e) {
      result.finish_errors.push_back(e.what());
    }
  }
  if (result.outcome == RunOutcome::Completed && !result.finish_errors.empty()) {
    result.outcome = RunOutcome::Failed;
    result.message = result.finish_errors.front();
  }
  return result;
}

RunResult Simulation::run(int64_t last_step) {
  if (!start(last_step)) return finish(RunOutcome::Failed);
  while (step() < last_step) {
    const int64_t next = std::min(last_step, next_observed_step());
    if (!advance(next - step(), true)) return finish(RunOutcome::BlewUp);
    if (step() == next && !show()) return finish(RunOutcome::Failed);
    if (g_stop_signal.load() != 0) {
      if (good_step() != step()) capture();  // the state at the finished step is good
      return finish(RunOutcome::Interrupted, std::string("stopped by signal ") + std::to_string(g_stop_signal.load()) +
                                                 " at step " + std::to_string(step()));
    }
  }
  if (good_step() != step()) capture();
  return finish(RunOutcome::Completed);
}

}  // namespace pairmd
