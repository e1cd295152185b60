#include "session/run_outputs.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/gsd_writer.h"
#include "io/pull_log.h"

namespace pairmd {

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

}  // namespace

std::unique_ptr<PotentialMapObserver> make_potential_map_observer(const RunPlan& p) {
  if (p.cfg.potential_map.every <= 0) return nullptr;
  return std::make_unique<PotentialMapObserver>(p.cfg, p.files.potential_map(), nullptr);
}

void open_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p,
                  std::unique_ptr<PotentialMapObserver> potential_map, Simulation& sim, Outputs& out, RunLog& log,
                  const std::string& command) {
  std::ostream& say = log.out();
  const RunConfig& cfg = p.cfg;
  const OutputFiles& files = p.files;
  if (r.overwrite)
    for (const std::string& f : earlier_run_files(files)) {
      if (std::remove(f.c_str()) != 0)
        throw std::runtime_error(fe.overwrite + ": cannot remove '" + f + "': " + std::strerror(errno));
      say << "overwrite: removed " << f << " (" << fe.overwrite << ")\n";
    }
  for (const std::string& f : files.stale_temporaries())
    if (std::remove(f.c_str()) == 0) say << "removed " << f << ", left by a run that was killed\n";

  const bool progress = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  const double dof = degrees_of_freedom(cfg, p.sys.state.size());
  const TrajectorySpec& ts = cfg.output.trajectory;
  const bool want_traj = ts.every > 0 || ts.velocities_every > 0 || ts.forces_every > 0 || ts.observables_every > 0;
  // The files this run creates: every file of the set that is not there now. If opening fails
  // half way (a full disk, a name HDF5 cannot store), those that exist by then are removed, also
  // where a writer failed after creating its file.
  auto exists = [](const std::string& f) { return access(f.c_str(), F_OK) == 0; };
  std::vector<std::string> created;
  for (const std::string& f : files.all())
    if (!exists(f)) created.push_back(f);
  try {
    std::unique_ptr<H5mdWriter> traj;
    if (want_traj) {
      traj = std::make_unique<H5mdWriter>(files.trajectory(), cfg, p.sys.state, p.sys.topology, dof,
                                          p.continues_files ? p.first : -1);
      if (traj->frames_dropped() > 0)
        say << "restart: dropped " << traj->frames_dropped() << " frame(s) after step " << p.first << " from "
            << files.trajectory() << " (written after the checkpoint; the run writes them again)\n";
      out.writer = traj.get();
    }
    std::unique_ptr<GsdWriter> gsd;
    if (cfg.output.gsd.every > 0) {
      gsd = std::make_unique<GsdWriter>(files.gsd(), cfg, p.sys.state, p.sys.topology, dof,
                                        p.continues_files ? p.first : -1);
      if (gsd->frames_dropped() > 0)
        say << "restart: dropped " << gsd->frames_dropped() << " frame(s) after step " << p.first << " from "
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
        say << "restart: dropped " << rows << " row(s) after step " << p.first << " from " << files.thermo() << "\n";
    }
    // The pulling's record (io/pull_log.h); added before the trajectory, whose finish() closes
    // the file that the record's observables go into.
    std::unique_ptr<PullLog> pull;
    if (p.sys.pulling.active()) {
      if (p.continues_files) {
        const int64_t rows = truncate_thermo_csv(files.pull(), p.first);
        if (rows > 0)
          say << "restart: dropped " << rows << " row(s) after step " << p.first << " from " << files.pull() << "\n";
      }
      const bool pull_existed = exists(files.pull());
      pull = std::make_unique<PullLog>(cfg, p.sys.pulling, files.pull(), p.continues_files && pull_existed, out.writer,
                                       files.pull_plot());
    }
    const bool csv_existed = exists(files.thermo());
    auto thermo =
        std::make_unique<ThermoLog>(cfg, files.thermo(), progress, dof, p.continues_files && csv_existed, say);
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
    auto ckw =
        std::make_unique<CheckpointWriter>(files.checkpoint(), cfg.output.checkpoint_every,
                                           p.restart ? p.ck.first_step : p.first, sim.backend().name(), files.prefix);
    ckw->set_pulling(p.sys.pulling);
    if (H5mdWriter* w = out.writer) ckw->add_before_write([w] { w->flush(); });
    if (gsd_writer) ckw->add_before_write([gsd_writer] { gsd_writer->flush(); });
    out.checkpoints = ckw.get();
    sim.add_observer(std::move(ckw));
    // The log last, once every other output is open (a restart refused by its trajectory leaves
    // the log as it was): from here on everything printed goes into it too, and what was
    // printed before, held until now.
    log.open(files.log(), p.continues_files, command);
  } catch (...) {
    // Not the log that is this command's own output (a shell redirect made it, not the run).
    for (const std::string& f : created)
      if (standard_streams_at(f) == 0) std::remove(f.c_str());
    throw;
  }
}

}  // namespace pairmd
