// pairmd demux PREFIX: the trajectories of a temperature replica-exchange ensemble, one per
// temperature. Each replica's trajectory (PREFIX.rNN.h5) follows one configuration through the
// ladder; analysis at one temperature wants the frames that were at that temperature, from
// whichever replica held it. The walk (PREFIX.walk.csv) says which one did at each frame; the
// frames go, in step order, into PREFIX.TNN.h5 (H5MD, as pairmd writes trajectories), temperature
// NN of the ladder, with their energies recomputed on the CPU reference (docs/replicas.md).
//
// The files must be of one ensemble, checked before anything is written: each replica's checkpoint
// is of that replica of one ensemble (the ensemble id of run/ensemble), its trajectory of that
// replica's run (the run id) and of the ensemble's particles, the trajectories' frames are of the
// same steps, and the walk is one the ensemble wrote: rows of consecutive exchanges whose swaps
// the exchanges could make, up to the newest checkpoint's exchange, covering every frame.
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "backends/backend.h"
#include "cli/commands.h"
#include "engine/pulling.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "io/checkpoint.h"
#include "io/h5md.h"
#include "io/h5md_writer.h"
#include "io/hdf5_util.h"
#include "replicas/ensemble.h"
#include "replicas/walk.h"

namespace pairmd::cli {

namespace {

// Input that is not one ensemble's: exit 2 with the message, nothing written.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ReplicaFiles {
  std::string checkpoint, trajectory;
  Checkpoint ck;
  ReplicaCheckpoint rc;
  std::vector<int64_t> steps;  // of its trajectory's frames
};

struct EnsembleInput {
  std::string prefix;
  int k = 0;
  std::vector<ReplicaFiles> replicas;
  RunConfig cfg;            // of replica 0's checkpoint
  int newest = 0;           // the replica whose checkpoint counts the most exchanges
  size_t frames = 0;        // the frames every trajectory has
  std::string frames_note;  // why some frames are left out
  Walk walk;
};

// Replica 0's checkpoint: PREFIX.r0.checkpoint.h5 (or r00, ... as the count of replicas has it).
std::string first_checkpoint(const std::string& prefix) {
  for (int digits = 1; digits <= 7; ++digits) {
    const std::string p = prefix + ".r" + std::string(static_cast<size_t>(digits), '0') + ".checkpoint.h5";
    if (access(p.c_str(), F_OK) == 0) return p;
  }
  return "";
}

ReplicaFiles read_replica_checkpoint(const std::string& path) {
  ReplicaFiles f;
  f.checkpoint = path;
  try {
    f.ck = read_checkpoint(path);
    f.rc = ReplicaCheckpoint::parse(f.ck.ensemble);
  } catch (const std::exception& e) {
    throw BadInput(path + ": " + e.what());
  }
  return f;
}

// Every replica's checkpoint is of that replica of the ensemble replica 0's checkpoint is of.
void read_checkpoints(EnsembleInput& in, const std::string& first) {
  ReplicaFiles zero = read_replica_checkpoint(first);
  in.k = zero.rc.count;
  in.replicas.reserve(static_cast<size_t>(in.k));
  in.replicas.push_back(std::move(zero));
  for (int r = 1; r < in.k; ++r)
    in.replicas.push_back(read_replica_checkpoint(replica_prefix(in.prefix, r, in.k) + ".checkpoint.h5"));
  const ReplicaFiles& r0 = in.replicas[0];
  for (int r = 0; r < in.k; ++r) {
    const ReplicaFiles& f = in.replicas[r];
    if (f.rc.replica != r || f.rc.count != in.k)
      throw BadInput(f.checkpoint + ": the checkpoint of replica " + std::to_string(f.rc.replica) + " of " +
                     std::to_string(f.rc.count) + ", not of replica " + std::to_string(r) + " of " +
                     std::to_string(in.k));
    if (f.rc.ensemble_id != r0.rc.ensemble_id || f.rc.exchange != r0.rc.exchange ||
        f.rc.state.temperatures() != r0.rc.state.temperatures())
      throw BadInput(f.checkpoint + ": of another ensemble than " + r0.checkpoint + " (ensemble ids '" +
                     f.rc.ensemble_id + "' and '" + r0.rc.ensemble_id + "')");
    if (f.ck.state.size() != r0.ck.state.size())
      throw BadInput(f.checkpoint + ": " + std::to_string(f.ck.state.size()) + " particles, " + r0.checkpoint + " " +
                     std::to_string(r0.ck.state.size()));
    if (f.rc.state.exchanges() > in.replicas[in.newest].rc.state.exchanges()) in.newest = r;
  }
}

// The run id a trajectory's /parameters holds ("" where it has none) and its particle count.
std::pair<std::string, size_t> trajectory_identity(const std::string& path) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw BadInput("cannot open '" + path + "' as HDF5 (" + h5::last_error() + ")");
  h5::Handle f(id);
  std::string run_id;
  if (h5::exists(f, "parameters")) {
    h5::Handle params = h5::open_group(f, "parameters");
    if (H5Aexists(params, "run_id") > 0) {
      h5::Handle a(h5::check_id(H5Aopen(params, "run_id", H5P_DEFAULT), "cannot open parameters/run_id"));
      run_id = h5::read_string(a, true, "run_id");
    }
  }
  if (!h5::exists(f, "particles/all/position/value")) throw BadInput(path + ": has no particles/all/position");
  h5::Handle v(h5::check_id(H5Dopen2(f, "particles/all/position/value", H5P_DEFAULT), "cannot open positions"));
  const std::vector<hsize_t> dims = h5::dims_of(v);
  return {run_id, dims.size() == 3 ? static_cast<size_t>(dims[1]) : 0};
}

// Each trajectory is of its replica's run and of the ensemble's particles; the frames are of the
// same steps in every trajectory (one that ends earlier, a run that was killed, sets how many).
void read_trajectories(EnsembleInput& in) {
  for (int r = 0; r < in.k; ++r) {
    ReplicaFiles& f = in.replicas[r];
    f.trajectory = replica_prefix(in.prefix, r, in.k) + ".h5";
    try {
      const auto [run_id, particles] = trajectory_identity(f.trajectory);
      if (run_id != f.ck.run_id)
        throw BadInput(f.trajectory + ": the trajectory of another run (run id '" + run_id + "'; " + f.checkpoint +
                       " is of run '" + f.ck.run_id + "')");
      if (particles != f.ck.state.size())
        throw BadInput(f.trajectory + ": " + std::to_string(particles) + " particles, but the ensemble (" +
                       f.checkpoint + ") has " + std::to_string(f.ck.state.size()));
      f.steps = h5md_position_steps(f.trajectory);
    } catch (const BadInput&) {
      throw;
    } catch (const std::exception& e) {
      throw BadInput(f.trajectory + ": " + e.what());
    }
  }
  in.frames = in.replicas[0].steps.size();
  for (const ReplicaFiles& f : in.replicas) in.frames = std::min(in.frames, f.steps.size());
  const ReplicaFiles& r0 = in.replicas[0];
  for (const ReplicaFiles& f : in.replicas) {
    for (size_t i = 0; i < in.frames; ++i)
      if (f.steps[i] != r0.steps[i])
        throw BadInput(f.trajectory + ": frame " + std::to_string(i) + " is of step " + std::to_string(f.steps[i]) +
                       ", that of " + r0.trajectory + " of step " + std::to_string(r0.steps[i]) +
                       ": the replicas' frames are not of the same steps");
    if (f.steps.size() > in.frames && in.frames > 0)
      in.frames_note = "demux: frames after step " + std::to_string(r0.steps[in.frames - 1]) +
                       " left out: not every replica's trajectory has them (a run that was killed?)";
  }
  if (in.frames == 0) throw BadInput(r0.trajectory + ": no frames");
}

// The walk row of exchange `n` (-1: the start), or null.
const WalkRow* row_of_exchange(const Walk& w, int64_t n) {
  for (const WalkRow& row : w.rows())
    if (row.exchange == n) return &row;
  return nullptr;
}

// The walk is one this ensemble wrote: it reaches the newest checkpoint's exchange with the
// checkpoint's assignment, and it covers every frame (none before its first row, none past a
// meeting whose exchange it lacks).
void read_walk(EnsembleInput& in) {
  const std::string path = EnsembleFiles{in.prefix}.walk();
  try {
    in.walk = read_walk_csv(path);
    check_walk_exchanges(in.walk, path);
  } catch (const std::exception& e) {
    throw BadInput(e.what());
  }
  if (in.walk.replicas() != in.k || in.walk.rows().empty())
    throw BadInput(path + ": " + std::to_string(in.walk.replicas()) + " replicas, not " + std::to_string(in.k));
  const ReplicaFiles& newest = in.replicas[in.newest];
  const ExchangeState& e = newest.rc.state;
  const WalkRow& last = in.walk.rows().back();
  if (last.exchange < e.exchanges() - 1)
    throw BadInput(path + ": ends at exchange " + std::to_string(last.exchange) + " (step " +
                   std::to_string(last.step) + "), but " + newest.checkpoint + " counts " +
                   std::to_string(e.exchanges()) + " exchanges, the last at step " +
                   std::to_string(e.last_exchange_step()) + ": rows are missing");
  const WalkRow* row = row_of_exchange(in.walk, e.exchanges() - 1);
  if (!row || row->temperature != e.temperature_indices() || (e.exchanges() > 0 && row->step != e.last_exchange_step()))
    throw BadInput(path + ": its row of exchange " + std::to_string(e.exchanges() - 1) +
                   " does not match the assignment of temperatures in " + newest.checkpoint + " (step " +
                   std::to_string(e.last_exchange_step()) + "): the walk of another run?");
  int64_t checkpoint_step = 0;
  for (const ReplicaFiles& f : in.replicas) checkpoint_step = std::max(checkpoint_step, f.ck.state.step);
  const std::vector<int64_t>& steps = in.replicas[0].steps;
  const int64_t every = in.cfg.replicas.exchange_every;
  for (size_t i = 0; i < in.frames; ++i) {
    const WalkRow* at = in.walk.at_frame(steps[i]);
    if (!at)
      throw BadInput(path + ": begins at step " + std::to_string(in.walk.rows().front().step) +
                     ", after the frame of step " + std::to_string(steps[i]) + " in " + in.replicas[0].trajectory);
    // Past the checkpoints, the run went on to meetings whose exchanges the walk must have.
    if (steps[i] > checkpoint_step && at == &last && next_multiple(last.step, every) <= steps[i])
      throw BadInput(path + ": ends at exchange " + std::to_string(last.exchange) + " (step " +
                     std::to_string(last.step) + "), but " + in.replicas[0].trajectory + " has frames up to step " +
                     std::to_string(steps[in.frames - 1]) + ", after the exchange of step " +
                     std::to_string(next_multiple(last.step, every)) + ": rows are missing");
  }
}

// Reads and checks everything demux needs; throws BadInput.
EnsembleInput read_ensemble(const std::string& prefix, const std::string& first) {
  EnsembleInput in;
  in.prefix = prefix;
  read_checkpoints(in, first);
  const ReplicaFiles& r0 = in.replicas[0];
  try {
    in.cfg = parse_config(r0.ck.config_text, r0.ck.config_path, r0.ck.overrides);
  } catch (const std::exception& e) {
    throw BadInput(r0.checkpoint + ": " + e.what());
  }
  if (!r0.rc.exchange)
    throw BadInput(prefix +
                   " is an ensemble of independent replicas: each replica's trajectory is already at one "
                   "temperature");
  read_trajectories(in);
  read_walk(in);
  return in;
}

// The per-temperature files: every frame, as it was written, with its energies recomputed.
int64_t write_temperatures(const EnsembleInput& in, const std::vector<std::string>& outs) {
  const int k = in.k;
  const Checkpoint& ck = in.replicas[0].ck;
  const std::vector<double>& ladder = in.replicas[0].rc.state.temperatures();
  const std::vector<int64_t>& steps = in.replicas[0].steps;
  const H5mdFrame first = read_h5md_frame_inprocess(in.replicas[0].trajectory, 0);
  RunConfig cfg = in.cfg;
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
  for (int t = 0; t < k; ++t) {
    cfgs[t].model.integrator.temperature = ladder[t];
    writers.push_back(std::make_unique<H5mdWriter>(outs[t], cfgs[t], first.state, ck.topology, dof));
  }
  int64_t written = 0;
  const int64_t begin = steps.front(), end = steps[in.frames - 1];
  for (size_t i = 0; i < in.frames; ++i) {
    for (int t = 0; t < k; ++t) {
      const ReplicaFiles& from = in.replicas[in.walk.replica_at(t, steps[i])];
      const H5mdFrame f = read_h5md_frame_inprocess(from.trajectory, static_cast<int64_t>(i));
      if (f.state.size() != first.state.size() || f.state.step != steps[i])
        throw BadInput(from.trajectory + ": frame " + std::to_string(i) + " is not of step " +
                       std::to_string(steps[i]) + " with " + std::to_string(first.state.size()) + " particles");
      cpu->set_state(f.state);
      const Observables obs = cpu->observables();
      writers[t]->observe(RunContext{cfgs[t], ck.topology, *cpu, begin, end}, Frame{f.state, obs, f.time});
      ++written;
    }
  }
  for (int t = 0; t < k; ++t) {
    SystemState none = first.state;
    none.step = -1;
    writers[t]->finish(RunContext{cfgs[t], ck.topology, *cpu, begin, end}, Frame{none, Observables{}, 0.0});
  }
  return written;
}

struct DemuxOptions {
  std::string prefix, out;
  bool overwrite = false;
};

int demux(const DemuxOptions& o) {
  const std::string& prefix = o.prefix;
  const std::string out = o.out.empty() ? prefix : o.out;
  const bool overwrite = o.overwrite;
  const std::string first = first_checkpoint(prefix);
  if (first.empty()) {
    std::cerr << "pairmd demux: no replica checkpoint " << prefix << ".r0.checkpoint.h5 (or .r00...): is '" << prefix
              << "' the prefix of a replica ensemble?\n";
    return kExitUsage;
  }
  EnsembleInput in;
  try {
    in = read_ensemble(prefix, first);
  } catch (const std::exception& e) {
    std::cerr << "pairmd demux: " << e.what() << "; nothing was written\n";
    return kExitUsage;
  }
  const int k = in.k;
  std::vector<std::string> outs(k);
  for (int t = 0; t < k; ++t) outs[t] = out + ".T" + replica_tag(t, k).substr(1) + ".h5";
  for (const std::string& f : outs)
    if (access(f.c_str(), F_OK) == 0) {
      if (!overwrite) {
        std::cerr << "pairmd demux: " << f << " exists (an earlier demux?); add --overwrite to replace it\n";
        return kExitUsage;
      }
      std::remove(f.c_str());
    }
  int64_t written = 0;
  try {
    written = write_temperatures(in, outs);
  } catch (const std::exception& e) {
    // The files this demux began are of no use half-written.
    for (const std::string& f : outs) std::remove(f.c_str());
    const bool bad = dynamic_cast<const BadInput*>(&e) != nullptr;
    std::cerr << "pairmd demux: " << (bad ? "" : "error: ") << e.what() << "; nothing was written\n";
    return bad ? kExitUsage : kExitFailure;
  }
  const std::vector<double>& ladder = in.replicas[0].rc.state.temperatures();
  std::cout << "demux: " << written << " frames of " << k << " replicas into";
  for (int t = 0; t < k; ++t) std::cout << " " << outs[t] << " (T " << ladder[t] << ")";
  std::cout << "\n";
  if (!in.frames_note.empty()) std::cout << in.frames_note << "\n";
  return kExitOk;
}

}  // namespace

Command add_demux(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "demux", "one trajectory per temperature from a replica-exchange ensemble (docs/replicas.md)",
      "Write one trajectory per temperature (PREFIX.TNN.h5) from the replica trajectories (PREFIX.rNN.h5) of a "
      "temperature replica-exchange run and its walk (PREFIX.walk.csv); docs/replicas.md.");
  auto o = std::make_shared<DemuxOptions>();
  sub->add_option("PREFIX", o->prefix, "the ensemble's output prefix (its files are PREFIX.rNN.*, PREFIX.walk.csv)")
      ->check(not_empty("a prefix"))
      ->required();
  sub->add_option("--out", o->out, "prefix of the files written (default: PREFIX): OUT.T0.h5, OUT.T1.h5, ...")
      ->check(not_empty("a prefix"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_flag("--overwrite", o->overwrite, "replace files of an earlier demux");
  return [o](const Args&) { return demux(*o); };
}

}  // namespace pairmd::cli
