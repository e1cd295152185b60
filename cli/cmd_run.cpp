// pairmd run CONFIG: build the system (or load a checkpoint), pick the backend, run with thermo
// output, trajectory and checkpoints; stop cleanly on signals, blow-ups and write errors.
// Output claims, restart rules and exit codes: docs/output.md.
//
// The steps, in order: read the options; load the config (with a checkpoint's settings on a
// restart); claim the output prefix and decide what happens to files already there; build or
// load the state and the backend (everything wrong with the input is found up to here, before
// any output is touched); open the outputs; run; report.
#include <CLI/CLI.hpp>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "analysis/grid_sink.h"
#include "analysis/potential_map_observer.h"
#include "base/version.h"
#include "cli/run_log.h"
#include "cli/run_setup.h"
#include "engine/pulling.h"
#include "engine/simulation.h"
#include "engine/time_step_check.h"
#include "io/checkpoint.h"
#include "io/gsd_writer.h"
#include "io/h5md_writer.h"
#include "io/output_files.h"
#include "io/pull_log.h"
#include "io/thermo_log.h"

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

// What this run is: its config, its start, where it ends and where its files go.
struct RunPlan {
  RunConfig cfg;
  BuiltSystem sys;
  Checkpoint ck;
  bool restart = false;
  bool continues_files = false;  // a restart into the files of the run that wrote the checkpoint
  int64_t first = 0, last = 0;
  OutputFiles files;
  std::vector<std::string> notes;  // what a restart takes over or changes, for the log
};

// Potential maps go into the trajectory file (analysis/ knows only the GridSink interface).
class H5mdGridSink final : public GridSink {
 public:
  explicit H5mdGridSink(H5mdWriter* w) : w_(w) {}
  void write_grid_frame(const std::string& name, int64_t step, double time, const Grid3& grid) override {
    w_->write_grid_frame(name, step, time, grid);
  }
  void write_grid(const std::string& name, const Grid3& grid) override { w_->write_grid(name, grid); }

 private:
  H5mdWriter* w_;
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

bool same_file(const std::string& a, const std::string& b) {
  struct stat x, y;
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
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

// A new run's id: 64 random bits in hex (std::random_device, with the time and process id mixed in
// where it is weak).
std::string new_run_id() {
  std::random_device rd;
  uint64_t x = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               (uint64_t(getpid()) << 17);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

// Loads the config and, on a restart, the checkpoint: the config gets the checkpoint's --set
// overrides first, then those of this command line; the prefix is the checkpoint's unless
// --output names another. Prints what differs from the run that wrote the checkpoint.
void load_plan(const RunOptions& o, RunPlan& p) {
  const std::vector<std::string> sets = command_line_overrides(o.config);
  if (o.restart.empty()) {
    p.cfg = load_config(o.config.config_path, sets);
    p.files.prefix = o.output.empty() ? output_prefix(p.cfg) : o.output;
    p.cfg.output.prefix = p.files.prefix;
    p.cfg.run_id = new_run_id();
    return;
  }
  p.restart = true;
  try {
    p.ck = read_checkpoint(o.restart);
  } catch (const std::runtime_error& e) {
    throw ConfigError(std::string("pairmd run: --restart: ") + e.what());
  }
  const std::vector<std::string> all = merge_overrides(p.ck.overrides, sets);
  p.cfg = o.config.config_path.empty() ? parse_config(p.ck.config_text, p.ck.config_path, all)
                                       : load_config(o.config.config_path, all);
  check_checkpoint_units(p.ck, p.cfg, o.restart);
  const std::string derived = output_prefix(p.cfg);
  p.files.prefix = !o.output.empty() ? o.output : !p.ck.prefix.empty() ? p.ck.prefix : derived;
  // Checkpoints written before the prefix was stored continue whatever prefix the run has.
  p.continues_files = p.ck.prefix.empty() || same_prefix(p.files.prefix, p.ck.prefix);
  p.first = p.ck.state.step;
  // `steps` is the length of the whole run from its original start, so a restart finishes the
  // run it continues (and --steps N / --set steps=N sets that total).
  p.last = p.ck.first_step + p.cfg.steps;

  const std::vector<std::string> diff = config_differences(p.ck.config_text, p.ck.overrides, p.cfg.text, all);
  if (diff.empty()) {
    p.notes.push_back("restart: same config and --set overrides as the run that wrote " + o.restart);
  } else {
    std::string d = "restart: differs from the run that wrote " + o.restart + ":";
    for (const std::string& line : diff) d += "\n  " + line;
    p.notes.push_back(d);
  }
  if (!p.continues_files)
    p.notes.push_back("restart: output prefix " + p.ck.prefix + " -> " + p.files.prefix +
                      " (--output): new files, starting at step " + std::to_string(p.first));
  else if (o.output.empty() && !p.ck.prefix.empty() && !same_prefix(derived, p.ck.prefix))
    p.notes.push_back("restart: continues the files " + p.ck.prefix + ".* of its run (output.prefix " + derived +
                      " is not used; --output " + derived + " would start new files there)");
  p.cfg.output.prefix = p.files.prefix;
  // The run keeps its id in its own files; new files are a new run's.
  p.cfg.run_id = p.continues_files && !p.ck.run_id.empty() ? p.ck.run_id : new_run_id();
}

// What happens to the files of an earlier run on this prefix. A new run, or a restart into a
// new prefix, creates its files: existing ones are an error unless --overwrite says to replace
// them. A restart into its run's own files continues them. Throws ConfigError (exit 2).
void check_existing_outputs(const RunOptions& o, const RunPlan& p) {
  const std::vector<std::string> there = p.files.existing();
  if (p.continues_files) {
    if (o.overwrite)
      throw ConfigError("pairmd run: --overwrite: a restart continues the files of its run (" + p.files.prefix +
                        ".*) and replaces nothing; to start new files from the checkpoint, give --output NEW_PREFIX");
    // The prefix may have been taken over by another run since this checkpoint was written (a
    // copy of it, restarted after the prefix was reused with --overwrite): that run's newest
    // checkpoint says whose files these are.
    const std::string theirs = p.files.checkpoint();
    if (!p.ck.run_id.empty() && access(theirs.c_str(), F_OK) == 0 && !same_file(theirs, o.restart)) {
      std::string other;
      try {
        other = read_checkpoint(theirs).run_id;
      } catch (const std::runtime_error&) {
        // A damaged checkpoint says nothing; the trajectory's own run id is checked when it opens.
      }
      if (!other.empty() && other != p.ck.run_id)
        throw ConfigError("pairmd run: the files " + p.files.prefix + ".* belong to another run than " + o.restart +
                          " (run ids " + other + " and " + p.ck.run_id + "); nothing was written. To go on from " +
                          o.restart + ", start new files with --output NEW_PREFIX");
    }
    return;
  }
  if (there.empty() || o.overwrite) return;
  std::string list;
  for (const std::string& f : there) list += (list.empty() ? "" : ", ") + f;
  std::string how;
  if (!p.restart && std::find(there.begin(), there.end(), p.files.checkpoint()) != there.end())
    how += "\n  to continue that run:  " + continue_command(o, p.files.checkpoint());
  how += "\n  to replace its files:  add --overwrite\n  to keep them:          choose another prefix with --output PREFIX";
  throw ConfigError("pairmd run: the output prefix '" + p.files.prefix + "' holds files of an earlier run (" + list +
                    "); nothing was written" + how);
}

// Drops the rows of a thermo CSV at or after `step` (the restart writes its first row again),
// through a temporary file and a rename. A missing file is left missing. Returns the rows dropped.
int64_t truncate_thermo_csv(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return 0;
  std::ostringstream kept;
  std::string line;
  bool header = true;
  int64_t dropped = 0;
  while (std::getline(in, line)) {
    if (!header) {
      char* end = nullptr;
      const long long s = std::strtoll(line.c_str(), &end, 10);
      if (end == line.c_str() || s >= step) {
        dropped += s > step;  // the row of the restart step itself is written again
        continue;
      }
    }
    header = false;
    kept << line << "\n";
  }
  in.close();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream out(tmp, std::ios::trunc);
  out << kept.str();
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rewrite the thermo CSV '" + path + "'");
  }
  return dropped;
}

// The restart's config must describe the checkpoint's system: same particle count, types and
// bonds. The config's own system is built only to compare (no relaxation).
void check_same_system(const RunConfig& cfg, const Checkpoint& ck, const std::string& ck_path) {
  RunConfig probe = cfg;
  probe.system.relax.steps = 0;
  const BuiltSystem sys = build_system(probe);
  const SystemState& a = sys.state;
  const SystemState& b = ck.state;
  auto fail = [&](const std::string& what) {
    throw ConfigError(cfg.path + ": does not describe the system of checkpoint '" + ck_path + "': " + what);
  };
  if (a.size() != b.size())
    fail("the config builds " + std::to_string(a.size()) + " particles, the checkpoint holds " + std::to_string(b.size()));
  if (cfg.system.types.size() != b.type_names.size()) fail("different number of particle types");
  for (size_t t = 0; t < b.type_names.size(); ++t)
    if (cfg.system.types[t].name != b.type_names[t])
      fail("particle type " + std::to_string(t) + " is '" + b.type_names[t] + "' in the checkpoint, '" +
           cfg.system.types[t].name + "' in the config");
  for (size_t i = 0; i < a.size(); ++i)
    if (a.type[i] != b.type[i]) fail("particle " + std::to_string(i) + " has another type");
  if (sys.topology.bonds.size() != ck.topology.bonds.size())
    fail("the config has " + std::to_string(sys.topology.bonds.size()) + " bonds, the checkpoint " +
         std::to_string(ck.topology.bonds.size()));
  for (const Bond& bond : ck.topology.bonds)
    if (bond.type >= static_cast<int>(cfg.model.force_field.bond_types.size()))
      fail("its bonds use bond type " + std::to_string(bond.type) + ", which force_field.bonds does not define");
  if (cfg.system.periodic != b.box.periodic) fail("different boundary");
  validate_against_box(cfg, b.box);
}

// The start state: the checkpoint's on a restart, else the system the config builds.
void build_start(const RunOptions& o, RunPlan& p) {
  if (!p.restart) {
    p.sys = build_system(p.cfg);
    p.first = p.sys.state.step;
    p.last = p.first + p.cfg.steps;
    return;
  }
  check_same_system(p.cfg, p.ck, o.restart);
  p.sys.state = p.ck.state;
  p.sys.topology = p.ck.topology;
  // The pulling's anchor and tether points are those of the run's start, which the config builds.
  if (pulling_needs_start(p.cfg)) p.sys.pulling = build_system(p.cfg).pulling;
  else p.sys.pulling = resolve_pulling(p.cfg, p.sys.state);
}

// The observers that write this run's files, created in the order the run shows them a step.
struct Outputs {
  std::unique_ptr<GridSink> grid_sink;  // outlives the simulation's observers
  H5mdWriter* writer = nullptr;
  CheckpointWriter* checkpoints = nullptr;
};

// Creates (or, continuing a run, opens) the output files and adds their observers to `sim`. If
// one cannot be created, the files this run created are removed again and the error thrown
// (files of an earlier run that this one continues stay as they were).
void open_outputs(const RunOptions& o, const RunPlan& p, std::unique_ptr<PotentialMapObserver> potential_map,
                  Simulation& sim, Outputs& out, RunLog& log, const std::string& command) {
  const RunConfig& cfg = p.cfg;
  const OutputFiles& files = p.files;
  if (o.overwrite)
    for (const std::string& f : files.existing()) {
      if (std::remove(f.c_str()) != 0)
        throw std::runtime_error("--overwrite: cannot remove '" + f + "': " + std::strerror(errno));
      std::cout << "overwrite: removed " << f << " (--overwrite)\n";
    }
  for (const std::string& f : files.stale_temporaries())
    if (std::remove(f.c_str()) == 0) std::cout << "removed " << f << ", left by a run that was killed\n";

  const bool progress = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  const double dof = degrees_of_freedom(cfg, p.sys.state.size());
  const TrajectorySpec& ts = cfg.output.trajectory;
  const bool want_traj = ts.every > 0 || ts.velocities_every > 0 || ts.forces_every > 0 || ts.observables_every > 0;
  std::vector<std::string> created;
  auto exists = [](const std::string& f) { return access(f.c_str(), F_OK) == 0; };
  try {
    std::unique_ptr<H5mdWriter> traj;
    if (want_traj) {
      const bool existed = exists(files.trajectory());
      traj = std::make_unique<H5mdWriter>(files.trajectory(), cfg, p.sys.state, p.sys.topology, dof,
                                          p.continues_files ? p.first : -1);
      if (!existed) created.push_back(files.trajectory());
      if (traj->frames_dropped() > 0)
        std::cout << "restart: dropped " << traj->frames_dropped() << " frame(s) after step " << p.first << " from "
                  << files.trajectory() << " (written after the checkpoint; the run writes them again)\n";
      out.writer = traj.get();
    }
    std::unique_ptr<GsdWriter> gsd;
    if (cfg.output.gsd.every > 0) {
      const bool existed = exists(files.gsd());
      gsd = std::make_unique<GsdWriter>(files.gsd(), cfg, p.sys.state, p.sys.topology, dof,
                                        p.continues_files ? p.first : -1);
      if (!existed) created.push_back(files.gsd());
      if (gsd->frames_dropped() > 0)
        std::cout << "restart: dropped " << gsd->frames_dropped() << " frame(s) after step " << p.first << " from "
                  << files.gsd() << " (written after the checkpoint; the run writes them again)\n";
    }
    // The checkpoint directory must be writable (probe with the temporary name it will use).
    const std::string probe = files.checkpoint() + ".tmp." + std::to_string(getpid());
    if (FILE* fp = std::fopen(probe.c_str(), "wx")) {
      std::fclose(fp);
      std::remove(probe.c_str());
    } else {
      throw std::runtime_error("cannot write the checkpoint '" + files.checkpoint() + "': " + std::strerror(errno));
    }
    if (p.continues_files) {
      const int64_t rows = truncate_thermo_csv(files.thermo(), p.first);
      if (rows > 0)
        std::cout << "restart: dropped " << rows << " row(s) after step " << p.first << " from " << files.thermo() << "\n";
    }
    // The pulling's record (io/pull_log.h); added before the trajectory, whose finish() closes
    // the file that the record's observables go into.
    std::unique_ptr<PullLog> pull;
    if (p.sys.pulling.active()) {
      if (p.continues_files) {
        const int64_t rows = truncate_thermo_csv(files.pull(), p.first);
        if (rows > 0)
          std::cout << "restart: dropped " << rows << " row(s) after step " << p.first << " from " << files.pull() << "\n";
      }
      const bool pull_existed = exists(files.pull());
      pull = std::make_unique<PullLog>(cfg, p.sys.pulling, files.pull(), p.continues_files && pull_existed, out.writer,
                                      files.pull_plot());
      if (!pull_existed) created.push_back(files.pull());
    }
    const bool csv_existed = exists(files.thermo());
    auto thermo = std::make_unique<ThermoLog>(cfg, files.thermo(), progress, dof, p.continues_files && csv_existed);
    if (!csv_existed) created.push_back(files.thermo());
    sim.set_progress(thermo.get());
    // Observers see each step in the order added. The map observer goes before the trajectory:
    // its finish() writes the average into the trajectory file, which the trajectory's own
    // finish() closes. The thermo log comes after the trajectory, so a row at step S means the
    // frame of step S has been written (and, with flush_seconds 0, flushed).
    if (potential_map) {
      if (out.writer) {
        out.grid_sink = std::make_unique<H5mdGridSink>(out.writer);
        potential_map->set_sink(out.grid_sink.get());
      }
      sim.add_observer(std::move(potential_map));
    }
    if (pull) sim.add_observer(std::move(pull));
    GsdWriter* gsd_writer = gsd.get();
    if (traj) sim.add_observer(std::move(traj));
    if (gsd) sim.add_observer(std::move(gsd));
    sim.add_observer(std::move(thermo));
    auto ckw = std::make_unique<CheckpointWriter>(files.checkpoint(), cfg.output.checkpoint_every,
                                                  p.restart ? p.ck.first_step : p.first, sim.backend().name(),
                                                  files.prefix);
    if (H5mdWriter* w = out.writer) ckw->add_before_write([w] { w->flush(); });
    if (gsd_writer) ckw->add_before_write([gsd_writer] { gsd_writer->flush(); });
    out.checkpoints = ckw.get();
    sim.add_observer(std::move(ckw));
    // The log last, once every other output is open (a restart refused by its trajectory leaves
    // the log as it was): from here on everything printed goes into it too, and what was
    // printed before, held until now.
    if (log.open(files.log(), p.continues_files, command)) created.push_back(files.log());
  } catch (...) {
    for (const std::string& f : created) std::remove(f.c_str());
    throw;
  }
}

// The run's first lines: the system, the backend, the memory estimate, and for a restart what
// it takes over or changes and from which step to which it goes. Returns false when a restart
// has nothing left to do.
bool print_start(const RunOptions& o, const RunPlan& p, const std::string& backend, const std::string& why,
                 const MemoryEstimate& need) {
  const RunConfig& cfg = p.cfg;
  std::cout << "pairmd " << PAIRMD_VERSION << ": " << (cfg.title.empty() ? cfg.path : cfg.title) << "\n"
            << describe_system(cfg, p.sys) << "backend: " << why << "\n"
            << describe_memory(need, built_size(p.sys.state, static_cast<int64_t>(p.sys.topology.bonds.size()))) << "\n";
  if (p.restart) {
    const Checkpoint& ck = p.ck;
    for (const std::string& note : p.notes) std::cout << note << "\n";
    std::cout << "restart: from checkpoint '" << o.restart << "' at step " << p.first << "; the run started at step "
              << ck.first_step << " and `steps` (" << cfg.steps << ") counts from there, so it ends at step " << p.last
              << "\n";
    if (ck.seed != cfg.model.integrator.seed || ck.dt != cfg.model.integrator.dt ||
        ck.integrator != integrator_kind_name(cfg.model.integrator.kind) || ck.backend != backend)
      std::cout << "restart: note: the integrator (kind, dt, seed) or backend differs from the checkpoint's run ("
                << ck.integrator << ", dt " << ck.dt << ", seed " << ck.seed << ", " << ck.backend
                << "): the continuation is valid but not bitwise identical to an uninterrupted run\n";
    if (p.first >= p.last) {
      std::cout << "restart: the run already reached step " << p.last
                << "; nothing to do (--steps N, with N counted from step " << ck.first_step << ", goes on)\n";
      return false;
    }
  }
  for (const std::string& w : time_step_warnings(cfg, p.sys.state, p.sys.topology))
    std::cerr << "pairmd run: warning: " << w << "\n";
  std::cout << "steps: " << p.last - p.first << " (" << p.first << " -> " << p.last << "), output: " << p.files.prefix
            << ".*\n"
            << std::flush;
  return true;
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
  RunPlan p;
  std::unique_ptr<OutputClaim> claim;
  std::unique_ptr<Backend> backend;
  std::string why;
  MemoryEstimate need;
  try {
    load_plan(o, p);
    try {
      claim = std::make_unique<OutputClaim>(p.files.prefix);
    } catch (const OutputInUse& e) {
      throw ConfigError(std::string("pairmd run: ") + e.what() + "; nothing was written");
    }
    if (!claim->warning().empty()) std::cerr << "pairmd run: warning: " << claim->warning() << "\n";
    check_existing_outputs(o, p);
    const std::string kind = planned_backend(p.cfg);
    check_build_memory(p.cfg, kind);
    build_start(o, p);
    need = check_run_memory(p.cfg, kind, p.sys);
    const Model model = make_model(p.cfg, p.sys);
    try {
      backend = make_backend(p.cfg.backend, model, p.sys.state, &why);
    } catch (const std::exception& e) {
      throw ConfigError(std::string("pairmd run: ") + e.what());
    }
    check_start_forces(p.cfg, p.sys.state, backend->forces());
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  } catch (const std::runtime_error& e) {
    // Not the input: the claim's lock file cannot be created (a missing directory, no permission).
    std::cerr << "pairmd run: error: " << e.what() << "\n";
    return kExitFailure;
  }

  if (!print_start(o, p, backend->name(), why, need)) return kExitOk;
  const RunConfig& cfg = p.cfg;

  // analysis.potential_map (its kernel is checked before any file is written).
  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0) {
    try {
      potential_map = std::make_unique<PotentialMapObserver>(cfg, p.files.potential_map(), nullptr);
    } catch (const std::exception& e) {
      std::cerr << "pairmd run: analysis.potential_map: " << e.what() << "\n";
      return kExitUsage;
    }
    std::cout << "potential map: every " << cfg.potential_map.every << " steps, kernel "
              << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
  }

  Outputs out;
  Simulation sim(cfg, p.sys.topology, std::move(backend));
  try {
    open_outputs(o, p, std::move(potential_map), sim, out, log, command);
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
