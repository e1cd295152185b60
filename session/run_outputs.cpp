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

namespace {

bool exists(const std::string& f) { return access(f.c_str(), F_OK) == 0; }

// --overwrite: the files of an earlier run on this prefix go; temporaries a killed run left go too.
void remove_replaced_files(const RunRequest& r, const FrontEnd& fe, const OutputFiles& files, std::ostream& say) {
  if (r.overwrite)
    for (const std::string& f : earlier_run_files(files)) {
      if (std::remove(f.c_str()) != 0)
        throw std::runtime_error(fe.overwrite + ": cannot remove '" + f + "': " + std::strerror(errno));
      say << "overwrite: removed " << f << " (" << fe.overwrite << ")\n";
    }
  for (const std::string& f : files.stale_temporaries())
    if (std::remove(f.c_str()) == 0) say << "removed " << f << ", left by a run that was killed\n";
}

// A restart into its run's files drops the rows of a CSV after its step (the run writes them again).
void drop_rows_after_restart(const RunPlan& p, const std::string& csv, std::ostream& say) {
  if (!p.continues_files) return;
  const int64_t rows = truncate_thermo_csv(csv, p.first);
  if (rows > 0) say << "restart: dropped " << rows << " row(s) after step " << p.first << " from " << csv << "\n";
}

void say_frames_dropped(const RunPlan& p, int64_t frames, const std::string& file, std::ostream& say) {
  if (frames > 0)
    say << "restart: dropped " << frames << " frame(s) after step " << p.first << " from " << file
        << " (written after the checkpoint; the run writes them again)\n";
}

// The H5MD trajectory, where output.trajectory writes anything (null otherwise).
std::unique_ptr<H5mdWriter> open_trajectory(const RunPlan& p, double dof, std::ostream& say) {
  const TrajectorySpec& ts = p.cfg.output.trajectory;
  if (ts.every <= 0 && ts.velocities_every <= 0 && ts.forces_every <= 0 && ts.observables_every <= 0) return nullptr;
  auto traj = std::make_unique<H5mdWriter>(p.files.trajectory(), p.cfg, p.sys.state, p.sys.topology, dof,
                                           p.continues_files ? p.first : -1);
  say_frames_dropped(p, traj->frames_dropped(), p.files.trajectory(), say);
  return traj;
}

std::unique_ptr<GsdWriter> open_gsd(const RunPlan& p, double dof, std::ostream& say) {
  if (p.cfg.output.gsd.every <= 0) return nullptr;
  auto gsd = std::make_unique<GsdWriter>(p.files.gsd(), p.cfg, p.sys.state, p.sys.topology, dof,
                                         p.continues_files ? p.first : -1);
  say_frames_dropped(p, gsd->frames_dropped(), p.files.gsd(), say);
  return gsd;
}

// The checkpoint directory must be writable (probe with the temporary name it will use).
void check_checkpoint_writable(const OutputFiles& files) {
  const std::string probe = files.checkpoint() + ".tmp." + std::to_string(getpid());
  FILE* fp = std::fopen(probe.c_str(), "wx");
  if (!fp)
    throw std::runtime_error("cannot write the checkpoint '" + files.checkpoint() + "': " + std::strerror(errno));
  std::fclose(fp);
  std::remove(probe.c_str());
}

// The pulling's record (io/pull_log.h), where the run pulls (null otherwise).
std::unique_ptr<PullLog> open_pull_log(const RunPlan& p, H5mdWriter* writer, std::ostream& say) {
  if (!p.sys.pulling.active()) return nullptr;
  drop_rows_after_restart(p, p.files.pull(), say);
  const bool existed = exists(p.files.pull());
  return std::make_unique<PullLog>(p.cfg, p.sys.pulling, p.files.pull(), p.continues_files && existed, writer,
                                   p.files.pull_plot());
}

// The checkpoints, written after the trajectory and GSD file are flushed.
void add_checkpoint_writer(const RunPlan& p, Simulation& sim, GsdWriter* gsd, Outputs& out) {
  auto ckw =
      std::make_unique<CheckpointWriter>(p.files.checkpoint(), p.cfg.output.checkpoint_every,
                                         p.restart ? p.ck.first_step : p.first, sim.backend().name(), p.files.prefix);
  ckw->set_pulling(p.sys.pulling);
  if (H5mdWriter* w = out.writer) ckw->add_before_write([w] { w->flush(); });
  if (gsd) ckw->add_before_write([gsd] { gsd->flush(); });
  out.checkpoints = ckw.get();
  sim.add_observer(std::move(ckw));
}

// Opens every output and adds the observers in the order a step shows them the state. The map
// observer goes before the trajectory: its finish() writes the average into the trajectory file,
// which the trajectory's own finish() closes; so does the pulling's record, whose observables go
// into that file. The thermo log comes after the trajectory, so a row at step S means the frame
// of step S has been handed to the trajectory (and, with flush_seconds 0, written and flushed).
void open_and_add_observers(const RunPlan& p, std::unique_ptr<PotentialMapObserver> potential_map, Simulation& sim,
                            Outputs& out, std::ostream& say) {
  const RunConfig& cfg = p.cfg;
  const OutputFiles& files = p.files;
  const bool progress = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  const double dof = degrees_of_freedom(cfg, p.sys.state.size());
  std::unique_ptr<H5mdWriter> traj = open_trajectory(p, dof, say);
  out.writer = traj.get();
  std::unique_ptr<GsdWriter> gsd = open_gsd(p, dof, say);
  check_checkpoint_writable(files);
  drop_rows_after_restart(p, files.thermo(), say);
  std::unique_ptr<PullLog> pull = open_pull_log(p, out.writer, say);
  const bool csv_existed = exists(files.thermo());
  auto thermo = std::make_unique<ThermoLog>(cfg, files.thermo(), progress, dof, p.continues_files && csv_existed, say);
  sim.set_progress(thermo.get());
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
  add_checkpoint_writer(p, sim, gsd_writer, out);
}

}  // namespace

void open_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p,
                  std::unique_ptr<PotentialMapObserver> potential_map, Simulation& sim, Outputs& out, RunLog& log,
                  const std::string& command) {
  std::ostream& say = log.out();
  remove_replaced_files(r, fe, p.files, say);
  // The files this run creates: every file of the set that is not there now. If opening fails
  // half way (a full disk, a name HDF5 cannot store), those that exist by then are removed, also
  // where a writer failed after creating its file.
  std::vector<std::string> created;
  for (const std::string& f : p.files.all())
    if (!exists(f)) created.push_back(f);
  try {
    open_and_add_observers(p, std::move(potential_map), sim, out, say);
    // The log last, once every other output is open (a restart refused by its trajectory leaves
    // the log as it was): from here on everything printed goes into it too, and what was
    // printed before, held until now.
    log.open(p.files.log(), p.continues_files, command);
  } catch (...) {
    // Not the log that is this command's own output (a shell redirect made it, not the run).
    for (const std::string& f : created)
      if (standard_streams_at(f) == 0) std::remove(f.c_str());
    throw;
  }
}

}  // namespace pairmd
