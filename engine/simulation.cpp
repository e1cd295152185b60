#include "engine/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <string>

namespace pairmd {

std::atomic<int> g_stop_signal{0};

namespace {
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }
}  // namespace

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

void stop_if_signalled(const char* during) {
  if (const int sig = g_stop_signal.load())
    throw StoppedBeforeRun("interrupted (signal " + std::to_string(sig) + ") " + during);
}

double degrees_of_freedom(const RunConfig& cfg, size_t n) {
  const bool nve = cfg.model.integrator.kind == IntegratorKind::VelocityVerlet;
  return nve && cfg.system.periodic && n > 1 ? 3.0 * n - 3.0 : 3.0 * n;
}

Simulation::Simulation(const RunConfig& cfg, Topology topology, std::unique_ptr<Backend> backend)
    : cfg_(cfg), topology_(std::move(topology)), backend_(std::move(backend)) {}

void Simulation::add_observer(std::unique_ptr<RunObserver> observer) { observers_.push_back(std::move(observer)); }

// Shows `step` to the observers that asked for it (all of them with `all`).
void Simulation::show(int64_t step, bool all) {
  bool any = all;
  for (const auto& o : observers_) any = any || o->next_step(step - 1) == step;
  if (!any) return;
  backend_->get_state(state_);
  const Observables obs = observables_now();
  const Frame frame{state_, obs, state_.step * cfg_.model.integrator.dt};
  for (const auto& o : observers_)
    if (all || o->next_step(step - 1) == step) o->observe(*ctx_, frame);
  good_ = state_;
  good_obs_ = obs;
}

// The state after the last chunk, for finish() when no observer asked for this step.
void Simulation::capture() {
  backend_->get_state(state_);
  good_ = state_;
  good_obs_ = observables_now();
}

const Observables& Simulation::observables_now() {
  if (now_obs_step_ != step_) {
    now_obs_ = backend_->observables();
    now_obs_step_ = step_;
  }
  return now_obs_;
}

// Every observer finishes, even when one of them fails (the checkpoint still gets written).
RunResult Simulation::finish(RunResult result) {
  const Frame frame{good_, good_obs_, good_.step * cfg_.model.integrator.dt};
  for (const auto& o : observers_) {
    try {
      o->finish(*ctx_, frame);
    } catch (const std::exception& e) {
      result.finish_errors.push_back(e.what());
    }
  }
  if (result.outcome == RunOutcome::Completed && !result.finish_errors.empty()) {
    result.outcome = RunOutcome::Failed;
    result.message = result.finish_errors.front();
  }
  ended_ = true;
  end_result_ = result;
  return result;
}

RunResult Simulation::begin(int64_t last_step) {
  backend_->get_state(state_);
  step_ = state_.step;
  now_obs_step_ = -1;
  ctx_.emplace(RunContext{cfg_, topology_, *backend_, state_.step, last_step});
  good_ = state_;
  good_obs_ = observables_now();
  RunResult result;
  result.last_good_step = step_;
  try {
    show(step_, true);
  } catch (const std::exception& e) {
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  return result;
}

RunResult Simulation::advance_to(int64_t target, double max_seconds) {
  return advance(target, max_seconds, true, true, true);
}

// The driver acts on the backend's state at `target` (an exchange): the steps must be done.
RunResult Simulation::advance_to_unshown(int64_t target) { return advance(target, 0, false, false, false); }

RunResult Simulation::end_at_last_good(RunOutcome outcome, const std::string& why) {
  RunResult result;
  result.outcome = outcome;
  result.message = why;
  result.last_good_step = good_.step;
  return finish(result);
}

RunResult Simulation::settle() {
  if (ended_) return end_result_;
  try {
    backend_->wait();
  } catch (const SimulationBlowup& e) {
    return end_at_last_good(RunOutcome::BlewUp, e.what());
  } catch (const std::exception& e) {
    // Anything else the steps left running ran into (no GPU memory for a list that grew, a
    // CUDA error): the run fails as it would have in advance(), with the last good state.
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  RunResult result;
  result.last_good_step = step_;
  return result;
}

RunResult Simulation::advance(int64_t target, double max_seconds, bool show_target, bool stop_on_signal,
                              bool leave_running) {
  if (ended_) return end_result_;
  RunContext& ctx = *ctx_;
  ctx.last_step = std::max(ctx.last_step, target);
  const auto started = std::chrono::steady_clock::now();
  RunResult result;
  try {
    while (step_ < target) {
      int64_t next = target;
      for (const auto& o : observers_) next = std::min(next, o->next_step(step_));
      // Advance in chunks of about a quarter second so that signals and the progress line are
      // handled promptly even when frames are far apart.
      int64_t chunk = next - step_;
      if (seconds_per_step_ > 0)
        chunk = std::min<int64_t>(chunk, std::max<int64_t>(1, static_cast<int64_t>(0.25 / seconds_per_step_)));
      const bool shown = step_ + chunk == next && (show_target || next != target);
      bool observed = false;  // an observer looks at the step reached
      if (shown)
        for (const auto& o : observers_) observed = observed || o->next_step(next - 1) == next;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        backend_->advance_async(chunk);
        if (observed || !leave_running) backend_->wait();
      } catch (const SimulationBlowup& e) {
        return end_at_last_good(RunOutcome::BlewUp, e.what());
      }
      const auto t1 = std::chrono::steady_clock::now();
      seconds_per_step_ = std::chrono::duration<double>(t1 - t0).count() / chunk;
      step_ += chunk;
      if (shown) show(step_, false);
      if (progress_) progress_->progress(ctx, step_);
      if (stop_on_signal && g_stop_signal.load() != 0)
        return interrupt(std::string("stopped by signal ") + std::to_string(g_stop_signal.load()) + " at step " +
                         std::to_string(step_));
      if (max_seconds > 0 && std::chrono::duration<double>(t1 - started).count() >= max_seconds) break;
    }
  } catch (const std::exception& e) {
    // An observer could not write (disk full, file gone): stop with the last state every
    // observer has seen.
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  result.last_good_step = step_;
  return result;
}

RunResult Simulation::interrupt(const std::string& why) {
  const RunResult settled = settle();
  if (ended_) return settled;
  RunResult result;
  try {
    if (good_.step != step_) capture();  // the state at the finished step is good
  } catch (const std::exception& e) {
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  result.outcome = RunOutcome::Interrupted;
  result.message = why;
  result.last_good_step = step_;
  return finish(result);
}

RunResult Simulation::end() {
  const RunResult settled = settle();
  if (ended_) return settled;
  RunResult result;
  try {
    if (good_.step != step_) capture();
  } catch (const std::exception& e) {
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  result.last_good_step = step_;
  return finish(result);
}

void Simulation::state_replaced() {
  backend_->get_state(state_);
  step_ = state_.step;
  now_obs_step_ = -1;
  good_ = state_;
  good_obs_ = observables_now();
}

RunResult Simulation::show_current(bool all) {
  if (ended_) return end_result_;
  RunResult result;
  try {
    show(step_, all);
  } catch (const std::exception& e) {
    return end_at_last_good(RunOutcome::Failed, e.what());
  }
  result.last_good_step = step_;
  return result;
}

void Simulation::change_temperature(double t_old, double t_new) {
  backend_->set_temperature(t_new);
  if (t_new == t_old) return;
  backend_->scale_velocities(std::sqrt(t_new / t_old));
  now_obs_step_ = -1;  // the next frame reads the state again
}

RunResult Simulation::run(int64_t last_step) {
  RunResult result = begin(last_step);
  if (ended_) return result;
  result = advance_to(last_step);
  if (ended_) return result;
  return end();
}

}  // namespace pairmd
