// The run loop: advance the backend to the next step some observer wants, show them the
// state, repeat; stop cleanly on SIGINT/SIGTERM or when the system blows up.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/config.h"
#include "engine/run_observer.h"

namespace pairmd {

// Set by the signal handler of `pairmd run` (the signal number), polled by the run loop.
extern std::atomic<int> g_stop_signal;
void install_stop_handlers();

// Failed: an observer could not write its output (disk full, unwritable file).
enum class RunOutcome { Completed, Interrupted, BlewUp, Failed };

struct RunResult {
  RunOutcome outcome = RunOutcome::Completed;
  int64_t last_good_step = 0;
  std::string message;  // for Interrupted / BlewUp / Failed
  std::vector<std::string> finish_errors;  // observers whose finish() failed
};

class Simulation {
 public:
  Simulation(const RunConfig& cfg, Topology topology, std::unique_ptr<Backend> backend);
  ~Simulation();

  void add_observer(std::unique_ptr<RunObserver> observer);
  void set_progress(ProgressDisplay* display) { progress_ = display; }
  Backend& backend() { return *backend_; }
  const Topology& topology() const { return topology_; }

  // Runs until step `last_step`. Observers see the start state, each step they asked for, and
  // the end (finish()); after a blow-up they finish with the last good state.
  RunResult run(int64_t last_step);

  // The same run in parts, for a driver that acts between steps (replica exchange) and decides
  // itself when to show a step and when to stop. start() shows the start state to every
  // observer; advance() runs steps (in chunks of about a quarter second, with the progress line)
  // without showing them; show() shows the current step to the observers that want it (all of
  // them with `all`); capture() makes the current state the last good one; finish() ends the run
  // with the last good state. run() is made of them. start(), advance() and show() return false
  // once the run cannot go on (blow-up, an observer that failed; finish() then reports that).
  bool start(int64_t last_step);
  // With `stop_on_signal`, returns (true) early after a chunk once g_stop_signal is set.
  bool advance(int64_t nsteps, bool stop_on_signal = false);
  bool show(bool all = false);
  void capture();
  // `outcome` and `message` stand unless advance() or show() recorded a failure before.
  RunResult finish(RunOutcome outcome, const std::string& message = "");
  int64_t step() const;
  int64_t good_step() const;  // the step of the last good state
  // The first step after the current one that some observer wants (INT64_MAX: none).
  int64_t next_observed_step() const;
  // The observables of the current state (computed once per step, and shared with show()).
  const Observables& observables_now();
  // Changes the thermostat's temperature from `t_old` to `t_new` and scales every velocity by
  // sqrt(t_new / t_old) (a replica exchange); the current state stays the same step.
  void change_temperature(double t_old, double t_new);

 private:
  struct Live;  // a run in progress
  const RunConfig& cfg_;
  Topology topology_;
  std::unique_ptr<Backend> backend_;
  std::vector<std::unique_ptr<RunObserver>> observers_;
  ProgressDisplay* progress_ = nullptr;
  std::unique_ptr<Live> live_;
};

// Degrees of freedom for the temperature: 3N with a thermostat, 3N - 3 under NVE in a periodic
// box (total momentum is conserved and zero).
double degrees_of_freedom(const RunConfig& cfg, size_t n);

}  // namespace pairmd
