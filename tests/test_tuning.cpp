// Start-up tuning (backends/tuning.h): the candidates `auto` means, the coordinate search over
// (strategy, skin) with a stand-in for the timing, and the config's `neighbor.skin: auto` on the
// CPU backend (which times nothing). The GPU side, that a tuned run is bit for bit the untuned
// one, is in test_gpu_backend.cpp (SkinAndTuningChangeNoTrajectory) and test_ensemble.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "backends/backend.h"
#include "backends/cpu_backend.h"
#include "backends/tuning.h"
#include "engine/config.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// test_support's 4-cell fcc LJ liquid (density 0.8442, box edge 6.72, rc 2.5) with `extra`
// sections, and with the skin and the strategy on auto.
test::TestSystem tuned_lj(const std::string& extra = "") {
  return test::make_system(test::lj_yaml(4, 0.8442, "langevin", 1.2) + extra,
                           {"neighbor.skin=auto", "force.strategy=auto"});
}

TEST(Tuning, AutoSkinsAreFractionsOfTheCutoffThatFitTheBox) {
  const test::TestSystem s = tuned_lj();
  const Model m = s.model();
  EXPECT_TRUE(m.neighbor.skin_auto);
  EXPECT_DOUBLE_EQ(m.neighbor.skin, 0.4);  // 0.16 x 2.5, the CPU's value
  const std::vector<double> skins = auto_skin_candidates(m, s.built.state.box);
  ASSERT_EQ(skins.size(), 6u);  // half of the 6.72 box edge is 3.36: 2.5 + 0.8 fits, 2.5 + 1.0 not
  EXPECT_DOUBLE_EQ(skins.front(), 0.2);
  EXPECT_DOUBLE_EQ(skins.back(), 0.8);
  EXPECT_EQ(default_skin_index(skins, m, s.built.state.box), 2u);  // 0.4: the climb starts there
  Box small = s.built.state.box;
  small.L = {5.9, 5.9, 5.9};  // half 2.95: skins up to 0.45
  const std::vector<double> fit = auto_skin_candidates(m, small);
  ASSERT_EQ(fit.size(), 3u);
  EXPECT_DOUBLE_EQ(fit.back(), 0.4);
  small.L = {5.04, 5.04, 5.04};  // half 2.52: only 0.02 is left
  const std::vector<double> tight = auto_skin_candidates(m, small);
  ASSERT_EQ(tight.size(), 1u);
  EXPECT_NEAR(tight.front(), 0.02, 1e-12);
}

TEST(Tuning, TheCpuBackendTakesTheDefaultFractionAsTheBoxAllows) {
  const test::TestSystem s = tuned_lj();
  EXPECT_DOUBLE_EQ(default_auto_skin(s.model(), s.built.state.box), 0.4);
  Box small = s.built.state.box;
  small.L = {5.04, 5.04, 5.04};
  EXPECT_NEAR(default_auto_skin(s.model(), small), 0.02, 1e-12);
  Model none = s.model();
  none.force_field.pair_terms.clear();
  EXPECT_EQ(default_auto_skin(none, s.built.state.box), 0.0);
  EXPECT_EQ(tunable_skins(none, s.built.state.box), std::vector<double>{none.neighbor.skin});
}

TEST(Tuning, AutoStrategyTriesTheDeterministicStrategiesDefaultFirst) {
  Model m;
  m.strategy = kAutoStrategy;
  const std::vector<Strategy> s = tunable_strategies(m);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), kDefaultStrategy);
  for (Strategy x : s) EXPECT_TRUE(strategy_info(x).deterministic) << strategy_name(x);
  m.strategy = "pair_warp";  // named: only that one, float atomics or not
  EXPECT_EQ(tunable_strategies(m), std::vector<Strategy>{Strategy::Warp});
}

// all_pairs (no list, N^2 pairs per system) is timed only for systems small enough for it to
// have a chance, and where the size is not known, not at all; named, it is what runs.
TEST(Tuning, AllPairsIsACandidateForSmallSystemsOnly) {
  Model m;
  m.strategy = kAutoStrategy;
  auto has = [](const std::vector<Strategy>& s) {
    return std::find(s.begin(), s.end(), Strategy::AllPairs) != s.end();
  };
  EXPECT_TRUE(has(tunable_strategies(m, 500)));
  EXPECT_TRUE(has(tunable_strategies(m, kAllPairsTunedSystem)));
  EXPECT_FALSE(has(tunable_strategies(m, kAllPairsTunedSystem + 1)));
  EXPECT_FALSE(has(tunable_strategies(m)));
  EXPECT_TRUE(has(tunable_strategies(m, 500, 64)));      // 1.6e7 pair tests a step
  EXPECT_FALSE(has(tunable_strategies(m, 2048, 1024)));  // 4.3e9: its trial alone would take seconds
  EXPECT_EQ(tunable_strategies(m, 500).front(), kDefaultStrategy);
  m.strategy = "all_pairs";
  EXPECT_EQ(tunable_strategies(m, 100000), std::vector<Strategy>{Strategy::AllPairs});
}

// A strategy without a list has no skin to climb: when it wins, no more trials are timed.
TEST(Tuning, NoSkinClimbForAStrategyWithoutAList) {
  const std::vector<double> skins = {0.2, 0.3, 0.4, 0.5};
  int all_pairs_trials = 0;
  const TuneResult r = tune_step_settings(
      {Strategy::SlotsFused, Strategy::AllPairs}, skins,
      [&](const TuneChoice& c) {
        if (c.strategy == Strategy::AllPairs) {
          ++all_pairs_trials;
          return 0.5 - 0.1 * c.skin;  // 2 % faster per skin step: a climb would follow it
        }
        return 1.0 + std::fabs(c.skin - 0.3);
      },
      1);
  EXPECT_EQ(r.best.strategy, Strategy::AllPairs);
  EXPECT_EQ(all_pairs_trials, 1);
  // all_pairs alone (named, with skin auto) is a single choice: nothing is timed, and the skin
  // written is the one the climb would have started from.
  EXPECT_FALSE(tuning_has_choices({Strategy::AllPairs}, skins));
  EXPECT_TRUE(tuning_has_choices({Strategy::SlotsFused}, skins));
  int timed = 0;
  const TuneResult alone = tune_step_settings(
      {Strategy::AllPairs}, skins,
      [&](const TuneChoice&) {
        ++timed;
        return 1.0;
      },
      2);
  EXPECT_EQ(timed, 0);
  EXPECT_TRUE(alone.trials.empty());
  EXPECT_EQ(alone.best.strategy, Strategy::AllPairs);
  EXPECT_EQ(alone.best.skin, skins[2]);
}

// A stand-in cost with its minimum at (atom_gather, 0.5): the search finds it by a climb along the
// skins with the default strategy (0.3, 0.4, 0.5: 0.4 best), the strategies at 0.4, then a climb
// with atom_gather (0.3 worse, so up: 0.5 better, 0.6 worse).
TEST(Tuning, TheCoordinateSearchFindsTheFastestAndTimesEachChoiceOnce) {
  const std::vector<Strategy> strategies = {Strategy::SlotsFused, Strategy::Slots, Strategy::Gather};
  const std::vector<double> skins = {0.3, 0.4, 0.5, 0.6, 0.8};
  int calls = 0;
  auto cost = [&](const TuneChoice& c) {
    ++calls;
    const double by_skin = 1.0 + 10 * (c.skin - 0.4) * (c.skin - 0.4);
    const double gather_skin = 1.0 + 10 * (c.skin - 0.5) * (c.skin - 0.5);
    return c.strategy == Strategy::Gather ? 0.8 * gather_skin : (c.strategy == Strategy::Slots ? 1.1 : 1.0) * by_skin;
  };
  const TuneResult r = tune_step_settings(strategies, skins, cost);
  EXPECT_EQ(r.best.strategy, Strategy::Gather);
  EXPECT_DOUBLE_EQ(r.best.skin, 0.5);
  EXPECT_EQ(calls, 3 + 2 + 3);  // each choice timed once
  EXPECT_EQ(static_cast<int>(r.trials.size()), calls);
  const std::string report = r.report();
  EXPECT_NE(report.find("tuning: chose atom_gather, skin 0.5 (ms/step:"), std::string::npos) << report;
  TuneResult timed = r;  // the search's own time, where it was measured
  timed.seconds = 2.345;
  EXPECT_NE(timed.report().find("tuning: chose atom_gather, skin 0.5 in 2.3 s (ms/step:"), std::string::npos)
      << timed.report();
  timed.seconds = 123.4;  // not "1.2e+02"
  EXPECT_NE(timed.report().find("skin 0.5 in 123 s (ms/step: pair_slots_fused/0.3 1.1 "), std::string::npos)
      << timed.report();
  // From the other end the climb goes down.
  calls = 0;
  const TuneResult down = tune_step_settings({Strategy::SlotsFused}, skins, cost, 4);
  EXPECT_DOUBLE_EQ(down.best.skin, 0.4);
  EXPECT_EQ(calls, 5);  // 0.8, 0.6, 0.5, 0.4, then 0.3 (worse)
}

// Trials of one setting differ by about a per cent: another strategy must be 2 % faster than the
// default to be chosen, and the climb takes a step only for 1 %.
TEST(Tuning, NoiseSizedDifferencesKeepTheDefaults) {
  const std::vector<double> skins = {0.3, 0.4, 0.5};
  const TuneResult r = tune_step_settings(
      {Strategy::SlotsFused, Strategy::Gather}, skins,
      [](const TuneChoice& c) {
        const double base = c.skin == 0.4 ? 1.0 : (c.skin == 0.5 ? 0.995 : 1.2);
        return c.strategy == Strategy::Gather ? 0.99 * base : base;
      },
      1);
  EXPECT_EQ(r.best.strategy, Strategy::SlotsFused);
  // 0.5 is 0.5 % faster: not a step of the climb, but the fastest measured, so it is kept.
  EXPECT_DOUBLE_EQ(r.best.skin, 0.5);
}

// Under a barostat the box changes, and a skin chosen for the start box could stop the run later.
TEST(Tuning, UnderABarostatTheSkinIsNotTuned) {
  const test::TestSystem s = tuned_lj(
      "barostat: {kind: c_rescale, pressure: 1.0, tau_p: 1.0, "
      "compressibility: 0.05}\n");
  const std::vector<double> skins = tunable_skins(s.model(), s.built.state.box);
  ASSERT_EQ(skins.size(), 1u);
  EXPECT_DOUBLE_EQ(skins.front(), 0.4);
}

TEST(Tuning, OneChoiceTimesNothingAndFailedChoicesAreSkippedOrReported) {
  int calls = 0;
  const TuneResult one = tune_step_settings({Strategy::SlotsFused}, {0.3}, [&](const TuneChoice&) {
    ++calls;
    return 1.0;
  });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(one.trials.empty());
  EXPECT_DOUBLE_EQ(one.best.skin, 0.3);
  // A choice that throws (no memory for a long list) is a failed trial, not the end of the run.
  const TuneResult r = tune_step_settings({Strategy::SlotsFused}, {0.3, 0.8}, [](const TuneChoice& c) {
    if (c.skin > 0.5) throw std::runtime_error("out of memory");
    return 2.0;
  });
  EXPECT_DOUBLE_EQ(r.best.skin, 0.3);
  EXPECT_NE(r.report().find("failed"), std::string::npos) << r.report();
  EXPECT_THROW(tune_step_settings({Strategy::SlotsFused}, {0.3, 0.8},
                                  [](const TuneChoice&) -> double { throw std::runtime_error("no GPU memory"); }),
               std::runtime_error);
}

// A start that blows up blows up whatever the settings: the search ends at the first blow-up and
// keeps the first choice, so that the run meets the blow-up itself (with its step, particle and
// the last good state written) instead of a tuning error.
TEST(Tuning, ABlowUpInATrialEndsTheSearchWithTheFirstChoice) {
  int calls = 0;
  const TuneResult r =
      tune_step_settings({Strategy::SlotsFused, Strategy::Gather}, {0.3, 0.8}, [&](const TuneChoice&) -> double {
        ++calls;
        throw SimulationBlowup("step 1: particle 7 moved farther than max_step_displacement");
      });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.best.strategy, Strategy::SlotsFused);
  EXPECT_DOUBLE_EQ(r.best.skin, 0.3);
  EXPECT_NE(r.report().find("tuning: stopped, the start blew up in a trial (step 1: particle 7"), std::string::npos)
      << r.report();
}

// The minimiser's backend is not tuned: auto resolves to the defaults without a trial.
TEST(Tuning, TheUntunedModelResolvesAutoToTheDefaults) {
  const test::TestSystem s = tuned_lj();
  const Model m = untuned_model(s.model(), s.built.state.box);
  EXPECT_EQ(m.strategy, strategy_name(kDefaultStrategy));
  EXPECT_FALSE(m.neighbor.skin_auto);
  EXPECT_DOUBLE_EQ(m.neighbor.skin, 0.4);
}

// A restart that tunes to another deterministic strategy continues bit for bit, and its log must
// not say otherwise; a float-atomic strategy or the other backend does not.
TEST(Tuning, DeterministicStrategiesContinueTheSameTrajectory) {
  EXPECT_TRUE(same_trajectory_backends("cuda:pair_slots_fused", "cuda:atom_gather"));
  EXPECT_TRUE(same_trajectory_backends("cuda:pair_slots", "cuda:pair_slots_fused"));
  EXPECT_TRUE(same_trajectory_backends("cpu", "cpu"));
  EXPECT_TRUE(same_trajectory_backends("cuda:pair_warp", "cuda:pair_warp"));  // the same name: as before
  EXPECT_FALSE(same_trajectory_backends("cuda:pair_slots_fused", "cuda:pair_warp"));
  EXPECT_FALSE(same_trajectory_backends("cuda:pair_atomic", "cuda:pair_warp"));
  EXPECT_FALSE(same_trajectory_backends("cpu", "cuda:pair_slots_fused"));
  EXPECT_FALSE(same_trajectory_backends("cuda:pair_slots_fused", "cuda:no_such_strategy"));
}

TEST(Tuning, ABadSkinNamesTheKeyAndWhatIsExpected) {
  std::string message;
  try {
    parse_config(test::lj_yaml(4, 0.8442, "langevin", 1.2), "cfg.yaml", {"neighbor.skin=fast"});
  } catch (const ConfigError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("neighbor.skin"), std::string::npos) << message;
  EXPECT_NE(message.find("auto"), std::string::npos) << message;
}

}  // namespace
}  // namespace pairmd
