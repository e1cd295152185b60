// Ensembles on one GPU (issue #31): K copies of a config's system advanced together
// (backends/ensemble.h), timesteps per second of each system and particle-steps per second of
// the whole, for each K asked for.
//
//   ensemble_bench CONFIG [--copies 1,16,64] [--steps 2000] [--warmup 500] [--repeats 3]
//                  [--backend cuda|cpu] [--set key.path=value ...] [--csv FILE]
//
// The copies start from the config's system, each jiggled a little (0.01 length units, seed k)
// and with its own thermostat seed (integrator.seed + k); the timed call is Ensemble::advance
// (steps) after `warmup` steps, host wall time, the median of the repeats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/ensemble.h"
#include "engine/config.h"
#include "engine/system_builder.h"

using namespace pairmd;

namespace {

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoi(x));
  return v;
}

void jiggle(SystemState& s, double amount, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-amount, amount);
  for (size_t i = 0; i < s.size(); ++i) {
    s.position[i] += Vec3d{u(rng), u(rng), u(rng)};
    s.box.wrap(s.position[i], s.image[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ensemble_bench CONFIG [--copies 1,16,64] [--steps 2000] [--warmup 500] [--repeats 3]"
                 " [--backend cuda|cpu] [--set key.path=value ...] [--csv FILE]\n";
    return 2;
  }
  std::string config = argv[1], backend = "cuda", csv;
  std::vector<int> copies = {1, 16, 64};
  std::vector<std::string> sets;
  int64_t steps = 2000, warmup = 500;
  int repeats = 3;
  for (int a = 2; a + 1 < argc; a += 2) {
    const std::string k = argv[a], v = argv[a + 1];
    if (k == "--copies")
      copies = parse_list(v);
    else if (k == "--steps")
      steps = std::stoll(v);
    else if (k == "--warmup")
      warmup = std::stoll(v);
    else if (k == "--repeats")
      repeats = std::stoi(v);
    else if (k == "--backend")
      backend = v;
    else if (k == "--set")
      sets.push_back(v);
    else if (k == "--csv")
      csv = v;
    else {
      std::cerr << "ensemble_bench: unknown option " << k << "\n";
      return 2;
    }
  }
  try {
    const RunConfig cfg = load_config(config, sets);
    const BuiltSystem sys = build_system(cfg);
    const Model model = make_model(cfg, sys);
    const int n = static_cast<int>(sys.state.size());
    std::ofstream out;
    if (!csv.empty()) {
      out.open(csv);
      out << "config,backend,copies,n,steps,timesteps_per_s,particle_steps_per_s,ms_per_step,repeat_spread,"
             "gpu_bytes_per_particle\n";
    }
    std::printf("%-8s %8s %12s %16s %10s %8s\n", "copies", "N", "steps/s", "particle-steps/s", "ms/step", "spread");
    for (int k : copies) {
      std::vector<SystemState> states;
      std::vector<EnsembleSystem> systems;
      for (int c = 0; c < k; ++c) {
        SystemState s = sys.state;
        jiggle(s, 0.01, 1000 + c);
        states.push_back(s);
        systems.push_back({cfg.model.integrator.temperature, cfg.model.integrator.seed + c});
      }
      std::unique_ptr<Ensemble> e = make_ensemble(backend, model, states, systems);
      e->advance(warmup);
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        e->advance(steps);
        SystemState probe;
        e->get_state(0, probe);  // the steps are done
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      const double med = times[times.size() / 2];
      const double sps = steps / med, pps = sps * n * k;
      const double spread = (times.back() - times.front()) / med;
      const BackendStats st = e->stats();
      const double bpp = static_cast<double>(st.device_bytes) / (static_cast<double>(n) * k);
      std::printf("%-8d %8d %12.1f %16.4g %10.4f %8.3f\n", k, n, sps, pps, 1000 * med / steps, spread);
      if (out)
        out << config << "," << backend << "," << k << "," << n << "," << steps << "," << sps << "," << pps << ","
            << 1000 * med / steps << "," << spread << "," << bpp << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "ensemble_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
