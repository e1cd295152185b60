// Start-up tuning of the CUDA backend (`force.strategy: auto`, `neighbor.skin: auto`): each
// candidate setting is timed for a few hundred steps on the run's own system (or ensemble) and
// the fastest is kept, as HOOMD-blue's and RUMD's autotuners do.
//
// Only settings that cannot change the trajectory are tuned: the deterministic strategies give
// bitwise the same forces (fixed-point sums: docs/strategies.md), and the skin only decides
// which pairs beyond the cutoff sit in the list, whose forces are exactly zero, and when the
// list is rebuilt, which renumbers particles but changes no sum. So a tuned run is bit for bit
// the run with the chosen settings written in the config, and any other tuned choice gives the
// same bits too (GPU tests GpuBackend.SkinAndTuningChangeNoTrajectory, EnsembleTuning.*; the
// search itself: Tuning.* on the CPU). A float-atomic strategy named in the config keeps its own
// run-to-run noise, and its skin is tuned too. Under a barostat the skin is not tuned.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/model.h"
#include "backends/strategies.h"
#include "base/box.h"

namespace pairmd {

class Backend;

struct TuneChoice {
  Strategy strategy = kDefaultStrategy;
  double skin = 0.3;
};

struct TuneTrial {
  TuneChoice choice;
  double ms_per_step = std::numeric_limits<double>::infinity();  // infinity: could not run
  std::string failure;                                           // why not, where it could not
};

struct TuneResult {
  TuneChoice best;
  std::vector<TuneTrial> trials;
  std::string stopped;  // why the search ended early (a trial blew up), or empty
  double seconds = 0;   // the search's wall time, its trials' set-up included (0: not measured)
  // One log line: what was chosen, how long the search took, and every trial's time.
  std::string report() const;
};

// Skins as fractions of the largest pair cutoff: `skin: auto` climbs along these (0.2 to 2.5 for
// LJ's 2.5, 1.6 to 20 A for the SOP model's 20 A, 0.09 to 1.12 for WCA's 1.12), those whose list
// radius fits minimum image in a periodic box. The best skin is set by how far particles move
// between builds against how many pairs a longer list holds, so it is a wide range of fractions
// across models (measured on the H100: the SOP model's near 0.3 rc, LJ's 0.2-0.32, WCA's 0.64 or
// more).
inline constexpr double kAutoSkinFractions[] = {0.08, 0.12, 0.16, 0.2, 0.24, 0.32, 0.4, 0.5, 0.64, 0.8, 1.0};
// Where nothing is timed (the CPU backend, a run under a barostat), and where the climb starts:
// 0.16 of the largest cutoff.
inline constexpr double kAutoSkinDefaultFraction = 0.16;
// How much faster another strategy than the default must be to be chosen (a step of the climb
// along the skins: half of it): trials of the same setting differ by about a per cent.
inline constexpr double kTuneMargin = 0.02;

double largest_pair_cutoff(const Model& model);
std::vector<double> auto_skin_candidates(const Model& model, const Box& box);
// The skin `auto` means where nothing is timed; 0 without pair terms. Never beyond what the box
// allows (half its smallest edge minus the largest cutoff).
double default_auto_skin(const Model& model, const Box& box);

// The strategies `force.strategy` lets the tuner try: the deterministic ones for `auto` (all_pairs
// only for `systems` systems of at most kAllPairsTunedSystem particles and kAllPairsTunedWork pair
// tests a step; `system_size` 0: not known, left out), else the one named.
std::vector<Strategy> tunable_strategies(const Model& model, int system_size = 0, int systems = 1);
// The skins `neighbor.skin` lets it try: the candidates for `auto`, else the one given.
std::vector<double> tunable_skins(const Model& model, const Box& box);

// The model with a choice written in (auto resolved: the choice's strategy and skin).
Model with_tuned_settings(const Model& model, const TuneChoice& c);

// The model with `auto` resolved without timing anything: the default strategy and the default
// skin fraction. For backends that take no dynamic steps before the run (the minimiser's): a
// trial would step dynamics from a start that may still overlap.
Model untuned_model(const Model& model, const Box& box);

// Whether there is anything to time: several strategies, or several skins for one that has a
// list (all_pairs alone has a single choice, whatever the skins).
bool tuning_has_choices(const std::vector<Strategy>& strategies, const std::vector<double>& skins);

// A coordinate search: a climb along the skins with the first strategy (from skins[first_skin],
// down while a smaller skin is faster, else up while a larger one is), then every strategy at the
// best skin, then, if the strategy changed, the climb again with it. `time` gives the milliseconds
// per step of a choice (infinity, or an exception, where it cannot run: that choice is skipped).
// Nothing is timed when there is only one choice (tuning_has_choices), and a strategy without a
// list is timed at one skin, not climbed. A blow-up (SimulationBlowup) ends the search:
// the start itself cannot be stepped, whatever the settings, so the first choice is kept and the
// run meets the blow-up where it reports it best. Throws std::runtime_error if no choice runs.
TuneResult tune_step_settings(const std::vector<Strategy>& strategies, const std::vector<double>& skins,
                              const std::function<double(const TuneChoice&)>& time, size_t first_skin = 0);
// The index of the candidate skin nearest the default (where the climb starts).
size_t default_skin_index(const std::vector<double>& skins, const Model& model, const Box& box);

// Milliseconds per step of steady stepping: warm-up chunks until one captures no new CUDA graph
// (at least `warmup` steps, at most `max_steps`), then the mean over chunks of `chunk` steps
// that captured nothing, until at least `min_steps` steps and `min_ms` milliseconds (at most
// `max_steps`), so that the time includes the list builds at their own rate.
double time_steps(Backend& backend, int warmup = 100, int chunk = 50, int min_steps = 400, double min_ms = 100,
                  int max_steps = 4000);

}  // namespace pairmd
