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
#include "engine/simulation.h"
#include "engine/time_step_check.h"
#include "io/checkpoint.h"
#include "io/gsd_writer.h"
#include "io/h5md_writer.h"
#include "io/output_files.h"
#include "io/thermo_log.h"
#include "replicas/communicator.h"
#include "replicas/ensemble.h"

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
  // A replica of an ensemble (replicas: in the config; docs/replicas.md).
  int replica = -1;                // this rank's replica (-1: a single run)
  int replicas = 0;                // K
  std::string base_prefix;         // the ensemble's prefix (its replicas' are BASE.rNN)
  bool exchange = false;
  ExchangeState exchange_state;    // with exchange: the same on every rank
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

// Whether this run is a replica of an ensemble: the config has a replicas section. Throws
// ConfigError when the ranks do not match it (K replicas need K ranks; more than one rank needs
// a replicas section).
bool check_ensemble(const RunConfig& cfg, Communicator& comm) {
  const int k = cfg.replicas.count;
  if (k == 0) {
    if (comm.size() > 1)
      throw ConfigError("pairmd run: started as " + std::to_string(comm.size()) + " MPI ranks, but " + cfg.path +
                        " has no replicas section (replicas: {count: " + std::to_string(comm.size()) +
                        ", ...}; docs/replicas.md)");
    return false;
  }
  if (k != comm.size()) {
    auto it = cfg.locations.find("replicas.count");
    const std::string where = it != cfg.locations.end() ? it->second : cfg.path;
    std::string how = "start it with mpirun -np " + std::to_string(k) + " pairmd run ...";
    if (!mpi_built()) how = "this pairmd was built without MPI, so it runs one replica alone (install Open MPI and build again: "
                            "scripts/setup.sh; docs/replicas.md)";
    else if (!mpi_launched()) how = "this pairmd was not started by mpirun; " + how;
    throw ConfigError(where + ": replicas.count: " + std::to_string(k) + " replicas need " + std::to_string(k) +
                      " MPI ranks, one each, but this run has " + std::to_string(comm.size()) + ": " + how);
  }
  return true;
}

// A replica's own settings: its seed (independent replicas differ by seed) and, with exchange,
// its temperature of the ladder (also the temperature its velocities are drawn at).
void configure_replica(RunPlan& p) {
  IntegratorSettings& in = p.cfg.model.integrator;
  in.seed = replica_seed(in.seed, p.replica);
  if (p.exchange) in.temperature = p.exchange_state.temperature_of(p.replica);
}

// Loads the config and, on a restart, the checkpoint: the config gets the checkpoint's --set
// overrides first, then those of this command line; the prefix is the checkpoint's unless
// --output names another. Prints what differs from the run that wrote the checkpoint.
void load_plan(const RunOptions& o, RunPlan& p) {
  const std::vector<std::string> sets = command_line_overrides(o.config);
  Communicator& comm = world();
  if (o.restart.empty()) {
    p.cfg = load_config(o.config.config_path, sets);
    const std::string base = o.output.empty() ? output_prefix(p.cfg) : o.output;
    p.files.prefix = base;
    if (check_ensemble(p.cfg, comm)) {
      p.replica = comm.rank();
      p.replicas = p.cfg.replicas.count;
      p.base_prefix = base;
      p.files.prefix = replica_prefix(base, p.replica, p.replicas);
      p.exchange = p.cfg.replicas.exchange;
      const uint64_t seed = p.cfg.model.integrator.seed;
      if (p.exchange)
        p.exchange_state = ExchangeState(p.cfg.replicas.temperatures, p.cfg.model.units.kB,
                                         p.cfg.replicas.seed != 0 ? p.cfg.replicas.seed : seed);
      configure_replica(p);
    }
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
  std::string derived = output_prefix(p.cfg), output = o.output, derived_base;
  if (check_ensemble(p.cfg, comm)) {
    if (p.ck.ensemble.empty())
      throw ConfigError("pairmd run: --restart: '" + o.restart + "' is the checkpoint of a single run, not of a replica" +
                        " (an ensemble restarts from PREFIX.r{replica}.checkpoint.h5)");
    ReplicaCheckpoint rc;
    try {
      rc = ReplicaCheckpoint::parse(p.ck.ensemble);
    } catch (const std::exception& e) {
      throw ConfigError("pairmd run: --restart: '" + o.restart + "': " + e.what());
    }
    p.replica = comm.rank();
    p.replicas = p.cfg.replicas.count;
    if (rc.replica != p.replica || rc.count != p.replicas)
      throw ConfigError("pairmd run: --restart: '" + o.restart + "' is the checkpoint of replica " +
                        std::to_string(rc.replica) + " of " + std::to_string(rc.count) + ", but this rank runs replica " +
                        std::to_string(p.replica) + " of " + std::to_string(p.replicas) +
                        " (give --restart PREFIX.r{replica}.checkpoint.h5: each rank reads its own)");
    if (rc.exchange != p.cfg.replicas.exchange)
      throw ConfigError("pairmd run: --restart: '" + o.restart + "' is of a run with replicas.mode " +
                        (rc.exchange ? "exchange" : "independent") + "; the config now says otherwise");
    p.exchange = rc.exchange;
    p.exchange_state = rc.state;
    p.base_prefix = output.empty() ? rc.base_prefix : output;
    derived_base = derived;
    derived = replica_prefix(derived, p.replica, p.replicas);
    if (!output.empty()) output = replica_prefix(output, p.replica, p.replicas);
    if (p.exchange && p.exchange_state.temperatures() != p.cfg.replicas.temperatures)
      p.notes.push_back("restart: the ladder is the checkpoint's (the exchange state holds it), not the config's");
    configure_replica(p);
  } else if (!p.ck.ensemble.empty()) {
    throw ConfigError("pairmd run: --restart: '" + o.restart +
                      "' is the checkpoint of a replica of an ensemble; restart the whole ensemble (mpirun -np K " +
                      "pairmd run --restart PREFIX.r{replica}.checkpoint.h5; docs/replicas.md)");
  }
  p.files.prefix = !output.empty() ? output : !p.ck.prefix.empty() ? p.ck.prefix : derived;
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
  else if (output.empty() && !p.ck.prefix.empty() && !same_prefix(derived, p.ck.prefix))
    p.notes.push_back("restart: continues the files " + p.ck.prefix + ".* of its run (output.prefix " + derived +
                      " is not used; --output " + (p.replica >= 0 ? derived_base : derived) + " would start new files there)");
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

// The ranks agree on how the set-up went: the worst code of any rank (kParsed: every rank goes
// on). Replica 0 prints its message; another replica prints its own where replica 0 had none to
// print (in an ensemble, each names its replica). A single run prints its message as ever.
int agree(Communicator& comm, int code, const std::string& message, const RunPlan& p) {
  const std::vector<double> all = comm.allgather({static_cast<double>(code)});
  int worst = kParsed;
  for (double c : all) worst = std::max(worst, static_cast<int>(c));
  const bool first_ok = static_cast<int>(all[0]) == kParsed || message.empty();
  if (!message.empty() && (comm.rank() == 0 || first_ok)) {
    if (comm.size() > 1 && comm.rank() > 0) std::cerr << "replica " << comm.rank() << ": ";
    std::cerr << message << "\n";
  }
  if (worst != kParsed && code == kParsed && comm.rank() == 0 && p.replica == 0)
    std::cerr << "pairmd run: another replica could not go on (its message is above); nothing was run\n";
  return worst;
}

// The replicas of a restart must all start from one step with one exchange state: checkpoints
// of one meeting. A rank killed while it wrote its checkpoint leaves an older one.
int check_same_start(Communicator& comm, const RunPlan& p) {
  const std::vector<double> all = comm.allgather({static_cast<double>(p.first), static_cast<double>(p.exchange_state.exchanges())});
  bool same = true;
  for (int r = 0; r < comm.size(); ++r) same = same && all[2 * r] == all[0] && all[2 * r + 1] == all[1];
  if (same) return kParsed;
  if (comm.rank() == 0) {
    std::cerr << "pairmd run: --restart: the replicas' checkpoints are not of one step (a rank was killed while it wrote "
                 "one?):";
    for (int r = 0; r < comm.size(); ++r)
      std::cerr << " " << replica_tag(r, comm.size()) << " step " << static_cast<int64_t>(all[2 * r]);
    std::cerr << "; nothing was written. Restart from checkpoints of one step (copies kept elsewhere), or start again\n";
  }
  return kExitUsage;
}

// Replica 0 also owns the ensemble's files (PREFIX.exchange.csv, PREFIX.walk.csv, .walk.svg):
// a new ensemble refuses them unless --overwrite says to replace them.
// With `remove` (once every check has passed), --overwrite removes them.
void check_existing_ensemble_files(const RunOptions& o, const RunPlan& p, bool remove) {
  const EnsembleFiles files{p.base_prefix};
  const std::vector<std::string> there = files.existing();
  if (there.empty() || (p.restart && p.continues_files)) return;
  if (o.overwrite) {
    if (!remove) return;
    for (const std::string& f : there) {
      if (std::remove(f.c_str()) != 0)
        throw std::runtime_error("--overwrite: cannot remove '" + f + "': " + std::strerror(errno));
      std::cout << "overwrite: removed " << f << " (--overwrite)\n";
    }
    return;
  }
  std::string list;
  for (const std::string& f : there) list += (list.empty() ? "" : ", ") + f;
  throw ConfigError("pairmd run: the output prefix '" + p.base_prefix + "' holds the ensemble files of an earlier run (" +
                    list + "); nothing was written\n  to replace them:  add --overwrite\n  to keep them:     choose "
                    "another prefix with --output PREFIX");
}

std::string describe_ensemble(const RunPlan& p, Communicator& comm) {
  std::ostringstream s;
  s << "replicas: " << p.replicas << " (" << (p.exchange ? "temperature replica exchange" : "independent")
    << "), one per rank of " << comm.describe() << "; files " << p.base_prefix << ".r*.* (this terminal shows replica 0;"
    << " each replica's table is in its .log)\n";
  if (p.exchange) {
    s << "ladder:";
    for (double t : p.exchange_state.temperatures()) s << " " << t;
    s << " (" << p.cfg.model.units.temperature_unit() << "); exchanges every " << p.cfg.replicas.exchange_every
      << " steps, log " << EnsembleFiles{p.base_prefix}.exchange_log() << "\n";
  } else {
    s << "seeds " << p.cfg.model.integrator.seed << " + replica; the ranks meet every " << p.cfg.replicas.exchange_every
      << " steps (signals, failures)\n";
  }
  return s.str();
}

// The end of an ensemble: each replica's own lines (its log), and replica 0's report of the whole
// ensemble: each replica's end, the acceptance and round trips, the walk plot, how to go on.
int report_ensemble(const RunOptions& o, const RunPlan& p, const EnsembleOutcome& e, Simulation& sim, const Outputs& out,
                    EnsembleLog* log) {
  const BackendStats st = sim.backend().stats();
  const RunResult& r = e.result;
  std::cout << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) std::cout << " = " << st.steps / st.seconds_total << " steps/s";
  std::cout << ", " << st.list_builds << " neighbour-list builds\n";
  const CheckpointWriter& ck = *out.checkpoints;
  std::ostringstream saved;
  if (ck.last_written_step() == r.last_good_step)
    saved << "checkpoint " << ck.path() << " (step " << r.last_good_step << ")";
  else if (!ck.error().empty())
    saved << "no checkpoint of step " << r.last_good_step << ": " << ck.error();
  else
    saved << "no checkpoint of step " << r.last_good_step;
  const std::string who = "replica " + std::to_string(p.replica) + " (" + p.files.prefix + ".*)";
  for (const std::string& f : r.finish_errors)
    if (r.outcome != RunOutcome::Failed || f != r.message) std::cerr << "pairmd run: " << who << ": error: " << f << "\n";
  if (r.outcome == RunOutcome::Failed || r.outcome == RunOutcome::BlewUp)
    std::cerr << "pairmd run: " << who << " failed: " << r.message << "\n  its last good state is step "
              << r.last_good_step << "; " << saved.str() << "\n";
  else
    std::cout << who << ": " << (r.outcome == RunOutcome::Completed ? "done" : "stopped") << " at step "
              << r.last_good_step << "; " << saved.str() << "\n";

  const int k = p.replicas;
  int code = kExitOk;
  for (int s : e.status) code = std::max(code, s == kReplicaFailed ? 2 : s == kReplicaStopped ? 1 : 0);
  const int exit_code = code == 2 ? kExitFailure : code == 1 || e.signalled ? kExitInterrupted : kExitOk;
  std::cout.flush();
  if (p.replica != 0) return exit_code;

  std::ostringstream t;
  double aggregate = 0;
  t << "ensemble: replica  status     last step  steps/s\n";
  for (int q = 0; q < k; ++q) {
    const double rate = e.seconds[q] > 0 ? (e.last_step[q] - p.first) / e.seconds[q] : 0;
    aggregate += rate;
    char line[160];
    std::snprintf(line, sizeof line, "          %-8s %-10s %9lld  %.4g\n", replica_tag(q, k).c_str(),
                  e.status[q] == kReplicaCompleted ? "done" : e.status[q] == kReplicaStopped ? "stopped" : "FAILED",
                  static_cast<long long>(e.last_step[q]), rate);
    t << line;
  }
  t << "ensemble: aggregate " << aggregate << " timesteps/s over " << k << " replicas\n";
  if (e.meetings > 0) {
    const double ms = 1e3 / static_cast<double>(e.meetings);
    char line[320];
    std::snprintf(line, sizeof line,
                  "ensemble: %lld meetings of the ranks, %.3g ms each on replica 0: energy %.3g, allgather %.3g (waiting "
                  "for the slowest rank included), decisions and log %.3g, new temperature %.3g\n",
                  static_cast<long long>(e.meetings), ms * e.exchange_seconds, ms * e.energy_seconds,
                  ms * e.gather_seconds, ms * e.decide_seconds, ms * e.rescale_seconds);
    t << line;
  }
  std::cout << t.str();
  if (p.exchange) {
    std::cout << exchange_report(p.exchange_state);
    if (log) {
      try {
        log->write_plot(p.exchange_state.temperatures(), "step", std::string("T (") + p.cfg.model.units.temperature_unit() + ")");
        std::cout << "walk of each replica through the ladder: " << log->files().walk_plot() << " (data "
                  << log->files().walk() << "); exchanges: " << log->files().exchange_log() << "\n";
      } catch (const std::exception& x) {
        std::cerr << "pairmd run: warning: no walk plot: " << x.what() << "\n";
      }
    }
  }
  std::string again = "mpirun -np " + std::to_string(k) + " pairmd run ";
  if (!o.config.config_path.empty()) again += shell_word(o.config.config_path) + " ";
  again += "--restart " + p.base_prefix + ".r{replica}.checkpoint.h5";
  std::cout.flush();
  if (code == 2) {
    std::cerr << "pairmd run: replica " << e.first_failed << " (" << replica_prefix(p.base_prefix, e.first_failed, k)
              << ".*) failed (its message is above); the ensemble stopped, every replica's files are closed and readable\n";
    bool same = true;
    for (int q = 0; q < k; ++q) same = same && e.last_step[q] == e.last_step[0];
    if (same) std::cerr << "  every replica has a checkpoint of step " << e.last_step[0] << "; once the cause is fixed: " << again << "\n";
  } else if (exit_code == kExitInterrupted) {
    std::cerr << "pairmd run: interrupted (signal) at step " << e.last_step[0]
              << "; every replica wrote its files and a checkpoint of that step\n  continue with: " << again << "\n";
  } else {
    std::cout << "done: " << k << " replicas at step " << e.last_step[0] << "; continue with " << again
              << " --steps N\n";
  }
  return exit_code;
}

}  // namespace

int cmd_run(const Args& args) {
  RunLog log;  // copies everything printed, into PREFIX.log once the outputs are opened
  Communicator& comm = world();
  // In an ensemble, only replica 0 prints its table on the terminal; every replica's is in its log.
  if (comm.rank() > 0) log.quiet_stdout();
  std::string command = "pairmd run";
  for (const std::string& a : args) command += " " + shell_word(a);
  // Files left open at exit (a trajectory whose write failed) must not be flushed half-written
  // by HDF5's exit handler; everything else is closed explicitly.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  RunOptions o;
  if (const int rc = read_options(args, o); rc != kParsed) return rc;
  // Each replica of an ensemble restarts from its own checkpoint: PREFIX.r{replica}.checkpoint.h5.
  if (!o.restart.empty() && comm.size() > 1) o.restart = replica_path(o.restart, comm.rank(), comm.size());

  // Everything that can be wrong with the input is found before any output file is touched, on
  // every rank; the ranks agree on the outcome before any of them goes on.
  RunPlan p;
  std::unique_ptr<OutputClaim> claim, ensemble_claim;
  std::unique_ptr<Backend> backend;
  std::string why;
  MemoryEstimate need;
  int code = kParsed;
  std::string message;
  try {
    load_plan(o, p);
    try {
      claim = std::make_unique<OutputClaim>(p.files.prefix);
      if (p.replica == 0) ensemble_claim = std::make_unique<OutputClaim>(p.base_prefix);
    } catch (const OutputInUse& e) {
      throw ConfigError(std::string("pairmd run: ") + e.what() + "; nothing was written");
    }
    if (!claim->warning().empty()) std::cerr << "pairmd run: warning: " << claim->warning() << "\n";
    check_existing_outputs(o, p);
    if (p.replica == 0) check_existing_ensemble_files(o, p, false);
    const std::string kind = planned_backend(p.cfg);
    check_build_memory(p.cfg, kind);
    build_start(o, p);
    need = check_run_memory(p.cfg, kind, p.sys);
    Model model = p.cfg.model;
    model.topology = p.sys.topology;
    // Ranks of a node share its GPUs: rank i takes GPU i mod count.
    if (p.replica >= 0 && kind == "cuda") select_cuda_device(comm.local_rank());
    try {
      backend = make_backend(p.cfg.backend, model, p.sys.state, &why);
    } catch (const std::exception& e) {
      throw ConfigError(std::string("pairmd run: ") + e.what());
    }
    check_start_forces(p.cfg, p.sys.state, backend->forces());
  } catch (const ConfigError& e) {
    code = kExitUsage;
    message = e.what();
  } catch (const std::runtime_error& e) {
    // Not the input: the claim's lock file cannot be created (a missing directory, no permission).
    code = kExitFailure;
    message = std::string("pairmd run: error: ") + e.what();
  }
  if ((code = agree(comm, code, message, p)) != kParsed) return code;
  if (p.replica >= 0 && (code = check_same_start(comm, p)) != kParsed) return code;

  code = print_start(o, p, backend->name(), why, need) ? kParsed : kExitOk;
  if ((code = agree(comm, code, "", p)) != kParsed) return code;
  const RunConfig& cfg = p.cfg;
  if (p.replica == 0) std::cout << describe_ensemble(p, comm);

  // analysis.potential_map (its kernel is checked before any file is written).
  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0) {
    try {
      potential_map = std::make_unique<PotentialMapObserver>(cfg, p.files.potential_map(), nullptr);
      std::cout << "potential map: every " << cfg.potential_map.every << " steps, kernel "
                << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
    } catch (const std::exception& e) {
      code = kExitUsage;
      message = std::string("pairmd run: analysis.potential_map: ") + e.what();
    }
  }
  if ((code = agree(comm, code, message, p)) != kParsed) return code;

  Outputs out;
  Simulation sim(cfg, p.sys.topology, std::move(backend));
  std::unique_ptr<EnsembleLog> ensemble_log;
  try {
    open_outputs(o, p, std::move(potential_map), sim, out, log, command);
    if (p.replica == 0) check_existing_ensemble_files(o, p, true);
    if (p.replica == 0 && p.exchange) {
      ensemble_log = std::make_unique<EnsembleLog>(EnsembleFiles{p.base_prefix}, p.exchange_state, p.first,
                                                   p.restart && p.continues_files);
      if (ensemble_log->rows_dropped() > 0)
        std::cout << "restart: dropped " << ensemble_log->rows_dropped() << " row(s) of exchanges after step " << p.first
                  << " from " << ensemble_log->files().exchange_log() << " (the run makes them again)\n";
    }
  } catch (const std::exception& e) {
    code = kExitFailure;
    message = std::string("pairmd run: error: ") + e.what();
  }
  if ((code = agree(comm, code, message, p)) != kParsed) return code;

  install_stop_handlers();
  // Exceeding a file-size limit must be a write error we report, not a silent kill.
  std::signal(SIGXFSZ, SIG_IGN);
  if (p.replica < 0) {
    const RunResult result = sim.run(p.last);
    return report(o, result, sim, out);
  }
  out.checkpoints->set_ensemble([&p] {
    ReplicaCheckpoint rc;
    rc.replica = p.replica;
    rc.count = p.replicas;
    rc.base_prefix = p.base_prefix;
    rc.exchange = p.exchange;
    rc.state = p.exchange_state;
    return rc.serialize();
  });
  EnsembleOptions eo;
  eo.comm = &comm;
  eo.replica = p.replica;
  eo.count = p.replicas;
  eo.every = cfg.replicas.exchange_every;
  eo.exchange = p.exchange ? &p.exchange_state : nullptr;
  eo.log = ensemble_log.get();
  const EnsembleOutcome outcome = run_ensemble(sim, p.last, eo);
  return report_ensemble(o, p, outcome, sim, out, ensemble_log.get());
}

}  // namespace pairmd::cli
