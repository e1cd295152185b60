#include "replicas/ensemble_plan.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "replicas/checkpoint_set.h"
#include "replicas/ensemble.h"
#include "session/run_setup.h"

namespace pairmd {

namespace {

// Whether this run is a replica of an ensemble: the config has a replicas section. Throws
// ConfigError when the ranks do not match it (K replicas need K ranks of `comm`, which runs
// replicas.count / MPI ranks of them in each MPI rank where the count is a multiple of the MPI
// ranks: cli/cmd_run.cpp; more than one rank needs a replicas section).
bool check_ensemble(const RunConfig& cfg, Communicator& comm, const FrontEnd& fe) {
  const int k = cfg.replicas.count;
  if (k == 0) {
    if (comm.size() > 1)
      throw ConfigError(fe.who + ": started as " + std::to_string(comm.size()) + " MPI ranks, but " + cfg.path +
                        " has no replicas section (replicas: {count: " + std::to_string(comm.size()) +
                        ", ...}; docs/replicas.md)");
    return false;
  }
  if (k != comm.size()) {
    auto it = cfg.locations.find("replicas.count");
    const std::string where = it != cfg.locations.end() ? it->second : cfg.path;
    if (comm.size() > 1)
      throw ConfigError(where + ": replicas.count: " + std::to_string(k) +
                        " replicas cannot be shared out evenly among " + std::to_string(comm.size()) +
                        " MPI ranks: every rank runs replicas.count / ranks of them, so " +
                        "the count must be a multiple of the ranks (mpirun -np R with R dividing " + std::to_string(k) +
                        "; docs/replicas.md)");
    std::string how = "start it with mpirun -np " + std::to_string(k) + " pairmd run ...";
    if (!mpi_built())
      how =
          "this pairmd was built without MPI, so it runs one replica alone (install Open MPI and build again: "
          "scripts/setup.sh; docs/replicas.md)";
    else if (!mpi_launched())
      how = "this pairmd was not started by mpirun; " + how;
    throw ConfigError(where + ": replicas.count: " + std::to_string(k) + " replicas need " + std::to_string(k) +
                      " MPI ranks, one each, but this run has " + std::to_string(comm.size()) + ": " + how);
  }
  return true;
}

// A replica's own settings: its seed (independent replicas differ by seed) and, with exchange,
// its temperature of the ladder (also the temperature its velocities are drawn at).
void configure_replica(RunPlan& p, const ReplicaPlan& rp) {
  IntegratorSettings& in = p.cfg.model.integrator;
  in.seed = replica_seed(in.seed, rp.replica);
  if (rp.exchange) in.temperature = rp.exchange_state.temperature_of(rp.replica);
}

// What the hooks need of the request (a copy: the request holds the hooks), and the id a new
// ensemble gets.
struct Asked {
  std::string restart, output, new_ensemble_id;
};

// An id of 64 bits in hex as two numbers of 32 bits (exact in doubles), for the collectives.
std::vector<double> id_words(const std::string& id) {
  const unsigned long long v = std::strtoull(id.c_str(), nullptr, 16);
  return {static_cast<double>(v >> 32), static_cast<double>(v & 0xffffffffull)};
}

std::string id_of_words(double high, double low) {
  const unsigned long long v = (static_cast<unsigned long long>(high) << 32) | static_cast<unsigned long long>(low);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", v);
  return buf;
}

void setup_new(const Asked& r, Communicator& comm, RunPlan& p, ReplicaPlan& rp) {
  rp.replica = comm.rank();
  rp.count = p.cfg.replicas.count;
  rp.base_prefix = r.output.empty() ? output_prefix(p.cfg) : r.output;
  rp.ensemble_id = r.new_ensemble_id;
  rp.exchange = p.cfg.replicas.exchange;
  const uint64_t seed = p.cfg.model.integrator.seed;
  if (rp.exchange)
    rp.exchange_state = ExchangeState(p.cfg.replicas.temperatures, p.cfg.model.units.kB,
                                      p.cfg.replicas.seed != 0 ? p.cfg.replicas.seed : seed);
  configure_replica(p, rp);
}

void setup_restart(const Asked& r, const FrontEnd& fe, Communicator& comm, RunPlan& p, ReplicaPlan& rp) {
  if (p.ck.ensemble.empty())
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart +
                      "' is the checkpoint of a single run, not of a replica" +
                      " (an ensemble restarts from PREFIX.r{replica}.checkpoint.h5)");
  ReplicaCheckpoint rc;
  try {
    rc = ReplicaCheckpoint::parse(p.ck.ensemble);
  } catch (const std::exception& e) {
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart + "': " + e.what());
  }
  rp.replica = comm.rank();
  rp.count = p.cfg.replicas.count;
  if (rc.replica != rp.replica || rc.count != rp.count)
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart + "' is the checkpoint of replica " +
                      std::to_string(rc.replica) + " of " + std::to_string(rc.count) + ", but this rank runs replica " +
                      std::to_string(rp.replica) + " of " + std::to_string(rp.count) + " (give " + fe.restart +
                      " PREFIX.r{replica}.checkpoint.h5: each rank reads its own)");
  if (rc.exchange != p.cfg.replicas.exchange)
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart + "' is of a run with replicas.mode " +
                      (rc.exchange ? "exchange" : "independent") + "; the config now says otherwise");
  rp.exchange = rc.exchange;
  rp.exchange_state = rc.state;
  rp.base_prefix = r.output.empty() ? rc.base_prefix : r.output;
  // The ensemble keeps its id in its own files; new files are a new ensemble's.
  const bool same_files = r.output.empty() || same_prefix(r.output, rc.base_prefix);
  rp.ensemble_id = same_files && !rc.ensemble_id.empty() ? rc.ensemble_id : r.new_ensemble_id;
  if (rp.exchange && rp.exchange_state.temperatures() != p.cfg.replicas.temperatures)
    p.notes.push_back("restart: the ladder is the checkpoint's (the exchange state holds it), not the config's");
  configure_replica(p, rp);
}

}  // namespace

void plan_replicas(RunRequest& r, const FrontEnd& fe, Communicator& comm, ReplicaPlan& rp) {
  const std::vector<double> ids = comm.allgather(id_words(new_run_id()));
  r.replica_setup = [r = Asked{r.restart, r.output, id_of_words(ids[0], ids[1])}, fe, &comm, &rp](RunPlan& p) {
    if (!check_ensemble(p.cfg, comm, fe)) {
      if (p.restart && !p.ck.ensemble.empty())
        throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart +
                          "' is the checkpoint of a replica of an ensemble; restart the whole ensemble (mpirun -np K " +
                          "pairmd run " + fe.restart + " PREFIX.r{replica}.checkpoint.h5; docs/replicas.md)");
      return;
    }
    if (p.restart)
      setup_restart(r, fe, comm, p, rp);
    else
      setup_new(r, comm, p, rp);
    // Ranks of a node share its GPUs: rank i takes GPU i mod count.
    if (planned_backend(p.cfg) == "cuda") select_cuda_device(comm.local_rank());
  };
  r.replica_prefix = [&rp](const std::string& base) {
    return rp.replica >= 0 ? replica_prefix(base, rp.replica, rp.count) : base;
  };
}

void check_existing_ensemble_files(const FrontEnd& fe, bool overwrite, const RunPlan& p, const ReplicaPlan& rp,
                                   bool remove, std::ostream& out) {
  const EnsembleFiles files{rp.base_prefix};
  const std::vector<std::string> there = files.existing();
  if (there.empty() || (p.restart && p.continues_files)) return;
  if (overwrite) {
    if (!remove) return;
    for (const std::string& f : there) {
      if (std::remove(f.c_str()) != 0)
        throw std::runtime_error(fe.overwrite + ": cannot remove '" + f + "': " + std::strerror(errno));
      out << "overwrite: removed " << f << " (" << fe.overwrite << ")\n";
    }
    return;
  }
  std::string list;
  for (const std::string& f : there) list += (list.empty() ? "" : ", ") + f;
  throw ConfigError(fe.who + ": the output prefix '" + rp.base_prefix +
                    "' holds the ensemble files of an earlier run (" + list +
                    "); nothing was written\n  to replace them:  add " + fe.overwrite +
                    "\n  to keep them:     choose another prefix with " + fe.output_example);
}

void check_existing_common_checkpoint(const FrontEnd& fe, bool overwrite, const RunPlan& p, bool remove,
                                      std::ostream& out) {
  const std::string common = common_checkpoint_path(p.files.checkpoint());
  // A link left by a run killed while it renamed one: only runs on this prefix write it.
  if (remove) std::remove((common + ".tmp").c_str());
  if (access(common.c_str(), F_OK) != 0 || (p.restart && p.continues_files)) return;
  if (overwrite) {
    if (!remove) return;
    if (std::remove(common.c_str()) != 0)
      throw std::runtime_error(fe.overwrite + ": cannot remove '" + common + "': " + std::strerror(errno));
    out << "overwrite: removed " << common << " (" << fe.overwrite << ")\n";
    return;
  }
  throw ConfigError(fe.who + ": the output prefix '" + p.files.prefix + "' holds a file of an earlier run (" + common +
                    "); nothing was written\n  to replace it:  add " + fe.overwrite +
                    "\n  to keep it:     choose another prefix with " + fe.output_example);
}

std::string check_same_start(Communicator& comm, int64_t first, const ReplicaPlan& rp, const FrontEnd& fe) {
  std::vector<double> mine = id_words(rp.ensemble_id);
  mine.insert(mine.begin(), {static_cast<double>(first), static_cast<double>(rp.exchange_state.exchanges())});
  const std::vector<double> all = comm.allgather(mine);
  bool same = true, one_ensemble = true;
  for (int r = 0; r < comm.size(); ++r) {
    same = same && all[4 * r] == all[0] && all[4 * r + 1] == all[1];
    one_ensemble = one_ensemble && all[4 * r + 2] == all[2] && all[4 * r + 3] == all[3];
  }
  if (!one_ensemble) {
    std::ostringstream s;
    s << fe.who << ": " << fe.restart << ": the replicas' checkpoints are of different ensembles (ids";
    for (int r = 0; r < comm.size(); ++r) s << " " << id_of_words(all[4 * r + 2], all[4 * r + 3]);
    s << "); nothing was written. Restart from the checkpoints of one ensemble";
    return s.str();
  }
  if (same) return "";
  std::ostringstream s;
  s << fe.who << ": " << fe.restart << ": the replicas' checkpoints are not of one step:";
  for (int r = 0; r < comm.size(); ++r)
    s << " " << replica_tag(r, comm.size()) << " step " << static_cast<int64_t>(all[4 * r]);
  s << ", and their common checkpoints (.checkpoint.common.h5) hold no step that every replica has (the ensemble "
    << "stopped before its first checkpoint that all replicas wrote?); nothing was written. Restart from checkpoints "
    << "of one step (copies kept elsewhere), or start again";
  return s.str();
}

std::string describe_ensemble(const ReplicaPlan& rp, const RunConfig& cfg, Communicator& comm) {
  std::ostringstream s;
  s << "replicas: " << rp.count << " (" << (rp.exchange ? "temperature replica exchange" : "independent") << ") on "
    << comm.describe() << "; files " << rp.base_prefix << ".r*.* (this terminal shows replica 0;"
    << " each replica's table is in its .log)\n";
  if (rp.exchange) {
    s << "ladder:";
    for (double t : rp.exchange_state.temperatures()) s << " " << t;
    s << " (" << cfg.model.units.temperature_unit() << "); exchanges every " << cfg.replicas.exchange_every
      << " steps, log " << EnsembleFiles{rp.base_prefix}.exchange_log() << "\n";
  } else {
    s << "seeds " << cfg.model.integrator.seed << " + replica; the ranks meet every " << cfg.replicas.exchange_every
      << " steps (signals, failures)\n";
  }
  return s.str();
}

std::string replica_checkpoint_text(const ReplicaPlan& rp) {
  ReplicaCheckpoint rc;
  rc.replica = rp.replica;
  rc.count = rp.count;
  rc.base_prefix = rp.base_prefix;
  rc.ensemble_id = rp.ensemble_id;
  rc.exchange = rp.exchange;
  rc.state = rp.exchange_state;
  return rc.serialize();
}

}  // namespace pairmd
