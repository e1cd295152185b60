// A replica ensemble: K copies of one system, one per rank, run side by side; with temperature
// replica exchange, neighbouring temperatures try to swap every M steps (replicas/exchange.h).
//
// Every rank runs its own Simulation with its own output files (PREFIX.rNN.*: trajectory, thermo,
// checkpoint, log). Every M steps the ranks meet once (run_ensemble): each gives its status and
// its potential energy, two scalars, and every rank then knows whether the ensemble goes on and,
// with exchange, makes the same exchange decisions (counter-based random numbers), so no rank
// decides for the others and nothing but those scalars crosses the network. Rank 0 also writes
// the ensemble's own files: the exchange log and the walk of each replica through the ladder.
//
// Stops: a signal on any rank stops every rank at the next meeting, after its exchange, with every
// file written and a checkpoint of that step (so the ensemble restarts from one step and goes on
// as if it had not stopped); a rank that fails (blow-up,
// a write error) finishes its files with its last good state and stops the others at the next
// meeting, each with its files closed and a checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "replicas/checkpoint_set.h"
#include "replicas/communicator.h"
#include "replicas/exchange.h"

namespace pairmd {

// "r03": the replica's index, zero-padded to the digits of count - 1.
std::string replica_tag(int replica, int count);
// The prefix of replica r's files: BASE.r03.
std::string replica_prefix(const std::string& base, int replica, int count);
// Independent replicas differ by seed: replica r runs with seed + r (Philox streams of different
// keys are independent).
uint64_t replica_seed(uint64_t seed, int replica);
// `path` with "{replica}" replaced by the replica's number as its files have it (03 of r03), so
// that PREFIX.r{replica}.checkpoint.h5 names each replica's checkpoint; unchanged without it.
std::string replica_path(const std::string& path, int replica, int count);

// The ensemble's own files (rank 0 writes them).
struct EnsembleFiles {
  std::string prefix;
  std::string exchange_log() const { return prefix + ".exchange.csv"; }
  std::string walk() const { return prefix + ".walk.csv"; }
  std::string walk_plot() const { return prefix + ".walk.svg"; }
  std::string rupture() const { return prefix + ".rupture.csv"; }  // pulling statistics
  std::vector<std::string> all() const { return {exchange_log(), walk(), walk_plot(), rupture()}; }
  std::vector<std::string> existing() const;
};

// What a replica's checkpoint holds of the ensemble (run/ensemble): which replica it is, of how
// many, the ensemble's prefix and id, and with exchange the whole exchange state (ladder,
// assignment, exchange counter, statistics), identical in every replica's checkpoint of one step.
struct ReplicaCheckpoint {
  int replica = 0, count = 1;
  std::string base_prefix;
  // 64 random bits in hex, the same in every replica's checkpoints: what ties the files of one
  // ensemble together ("" in checkpoints written before it was stored).
  std::string ensemble_id;
  bool exchange = false;
  ExchangeState state;  // with exchange
  std::string serialize() const;
  // Throws std::runtime_error for text it does not recognise.
  static ReplicaCheckpoint parse(const std::string& text);
};

// Rank 0's record of the exchanges: PREFIX.exchange.csv (one row per attempt: step, exchange,
// pair, temperatures, replicas, energies, probability, draw, accepted) and PREFIX.walk.csv (the
// assignment at the start and after every exchange). A new ensemble creates them; a restart
// drops the rows of exchanges its checkpoint does not count and appends.
class EnsembleLog {
 public:
  // Throws std::runtime_error when a file cannot be written.
  EnsembleLog(EnsembleFiles files, const ExchangeState& state, int64_t step, bool restart);
  void record(const std::vector<ExchangeAttempt>& attempts, const ExchangeState& after);
  // The walk plot (PREFIX.walk.svg) from the walk file as it is now.
  void write_plot(const std::vector<double>& temperatures, const std::string& step_label,
                  const std::string& temperature_label) const;
  const EnsembleFiles& files() const { return files_; }
  int64_t rows_dropped() const { return dropped_; }

 private:
  void append(const std::string& path, const std::string& text);
  EnsembleFiles files_;
  int64_t dropped_ = 0;
};

struct EnsembleOptions {
  Communicator* comm = nullptr;
  int replica = 0, count = 1;
  int64_t every = 1000;               // steps between meetings (and exchanges)
  ExchangeState* exchange = nullptr;  // null: independent replicas
  EnsembleLog* log = nullptr;         // rank 0 with exchange
  // The step of this replica's newest checkpoint (-1: none yet), and its common checkpoint
  // (replicas/checkpoint_set.h): at each meeting, and at the end, a step that every replica's
  // newest checkpoint is of becomes the common one. Both or neither.
  std::function<int64_t()> newest_checkpoint;
  CommonCheckpoint* common = nullptr;
};

// Status of a replica when the ensemble ended.
enum ReplicaStatus : int { kReplicaCompleted = 0, kReplicaStopped = 1, kReplicaFailed = 2 };

struct EnsembleOutcome {
  RunResult result;                // this replica's run
  std::vector<int> status;         // every replica's ReplicaStatus
  std::vector<int64_t> last_step;  // every replica's last good step
  std::vector<double> seconds;     // every replica's time in the run loop
  int first_failed = -1;           // the lowest replica that failed (-1: none)
  bool signalled = false;          // some rank got SIGINT/SIGTERM
  double exchange_seconds = 0;     // this rank's time in meetings and exchanges (wall), of which
  double energy_seconds = 0;       //   the potential energy of the meeting's step
  double gather_seconds = 0;       //   the allgather (waiting for the slowest rank included)
  double decide_seconds = 0;       //   the exchange decisions and (rank 0) the exchange log
  double rescale_seconds = 0;      //   a new temperature: velocities scaled, state set again
  int64_t meetings = 0;
  std::string common_error;  // the first common checkpoint this replica could not keep
};

// Runs this rank's replica to `last_step` in step with the others. Collective: every rank of
// `comm` calls it.
EnsembleOutcome run_ensemble(Simulation& sim, int64_t last_step, const EnsembleOptions& o);

// The final report's lines: acceptance of each pair of neighbouring temperatures and each
// replica's round trips.
std::string exchange_report(const ExchangeState& state);

}  // namespace pairmd
