// pairmd run CONFIG: build the system (or load a checkpoint), pick the backend, run with thermo
// output, trajectory and checkpoints; stop cleanly on signals, blow-ups and write errors.
// Restart rules and exit codes: docs/output.md.
#include <hdf5.h>
#include <unistd.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis/grid_sink.h"
#include "analysis/potential_map_observer.h"
#include "engine/checkpoint.h"
#include "engine/cli/run_setup.h"
#include "engine/h5md_writer.h"
#include "engine/simulation.h"
#include "engine/version.h"

namespace pairmd::cli {

namespace {

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

// Drops the rows of a thermo CSV at or after `step` (the restart writes its first row again),
// through a temporary file and a rename. A missing file is left missing.
void truncate_thermo_csv(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream kept;
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (!header) {
      char* end = nullptr;
      const long long s = std::strtoll(line.c_str(), &end, 10);
      if (end == line.c_str() || s >= step) continue;
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

}  // namespace

int cmd_run(const Args& args) {
  // Files left open at exit (a trajectory whose write failed) must not be flushed half-written
  // by HDF5's exit handler; everything else is closed explicitly.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  ConfigOptions o;
  std::string restart, prefix_override;
  OptionReader r{args};
  try {
    while (!r.done()) {
      if (read_config_option(r, o)) continue;
      if (r.value("--restart", restart)) continue;
      if (r.value("--output", prefix_override)) continue;
      if (r.peek().rfind("--", 0) == 0 || !o.config_path.empty()) {
        std::cerr << "pairmd run: unexpected argument '" << r.peek() << "'\n";
        return kExitUsage;
      }
      o.config_path = args[r.i++];
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd run: " << e.what() << "\n";
    return kExitUsage;
  }
  if (o.config_path.empty()) {
    std::cerr << "pairmd run: usage: pairmd run CONFIG [--backend cpu|cuda|auto] [--steps N] [--set key.path=value]"
                 " [--restart CHECKPOINT] [--output PREFIX]\n";
    return kExitUsage;
  }

  // Everything that can be wrong with the input is found before any file is written.
  RunConfig cfg;
  BuiltSystem sys;
  Checkpoint ck;
  int64_t first = 0, last = 0;
  try {
    cfg = load_with_options(o);
    if (!prefix_override.empty()) cfg.output.prefix = prefix_override;
    if (!restart.empty()) {
      try {
        ck = read_checkpoint(restart);
      } catch (const std::runtime_error& e) {
        std::cerr << "pairmd run: --restart: " << e.what() << "\n";
        return kExitUsage;
      }
      check_same_system(cfg, ck, restart);
      sys.state = ck.state;
      sys.topology = ck.topology;
      first = ck.state.step;
      // `steps` is the length of the whole run from its original start, so a restart finishes
      // the run it continues (and --steps N / --set steps=N sets that total).
      last = ck.first_step + cfg.steps;
    } else {
      sys = build_system(cfg);
      first = sys.state.step;
      last = first + cfg.steps;
    }
  } catch (const ConfigError& e) {
    std::cerr << e.what() << "\n";
    return kExitUsage;
  }

  Model model = cfg.model;
  model.topology = sys.topology;
  std::string why;
  std::unique_ptr<Backend> backend;
  try {
    backend = make_backend(cfg.backend, model, sys.state, &why);
  } catch (const std::exception& e) {
    std::cerr << "pairmd run: " << e.what() << "\n";
    return kExitUsage;
  }

  std::cout << "pairmd " << PAIRMD_VERSION << ": " << (cfg.title.empty() ? cfg.path : cfg.title) << "\n"
            << describe_system(cfg, sys) << "backend: " << why << "\n";
  const std::string prefix = output_prefix(cfg);
  if (!restart.empty()) {
    std::cout << "restart: from checkpoint '" << restart << "' at step " << first << "; the run started at step "
              << ck.first_step << " and `steps` (" << cfg.steps << ") counts from there, so it ends at step " << last
              << "\n";
    if (ck.seed != cfg.model.integrator.seed || ck.dt != cfg.model.integrator.dt ||
        ck.integrator != integrator_kind_name(cfg.model.integrator.kind) || ck.backend != backend->name())
      std::cout << "restart: note: the integrator (kind, dt, seed) or backend differs from the checkpoint's run ("
                << ck.integrator << ", dt " << ck.dt << ", seed " << ck.seed << ", " << ck.backend
                << "): the continuation is valid but not bitwise identical to an uninterrupted run\n";
    if (first >= last) {
      std::cout << "restart: the run already reached step " << last << "; nothing to do (raise `steps` to go on)\n";
      return kExitOk;
    }
  }
  std::cout << "steps: " << last - first << " (" << first << " -> " << last << "), output: " << prefix << ".*\n"
            << std::flush;

  // analysis.potential_map (its kernel is checked before any file is written).
  std::unique_ptr<PotentialMapObserver> potential_map;
  if (cfg.potential_map.every > 0) {
    try {
      potential_map = std::make_unique<PotentialMapObserver>(cfg, prefix + ".potential.dx", nullptr);
    } catch (const std::exception& e) {
      std::cerr << "pairmd run: analysis.potential_map: " << e.what() << "\n";
      return kExitUsage;
    }
    std::cout << "potential map: every " << cfg.potential_map.every << " steps, kernel "
              << potential_map->series().kernel_description() << ", average -> " << potential_map->dx_path() << "\n";
  }

  // Create the output files before the run; if one cannot be created, remove the ones this run
  // created and stop (files of an earlier run that this one would continue stay as they were).
  const bool progress = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  const double dof = degrees_of_freedom(cfg, sys.state.size());
  const TrajectorySpec& ts = cfg.output.trajectory;
  const bool want_traj = ts.every > 0 || ts.velocities_every > 0 || ts.forces_every > 0 || ts.observables_every > 0;
  const std::string traj_path = prefix + ".h5", csv_path = prefix + ".thermo.csv", ck_path = prefix + ".checkpoint.h5";
  const bool appending = !restart.empty();
  std::vector<std::string> created;
  auto exists = [](const std::string& p) { return access(p.c_str(), F_OK) == 0; };
  std::unique_ptr<GridSink> grid_sink;  // outlives the simulation's observers (declared first)
  Simulation sim(cfg, sys.topology, std::move(backend));
  H5mdWriter* writer = nullptr;
  CheckpointWriter* checkpoints = nullptr;
  try {
    std::unique_ptr<H5mdWriter> traj;
    if (want_traj) {
      const bool existed = exists(traj_path);
      traj = std::make_unique<H5mdWriter>(traj_path, cfg, sys.state, sys.topology, dof, appending ? first : -1);
      if (!existed || !appending) created.push_back(traj_path);
      writer = traj.get();
    }
    // The checkpoint directory must be writable (probe with the temporary name it will use).
    const std::string probe = ck_path + ".tmp." + std::to_string(getpid());
    if (FILE* fp = std::fopen(probe.c_str(), "w")) {
      std::fclose(fp);
      std::remove(probe.c_str());
    } else {
      throw std::runtime_error("cannot write the checkpoint '" + ck_path + "': " + std::strerror(errno));
    }
    if (appending) truncate_thermo_csv(csv_path, first);
    const bool csv_existed = exists(csv_path);
    auto thermo = std::make_unique<ThermoLog>(cfg, csv_path, progress, dof, appending && csv_existed);
    if (!csv_existed || !appending) created.push_back(csv_path);
    sim.set_progress(thermo.get());
    // Observers see each step in the order added. The map observer goes before the trajectory:
    // its finish() writes the average into the trajectory file, which the trajectory's own
    // finish() closes. The thermo log comes after the trajectory, so a row at step S means the
    // frame of step S has been written (and, with flush_seconds 0, flushed).
    if (potential_map) {
      if (writer) {
        grid_sink = std::make_unique<H5mdGridSink>(writer);
        potential_map->set_sink(grid_sink.get());
      }
      sim.add_observer(std::move(potential_map));
    }
    if (traj) sim.add_observer(std::move(traj));
    sim.add_observer(std::move(thermo));
    auto ckw = std::make_unique<CheckpointWriter>(ck_path, cfg.output.checkpoint_every, appending ? ck.first_step : first,
                                                  sim.backend().name());
    if (writer) ckw->add_before_write([writer] { writer->flush(); });
    checkpoints = ckw.get();
    sim.add_observer(std::move(ckw));
  } catch (const std::exception& e) {
    std::cerr << "pairmd run: error: " << e.what() << "\n";
    for (const std::string& p : created) std::remove(p.c_str());
    return kExitFailure;
  }

  install_stop_handlers();
  // Exceeding a file-size limit must be a write error we report, not a silent kill.
  std::signal(SIGXFSZ, SIG_IGN);
  const RunResult result = sim.run(last);
  const BackendStats st = sim.backend().stats();
  std::ostringstream summary;
  summary << "performance: " << st.steps << " steps in " << st.seconds_total << " s";
  if (st.seconds_total > 0) summary << " = " << st.steps / st.seconds_total << " steps/s";
  summary << ", " << st.list_builds << " neighbour-list builds";
  if (!st.detail.empty()) summary << " (" << st.detail << ")";
  std::cout << summary.str() << std::endl;

  // Where the last good state went, for the messages below.
  std::ostringstream saved;
  if (checkpoints->last_written_step() == result.last_good_step)
    saved << "checkpoint written to " << checkpoints->path() << " (step " << result.last_good_step << ")";
  else if (!checkpoints->error().empty())
    saved << "no checkpoint of step " << result.last_good_step << ": " << checkpoints->error();
  else
    saved << "no checkpoint of step " << result.last_good_step;
  const std::string again = "pairmd run " + o.config_path + " --restart " + checkpoints->path();
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
      return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace pairmd::cli
