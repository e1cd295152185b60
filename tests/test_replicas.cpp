// Replica exchange without MPI: the Metropolis criterion and its counter-based draws, the ladder,
// round trips, the walk and the exchange log, the state a checkpoint keeps, and the replicas
// section of the config, the collectives of threads and of ranks of threads. The ensemble itself
// runs under mpirun in tests/python/check_replicas.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "engine/config.h"
#include "engine/ladder.h"
#include "replicas/ensemble.h"
#include "replicas/exchange.h"
#include "replicas/round_trips.h"
#include "replicas/thread_communicator.h"
#include "replicas/walk.h"

namespace pairmd {
namespace {

TEST(ReplicaExchange, MetropolisProbability) {
  // Downhill for the pair (the hotter replica has the lower energy): always accepted.
  EXPECT_EQ(exchange_probability(1.0, 0.5, -10.0, -20.0), 1.0);
  // Uphill: exp((beta_low - beta_high) (U_low - U_high)).
  EXPECT_DOUBLE_EQ(exchange_probability(1.0, 0.5, -20.0, -10.0), std::exp(0.5 * -10.0));
  EXPECT_EQ(exchange_probability(1.0, 0.5, -20.0, -20.0), 1.0);
}

TEST(ReplicaExchange, PairsAlternateEvenAndOdd) {
  EXPECT_EQ(exchange_pairs(0, 5), (std::vector<int>{0, 2}));
  EXPECT_EQ(exchange_pairs(1, 5), (std::vector<int>{1, 3}));
  EXPECT_EQ(exchange_pairs(2, 5), (std::vector<int>{0, 2}));
  EXPECT_EQ(exchange_pairs(0, 2), (std::vector<int>{0}));
  EXPECT_TRUE(exchange_pairs(1, 2).empty());
  EXPECT_TRUE(exchange_pairs(0, 1).empty());
}

// The fraction of accepted swaps at a fixed probability p is p: the draws are uniform. 20,000
// independent draws give a standard error of sqrt(p (1 - p) / n) = 0.0032 at p = 0.3; 5 of them.
TEST(ReplicaExchange, AcceptedFractionIsTheProbability) {
  const double t_low = 1.0, t_high = 1.25;
  const double dbeta = 1.0 / t_low - 1.0 / t_high;
  const double du = std::log(0.3) / dbeta;  // U_low - U_high giving p = 0.3
  ExchangeState s({t_low, t_high}, 1.0, 42);
  int64_t accepted = 0, n = 0;
  for (int e = 0; e < 40000; ++e) {
    // Energies follow the temperatures: the replica at T_low has U_low = du, the other 0.
    std::vector<double> u(2);
    u[s.replica_at(0)] = du;
    u[s.replica_at(1)] = 0.0;
    for (const ExchangeAttempt& a : s.exchange(10 * (e + 1), u)) {
      EXPECT_NEAR(a.probability, 0.3, 1e-12);
      accepted += a.accepted;
      ++n;
    }
  }
  EXPECT_EQ(n, 20000);  // odd exchanges have no pair in a ladder of two
  EXPECT_NEAR(static_cast<double>(accepted) / n, 0.3, 5 * std::sqrt(0.3 * 0.7 / n));
  EXPECT_EQ(s.attempts(0), n);
  EXPECT_EQ(s.accepted(0), accepted);
}

TEST(ReplicaExchange, SameSeedSameDecisionsOtherSeedOthers) {
  auto decisions = [](uint64_t seed) {
    ExchangeState s({1.0, 1.1, 1.2, 1.3}, 1.0, seed);
    std::string d;
    for (int e = 0; e < 200; ++e) {
      std::vector<double> u(4);
      for (int r = 0; r < 4; ++r) u[r] = -100.0 + 3.0 * std::sin(0.7 * e + r);
      for (const ExchangeAttempt& a : s.exchange(e, u)) d += a.accepted ? '1' : '0';
    }
    return d;
  };
  EXPECT_EQ(decisions(7), decisions(7));
  EXPECT_NE(decisions(7), decisions(8));
}

TEST(ReplicaExchange, AcceptedSwapMovesTheReplicasAndNaNNeverSwaps) {
  ExchangeState s({1.0, 2.0}, 1.0, 1);
  // U_low > U_high: downhill, accepted whatever the draw.
  const auto a = s.exchange(100, {0.0, -50.0});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(a[0].accepted);
  EXPECT_EQ(s.temperature_index(0), 1);
  EXPECT_EQ(s.temperature_index(1), 0);
  EXPECT_EQ(s.temperature_of(0), 2.0);
  EXPECT_EQ(s.last_exchange_step(), 100);
  s.exchange(200, {0.0, 0.0});  // odd: no pair
  const auto b = s.exchange(300, {std::nan(""), 0.0});
  EXPECT_FALSE(b[0].accepted);
}

TEST(ReplicaExchange, StateSurvivesTextBitForBit) {
  ExchangeState s(geometric_ladder(0.7, 1.9, 5), 0.0019872, 99);
  for (int e = 0; e < 50; ++e) {
    std::vector<double> u(5);
    for (int r = 0; r < 5; ++r) u[r] = -1000.0 + 5.0 * std::cos(1.3 * e + 2.1 * r);
    s.exchange(20 * e, u);
  }
  const ExchangeState t = ExchangeState::parse(s.serialize());
  EXPECT_EQ(s, t);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(s.temperatures()[k], t.temperatures()[k]);  // exact, %a
  EXPECT_EQ(t.exchanges(), 50);
  EXPECT_THROW(ExchangeState::parse("something else\n"), std::runtime_error);
  // The replica checkpoint wraps it.
  ReplicaCheckpoint rc;
  rc.replica = 3;
  rc.count = 5;
  rc.base_prefix = "pt";
  rc.exchange = true;
  rc.state = s;
  rc.ensemble_id = "0123456789abcdef";
  const ReplicaCheckpoint back = ReplicaCheckpoint::parse(rc.serialize());
  EXPECT_EQ(back.replica, 3);
  EXPECT_EQ(back.base_prefix, "pt");
  EXPECT_EQ(back.ensemble_id, "0123456789abcdef");
  EXPECT_EQ(back.state, s);
  // Checkpoints written before the ensemble id was stored still read, without one.
  rc.ensemble_id.clear();
  const ReplicaCheckpoint old = ReplicaCheckpoint::parse(rc.serialize());
  EXPECT_EQ(old.ensemble_id, "");
  EXPECT_EQ(old.state, s);
}

// A walk an ensemble could have written: consecutive exchanges, each only swapping the pairs it
// tries (even pairs at even exchanges), rows that are permutations.
TEST(ReplicaExchange, WalkChecksItsRows) {
  const std::string dir = ::testing::TempDir();
  auto check = [&](const std::string& rows) {
    const std::string path = dir + "/c.walk.csv";
    std::ofstream(path) << walk_csv_header(3) << "\n" << rows;
    try {
      check_walk_exchanges(read_walk_csv(path), path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(check("0,-1,0,1,2\n10,0,1,0,2\n20,1,2,0,1\n30,2,2,1,0\n"), "");
  EXPECT_NE(check("0,-1,0,1,2\n10,0,1,1,2\n").find("c.walk.csv:3: not a permutation"), std::string::npos);
  EXPECT_NE(check("0,-1,0,1,2\n10,0,1,0,2\n30,2,1,0,2\n").find("c.walk.csv:4: exchange 2 follows exchange 0"),
            std::string::npos);
  // Exchange 0 tries pair (0, 1) only; exchange 1 pair (1, 2) only.
  EXPECT_NE(check("0,-1,0,1,2\n10,0,0,2,1\n").find("which exchange 0 cannot do"), std::string::npos);
  EXPECT_NE(check("0,-1,0,1,2\n10,0,0,1,2\n20,1,1,0,2\n").find("c.walk.csv:4: replica 0"), std::string::npos);
  EXPECT_NE(check("0,-1,0,1,2\n10,0,2,1,0\n").find("cannot do"), std::string::npos);
  EXPECT_NE(check("0,-1,0,1,2\n10,0,0,1,2\n5,1,0,1,2\n").find("step 5 comes after step 10"), std::string::npos);
}

TEST(ReplicaExchange, GeometricLadder) {
  const std::vector<double> t = geometric_ladder(1.0, 8.0, 4);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.front(), 1.0);
  EXPECT_EQ(t.back(), 8.0);
  EXPECT_NEAR(t[1], 2.0, 1e-12);
  EXPECT_NEAR(t[2], 4.0, 1e-12);
  EXPECT_EQ(ladder_problem(t), "");
  EXPECT_NE(ladder_problem({1.0, 1.0}), "");
  EXPECT_NE(ladder_problem({1.0, -2.0}), "");
  EXPECT_THROW(geometric_ladder(2.0, 1.0, 3), std::invalid_argument);
  EXPECT_THROW(ExchangeState({1.2, 1.1}, 1.0, 1), std::invalid_argument);
}

TEST(ReplicaExchange, RoundTripsCountBottomTopBottom) {
  RoundTrips t;
  for (int i : {0, 1, 2, 1, 0}) t.visit(i, 3);
  EXPECT_EQ(t.count, 1);
  for (int i : {1, 0, 1, 0}) t.visit(i, 3);  // never reaches the top
  EXPECT_EQ(t.count, 1);
  RoundTrips u;  // starts at the top: the first trip begins at the bottom
  for (int i : {2, 1, 0, 1, 2, 1, 0}) u.visit(i, 3);
  EXPECT_EQ(u.count, 1);
}

TEST(ReplicaExchange, WalkAndExchangeLogFiles) {
  const std::string dir = ::testing::TempDir();
  const std::string walk = dir + "/w.walk.csv";
  {
    std::ofstream f(walk);
    f << walk_csv_header(2) << "\n0,-1,0,1\n100,0,1,0\n200,1,1,0\n300,2,0,1\n";
  }
  const Walk w = read_walk_csv(walk);
  EXPECT_EQ(w.replicas(), 2);
  // A frame at the step of an exchange is written after it.
  EXPECT_EQ(w.replica_at(0, 0), 0);
  EXPECT_EQ(w.replica_at(0, 99), 0);
  EXPECT_EQ(w.replica_at(0, 100), 1);
  EXPECT_EQ(w.replica_at(0, 300), 0);
  EXPECT_EQ(w.replica_at(1, 250), 0);
  // A restart from exchange counter 2 drops the rows of exchanges 2 and later (and torn rows).
  {
    std::ofstream f(walk, std::ios::app);
    f << "400,3,1";
  }
  EXPECT_EQ(truncate_exchange_csv(walk, 2), 2);
  EXPECT_EQ(read_walk_csv(walk).rows().size(), 3u);
  std::ofstream(dir + "/bad.walk.csv") << "step,exchange,replica0\n0,-1,5\n";
  EXPECT_THROW(read_walk_csv(dir + "/bad.walk.csv"), std::runtime_error);
}

TEST(ReplicaExchange, ReplicaNames) {
  EXPECT_EQ(replica_tag(3, 4), "r3");
  EXPECT_EQ(replica_tag(3, 11), "r03");
  EXPECT_EQ(replica_prefix("pt", 7, 100), "pt.r07");
  EXPECT_EQ(replica_path("pt.r{replica}.checkpoint.h5", 7, 100), "pt.r07.checkpoint.h5");
  EXPECT_EQ(replica_path("one.h5", 7, 100), "one.h5");
  EXPECT_EQ(replica_seed(10, 3), 13u);
}

// Ranks of several replicas each (mpirun -np R with R K replicas): replica r K + t's allgather is
// its rank's threads' barrier, then one allgather of the ranks. Here the "ranks" are threads too,
// R of them over a ThreadGroup, so the layering runs without MPI.
TEST(ReplicaRanks, ThreadsOfRanksGatherInReplicaOrderEveryRound) {
  const int ranks = 3, per_rank = 2, rounds = 50;
  ThreadGroup outer(ranks);
  std::vector<std::unique_ptr<ThreadCommunicator>> rank_comms;
  std::vector<std::unique_ptr<ThreadGroup>> groups;
  for (int r = 0; r < ranks; ++r) {
    rank_comms.push_back(std::make_unique<ThreadCommunicator>(outer, r));
    groups.push_back(std::make_unique<ThreadGroup>(per_rank));
  }
  std::vector<std::vector<std::vector<double>>> got(ranks * per_rank);
  std::vector<std::pair<int, int>> rank_and_size(ranks * per_rank);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    for (int t = 0; t < per_rank; ++t)
      threads.emplace_back([&, r, t] {
        RankThreadCommunicator comm(*groups[r], t, *rank_comms[r]);
        rank_and_size[r * per_rank + t] = {comm.rank(), comm.size()};
        for (int n = 0; n < rounds; ++n)
          got[comm.rank()].push_back(comm.allgather({static_cast<double>(comm.rank()), static_cast<double>(n)}));
      });
  for (std::thread& t : threads) t.join();
  for (int q = 0; q < ranks * per_rank; ++q) {
    EXPECT_EQ(rank_and_size[q], std::make_pair(q, ranks * per_rank));
    ASSERT_EQ(got[q].size(), static_cast<size_t>(rounds));
    for (int n = 0; n < rounds; ++n) {
      std::vector<double> want;
      for (int p = 0; p < ranks * per_rank; ++p)
        want.insert(want.end(), {static_cast<double>(p), static_cast<double>(n)});
      ASSERT_EQ(got[q][n], want) << "replica " << q << ", round " << n;
    }
  }
}

// What the ranks' allgather throws (an MPI error), every thread of the rank throws, and the group
// goes on to the next round.
TEST(ReplicaRanks, AFailureOfTheRanksGatherReachesEveryThread) {
  ThreadGroup group(3);
  std::vector<int> threw(3, 0);
  std::vector<std::vector<double>> after(3);
  std::vector<std::thread> threads;
  int calls = 0;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      try {
        group.allgather(t, {1.0}, [&](const std::vector<double>&) -> std::vector<double> {
          ++calls;
          throw std::runtime_error("MPI_Allgather failed");
        });
      } catch (const std::runtime_error& e) {
        threw[t] = std::string(e.what()) == "MPI_Allgather failed";
      }
      after[t] = group.allgather(t, {static_cast<double>(t)});
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  for (int t = 0; t < 3; ++t) {
    EXPECT_TRUE(threw[t]) << "thread " << t;
    EXPECT_EQ(after[t], (std::vector<double>{0, 1, 2}));
  }
}

const char* kBase = R"(system:
  types: [{name: A}]
  lattice: {kind: fcc, cells: 4, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.2}
)";

std::string error_of(const std::string& replicas, const std::string& integrator = "") {
  std::string text = kBase;
  if (!integrator.empty()) text += "";
  try {
    parse_config(text + "replicas:\n" + replicas, "pt.yaml",
                 integrator.empty() ? std::vector<std::string>{} : std::vector<std::string>{integrator});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ReplicaConfig, LaddersAndModes) {
  const RunConfig a =
      parse_config(std::string(kBase) + "replicas: {count: 3, min_temperature: 1, max_temperature: 4}\n", "pt.yaml");
  EXPECT_EQ(a.replicas.count, 3);
  EXPECT_TRUE(a.replicas.exchange);
  EXPECT_NEAR(a.replicas.temperatures[1], 2.0, 1e-12);
  const RunConfig b =
      parse_config(std::string(kBase) + "replicas: {temperatures: [1, 1.5], exchange_every: 10}\n", "pt.yaml");
  EXPECT_EQ(b.replicas.count, 2);
  EXPECT_EQ(b.replicas.exchange_every, 10);
  const RunConfig c = parse_config(std::string(kBase) + "replicas: {mode: independent, count: 8}\n", "pt.yaml");
  EXPECT_FALSE(c.replicas.exchange);
  EXPECT_EQ(c.replicas.count, 8);
  EXPECT_EQ(parse_config(kBase, "pt.yaml").replicas.count, 0);
}

TEST(ReplicaConfig, BadLaddersNameTheKey) {
  EXPECT_NE(error_of("  temperatures: [1.0, 1.2, 1.1]\n").find("pt.yaml:11:"), std::string::npos);
  EXPECT_NE(error_of("  temperatures: [1.0, 1.2, 1.1]\n").find("replicas.temperatures[2]: the ladder must increase"),
            std::string::npos);
  EXPECT_NE(error_of("  temperatures: [1.0, 0]\n").find("replicas.temperatures[1]"), std::string::npos);
  EXPECT_NE(error_of("  count: 3\n  temperatures: [1.0, 2.0]\n").find("temperatures lists 2"), std::string::npos);
  EXPECT_NE(error_of("  count: 3\n  min_temperature: 1.0\n").find("max_temperature"), std::string::npos);
  EXPECT_NE(error_of("  count: 2\n  temperatures: [1, 2]\n  min_temperature: 1\n").find("not both"), std::string::npos);
  EXPECT_NE(error_of("  count: 2\n  temperatures: [1, 2]\n", "integrator.kind=nve").find("needs a thermostat"),
            std::string::npos);
  EXPECT_NE(error_of("  count: 2\n  exchange_every: 0\n  temperatures: [1, 2]\n").find("replicas.exchange_every"),
            std::string::npos);
  EXPECT_NE(error_of("  count: 2\n  colour: red\n").find("unknown key"), std::string::npos);
}

}  // namespace
}  // namespace pairmd
