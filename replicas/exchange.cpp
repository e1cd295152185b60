#include "replicas/exchange.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "engine/ladder.h"
#include "integrators/noise.h"

namespace pairmd {

double exchange_probability(double beta_low, double beta_high, double u_low, double u_high) {
  const double x = (beta_low - beta_high) * (u_low - u_high);
  return x >= 0 ? 1.0 : std::exp(x);
}

std::vector<int> exchange_pairs(int64_t exchange, int count) {
  std::vector<int> pairs;
  for (int a = static_cast<int>(exchange % 2); a + 1 < count; a += 2) pairs.push_back(a);
  return pairs;
}

ExchangeState::ExchangeState(std::vector<double> temperatures, double kB, uint64_t seed)
    : temperatures_(std::move(temperatures)), kB_(kB), seed_(seed) {
  const std::string why = ladder_problem(temperatures_);
  if (!why.empty()) throw std::invalid_argument("temperature ladder: " + why);
  if (!(kB_ > 0)) throw std::invalid_argument("k_B must be > 0");
  const int k = count();
  for (int r = 0; r < k; ++r) {
    index_of_replica_.push_back(r);
    replica_at_index_.push_back(r);
  }
  attempts_.assign(k > 1 ? k - 1 : 0, 0);
  accepted_.assign(attempts_.size(), 0);
  trips_.assign(k, RoundTrips{});
  for (int r = 0; r < k; ++r) trips_[r].visit(r, k);
}

std::vector<ExchangeAttempt> ExchangeState::exchange(int64_t step, const std::vector<double>& energy) {
  const int k = count();
  if (static_cast<int>(energy.size()) != k)
    throw std::invalid_argument("exchange: " + std::to_string(energy.size()) + " energies for " + std::to_string(k) +
                                " replicas");
  std::vector<ExchangeAttempt> out;
  for (const int a : exchange_pairs(exchanges_, k)) {
    ExchangeAttempt x;
    x.step = step;
    x.exchange = exchanges_;
    x.pair = a;
    x.replica_low = replica_at_index_[a];
    x.replica_high = replica_at_index_[a + 1];
    x.energy_low = energy[x.replica_low];
    x.energy_high = energy[x.replica_high];
    x.probability = exchange_probability(1.0 / (kB_ * temperatures_[a]), 1.0 / (kB_ * temperatures_[a + 1]),
                                         x.energy_low, x.energy_high);
    x.draw = uniform_draw(seed_, static_cast<uint32_t>(a), static_cast<uint64_t>(exchanges_), kNoiseReplicaExchange);
    // A NaN probability (an energy that is not finite) is never accepted.
    x.accepted = x.draw < x.probability;
    ++attempts_[a];
    if (x.accepted) {
      ++accepted_[a];
      replica_at_index_[a] = x.replica_high;
      replica_at_index_[a + 1] = x.replica_low;
      index_of_replica_[x.replica_low] = a + 1;
      index_of_replica_[x.replica_high] = a;
    }
    out.push_back(x);
  }
  for (int r = 0; r < k; ++r) trips_[r].visit(index_of_replica_[r], k);
  ++exchanges_;
  last_step_ = step;
  return out;
}

double ExchangeState::acceptance(int pair) const {
  return attempts_[pair] > 0 ? static_cast<double>(accepted_[pair]) / static_cast<double>(attempts_[pair]) : 0.0;
}

int64_t ExchangeState::total_round_trips() const {
  int64_t n = 0;
  for (const RoundTrips& t : trips_) n += t.count;
  return n;
}

namespace {

const char* kHeader = "pairmd replica exchange state 1";

std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

}  // namespace

std::string ExchangeState::serialize() const {
  std::ostringstream s;
  s << kHeader << "\n";
  s << "kB " << hex(kB_) << "\nseed " << seed_ << "\nexchanges " << exchanges_ << "\nlast_exchange_step " << last_step_;
  s << "\ntemperatures";
  for (double t : temperatures_) s << " " << hex(t);
  s << "\ntemperature_index";
  for (int i : index_of_replica_) s << " " << i;
  s << "\nattempts";
  for (int64_t a : attempts_) s << " " << a;
  s << "\naccepted";
  for (int64_t a : accepted_) s << " " << a;
  s << "\nround_trips";
  for (const RoundTrips& t : trips_) s << " " << t.count << ":" << t.last_end << ":" << (t.up_from_bottom ? 1 : 0);
  s << "\n";
  return s.str();
}

ExchangeState ExchangeState::parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  auto fail = [](const std::string& what) -> std::runtime_error {
    return std::runtime_error("replica exchange state: " + what);
  };
  if (!std::getline(in, line) || line != kHeader)
    throw fail("not a replica exchange state (first line '" + line + "')");
  // Each later line: a key and its values.
  auto next = [&](const char* key) {
    if (!std::getline(in, line)) throw fail(std::string("missing '") + key + "'");
    std::istringstream l(line);
    std::string k;
    l >> k;
    if (k != key) throw fail(std::string("expected '") + key + "', got '" + k + "'");
    std::vector<std::string> words;
    for (std::string w; l >> w;) words.push_back(w);
    return words;
  };
  auto number = [&](const std::string& w) {
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end) throw fail("'" + w + "' is not a number");
    return v;
  };
  auto integer = [&](const std::string& w) {
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (end == w.c_str() || *end) throw fail("'" + w + "' is not an integer");
    return static_cast<int64_t>(v);
  };
  auto one = [&](const char* key) {
    const auto w = next(key);
    if (w.size() != 1) throw fail(std::string("'") + key + "' takes one value");
    return w[0];
  };
  ExchangeState s;
  s.kB_ = number(one("kB"));
  s.seed_ = static_cast<uint64_t>(std::strtoull(one("seed").c_str(), nullptr, 10));
  s.exchanges_ = integer(one("exchanges"));
  s.last_step_ = integer(one("last_exchange_step"));
  for (const std::string& w : next("temperatures")) s.temperatures_.push_back(number(w));
  const size_t k = s.temperatures_.size();
  if (k == 0) throw fail("no temperatures");
  for (const std::string& w : next("temperature_index")) s.index_of_replica_.push_back(static_cast<int>(integer(w)));
  for (const std::string& w : next("attempts")) s.attempts_.push_back(integer(w));
  for (const std::string& w : next("accepted")) s.accepted_.push_back(integer(w));
  for (const std::string& w : next("round_trips")) {
    RoundTrips t;
    int up = 0;
    long long c = 0;
    if (std::sscanf(w.c_str(), "%lld:%d:%d", &c, &t.last_end, &up) != 3) throw fail("bad round trip '" + w + "'");
    t.count = c;
    t.up_from_bottom = up != 0;
    s.trips_.push_back(t);
  }
  if (s.index_of_replica_.size() != k || s.trips_.size() != k || s.attempts_.size() != (k > 1 ? k - 1 : 0) ||
      s.accepted_.size() != s.attempts_.size())
    throw fail("its lists do not all have " + std::to_string(k) + " replicas");
  s.replica_at_index_.assign(k, -1);
  for (size_t r = 0; r < k; ++r) {
    const int i = s.index_of_replica_[r];
    if (i < 0 || i >= static_cast<int>(k) || s.replica_at_index_[i] >= 0)
      throw fail("the assignment is not a permutation");
    s.replica_at_index_[i] = static_cast<int>(r);
  }
  return s;
}

}  // namespace pairmd
