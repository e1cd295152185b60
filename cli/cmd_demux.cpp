// pairmd demux PREFIX: the trajectories of a temperature replica-exchange ensemble, one per
// temperature. Each replica's trajectory (PREFIX.rNN.h5) follows one configuration through the
// ladder; analysis at one temperature wants the frames that were at that temperature, from
// whichever replica held it. The walk (PREFIX.walk.csv) says which one did at each frame; the
// frames go, in step order, into PREFIX.TNN.h5 (H5MD, as pairmd writes trajectories), temperature
// NN of the ladder, with their energies recomputed on the CPU reference (docs/replicas.md).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "backends/backend.h"
#include "cli/commands.h"
#include "engine/pulling.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "io/checkpoint.h"
#include "io/h5md.h"
#include "io/h5md_writer.h"
#include "replicas/ensemble.h"
#include "replicas/walk.h"

namespace pairmd::cli {

int cmd_demux(const Args& args) {
  std::string prefix, out;
  bool overwrite = false;
  CLI::App app{
      "Write one trajectory per temperature (PREFIX.TNN.h5) from the replica trajectories (PREFIX.rNN.h5) "
      "of a temperature replica-exchange run and its walk (PREFIX.walk.csv); docs/replicas.md.",
      "pairmd demux"};
  prepare_app(app);
  app.add_option("PREFIX", prefix, "the ensemble's output prefix (its files are PREFIX.rNN.*, PREFIX.walk.csv)");
  app.add_option("--out", out, "prefix of the files written (default: PREFIX): OUT.T00.h5, OUT.T01.h5, ...");
  app.add_flag("--overwrite", overwrite, "replace files of an earlier demux");
  if (const int rc = parse_command_line(app, args, {"demux", "", ""}); rc != kParsed) return rc;
  if (prefix.empty()) {
    std::cerr << "pairmd demux: usage: pairmd demux PREFIX [--out OUT] [--overwrite]\n";
    return kExitUsage;
  }
  if (out.empty()) out = prefix;

  // Replica 0's checkpoint says how many replicas there are, the ladder and the config.
  Checkpoint ck;
  std::string ck_path;
  for (int digits = 1; digits <= 7 && ck_path.empty(); ++digits) {
    const std::string p = prefix + ".r" + std::string(static_cast<size_t>(digits), '0') + ".checkpoint.h5";
    if (access(p.c_str(), F_OK) == 0) ck_path = p;
  }
  if (ck_path.empty()) {
    std::cerr << "pairmd demux: no replica checkpoint " << prefix << ".r0.checkpoint.h5 (or .r00...): is '" << prefix
              << "' the prefix of a replica ensemble?\n";
    return kExitUsage;
  }
  ReplicaCheckpoint rc;
  RunConfig cfg;
  try {
    ck = read_checkpoint(ck_path);
    rc = ReplicaCheckpoint::parse(ck.ensemble);
    cfg = parse_config(ck.config_text, ck.config_path, ck.overrides);
  } catch (const std::exception& e) {
    std::cerr << "pairmd demux: " << ck_path << ": " << e.what() << "\n";
    return kExitUsage;
  }
  if (!rc.exchange) {
    std::cerr << "pairmd demux: " << prefix << " is an ensemble of independent replicas: each replica's trajectory is "
              << "already at one temperature\n";
    return kExitUsage;
  }
  const int k = rc.count;
  const std::vector<double>& ladder = rc.state.temperatures();
  Walk walk;
  std::vector<std::vector<int64_t>> steps(k);
  std::vector<std::string> traj(k), outs(k);
  try {
    walk = read_walk_csv(EnsembleFiles{prefix}.walk());
    if (walk.replicas() != k)
      throw std::runtime_error("the walk has " + std::to_string(walk.replicas()) + " replicas, not " +
                               std::to_string(k));
    for (int r = 0; r < k; ++r) {
      traj[r] = replica_prefix(prefix, r, k) + ".h5";
      steps[r] = h5md_position_steps(traj[r]);
      outs[r] = out + ".T" + replica_tag(r, k).substr(1) + ".h5";
    }
  } catch (const std::exception& e) {
    std::cerr << "pairmd demux: " << e.what() << "\n";
    return kExitUsage;
  }
  for (const std::string& f : outs)
    if (access(f.c_str(), F_OK) == 0) {
      if (!overwrite) {
        std::cerr << "pairmd demux: " << f << " exists (an earlier demux?); add --overwrite to replace it\n";
        return kExitUsage;
      }
      std::remove(f.c_str());
    }

  // Every frame, as it was written, with its energies recomputed.
  const H5mdFrame first = read_h5md_frame_inprocess(traj[0], 0);
  cfg.backend = "cpu";
  cfg.output.trajectory.every = 1;
  cfg.output.trajectory.velocities_every = first.has_velocity ? 1 : 0;
  cfg.output.trajectory.forces_every = 0;
  cfg.output.trajectory.observables_every = 1;
  // The model as the run had it (make_model): the checkpoint's topology, the pulling of the run's
  // start (session/run_plan.cpp's build_start does the same on a restart).
  BuiltSystem sys;
  sys.state = first.state;
  sys.topology = ck.topology;
  sys.pulling = pulling_needs_start(cfg) ? build_system(cfg).pulling : resolve_pulling(cfg, sys.state);
  std::unique_ptr<Backend> cpu = make_backend("cpu", make_model(cfg, sys), first.state);
  const double dof = degrees_of_freedom(cfg, first.state.size());
  std::vector<RunConfig> cfgs(k, cfg);
  std::vector<std::unique_ptr<H5mdWriter>> writers;
  std::vector<std::map<int64_t, int64_t>> frame_of(k);  // replica -> step -> frame index
  for (int r = 0; r < k; ++r)
    for (size_t i = 0; i < steps[r].size(); ++i) frame_of[r][steps[r][i]] = static_cast<int64_t>(i);
  int64_t written = 0, skipped = 0;
  try {
    for (int t = 0; t < k; ++t) {
      cfgs[t].model.integrator.temperature = ladder[t];
      writers.push_back(std::make_unique<H5mdWriter>(outs[t], cfgs[t], first.state, ck.topology, dof));
    }
    for (const int64_t s : steps[0]) {
      for (int t = 0; t < k; ++t) {
        const int r = walk.replica_at(t, s);
        auto it = r >= 0 ? frame_of[r].find(s) : frame_of[0].end();
        if (r < 0 || it == frame_of[r].end()) {
          ++skipped;
          continue;
        }
        const H5mdFrame f = read_h5md_frame_inprocess(traj[r], it->second);
        cpu->set_state(f.state);
        const Observables obs = cpu->observables();
        const RunContext ctx{cfgs[t], ck.topology, *cpu, steps[0].front(), steps[0].back()};
        writers[t]->observe(ctx, Frame{f.state, obs, f.time});
        ++written;
      }
    }
    for (int t = 0; t < k; ++t) {
      const RunContext ctx{cfgs[t], ck.topology, *cpu, steps[0].front(), steps[0].back()};
      SystemState none = first.state;
      none.step = -1;
      const Observables obs{};
      writers[t]->finish(ctx, Frame{none, obs, 0.0});
    }
  } catch (const std::exception& e) {
    std::cerr << "pairmd demux: error: " << e.what() << "\n";
    return kExitFailure;
  }
  std::cout << "demux: " << written << " frames of " << k << " replicas into";
  for (int t = 0; t < k; ++t) std::cout << " " << outs[t] << " (T " << ladder[t] << ")";
  std::cout << "\n";
  if (skipped > 0) std::cout << "demux: " << skipped << " frame(s) before the walk's first row were left out\n";
  return kExitOk;
}

}  // namespace pairmd::cli
