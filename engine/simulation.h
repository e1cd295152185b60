// The run loop: advance the backend to the next step some observer wants, show them the
// state, repeat; stop cleanly on SIGINT/SIGTERM or when the system blows up.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/config.h"
#include "engine/run_observer.h"

namespace pairmd {

// Set by the signal handler of `pairmd run` (the signal number), polled by the run loop and by
// the work before it (system.relax).
extern std::atomic<int> g_stop_signal;
void install_stop_handlers();

// A stop signal that came before the run began (during system.relax): nothing was run, and the
// front end removes what it created (its claim) and says so.
struct StoppedBeforeRun : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Throws StoppedBeforeRun, saying `during` what, when a stop signal has come.
void stop_if_signalled(const char* during);

// Failed: an observer could not write its output (disk full, unwritable file).
enum class RunOutcome { Completed, Interrupted, BlewUp, Failed };

struct RunResult {
  RunOutcome outcome = RunOutcome::Completed;
  int64_t last_good_step = 0;
  std::string message;                     // for Interrupted / BlewUp / Failed
  std::vector<std::string> finish_errors;  // observers whose finish() failed
};

class Simulation {
 public:
  Simulation(const RunConfig& cfg, Topology topology, std::unique_ptr<Backend> backend);

  void add_observer(std::unique_ptr<RunObserver> observer);
  void set_progress(ProgressDisplay* display) { progress_ = display; }
  Backend& backend() { return *backend_; }
  const Topology& topology() const { return topology_; }

  // Runs until step `last_step`. Observers see the start state, each step they asked for, and
  // the end (finish()); after a blow-up they finish with the last good state.
  // The same as begin(last_step), advance_to(last_step) and, unless that ended the run, end().
  RunResult run(int64_t last_step);

  // The run in pieces, for front ends that advance by steps of their own choosing (the Python
  // module's run(n)), with the same observers, outcomes and guarantees as run():
  // begin() shows every observer the start state; `last_step` is where the run is planned to
  // end (progress, checkpoints), and each advance_to() may move it further.
  // Returns Completed, or Failed (the run ended) when an observer cannot write the start.
  RunResult begin(int64_t last_step);
  // Runs to `step`, or until `max_seconds` of stepping have passed (at the end of a chunk; <= 0:
  // no limit), so that the caller can look at signals and callbacks. An interruption (SIGINT or
  // SIGTERM through g_stop_signal), a blow-up or an output that cannot be written ends the run:
  // the observers are finished and the result says why (ended() is then true). Otherwise the
  // result is Completed with last_good_step the step reached. The last steps may still be
  // running on the backend when it returns (Backend::advance_async: the next call's launch
  // overlaps them); a blow-up in them ends the run in the next call here (settle() included).
  RunResult advance_to(int64_t step, double max_seconds = 0);
  // Waits for the steps the backend may still be running: a blow-up in them ends the run
  // (BlewUp, as in advance_to()); otherwise Completed. Front ends call it before they read the
  // backend's state themselves.
  RunResult settle();
  // Ends the run as an interruption at the current step (the front end saw the signal itself):
  // the observers finish with this state, as after SIGINT.
  RunResult interrupt(const std::string& why);
  // Finishes every observer with the last state (once; later calls return the first result).
  RunResult end();
  bool begun() const { return ctx_.has_value(); }
  bool ended() const { return ended_; }
  // The step the backend is at (once begun).
  int64_t step() const { return step_; }
  // The last state every observer has seen (once begun): after a blow-up, what the run fell
  // back to.
  const SystemState& last_good_state() const { return good_; }
  // The backend's state was replaced from outside (set_state): what the run falls back to
  // after a blow-up is this state from now on.
  void state_replaced();

  // For a driver that acts at a step before the observers see it and decides itself what a
  // signal does (a replica ensemble: the exchange at a meeting of the ranks, all replicas
  // stopping at one meeting; replicas/ensemble.h). The same as advance_to(step), except that
  // `step` itself is not shown to the observers (show_current() does that once the driver is
  // done with it) and g_stop_signal does not end the run.
  RunResult advance_to_unshown(int64_t step);
  // Shows the current step to the observers that want it (all of them with `all`). An observer
  // that cannot write ends the run (Failed), as in advance_to().
  RunResult show_current(bool all = false);
  // The observables of the current step (computed once per step, shared with what the observers
  // are shown).
  const Observables& observables_now();
  // Changes the thermostat's temperature from `t_old` to `t_new` and scales every velocity by
  // sqrt(t_new / t_old) (a replica exchange); the run stays at the same step, and the observers
  // see the new state when that step is shown.
  void change_temperature(double t_old, double t_new);

 private:
  RunResult advance(int64_t target, double max_seconds, bool show_target, bool stop_on_signal, bool leave_running);
  // Ends the run (blow-up, failure) with the last state every observer has seen.
  RunResult end_at_last_good(RunOutcome outcome, const std::string& why);
  void show(int64_t step, bool all);
  void capture();
  RunResult finish(RunResult result);

  const RunConfig& cfg_;
  Topology topology_;
  std::unique_ptr<Backend> backend_;
  std::vector<std::unique_ptr<RunObserver>> observers_;
  ProgressDisplay* progress_ = nullptr;

  // The run in progress (set by begin()).
  std::optional<RunContext> ctx_;
  SystemState state_;
  // The last state every observer has seen: what a blow-up or an interruption falls back to.
  SystemState good_;
  Observables good_obs_;
  double seconds_per_step_ = 0.0;
  int64_t step_ = 0;  // the step the backend is at
  Observables now_obs_{};
  int64_t now_obs_step_ = -1;  // the step now_obs_ is of (-1: none)
  bool ended_ = false;
  RunResult end_result_;
};

// Degrees of freedom for the temperature: 3N with a thermostat, 3N - 3 under NVE in a periodic
// box (total momentum is conserved and zero).
double degrees_of_freedom(const RunConfig& cfg, size_t n);

}  // namespace pairmd
