// The GPU force-summation strategies: the one list of their names, properties and docs lines.
//
// Config (`force.strategy`), `pairmd run --help`, `pairmd compare` (its default list), the docs
// table (docs/strategies.md, checked by tests/test_registries.cpp) and the GPU tests iterate over
// it; the CUDA backend maps each to its kernels (kernels/cuda_backend.cu, `switch (strategy_)`).
// A new strategy is a line here, its kernels and its cases there (docs/extending.md).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pairmd {

enum class Strategy { SlotsFused, Slots, Atomic, Warp, Gather, AllPairs };

struct StrategyInfo {
  Strategy id;
  const char* name;    // the config value of force.strategy
  bool deterministic;  // fixed-point sums: bitwise the same forces and runs, whatever the thread timing
  bool slots;          // pairs write F/r into slots of their own (the lists get columns)
  bool full_list;      // a full list (every pair from both sides) instead of a half list
  bool list;           // searches a pair list (all_pairs does not: every pair of a system, every step)
  const char* doc;     // one line: threads and how the forces are summed
};

inline constexpr StrategyInfo kStrategies[] = {
    {Strategy::SlotsFused, "pair_slots_fused", true, true, false, true,
     "one thread per pair writes F/r into its slot; the integrate kernel sums the slots in fixed point"},
    {Strategy::Slots, "pair_slots", true, true, false, true,
     "the same slots, summed in fixed point by a kernel of their own"},
    {Strategy::Atomic, "pair_atomic", false, false, false, true, "one thread per pair; float atomicAdd of +f and -f"},
    {Strategy::Warp, "pair_warp", false, false, false, true,
     "one thread per pair; a warp's contributions to the same particle reduced by shuffles, then atomics"},
    {Strategy::Gather, "atom_gather", true, false, true, true,
     "one thread per particle over a full list; fixed-point sums in registers"},
    {Strategy::AllPairs, "all_pairs", true, false, false, false,
     "a few threads per particle over every particle of its system, no list; fixed-point sums (small systems)"},
};

// all_pairs evaluates N^2 pairs per system and step: refused above this many particles per system
// (a list strategy is faster long before), and a candidate of `auto` up to the second size
// (docs/strategies.md, "all_pairs").
inline constexpr int kAllPairsLargestSystem = 16384;
inline constexpr int kAllPairsTunedSystem = 2048;
// ... and for ensembles of at most this many pair tests a step (K S^2: 64 x 500 is 1.6e7), so that
// its trial of a large ensemble (1,024 x 2,048: 4e9, ~10 ms a step) does not lengthen the start.
inline constexpr double kAllPairsTunedWork = 268435456.0;  // 2^28

// The strategy a run uses unless the config says otherwise.
inline constexpr Strategy kDefaultStrategy = Strategy::SlotsFused;
// force.strategy: auto times the deterministic strategies on the run's system and keeps the
// fastest (backends/tuning.h).
inline constexpr const char* kAutoStrategy = "auto";

inline const StrategyInfo& strategy_info(Strategy s) {
  for (const StrategyInfo& i : kStrategies)
    if (i.id == s) return i;
  return kStrategies[0];  // not reached: every enumerator has its line
}

inline const char* strategy_name(Strategy s) { return strategy_info(s).name; }

// The registered strategy of that name, or nullptr (also for "auto").
inline const StrategyInfo* find_strategy(const std::string& name) {
  for (const StrategyInfo& i : kStrategies)
    if (name == i.name) return &i;
  return nullptr;
}

// The strategy of a registered name (not "auto").
inline Strategy parse_strategy(const std::string& s) {
  if (const StrategyInfo* i = find_strategy(s)) return i->id;
  throw std::runtime_error("unknown force strategy '" + s + "'");
}

// Whether two backends (Backend::name: "cpu", "cuda:STRATEGY") run the same trajectory bit for
// bit: the same name, or two deterministic CUDA strategies (their fixed-point sums agree; a
// restart with force.strategy auto may choose another one). A restart's log says so otherwise.
inline bool same_trajectory_backends(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string cuda = "cuda:";
  if (a.rfind(cuda, 0) != 0 || b.rfind(cuda, 0) != 0) return false;
  const StrategyInfo* x = find_strategy(a.substr(cuda.size()));
  const StrategyInfo* y = find_strategy(b.substr(cuda.size()));
  return x && y && x->deterministic && y->deterministic;
}

// The registered names in order; with `auto` last where asked (the values force.strategy takes).
inline std::vector<std::string> strategy_names(bool with_auto = false) {
  std::vector<std::string> names;
  for (const StrategyInfo& i : kStrategies) names.push_back(i.name);
  if (with_auto) names.push_back(kAutoStrategy);
  return names;
}

}  // namespace pairmd
