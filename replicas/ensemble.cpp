#include "replicas/ensemble.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "replicas/walk.h"

namespace pairmd {

std::string replica_tag(int replica, int count) {
  int digits = 1;
  for (int c = std::max(count - 1, 0); c >= 10; c /= 10) ++digits;
  char buf[32];
  std::snprintf(buf, sizeof buf, "r%0*d", digits, replica);
  return buf;
}

std::string replica_prefix(const std::string& base, int replica, int count) {
  return base + "." + replica_tag(replica, count);
}

uint64_t replica_seed(uint64_t seed, int replica) { return seed + static_cast<uint64_t>(replica); }

std::string replica_path(const std::string& path, int replica, int count) {
  const std::string key = "{replica}";
  std::string out = path;
  const std::string number = replica_tag(replica, count).substr(1);  // r03 -> 03
  for (size_t at; (at = out.find(key)) != std::string::npos;) out.replace(at, key.size(), number);
  return out;
}

std::vector<std::string> EnsembleFiles::existing() const {
  std::vector<std::string> there;
  for (const std::string& f : all())
    if (access(f.c_str(), F_OK) == 0) there.push_back(f);
  return there;
}

namespace {
const char* kCheckpointHeader = "pairmd replica 1";
}

std::string ReplicaCheckpoint::serialize() const {
  std::ostringstream s;
  s << kCheckpointHeader << "\nreplica " << replica << "\ncount " << count << "\nprefix " << base_prefix << "\nmode "
    << (exchange ? "exchange" : "independent") << "\n";
  if (!ensemble_id.empty()) s << "ensemble " << ensemble_id << "\n";
  if (exchange) s << state.serialize();
  return s.str();
}

ReplicaCheckpoint ReplicaCheckpoint::parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  auto fail = [](const std::string& what) { return std::runtime_error("replica state: " + what); };
  if (!std::getline(in, line) || line != kCheckpointHeader) throw fail("not a replica state");
  ReplicaCheckpoint c;
  auto value = [&](const char* key) {
    if (!std::getline(in, line) || line.rfind(std::string(key) + " ", 0) != 0)
      throw fail(std::string("missing ") + key);
    return line.substr(std::strlen(key) + 1);
  };
  c.replica = std::stoi(value("replica"));
  c.count = std::stoi(value("count"));
  c.base_prefix = value("prefix");
  const std::string mode = value("mode");
  if (mode != "exchange" && mode != "independent") throw fail("unknown mode '" + mode + "'");
  c.exchange = mode == "exchange";
  // The ensemble id (absent from checkpoints written before it was stored).
  const std::streampos at = in.tellg();
  if (std::getline(in, line) && line.rfind("ensemble ", 0) == 0) {
    c.ensemble_id = line.substr(std::strlen("ensemble "));
  } else {
    in.clear();
    in.seekg(at);
  }
  if (c.replica < 0 || c.count < 1 || c.replica >= c.count)
    throw fail("replica " + std::to_string(c.replica) + " of " + std::to_string(c.count));
  if (c.exchange) {
    std::ostringstream rest;
    rest << in.rdbuf();
    c.state = ExchangeState::parse(rest.str());
    if (c.state.count() != c.count) throw fail("its exchange state has another number of replicas");
  }
  return c;
}

// ---- the exchange log and the walk ----------------------------------------------------------

namespace {

std::string exchange_header() {
  return "step,exchange,pair,T_low,T_high,replica_low,replica_high,energy_low,energy_high,probability,draw,accepted";
}

std::string g17(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

WalkRow walk_row(const ExchangeState& s, int64_t step, int64_t exchange) {
  WalkRow r;
  r.step = step;
  r.exchange = exchange;
  r.temperature = s.temperature_indices();
  return r;
}

}  // namespace

EnsembleLog::EnsembleLog(EnsembleFiles files, const ExchangeState& state, int64_t step, bool restart)
    : files_(std::move(files)) {
  auto create = [](const std::string& path, const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "wx");
    if (!f) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
    const bool ok = std::fputs(text.c_str(), f) >= 0;
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write '" + path + "'");
  };
  const bool have = access(files_.exchange_log().c_str(), F_OK) == 0 && access(files_.walk().c_str(), F_OK) == 0;
  if (restart && have) {
    // Rows of exchanges after the checkpoint go: the run makes them again.
    dropped_ = truncate_exchange_csv(files_.exchange_log(), state.exchanges());
    truncate_exchange_csv(files_.walk(), state.exchanges());
    return;
  }
  if (restart) {
    for (const std::string& f : {files_.exchange_log(), files_.walk()}) std::remove(f.c_str());
  }
  create(files_.exchange_log(), exchange_header() + "\n");
  // A restart into new files starts its walk where the checkpoint is.
  create(files_.walk(), walk_csv_header(state.count()) + "\n" +
                            walk_csv_row(walk_row(state, step, restart ? state.exchanges() - 1 : -1)) + "\n");
}

void EnsembleLog::append(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw std::runtime_error("cannot append to '" + path + "': " + std::strerror(errno));
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write '" + path + "' (disk full?)");
}

void EnsembleLog::record(const std::vector<ExchangeAttempt>& attempts, const ExchangeState& after) {
  std::ostringstream s;
  const std::vector<double>& t = after.temperatures();
  for (const ExchangeAttempt& a : attempts)
    s << a.step << "," << a.exchange << "," << a.pair << "," << g17(t[a.pair]) << "," << g17(t[a.pair + 1]) << ","
      << a.replica_low << "," << a.replica_high << "," << g17(a.energy_low) << "," << g17(a.energy_high) << ","
      << g17(a.probability) << "," << g17(a.draw) << "," << (a.accepted ? 1 : 0) << "\n";
  append(files_.exchange_log(), s.str());
  append(files_.walk(), walk_csv_row(walk_row(after, after.last_exchange_step(), after.exchanges() - 1)) + "\n");
}

void EnsembleLog::write_plot(const std::vector<double>& temperatures, const std::string& step_label,
                             const std::string& temperature_label) const {
  const Walk w = read_walk_csv(files_.walk());
  write_walk_plot(w, temperatures, "replica walk through the temperature ladder", step_label, temperature_label,
                  files_.walk_plot());
}

// ---- the run --------------------------------------------------------------------------------

namespace {

// This replica's newest checkpoint, for a meeting (-1: none, or no common checkpoints kept).
double newest_checkpoint(const EnsembleOptions& o) {
  return o.newest_checkpoint && o.common ? static_cast<double>(o.newest_checkpoint()) : -1.0;
}

// Where every replica's newest checkpoint (value `at` of each rank's `stride` values in `all`)
// is of one step, newer than the common one, it becomes the common one. Before this replica
// writes a newer checkpoint: the step stays in one of its two files until the next is common.
void keep_common_checkpoint(const std::vector<double>& all, size_t stride, size_t at, const EnsembleOptions& o,
                            EnsembleOutcome& out) {
  if (!o.common) return;
  const double step = all[at];
  for (size_t r = 0; r < all.size() / stride; ++r)
    if (all[r * stride + at] != step) return;
  if (step < 0 || static_cast<int64_t>(step) <= o.common->step()) return;
  const std::string why = o.common->keep(static_cast<int64_t>(step));
  if (!why.empty() && out.common_error.empty()) out.common_error = why;
}

// Every replica's end, and everyone knows it: its status, last good step and time, whether it
// got a signal; and the final checkpoints, where all are of one step, become the common ones.
void gather_ends(double seconds, const EnsembleOptions& o, EnsembleOutcome& out) {
  const int mine = out.result.outcome == RunOutcome::Completed     ? kReplicaCompleted
                   : out.result.outcome == RunOutcome::Interrupted ? kReplicaStopped
                                                                   : kReplicaFailed;
  const std::vector<double> end =
      o.comm->allgather({static_cast<double>(mine), static_cast<double>(out.result.last_good_step), seconds,
                         out.signalled ? 1.0 : 0.0, newest_checkpoint(o)});
  keep_common_checkpoint(end, 5, 4, o, out);
  for (int r = 0; r < o.comm->size(); ++r) {
    out.status.push_back(static_cast<int>(end[5 * r]));
    out.last_step.push_back(static_cast<int64_t>(end[5 * r + 1]));
    out.seconds.push_back(end[5 * r + 2]);
    out.signalled = out.signalled || end[5 * r + 3] != 0;
    if (out.first_failed < 0 && out.status.back() == kReplicaFailed) out.first_failed = r;
  }
}

}  // namespace

EnsembleOutcome run_ensemble(Simulation& sim, int64_t last_step, const EnsembleOptions& o) {
  Communicator& comm = *o.comm;
  const int k = comm.size();
  EnsembleOutcome out;
  const auto t_start = std::chrono::steady_clock::now();
  // The run ends on this rank (ended()) when it fails: a blow-up or an output that cannot be
  // written finishes its observers with the last good state; it then goes to the meetings only.
  out.result = sim.begin(last_step);
  std::string log_error;  // rank 0: the ensemble files could not be written
  int worst = 0;
  while (true) {
    // To the next meeting (a multiple of `every`, or the end), showing the observers their steps
    // on the way but not the meeting's (that comes after the exchange). Signals are looked at at
    // the meeting, so that every rank stops at one step.
    const bool ok = !sim.ended();
    const int64_t target = ok ? std::min(last_step, next_multiple(sim.step(), o.every)) : sim.step();
    if (ok && sim.step() < target) out.result = sim.advance_to_unshown(target);
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    const auto t0 = Clock::now();
    const bool failed = sim.ended();
    const int status = failed || !log_error.empty() ? kReplicaFailed : g_stop_signal.load() != 0 ? kReplicaStopped : 0;
    const double energy = failed ? std::numeric_limits<double>::quiet_NaN() : sim.observables_now().potential;
    out.energy_seconds += since(t0);
    const auto t1 = Clock::now();
    const std::vector<double> all = comm.allgather({static_cast<double>(status), energy, newest_checkpoint(o)});
    out.gather_seconds += since(t1);
    ++out.meetings;
    keep_common_checkpoint(all, 3, 2, o, out);
    worst = 0;
    for (int r = 0; r < k; ++r) worst = std::max(worst, static_cast<int>(all[3 * r]));
    // A stop (a signal) still exchanges: the restart goes on after this meeting, as a run that
    // was not stopped would. A failure does not (a failed replica has no energy of this step).
    if (worst != kReplicaFailed && o.exchange && target % o.every == 0 && target > o.exchange->last_exchange_step()) {
      std::vector<double> energies(k);
      for (int r = 0; r < k; ++r) energies[r] = all[3 * r + 1];
      const auto t2 = Clock::now();
      const double t_old = o.exchange->temperature_of(o.replica);
      const std::vector<ExchangeAttempt> attempts = o.exchange->exchange(target, energies);
      const double t_new = o.exchange->temperature_of(o.replica);
      if (o.log && log_error.empty()) {
        try {
          o.log->record(attempts, *o.exchange);
        } catch (const std::exception& e) {
          log_error = e.what();
        }
      }
      out.decide_seconds += since(t2);
      const auto t3 = Clock::now();
      if (t_new != t_old) sim.change_temperature(t_old, t_new);
      out.rescale_seconds += since(t3);
      // Every replica's swap in before any replica reads the meeting's step (its observers,
      // below): a GPU ensemble then applies them together and reads its systems once, where a
      // read between two replicas' swaps read every system again (backends/lockstep_ensemble.h).
      // On every rank and thread alike, whatever its backend: a barrier some took and others
      // not would hang the run.
      const auto t4 = Clock::now();
      comm.allgather({0.0});
      out.gather_seconds += since(t4);
    }
    out.exchange_seconds += since(t0);
    // The meeting's step, after the exchange, to the observers that want it.
    if (!sim.ended() && worst != kReplicaFailed) out.result = sim.show_current();
    if (worst != 0 || sim.step() >= last_step) break;
  }
  // This replica's end.
  out.signalled = g_stop_signal.load() != 0;
  if (sim.ended())
    out.result = sim.end();  // the result of the failure
  else if (worst == 0)
    out.result = sim.end();
  else
    out.result = sim.interrupt("stopped with the ensemble at step " + std::to_string(sim.step()));
  if (!log_error.empty() && out.result.outcome != RunOutcome::Failed) {
    out.result.outcome = RunOutcome::Failed;
    out.result.message = log_error;
  }
  gather_ends(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), o, out);
  return out;
}

std::string exchange_report(const ExchangeState& s) {
  std::ostringstream o;
  o << "replica exchange: " << s.exchanges() << " exchanges; acceptance of each pair of temperatures:\n";
  char buf[160];
  for (int a = 0; a + 1 < s.count(); ++a) {
    std::snprintf(buf, sizeof buf, "  T %-10.6g <-> %-10.6g  %6.3f  (%lld of %lld)\n", s.temperatures()[a],
                  s.temperatures()[a + 1], s.acceptance(a), static_cast<long long>(s.accepted(a)),
                  static_cast<long long>(s.attempts(a)));
    o << buf;
  }
  o << "round trips (lowest -> highest -> lowest temperature) per replica:";
  for (int r = 0; r < s.count(); ++r) o << " " << s.round_trips(r);
  o << " (total " << s.total_round_trips() << ")\n";
  o << "temperature of each replica now:";
  for (int r = 0; r < s.count(); ++r) o << " " << s.temperature_of(r);
  o << "\n";
  return o.str();
}

}  // namespace pairmd
