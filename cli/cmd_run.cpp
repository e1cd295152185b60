// pairmd run CONFIG: build the system (or load a checkpoint), pick the backend, run with thermo
// output, trajectory and checkpoints; stop cleanly on signals, blow-ups and write errors.
// Output claims, restart rules and exit codes: docs/output.md.
//
// The steps, in order: read the options; prepare the run (session/run_plan.h: config, claim on
// the output prefix, start state, backend; everything wrong with the input is found there,
// before any output is touched); open the outputs (session/run_outputs.h); run; report.
// Under mpirun with a replicas section each rank runs one replica of an ensemble, or
// replicas.count / ranks of them as threads (replicas/ensemble_plan.h, replicas/ensemble.h;
// docs/replicas.md): the replicas agree on every step of the set-up before any of them goes on.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include <omp.h>

#include "cli/run_setup.h"
#include "engine/simulation.h"
#include "io/checkpoint_run.h"
#include "io/hdf5_util.h"
#include "replicas/checkpoint_set.h"
#include "replicas/communicator.h"
#include "replicas/ensemble.h"
#include "replicas/ensemble_plan.h"
#include "replicas/local_ensemble.h"
#include "replicas/pull_statistics.h"
#include "replicas/thread_communicator.h"
#include "session/run_log.h"
#include "session/run_outputs.h"
#include "session/run_plan.h"

namespace pairmd::cli {

namespace {

struct RunOptions {
  ConfigOptions config;    // CONFIG, --set, --steps, --backend, --strategy
  std::string restart;     // --restart CHECKPOINT
  std::string output;      // --output PREFIX
  bool overwrite = false;  // --overwrite: replace the files of an earlier run with this prefix
};

// The command that continues this run from its checkpoint: the prefix, the --set overrides
// and the step the run is to end at all come from the checkpoint.
std::string continue_command(const RunOptions& o, const std::string& checkpoint) {
  std::string c = "pairmd run ";
  if (!o.config.config_path.empty()) c += shell_word(o.config.config_path) + " ";
  return c + "--restart " + shell_word(checkpoint);
}

// The run's request and the words its messages use for the options.
RunRequest request_of(const RunOptions& o) {
  RunRequest r;
  r.config_path = o.config.config_path;
  r.overrides = command_line_overrides(o.config);
  r.restart = o.restart;
  r.output = o.output;
  r.overwrite = o.overwrite;
  return r;
}

// How an ensemble is started again: under mpirun with this job's ranks when this one was, else as
// this process did (the replicas as threads: docs/ensembles.md).
std::string launcher_words() {
  return mpi_launched() ? "mpirun -np " + std::to_string(world().size()) + " " : std::string();
}

// `ranks` > 1: an ensemble, whose replicas' checkpoints are BASE.rNN.checkpoint.h5, continued
// with BASE.r{replica}.checkpoint.h5.
FrontEnd front_end(const RunOptions& o, int ranks) {
  FrontEnd fe;
  fe.continue_with = [o, ranks](const std::string& checkpoint) {
    const std::string end = ".checkpoint.h5";
    const size_t tag = checkpoint.rfind(".r", checkpoint.size() >= end.size() ? checkpoint.size() - end.size() : 0);
    if (ranks <= 1 || tag == std::string::npos) return continue_command(o, checkpoint);
    return launcher_words() + continue_command(o, checkpoint.substr(0, tag) + ".r{replica}" + end);
  };
  return fe;
}

// "performance: N steps in T s = R steps/s, B neighbour-list builds (detail)".
std::string performance_line(const BackendStats& st) {
  std::ostringstream line;
  line << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) line << " = " << st.steps / st.seconds_total << " steps/s";
  line << ", " << st.list_builds << " neighbour-list builds";
  if (!st.detail.empty()) line << " (" << st.detail << ")";
  return line.str();
}

// Where the state of `step` went: "WRITTEN PATH (step N)", or why there is no checkpoint of it.
std::string saved_text(const CheckpointWriter& ck, int64_t step, const char* written) {
  std::ostringstream saved;
  if (ck.last_written_step() == step)
    saved << written << ck.path() << " (step " << step << ")";
  else if (!ck.error().empty())
    saved << "no checkpoint of step " << step << ": " << ck.error();
  else
    saved << "no checkpoint of step " << step;
  return saved.str();
}

// The last lines of the run: where the last good state went and how to go on.
int report(const RunOptions& o, const RunResult& result, Simulation& sim, const Outputs& out) {
  std::cout << performance_line(sim.backend().stats()) << std::endl;
  const CheckpointWriter& ck = *out.checkpoints;
  const std::string saved = saved_text(ck, result.last_good_step, "checkpoint written to ");
  const std::string again = continue_command(o, ck.path());
  for (size_t k = 0; k < result.finish_errors.size(); ++k)
    if (result.outcome != RunOutcome::Failed || k > 0 || result.finish_errors[k] != result.message)
      std::cerr << "pairmd run: error: " << result.finish_errors[k] << "\n";
  switch (result.outcome) {
    case RunOutcome::Completed:
      std::cout << "done: step " << result.last_good_step << "; " << saved << "\n";
      return kExitOk;
    case RunOutcome::Interrupted:
      std::cerr << "pairmd run: interrupted (signal " << g_stop_signal.load() << ") at step " << result.last_good_step
                << ", " << saved << ", output flushed\n"
                << "  continue with: " << again << "\n";
      return kExitInterrupted;
    case RunOutcome::BlewUp:
      std::cerr << "pairmd run: error: " << result.message << "\n"
                << "  the last good state is step " << result.last_good_step << "; " << saved << "\n"
                << "  to go on from there with a smaller time step: " << again << " --set integrator.dt=...\n";
      return kExitFailure;
    case RunOutcome::Failed:
      std::cerr << "pairmd run: error: " << result.message << "\n"
                << "  the last good state is step " << result.last_good_step << "; " << saved << "\n";
      if (ck.last_written_step() >= 0) {
        if (ck.last_written_step() != result.last_good_step)
          std::cerr << "  the newest checkpoint is of step " << ck.last_written_step() << "\n";
        std::cerr << "  once the cause is fixed, continue with: " << again << "\n";
      }
      return kExitFailure;
  }
  return kExitFailure;
}

// The ranks agree on how the set-up went: the worst code of any rank (kGoOn: every rank goes
// on). Replica 0 prints its message; another replica prints its own where replica 0 had none to
// print (in an ensemble, each names its replica). A single run prints its message as ever.
int agree(Communicator& comm, int code, const std::string& message, const ReplicaPlan& rp) {
  const std::vector<double> all = comm.allgather({static_cast<double>(code)});
  int worst = kGoOn;
  for (double c : all) worst = std::max(worst, static_cast<int>(c));
  const bool first_ok = static_cast<int>(all[0]) == kGoOn || message.empty();
  if (!message.empty() && (comm.rank() == 0 || first_ok)) {
    if (comm.size() > 1 && comm.rank() > 0) std::cerr << "replica " << comm.rank() << ": ";
    std::cerr << message << "\n";
  }
  if (worst != kGoOn && code == kGoOn && comm.rank() == 0 && rp.replica == 0)
    std::cerr << "pairmd run: another replica could not go on (its message is above); nothing was run\n";
  return worst;
}

// Pulling statistics (replicas/pull_statistics.h): each replica's rupture force into
// BASE.rupture.csv, and the summary line.
std::string rupture_report(const RunPlan& p, const ReplicaPlan& rp) {
  std::vector<std::string> prefixes;
  for (int q = 0; q < rp.count; ++q) prefixes.push_back(replica_prefix(rp.base_prefix, q, rp.count));
  const std::vector<RuptureEvent> events = rupture_events(prefixes);
  const Units& u = p.cfg.model.units;
  const std::string force_unit = std::string(u.energy_unit()) + "/" + u.length_unit();
  // 1 kcal/(mol A) in pN (real units); reduced units have none.
  const double pn = u.reduced() ? 0.0 : 4184.0 / 6.02214076e23 / 1e-10 / 1e-12;
  std::string csv = EnsembleFiles{rp.base_prefix}.rupture();
  try {
    write_rupture_csv(csv, events, u.length_unit(), force_unit);
  } catch (const std::exception& e) {
    csv = std::string("not written: ") + e.what();
  }
  return "pulling: " + rupture_summary(events, force_unit, pn) + " (each run's largest force: " + csv + ")\n";
}

// This replica's own lines: its performance, its end and where its last good state went.
void report_replica(const RunPlan& p, const ReplicaPlan& rp, const EnsembleOutcome& e, Simulation& sim,
                    const Outputs& out) {
  const RunResult& r = e.result;
  std::cout << performance_line(sim.backend().stats()) << "\n";
  const std::string saved = saved_text(*out.checkpoints, r.last_good_step, "checkpoint ");
  const std::string who = "replica " + std::to_string(rp.replica) + " (" + p.files.prefix + ".*)";
  if (!e.common_error.empty())
    std::cerr << "pairmd run: " << who << ": warning: no common checkpoint: " << e.common_error << "\n";
  for (const std::string& f : r.finish_errors)
    if (r.outcome != RunOutcome::Failed || f != r.message)
      std::cerr << "pairmd run: " << who << ": error: " << f << "\n";
  if (r.outcome == RunOutcome::Failed || r.outcome == RunOutcome::BlewUp)
    std::cerr << "pairmd run: " << who << " failed: " << r.message << "\n  its last good state is step "
              << r.last_good_step << "; " << saved << "\n";
  else
    std::cout << who << ": " << (r.outcome == RunOutcome::Completed ? "done" : "stopped") << " at step "
              << r.last_good_step << "; " << saved << "\n";
}

// Replica 0's table of the ensemble: each replica's end and speed, the pulling, the meetings.
std::string ensemble_table(const RunPlan& p, const ReplicaPlan& rp, const EnsembleOutcome& e) {
  const int k = rp.count;
  std::ostringstream t;
  double aggregate = 0;
  t << "ensemble: replica  status     last step  steps/s\n";
  for (int q = 0; q < k; ++q) {
    const double rate = e.seconds[q] > 0 ? (e.last_step[q] - p.first) / e.seconds[q] : 0;
    aggregate += rate;
    char line[160];
    std::snprintf(line, sizeof line, "          %-8s %-10s %9lld  %.4g\n", replica_tag(q, k).c_str(),
                  e.status[q] == kReplicaCompleted ? "done"
                  : e.status[q] == kReplicaStopped ? "stopped"
                                                   : "FAILED",
                  static_cast<long long>(e.last_step[q]), rate);
    t << line;
  }
  t << "ensemble: aggregate " << aggregate << " timesteps/s over " << k << " replicas\n";
  if (p.cfg.pulling.mode != PullMode::None) t << rupture_report(p, rp);
  if (e.meetings > 0) {
    const double ms = 1e3 / static_cast<double>(e.meetings);
    char line[320];
    std::snprintf(
        line, sizeof line,
        "ensemble: %lld meetings of the ranks, %.3g ms each on replica 0: energy %.3g, allgather %.3g (waiting "
        "for the slowest rank included), decisions and log %.3g, new temperature %.3g\n",
        static_cast<long long>(e.meetings), ms * e.exchange_seconds, ms * e.energy_seconds, ms * e.gather_seconds,
        ms * e.decide_seconds, ms * e.rescale_seconds);
    t << line;
  }
  return t.str();
}

// With exchange: the acceptance and round trips, and the walk of each replica through the ladder.
void report_exchanges(const RunPlan& p, const ReplicaPlan& rp, EnsembleLog* log) {
  if (!rp.exchange) return;
  std::cout << exchange_report(rp.exchange_state);
  if (!log) return;
  try {
    log->write_plot(rp.exchange_state.temperatures(), "step",
                    std::string("T (") + p.cfg.model.units.temperature_unit() + ")");
    std::cout << "walk of each replica through the ladder: " << log->files().walk_plot() << " (data "
              << log->files().walk() << "); exchanges: " << log->files().exchange_log() << "\n";
  } catch (const std::exception& x) {
    std::cerr << "pairmd run: warning: no walk plot: " << x.what() << "\n";
  }
}

// How the ensemble ended and how to go on (after a failure: from the checkpoints every replica has).
void report_ensemble_end(const RunOptions& o, const ReplicaPlan& rp, const EnsembleOutcome& e,
                         const CommonCheckpoint& common, bool failed, bool interrupted) {
  const int k = rp.count;
  std::string again = launcher_words() + "pairmd run ";
  if (!o.config.config_path.empty()) again += shell_word(o.config.config_path) + " ";
  again += "--restart " + rp.base_prefix + ".r{replica}.checkpoint.h5";
  if (failed) {
    std::cerr
        << "pairmd run: replica " << e.first_failed << " (" << replica_prefix(rp.base_prefix, e.first_failed, k)
        << ".*) failed (its message is above); the ensemble stopped, every replica's files are closed and readable\n";
    bool same = true;
    for (int q = 0; q < k; ++q) same = same && e.last_step[q] == e.last_step[0];
    if (same)
      std::cerr << "  every replica has a checkpoint of step " << e.last_step[0]
                << "; once the cause is fixed: " << again << "\n";
    else if (common.step() >= 0)
      std::cerr << "  the replicas stopped at different steps; every replica has a checkpoint of step " << common.step()
                << " (" << common.path() << " and the others' .checkpoint.common.h5), which the restart goes on from"
                << " once the cause is fixed: " << again << "\n";
  } else if (interrupted) {
    std::cerr << "pairmd run: interrupted (signal) at step " << e.last_step[0]
              << "; every replica wrote its files and a checkpoint of that step\n  continue with: " << again << "\n";
  } else {
    std::cout << "done: " << k << " replicas at step " << e.last_step[0] << "; continue with " << again
              << " --steps N\n";
  }
}

// The end of an ensemble: each replica's own lines (its log), and replica 0's report of the whole
// ensemble: each replica's end, the acceptance and round trips, the walk plot, how to go on.
// The exit code: 1 when a replica failed, 130 when one stopped (a signal), else 0.
int report_ensemble(const RunOptions& o, const RunPlan& p, const ReplicaPlan& rp, const EnsembleOutcome& e,
                    Simulation& sim, const Outputs& out, EnsembleLog* log, const CommonCheckpoint& common) {
  report_replica(p, rp, e, sim, out);
  int code = kExitOk;
  for (int s : e.status) code = std::max(code, s == kReplicaFailed ? 2 : s == kReplicaStopped ? 1 : 0);
  const int exit_code = code == 2 ? kExitFailure : code == 1 || e.signalled ? kExitInterrupted : kExitOk;
  std::cout.flush();
  if (rp.replica != 0) return exit_code;
  std::cout << ensemble_table(p, rp, e);
  report_exchanges(p, rp, log);
  std::cout.flush();
  report_ensemble_end(o, rp, e, common, code == 2, exit_code == kExitInterrupted);
  return exit_code;
}

// This rank's replica of the ensemble, run in step with the others, and its report.
int run_replica(const RunOptions& o, const RunPlan& p, ReplicaPlan& rp, Communicator& comm, Simulation& sim,
                const Outputs& out, EnsembleLog* log) {
  out.checkpoints->set_ensemble([&rp] { return replica_checkpoint_text(rp); });
  // Every replica starts from one step (check_same_start): the start is a common checkpoint.
  CommonCheckpoint common(out.checkpoints->path());
  if (p.restart && p.continues_files) {
    const std::string why = common.start(o.restart, p.first);
    if (!why.empty()) std::cerr << "pairmd run: replica " << rp.replica << ": warning: " << why << "\n";
  }
  EnsembleOptions eo;
  eo.comm = &comm;
  eo.replica = rp.replica;
  eo.count = rp.count;
  eo.every = p.cfg.replicas.exchange_every;
  eo.exchange = rp.exchange ? &rp.exchange_state : nullptr;
  eo.log = log;
  eo.newest_checkpoint = [&out] { return out.checkpoints->last_written_step(); };
  eo.common = &common;
  const EnsembleOutcome outcome = run_ensemble(sim, p.last, eo);
  return report_ensemble(o, p, rp, outcome, sim, out, log, common);
}

// The GPU backend the replicas of an ensemble in this process share (each replica on the CPU has its own).
std::function<std::unique_ptr<Backend>(const RunPlan&, const Model&, std::string*)> shared_gpu_backend(
    EnsembleRendezvous* rendezvous, Communicator& comm) {
  return [rendezvous, &comm](const RunPlan& p, const Model& model, std::string* why) -> std::unique_ptr<Backend> {
    const std::string backend = planned_backend(p.cfg);
    if (backend != "cuda") return nullptr;  // each replica its own CPU backend
    if (model.barostat.active())
      throw std::runtime_error(
          "a barostat with replicas in one process on a GPU is not supported: the replicas share one GPU "
          "ensemble, whose systems share one box; run them under mpirun (one process each), or with backend: "
          "cpu (one CPU backend, and box, each)");
    return rendezvous->join(comm.rank(), backend, model, p.sys.state, why);
  };
}

// Everything that can be wrong with the input, found before any output file is touched: the
// plan and its claim, and on replica 0 of an ensemble the ensemble's claim and files. Returns
// kGoOn, or the exit code with `message` to print.
int prepare_rank(const RunOptions& o, const RunRequest& request, const FrontEnd& fe, const ReplicaPlan& rp,
                 PreparedRun& run, std::unique_ptr<OutputClaim>& ensemble_claim, std::string& message) {
  try {
    prepare_run(request, fe, run, std::cerr);
    if (rp.replica == 0) {
      try {
        ensemble_claim = std::make_unique<OutputClaim>(rp.base_prefix);
      } catch (const OutputInUse& e) {
        throw ConfigError(std::string("pairmd run: ") + e.what() + "; nothing was written");
      }
      check_existing_ensemble_files(fe, o.overwrite, run.plan, rp, false, std::cout);
    }
    if (rp.replica >= 0) check_existing_common_checkpoint(fe, o.overwrite, run.plan, false, std::cout);
    return kGoOn;
  } catch (const StoppedBeforeRun& e) {
    message = std::string("pairmd run: ") + e.what() + "; nothing was written";
    return kExitInterrupted;
  } catch (const ConfigError& e) {
    message = e.what();
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    // Not the input: the claim's lock file cannot be created (a missing directory, no permission).
    message = std::string("pairmd run: error: ") + e.what();
    return kExitFailure;
  }
}

// analysis.potential_map, whose kernel is checked before any file is written; and a stop signal
// that came before the run began. Returns kGoOn, or the exit code with `message` to print.
int plan_potential_map(const RunPlan& p, std::unique_ptr<PotentialMapObserver>& map, std::string& message) {
  if (p.cfg.potential_map.every > 0) {
    try {
      map = make_potential_map_observer(p);
      std::cout << "potential map: every " << p.cfg.potential_map.every << " steps, kernel "
                << map->series().kernel_description() << ", average -> " << map->dx_path() << "\n";
    } catch (const std::exception& e) {
      message = std::string("pairmd run: analysis.potential_map: ") + e.what();
      return kExitUsage;
    }
  }
  if (g_stop_signal.load() != 0) {
    message = "pairmd run: interrupted (signal " + std::to_string(g_stop_signal.load()) +
              ") before the run began; nothing was written";
    return kExitInterrupted;
  }
  return kGoOn;
}

// What this rank opens: the run's outputs (session/run_outputs.h), replacing an earlier
// ensemble's files where asked, and on replica 0 of an exchange ensemble the exchange log.
// Returns kGoOn, or kExitFailure with `message` to print.
struct RankOutputs {
  Outputs out;
  std::unique_ptr<EnsembleLog> ensemble_log;
};
int open_rank_outputs(const RunOptions& o, const RunRequest& request, const FrontEnd& fe, const ReplicaPlan& rp,
                      const RunPlan& p, std::unique_ptr<PotentialMapObserver> map, Simulation& sim, RunLog& log,
                      const std::string& command, RankOutputs& ro, std::string& message) {
  try {
    open_outputs(request, fe, p, std::move(map), sim, ro.out, log, command);
    if (rp.replica == 0) check_existing_ensemble_files(fe, o.overwrite, p, rp, true, std::cout);
    if (rp.replica >= 0) check_existing_common_checkpoint(fe, o.overwrite, p, true, std::cout);
    if (rp.replica == 0 && rp.exchange) {
      ro.ensemble_log = std::make_unique<EnsembleLog>(EnsembleFiles{rp.base_prefix}, rp.exchange_state, p.first,
                                                      p.restart && p.continues_files);
      if (ro.ensemble_log->rows_dropped() > 0)
        std::cout << "restart: dropped " << ro.ensemble_log->rows_dropped() << " row(s) of exchanges after step "
                  << p.first << " from " << ro.ensemble_log->files().exchange_log() << " (the run makes them again)\n";
    }
    return kGoOn;
  } catch (const std::exception& e) {
    message = std::string("pairmd run: error: ") + e.what();
    return kExitFailure;
  }
}

// One run of the command: a single run, or replica comm.rank() of an ensemble (an MPI rank, or a
// thread of this process with `rendezvous` for a GPU ensemble). Each step that can fail ends with
// the ranks agreeing on how it went (agree) before any of them goes on.
int run_command(RunOptions o, const std::string& command, Communicator& comm, EnsembleRendezvous* rendezvous) {
  RunLog log;  // copies everything printed, into PREFIX.log once the outputs are opened
  // In an ensemble, only replica 0 prints its table on the terminal; every replica's is in its log.
  if (comm.rank() > 0) log.quiet_stdout();
  // Files left open at exit (a trajectory whose write failed) must not be flushed half-written
  // by HDF5's exit handler; everything else is closed explicitly.
  h5::quiet_library(true);
  // Each replica of an ensemble restarts from its own checkpoint: PREFIX.r{replica}.checkpoint.h5,
  // or its common checkpoint where the replicas' newest are of different steps.
  std::string restart_note;
  if (!o.restart.empty() && comm.size() > 1) {
    const RestartSet set = choose_restart_set(comm, replica_path(o.restart, comm.rank(), comm.size()));
    o.restart = set.path;
    restart_note = set.note;
  }
  // A stop signal from here on ends the run cleanly: before the run began (in system.relax, or
  // before the outputs are opened) with the claim removed and nothing written.
  install_stop_handlers();
  RunRequest request = request_of(o);
  const FrontEnd fe = front_end(o, comm.size());
  ReplicaPlan rp;
  plan_replicas(request, fe, comm, rp);
  if (rendezvous) request.backend_hook = shared_gpu_backend(rendezvous, comm);
  PreparedRun run;
  std::unique_ptr<OutputClaim> ensemble_claim;
  std::string message;
  int code = prepare_rank(o, request, fe, rp, run, ensemble_claim, message);
  // The other replicas of a GPU ensemble must not wait for this one's system.
  if (code != kGoOn && rendezvous) rendezvous->cancel("replica " + std::to_string(comm.rank()) + " could not start");
  if ((code = agree(comm, code, message, rp)) != kGoOn) return code;
  if (rp.replica >= 0) {
    message = check_same_start(comm, run.plan.first, rp, fe);
    if (!message.empty()) {
      if (comm.rank() == 0) std::cerr << message << "\n";
      return kExitUsage;
    }
    if (comm.rank() == 0 && !restart_note.empty()) std::cout << restart_note << "\n";
  }
  code = describe_start(request, fe, run, std::cout, std::cerr) ? kGoOn : kExitOk;
  if ((code = agree(comm, code, "", rp)) != kGoOn) return code;
  const RunPlan& p = run.plan;
  if (rp.replica == 0) std::cout << describe_ensemble(rp, p.cfg, comm);
  std::unique_ptr<PotentialMapObserver> potential_map;
  code = plan_potential_map(p, potential_map, message);
  if ((code = agree(comm, code, message, rp)) != kGoOn) return code;

  RankOutputs ro;
  Simulation sim(p.cfg, p.sys.topology, std::move(run.backend));
  code = open_rank_outputs(o, request, fe, rp, p, std::move(potential_map), sim, log, command, ro, message);
  if ((code = agree(comm, code, message, rp)) != kGoOn) return code;
  // Exceeding a file-size limit must be a write error we report, not a silent kill.
  std::signal(SIGXFSZ, SIG_IGN);
  if (rp.replica < 0) return report(o, sim.run(p.last), sim, ro.out);
  return run_replica(o, p, rp, comm, sim, ro.out, ro.ensemble_log.get());
}

// The number of replicas of the ensemble a run starts: the config's replicas.count (a restart's
// from its replica 0 checkpoint); 0 for a single run, or where the config is wrong (the run
// itself then says what is wrong).
int replicas_in_run(const RunOptions& o) {
  try {
    if (o.restart.empty()) return load_config(o.config.config_path, command_line_overrides(o.config)).replicas.count;
    // PREFIX.r{replica}.checkpoint.h5: replica 0's, whichever number of digits the run used.
    if (o.restart.find("{replica}") == std::string::npos) return 0;
    for (const char* zero : {"0", "00", "000", "0000"}) {
      std::string path = o.restart;
      path.replace(path.find("{replica}"), 9, zero);
      if (!std::filesystem::exists(path)) continue;
      const Checkpoint ck = read_checkpoint(path);
      return ck.ensemble.empty() ? 0 : ReplicaCheckpoint::parse(ck.ensemble).count;
    }
  } catch (const std::exception&) {
  }
  return 0;
}

// The number of replicas each rank of `ranks` (MPI) runs as threads: replicas.count / ranks where
// every rank read the same count (`count`, replicas_in_run) and it is a multiple of the ranks
// greater than them; else 1 (one replica per rank; the plan says what is wrong with a count that
// does not fit). Collective.
int replicas_per_rank(Communicator& ranks, int count) {
  const std::vector<double> all = ranks.allgather({static_cast<double>(count)});
  for (const double c : all)
    if (static_cast<int>(c) != count) return 1;
  return count > ranks.size() && count % ranks.size() == 0 ? count / ranks.size() : 1;
}

// K replicas as threads of this process, each running what an MPI rank runs (its own files,
// meetings and exchanges through a ThreadCommunicator); on a GPU they share one ensemble backend.
// With `ranks` (mpirun), this rank's K replicas of an ensemble of K per rank: replicas
// rank K, ..., rank K + K - 1, meeting the other ranks' through RankThreadCommunicator.
// The CPU threads are shared out among them. The exit code is replica 0's, or the first other
// replica's that is not 0.
int run_replicas_in_threads(const RunOptions& o, const std::string& command, int count, Communicator* ranks) {
  const int first = ranks ? ranks->rank() * count : 0;
  ThreadGroup group(count);
  EnsembleRendezvous rendezvous(count, first);
  std::vector<int> codes(count, kExitOk);
  const int threads = std::max(1, omp_get_max_threads() / count);
  std::vector<std::thread> replicas;
  for (int k = 0; k < count; ++k)
    replicas.emplace_back([&, k] {
      omp_set_num_threads(threads);
      std::unique_ptr<Communicator> comm;
      if (ranks)
        comm = std::make_unique<RankThreadCommunicator>(group, k, *ranks);
      else
        comm = std::make_unique<ThreadCommunicator>(group, k);
      try {
        codes[k] = run_command(o, command, *comm, &rendezvous);
      } catch (const std::exception& e) {
        std::cerr << "pairmd run: replica " << first + k << ": error: " << e.what() << "\n";
        // The other replicas (threads, or ranks) may be waiting for this one at a meeting or in the
        // shared ensemble backend: end the job, as a rank of one replica does. What the others
        // wrote stays readable (their files survive a kill: docs/output.md).
        comm->abort(kExitFailure);
      }
    });
  for (std::thread& t : replicas) t.join();
  for (int c : codes)
    if (codes[0] == kExitOk && c != kExitOk) return c;
  return codes[0];
}

// A single run, an ensemble's replicas as threads of this process, or under mpirun this rank's
// replica or replicas.
int run(const RunOptions& o, const std::string& command) {
  Communicator& comm = world();
  const int count = replicas_in_run(o);
  if (comm.size() == 1) {
    if (count > 1) return run_replicas_in_threads(o, command, count, nullptr);
  } else if (const int per_rank = replicas_per_rank(comm, count); per_rank > 1) {
    if (!mpi_serves_threads()) {
      if (comm.rank() == 0)
        std::cerr << "pairmd run: " << count << " replicas on " << comm.size() << " MPI ranks run " << per_rank
                  << " per rank as threads, but this MPI (" << comm.describe()
                  << ") cannot be called from threads (MPI_THREAD_SERIALIZED); run one replica per rank: mpirun -np "
                  << count << "\n";
      return kExitUsage;
    }
    return run_replicas_in_threads(o, command, per_rank, &comm);
  }
  return run_command(o, command, comm, nullptr);
}

}  // namespace

Command add_run(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "run", "run the simulation described by CONFIG (YAML; docs/config.md)",
      std::string(
          "Run the simulation described by CONFIG (YAML; docs/config.md). A run refuses an output prefix in use or "
          "holding an earlier run's files (--overwrite replaces them; --restart continues the run of a checkpoint; "
          "docs/output.md). Under mpirun -np K, K replicas of the config's replicas section (docs/replicas.md).") +
          "\n" + "exit codes: 0 success, 1 the run failed, 2 bad input (nothing written), 130 interrupted");
  auto o = std::make_shared<RunOptions>();
  add_config_options(*sub, o->config, false);
  sub->add_option("--restart", o->restart,
                  "continue the run of CHECKPOINT: its state, prefix, --set overrides and end step (CONFIG may be "
                  "left out: the checkpoint holds it, and no start file is read); files moved with the checkpoint "
                  "are continued where they are")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--output", o->output, "output file stem (instead of output.prefix)")
      ->check(not_empty("a prefix"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_flag("--overwrite", o->overwrite,
                "replace the files of an earlier run with the same prefix (never a directory, an input of the run, "
                "a file of another run, or the file this command's output is redirected to)");
  return [o, sub](const Args& words) {
    if (o->config.config_path.empty() && o->restart.empty())
      return usage_error(*sub, "give a CONFIG, or --restart CHECKPOINT");
    return run(*o, command_line("pairmd run", words));
  };
}

}  // namespace pairmd::cli
