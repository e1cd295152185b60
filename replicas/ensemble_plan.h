// A replica's part in the plan of an ensemble run (docs/replicas.md): which replica this rank
// runs, its own prefix (BASE.r03), seed and temperature, and on a restart the ensemble state of
// its checkpoint. session/run_plan.h prepares every run, an ensemble's replicas included; the
// pairmd program hooks this in through RunRequest's replica_setup and replica_prefix.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "replicas/communicator.h"
#include "replicas/exchange.h"
#include "session/run_plan.h"

namespace pairmd {

struct ReplicaPlan {
  int replica = -1;         // this rank's replica (-1: a single run)
  int count = 0;            // K
  std::string base_prefix;  // the ensemble's prefix (its replicas' are BASE.rNN)
  std::string ensemble_id;  // the same on every rank (ReplicaCheckpoint::ensemble_id)
  bool exchange = false;
  ExchangeState exchange_state;  // with exchange: the same on every rank
};

// Sets the replica hooks of `r`: the run of this rank of `comm` is a replica when the config has
// a replicas section, which needs K ranks, one per replica; more than one rank needs a replicas
// section (ConfigError, when the plan is loaded). `rp` is filled in then; it must outlive `r`'s use.
// Collective: it draws the id a new ensemble gets on rank 0 and gives it to every rank.
void plan_replicas(RunRequest& r, const FrontEnd& fe, Communicator& comm, ReplicaPlan& rp);

// Replica 0 also owns the ensemble's files (PREFIX.exchange.csv, PREFIX.walk.csv, .walk.svg): a
// new ensemble refuses them (ConfigError) unless `overwrite`; with `remove` (once every check has
// passed) overwrite removes them, saying so on `out`.
void check_existing_ensemble_files(const FrontEnd& fe, bool overwrite, const RunPlan& p, const ReplicaPlan& rp,
                                   bool remove, std::ostream& out);

// Each replica's common checkpoint (PREFIX.rNN.checkpoint.common.h5, replicas/checkpoint_set.h)
// is one of its run's files: a new run refuses one left by an earlier run (ConfigError) unless
// `overwrite`, which removes it with `remove` (once every check has passed), saying so on `out`.
void check_existing_common_checkpoint(const FrontEnd& fe, bool overwrite, const RunPlan& p, bool remove,
                                      std::ostream& out);

// The replicas of a restart must all start from one step with one exchange state, of one
// ensemble: checkpoints of one meeting (a rank killed while it wrote its checkpoint leaves an older
// one). Collective. Returns "" when they do, else the message (the same on every rank).
std::string check_same_start(Communicator& comm, int64_t first, const ReplicaPlan& rp, const FrontEnd& fe);

// The lines replica 0 prints about the ensemble at the start.
std::string describe_ensemble(const ReplicaPlan& rp, const RunConfig& cfg, Communicator& comm);

// What this replica's checkpoints store of the ensemble (run/ensemble; ReplicaCheckpoint).
std::string replica_checkpoint_text(const ReplicaPlan& rp);

}  // namespace pairmd
