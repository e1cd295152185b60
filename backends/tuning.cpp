#include "backends/tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "backends/backend.h"

namespace pairmd {

double largest_pair_cutoff(const Model& model) {
  double rc = 0;
  for (const PairTerm& t : model.force_field.pair_terms) rc = std::max(rc, t.max_cutoff());
  return rc;
}

namespace {

// The largest skin minimum image allows (infinite for an open box; negative if even the cutoff
// does not fit, which the config's checks have refused before).
double largest_skin(const Model& model, const Box& box) {
  if (!box.periodic) return std::numeric_limits<double>::infinity();
  return 0.5 * std::min({box.L.x, box.L.y, box.L.z}) - largest_pair_cutoff(model);
}

}  // namespace

std::vector<double> auto_skin_candidates(const Model& model, const Box& box) {
  const double rc = largest_pair_cutoff(model), most = largest_skin(model, box);
  std::vector<double> skins;
  for (double f : kAutoSkinFractions)
    if (f * rc <= most) skins.push_back(f * rc);
  if (skins.empty()) skins.push_back(default_auto_skin(model, box));
  return skins;
}

double default_auto_skin(const Model& model, const Box& box) {
  const double rc = largest_pair_cutoff(model);
  return std::max(0.0, std::min(kAutoSkinDefaultFraction * rc, largest_skin(model, box)));
}

std::vector<Strategy> tunable_strategies(const Model& model, int system_size, int systems) {
  if (model.strategy != kAutoStrategy) return {parse_strategy(model.strategy)};
  std::vector<Strategy> s{kDefaultStrategy};  // the default first: the skins are timed with it
  const double work = static_cast<double>(systems) * system_size * system_size;
  const bool small = system_size > 0 && system_size <= kAllPairsTunedSystem && work <= kAllPairsTunedWork;
  for (const StrategyInfo& i : kStrategies)
    if (i.deterministic && i.id != kDefaultStrategy && (i.list || small)) s.push_back(i.id);
  return s;
}

std::vector<double> tunable_skins(const Model& model, const Box& box) {
  if (!model.neighbor.skin_auto || model.force_field.pair_terms.empty()) return {model.neighbor.skin};
  // Under a barostat the box shrinks and grows, and a run stops once half its edge is below the
  // cutoff plus the skin: a skin chosen for the start box could end a run that the default
  // would finish. So the default fraction, as the start box allows.
  if (model.barostat.active()) return {default_auto_skin(model, box)};
  return auto_skin_candidates(model, box);
}

size_t default_skin_index(const std::vector<double>& skins, const Model& model, const Box& box) {
  const double d = default_auto_skin(model, box);
  size_t best = 0;
  for (size_t i = 1; i < skins.size(); ++i)
    if (std::fabs(skins[i] - d) < std::fabs(skins[best] - d)) best = i;
  return best;
}

bool tuning_has_choices(const std::vector<Strategy>& strategies, const std::vector<double>& skins) {
  return strategies.size() > 1 || (skins.size() > 1 && strategy_info(strategies.front()).list);
}

TuneResult tune_step_settings(const std::vector<Strategy>& strategies, const std::vector<double>& skins,
                              const std::function<double(const TuneChoice&)>& time, size_t first_skin) {
  TuneResult r;
  if (strategies.empty() || skins.empty()) throw std::invalid_argument("tuning: nothing to choose from");
  first_skin = std::min(first_skin, skins.size() - 1);
  r.best = {strategies.front(), skins[first_skin]};
  if (!tuning_has_choices(strategies, skins)) return r;
  double best_ms = std::numeric_limits<double>::infinity();
  // The time of a choice, timed once (infinity where it failed or the search has stopped).
  auto ms_of = [&](const TuneChoice& c) {
    for (const TuneTrial& t : r.trials)
      if (t.choice.strategy == c.strategy && t.choice.skin == c.skin) return t.ms_per_step;
    if (!r.stopped.empty()) return std::numeric_limits<double>::infinity();
    TuneTrial t;
    t.choice = c;
    try {
      t.ms_per_step = time(c);
    } catch (const SimulationBlowup& e) {
      r.stopped = e.what();
      t.failure = e.what();
    } catch (const std::exception& e) {
      t.failure = e.what();
    }
    if (!(t.ms_per_step > 0)) t.ms_per_step = std::numeric_limits<double>::infinity();
    // Another strategy than the default must win by a margin: trials differ by a per cent or
    // two from noise alone, and the default is what the docs' figures were measured with.
    const double margin = c.strategy == strategies.front() ? 1.0 : 1.0 - kTuneMargin;
    if (t.ms_per_step < best_ms * margin) best_ms = t.ms_per_step, r.best = c;
    r.trials.push_back(t);
    return t.ms_per_step;
  };
  // Along the skins from i: down while faster, else up while faster; the index where it stopped.
  // A strategy without a list has no use for a skin: timed at i only.
  auto climb = [&](Strategy s, size_t i) {
    double here = ms_of({s, skins[i]});
    if (!strategy_info(s).list) return i;
    for (const int dir : {-1, 1}) {
      size_t j = i;
      while (dir < 0 ? j > 0 : j + 1 < skins.size()) {
        const double there = ms_of({s, skins[j + dir]});
        if (!(there < here * (1.0 - kTuneMargin / 2))) break;  // a step must pay more than noise
        j += dir;
        here = there;
      }
      if (j != i) return j;
    }
    return i;
  };
  climb(strategies.front(), first_skin);
  // The strategies at the fastest skin measured (a step short of the climb's margin may be it).
  const size_t at = static_cast<size_t>(std::find(skins.begin(), skins.end(), r.best.skin) - skins.begin());
  for (Strategy s : strategies) ms_of({s, skins[std::min(at, skins.size() - 1)]});
  if (r.best.strategy != strategies.front()) climb(r.best.strategy, std::min(at, skins.size() - 1));
  if (!r.stopped.empty()) {
    r.best = {strategies.front(), skins[first_skin]};
    return r;
  }
  if (!std::isfinite(best_ms)) {
    std::string why = r.trials.empty() ? "" : r.trials.front().failure;
    throw std::runtime_error("tuning: no setting could run" + (why.empty() ? "" : " (" + why + ")"));
  }
  return r;
}

Model with_tuned_settings(const Model& model, const TuneChoice& c) {
  Model m = model;
  m.strategy = strategy_name(c.strategy);
  m.neighbor.skin = c.skin;
  m.neighbor.skin_auto = false;
  return m;
}

Model untuned_model(const Model& model, const Box& box) {
  const Strategy s = model.strategy == kAutoStrategy ? kDefaultStrategy : parse_strategy(model.strategy);
  return with_tuned_settings(model,
                             {s, model.neighbor.skin_auto ? default_auto_skin(model, box) : model.neighbor.skin});
}

std::string TuneResult::report() const {
  std::ostringstream s;
  if (!stopped.empty()) {
    s << std::setprecision(4) << "tuning: stopped, the start blew up in a trial (" << stopped
      << "); the run goes on with " << strategy_name(best.strategy) << ", skin " << best.skin;
    return s.str();
  }
  s << std::setprecision(4) << "tuning: chose " << strategy_name(best.strategy) << ", skin " << best.skin;
  if (seconds > 0) {
    std::ostringstream t;
    t << std::fixed << std::setprecision(seconds < 10 ? 1 : 0) << seconds;
    s << " in " << t.str() << " s";
  }
  if (trials.empty()) return s.str();
  s << " (ms/step:";
  for (const TuneTrial& t : trials) {
    s << " " << strategy_name(t.choice.strategy) << "/" << t.choice.skin << " ";
    if (std::isfinite(t.ms_per_step))
      s << t.ms_per_step;
    else
      s << "failed";
  }
  s << ")";
  return s.str();
}

double time_steps(Backend& backend, int warmup, int chunk, int min_steps, double min_ms, int max_steps) {
  // Warm up until a chunk captures no new CUDA graph (each new chunk length is captured once, at
  // a cost of milliseconds that would swamp a trial's time), at least `warmup` steps.
  int64_t captures = -1;
  for (int steps = 0; steps < warmup || (backend.stats().graph_captures != captures && steps < max_steps);
       steps += chunk) {
    captures = backend.stats().graph_captures;
    backend.advance(chunk);
  }
  // Then the mean over chunks, the list builds at their own rate included, leaving out a chunk
  // that still captured a graph (a chunk length not seen before).
  double ms = 0, counted_ms = 0;
  int counted = 0;
  for (int steps = 0; steps < max_steps && (steps < min_steps || ms < min_ms); steps += chunk) {
    captures = backend.stats().graph_captures;
    const auto t0 = std::chrono::steady_clock::now();
    backend.advance(chunk);
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ms += t;
    if (backend.stats().graph_captures != captures) continue;
    counted_ms += t;
    counted += chunk;
  }
  return counted > 0 ? counted_ms / counted : std::numeric_limits<double>::infinity();
}

}  // namespace pairmd
