// pairmd minimize CONFIG: build the system and minimise its energy (the config's `minimize`
// section, FIRE with its defaults where it has none), then write the minimised state as a run
// of 0 steps writes its state: PREFIX.checkpoint.h5, which `pairmd run --restart` continues into
// the config's dynamics, the first frame of PREFIX.h5 / PREFIX.gsd where the config writes them
// (`system.file` starts from those), PREFIX.thermo.csv and PREFIX.log (docs/minimize.md).
// The output prefix is claimed and refused or replaced as `pairmd run` does (docs/output.md).
// SIGINT or SIGTERM during the minimisation ends it, and the command, writing nothing (exit 130).

#include <csignal>
#include <iostream>

#include "cli/run_setup.h"
#include "engine/simulation.h"
#include "io/hdf5_util.h"
#include "session/run_log.h"
#include "session/run_outputs.h"
#include "session/run_plan.h"

namespace pairmd::cli {

namespace {

struct MinimizeOptions {
  ConfigOptions config;
  std::string output;
  bool overwrite = false;
};

// The request: the command line's overrides, and FIRE's defaults where the config asks for no
// minimisation (a lattice or a file without a minimize section, or algorithm: none).
RunRequest request_of(const MinimizeOptions& o) {
  RunRequest r;
  r.config_path = o.config.config_path;
  r.overrides = command_line_overrides(o.config);
  const RunConfig cfg = load_config(r.config_path, r.overrides);
  if (cfg.replicas.count > 0) {
    // One system: an ensemble's replicas are minimised by `pairmd run`, each its own system.
    auto it = cfg.locations.find("replicas.count");
    throw ConfigError((it != cfg.locations.end() ? it->second : cfg.path) +
                      ": replicas: pairmd minimize minimises one system, and this config runs an ensemble of " +
                      std::to_string(cfg.replicas.count) + " replicas: pairmd run " + r.config_path +
                      " minimises each replica's system before its dynamics (the minimize section); to minimise "
                      "one system alone, give a config without the replicas section");
  }
  if (cfg.minimize.algorithm == MinimizeAlgorithm::None) r.overrides.push_back("minimize.algorithm=fire");
  r.output = o.output;
  r.overwrite = o.overwrite;
  return r;
}

// Where the minimised state went, and how to go on from it.
int report(const RunResult& result, const RunPlan& p, const Outputs& out) {
  for (const std::string& e : result.finish_errors) std::cerr << "pairmd minimize: error: " << e << "\n";
  if (result.outcome != RunOutcome::Completed) {
    std::cerr << "pairmd minimize: error: " << result.message << "\n";
    return kExitFailure;
  }
  const std::string ck = out.checkpoints->path();
  std::cout << "minimised state: " << ck << " (pairmd run " << p.cfg.path << " --restart " << ck << " runs the "
            << p.cfg.steps << " steps of the config from it)";
  if (out.writer) std::cout << "; first frame of " << p.files.trajectory();
  if (p.cfg.output.gsd.every > 0) std::cout << "; first frame of " << p.files.gsd();
  if (!out.writer && p.cfg.output.gsd.every <= 0)
    std::cout << "; for a structure file that system.file starts from, add --set output.gsd.every=N";
  std::cout << "\n";
  if (const int sig = g_stop_signal.load()) {
    std::cerr << "pairmd minimize: interrupted (signal " << sig << ") after the minimisation; its state was written\n";
    return kExitInterrupted;
  }
  return kExitOk;
}

int minimize(const MinimizeOptions& o, const std::string& command) {
  RunLog log;  // as pairmd run: everything printed, into PREFIX.log once the outputs are opened
  h5::quiet_library(true);
  // A stop signal ends the minimisation at its next iteration; nothing is written then.
  install_stop_handlers();
  std::signal(SIGXFSZ, SIG_IGN);
  FrontEnd fe;
  fe.who = "pairmd minimize";
  fe.continue_with = [&o](const std::string& checkpoint) {
    return "pairmd run " + o.config.config_path + " --restart " + checkpoint;
  };
  PreparedRun run;
  RunRequest request;
  try {
    request = request_of(o);
    prepare_run(request, fe, run, std::cerr);
  } catch (const StoppedBeforeRun& e) {
    std::cerr << "pairmd minimize: " << e.what() << "; nothing was written\n";
    return kExitInterrupted;
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    std::cerr << "pairmd minimize: error: " << e.what() << "\n";
    return kExitFailure;
  }
  run.plan.last = run.plan.first;  // no dynamics: the outputs of the minimised state
  describe_start(request, fe, run, std::cout, std::cerr);
  const RunPlan& p = run.plan;
  Outputs out;
  Simulation sim(p.cfg, p.sys.topology, std::move(run.backend));
  try {
    open_outputs(request, fe, p, nullptr, sim, out, log, command);
  } catch (const std::exception& e) {
    std::cerr << "pairmd minimize: error: " << e.what() << "\n";
    return kExitFailure;
  }
  const RunResult result = sim.run(p.last);
  return report(result, p, out);
}

}  // namespace

Command add_minimize(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "minimize",
      "minimise the energy of CONFIG's system (FIRE) and write it as a run of 0 steps that `run --restart` continues "
      "(docs/minimize.md)",
      std::string(
          "Minimise the energy of the system CONFIG builds (its minimize section; FIRE with the defaults where it "
          "has none) and write the result as a run of 0 steps: PREFIX.checkpoint.h5 (pairmd run --restart goes on "
          "from it), the first frame of PREFIX.h5 / PREFIX.gsd where the config writes them (system.file starts "
          "from them), PREFIX.log (docs/minimize.md).") +
          "\n" + "exit codes: 0 success, 1 writing failed, 2 bad input (nothing written), 130 interrupted");
  auto o = std::make_shared<MinimizeOptions>();
  add_config_options(*sub, o->config, true, false);
  sub->add_option("--output", o->output, "output file stem (instead of output.prefix)")
      ->check(not_empty("a prefix"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_flag("--overwrite", o->overwrite, "replace the files of an earlier run with the same prefix");
  return [o](const Args& words) { return minimize(*o, command_line("pairmd minimize", words)); };
}

}  // namespace pairmd::cli
