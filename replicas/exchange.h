// Temperature replica exchange, without any communication: every rank holds the same
// ExchangeState and, given every replica's potential energy, makes the same decisions (the random
// numbers are counter-based), so only the energies cross the network and no rank decides for the
// others.
//
// Replica r keeps its configuration and carries a temperature index; an accepted exchange swaps
// the indices of two replicas at neighbouring temperatures (and the caller rescales their
// velocities by sqrt(T_new / T_old)). Exchange n tries the pairs (a, a + 1) of temperature
// indices with a = n mod 2, n mod 2 + 2, ... (even pairs, then odd pairs, alternating), each
// accepted with the Metropolis probability min(1, exp((beta_a - beta_{a+1}) (U_a - U_{a+1}))),
// U_a the potential energy of the replica at T_a. The uniform number of pair a at exchange n is
// Philox keyed by the exchange seed, with counter (a, n): integrators/noise.h, uniform_draw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replicas/round_trips.h"

namespace pairmd {

// min(1, exp((beta_low - beta_high) (u_low - u_high))): the probability of swapping the replica
// at the lower temperature (potential energy u_low) with the one at the higher.
double exchange_probability(double beta_low, double beta_high, double u_low, double u_high);

// The lower temperature indices a of the pairs (a, a + 1) that exchange number `exchange` tries,
// in a ladder of `count` temperatures.
std::vector<int> exchange_pairs(int64_t exchange, int count);

// One exchange attempt, as the exchange log records it.
struct ExchangeAttempt {
  int64_t step = 0;
  int64_t exchange = 0;  // the exchange counter (0 for the first exchange of the ensemble)
  int pair = 0;          // temperature indices pair and pair + 1
  int replica_low = 0;   // the replicas at those temperatures before the attempt
  int replica_high = 0;
  double energy_low = 0;  // their potential energies
  double energy_high = 0;
  double probability = 0;
  double draw = 0;  // the uniform number compared with the probability
  bool accepted = false;
};

class ExchangeState {
 public:
  ExchangeState() = default;
  // Replica r starts at temperature index r. `kB` converts temperatures to energies (beta = 1 /
  // (kB T)). Throws std::invalid_argument for a ladder that is not increasing and positive.
  ExchangeState(std::vector<double> temperatures, double kB, uint64_t seed);

  int count() const { return static_cast<int>(temperatures_.size()); }
  const std::vector<double>& temperatures() const { return temperatures_; }
  int temperature_index(int replica) const { return index_of_replica_[replica]; }
  int replica_at(int temperature_index) const { return replica_at_index_[temperature_index]; }
  double temperature_of(int replica) const { return temperatures_[index_of_replica_[replica]]; }
  const std::vector<int>& temperature_indices() const { return index_of_replica_; }
  uint64_t seed() const { return seed_; }
  double kB() const { return kB_; }

  // Exchanges tried so far (the counter of the next one) and the step of the last (-1: none).
  int64_t exchanges() const { return exchanges_; }
  int64_t last_exchange_step() const { return last_step_; }

  // The exchange at `step`: `energy[r]` is replica r's potential energy. Updates the assignment,
  // the counters and the round trips; returns the attempts in pair order.
  std::vector<ExchangeAttempt> exchange(int64_t step, const std::vector<double>& energy);

  // Attempts and acceptances of pair (a, a + 1), and their ratio (0 without attempts).
  int64_t attempts(int pair) const { return attempts_[pair]; }
  int64_t accepted(int pair) const { return accepted_[pair]; }
  double acceptance(int pair) const;
  int64_t round_trips(int replica) const { return trips_[replica].count; }
  int64_t total_round_trips() const;

  // The whole state as text (temperatures as hexadecimal floats, so parse gives back the same
  // bits), for checkpoints; parse throws std::runtime_error for text it does not recognise.
  std::string serialize() const;
  static ExchangeState parse(const std::string& text);
  bool operator==(const ExchangeState& o) const { return serialize() == o.serialize(); }
  bool operator!=(const ExchangeState& o) const { return !(*this == o); }

 private:
  std::vector<double> temperatures_;
  double kB_ = 1.0;
  uint64_t seed_ = 0;
  std::vector<int> index_of_replica_, replica_at_index_;
  int64_t exchanges_ = 0, last_step_ = -1;
  std::vector<int64_t> attempts_, accepted_;
  std::vector<RoundTrips> trips_;
};

}  // namespace pairmd
