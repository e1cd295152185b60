// pairmd run CONFIG: build the system (or load a checkpoint), pick the backend, run with thermo
// output, trajectory and checkpoints; stop cleanly on signals, blow-ups and write errors.
// Output claims, restart rules and exit codes: docs/output.md.
//
// The steps, in order: read the options; prepare the run (session/run_plan.h: config, claim on
// the output prefix, start state, backend; everything wrong with the input is found there,
// before any output is touched); open the outputs (session/run_outputs.h); run; report.
#include <CLI/CLI.hpp>
#include <hdf5.h>

#include <csignal>
#include <iostream>
#include <sstream>

#include "cli/run_setup.h"
#include "engine/simulation.h"
#include "session/run_log.h"
#include "session/run_outputs.h"
#include "session/run_plan.h"

namespace pairmd::cli {

namespace {

const char* kUsage =
    "pairmd run: usage: pairmd run CONFIG [--backend cpu|cuda|auto] [--steps N] [--set key.path=value]"
    " [--output PREFIX] [--overwrite]\n"
    "                   pairmd run [CONFIG] --restart CHECKPOINT [--steps N] [--set key.path=value]"
    " [--output PREFIX]\n";

struct RunOptions {
  ConfigOptions config;    // CONFIG, --set, --steps, --backend, --strategy
  std::string restart;     // --restart CHECKPOINT
  std::string output;      // --output PREFIX
  bool overwrite = false;  // --overwrite: replace the files of an earlier run with this prefix
};

// Returns kParsed when the options were read, else the exit code (help or the message is printed).
int read_options(const Args& args, RunOptions& o) {
  CLI::App app{"Run the simulation described by CONFIG (YAML; docs/config.md). A run refuses an output prefix "
               "in use or holding an earlier run's files (--overwrite replaces them; --restart continues the run "
               "of a checkpoint; docs/output.md).",
               "pairmd run"};
  prepare_app(app);
  add_config_options(app, o.config);
  app.add_option("--restart", o.restart,
                 "continue the run of CHECKPOINT: its state, prefix, --set overrides and end step (CONFIG may be "
                 "left out: the checkpoint holds it)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--output", o.output, "output file stem (instead of output.prefix)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("--overwrite", o.overwrite, "replace the files of an earlier run with the same prefix");
  app.footer("exit codes: 0 success, 1 the run failed, 2 bad input (nothing written), 130 interrupted");
  if (const int rc = parse_command_line(app, args, {"run", "", ""}); rc != kParsed) return rc;
  if (o.config.config_path.empty() && o.restart.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  for (const std::string& a : args)
    if (a == "--output=" || (a == "--output" && o.output.empty())) {
      std::cerr << "pairmd run: --output needs a prefix\n";
      return kExitUsage;
    }
  return kParsed;
}

// A word for a shell command line, quoted where the shell would split or expand it.
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

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

FrontEnd front_end(const RunOptions& o) {
  FrontEnd fe;
  fe.continue_with = [o](const std::string& checkpoint) { return continue_command(o, checkpoint); };
  return fe;
}

// The last lines of the run: where the last good state went and how to go on.
int report(const RunOptions& o, const RunResult& result, Simulation& sim, const Outputs& out) {
  const BackendStats st = sim.backend().stats();
  std::ostringstream summary;
  summary << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) summary << " = " << st.steps / st.seconds_total << " steps/s";
  summary << ", " << st.list_builds << " neighbour-list builds";
  if (!st.detail.empty()) summary << " (" << st.detail << ")";
  std::cout << summary.str() << std::endl;

  const CheckpointWriter& ck = *out.checkpoints;
  std::ostringstream saved;
  if (ck.last_written_step() == result.last_good_step)
    saved << "checkpoint written to " << ck.path() << " (step " << result.last_good_step << ")";
  else if (!ck.error().empty())
    saved << "no checkpoint of step " << result.last_good_step << ": " << ck.error();
  else
    saved << "no checkpoint of step " << result.last_good_step;
  const std::string again = continue_command(o, ck.path());
  for (size_t k = 0; k < result.finish_errors.size(); ++k)
    if (result.outcome != RunOutcome::Failed || k > 0 || result.finish_errors[k] != result.message)
      std::cerr << "pairmd run: error: " << result.finish_errors[k] << "\n";
  switch (result.outcome) {
    case RunOutcome::Completed:
      std::cout << "done: step " << result.last_good_step << "; " << saved.str() << "\n";
      return kExitOk;
    case RunOutcome::Interrupted:
      std::cerr << "pairmd run: interrupted (signal " << g_stop_signal.load() << ") at step " << result.last_good_step
                << ", " << saved.str() << ", output flushed\n"
                << "  continue with: " << again << "\n";
      return kExitInterrupted;
    case RunOutcome::BlewUp:
      std::cerr << "pairmd run: error: " << result.message << "\n"
                << "  the last good state is step " << result.last_good_step << "; " << saved.str() << "\n"
                << "  to go on from there with a smaller time step: " << again << " --set integrator.dt=...\n";
      return kExitFailure;
    case RunOutcome::Failed:
      std::cerr << "pairmd run: error: " << result.message << "\n"
                << "  the last good state is step " << result.last_good_step << "; " << saved.str() << "\n";
      if (ck.last_written_step() >= 0) {
        if (ck.last_written_step() != result.last_good_step)
          std::cerr << "  the newest checkpoint is of step " << ck.last_written_step() << "\n";
        std::cerr << "  once the cause is fixed, continue with: " << again << "\n";
      }
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace

int cmd_run(const Args& args) {
  RunLog log;  // copies everything printed, into PREFIX.log once the outputs are opened
  std::string command = "pairmd run";
  for (const std::string& a : args) command += " " + shell_word(a);
  // Files left open at exit (a trajectory whose write failed) must not be flushed half-written
  // by HDF5's exit handler; everything else is closed explicitly.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  RunOptions o;
  if (const int rc = read_options(args, o); rc != kParsed) return rc;

  // Everything that can be wrong with the input is found before any output file is touched.
  const RunRequest request = request_of(o);
  const FrontEnd fe = front_end(o);
  PreparedRun run;
  try {
    prepare_run(request, fe, run, std::cerr);
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    // Not the input: the claim's lock file cannot be created (a missing directory, no permission).
    std::cerr << "pairmd run: error: " << e.what() << "\n";
    return kExitFailure;
  }

  if (!describe_start(request, fe, run, std::cout, std::cerr)) return kExitOk;
  const RunPlan& p = run.plan;
  const RunConfig& cfg = p.cfg;

  // analysis.potential_map (its kernel is checked before any file is written).
  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0) {
    try {
      potential_map = make_potential_map_observer(p);
    } catch (const std::exception& e) {
      std::cerr << "pairmd run: analysis.potential_map: " << e.what() << "\n";
      return kExitUsage;
    }
    std::cout << "potential map: every " << cfg.potential_map.every << " steps, kernel "
              << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
  }

  Outputs out;
  Simulation sim(cfg, p.sys.topology, std::move(run.backend));
  try {
    open_outputs(request, fe, p, std::move(potential_map), sim, out, log, command);
  } catch (const std::exception& e) {
    std::cerr << "pairmd run: error: " << e.what() << "\n";
    return kExitFailure;
  }

  install_stop_handlers();
  // Exceeding a file-size limit must be a write error we report, not a silent kill.
  std::signal(SIGXFSZ, SIG_IGN);
  const RunResult result = sim.run(p.last);
  return report(o, result, sim, out);
}

}  // namespace pairmd::cli
