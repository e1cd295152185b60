// What the engine calls (declared in backends/backend.cpp, so that the engine needs no CUDA
// header): make_cuda_backend, which tunes the strategy and skin where the config says auto
// (backends/tuning.h), and the device probe (cuda/device_query.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/tuning.h"
#include "cuda/device_query.h"
#include "kernels/cuda_backend.cuh"

namespace pairmd {

bool cuda_device_present(std::string* reason) { return probe_cuda_device(reason); }

bool cuda_device_free_memory(double* free_bytes, double* total_bytes) {
  return probe_cuda_free_memory(free_bytes, total_bytes);
}

std::pair<int, int> cuda_select_device(int local_rank) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    cudaGetLastError();
    return {-1, 0};
  }
  const int device = ((local_rank % count) + count) % count;
  PAIRMD_CUDA_CHECK(cudaSetDevice(device));
  return {device, count};
}

// force.strategy auto and neighbor.skin auto (backends/tuning.h): each candidate is timed on
// this very system, and the chosen backend starts again from the initial state.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial) {
  const TuneResult tuned =
      tune_cuda_settings(model, initial.box, static_cast<int>(initial.size()), 1,
                         [&](const Model& m, Strategy s) { return std::make_unique<CudaBackend>(m, initial, s); });
  return std::make_unique<CudaBackend>(with_tuned_settings(model, tuned.best), initial, tuned.best.strategy);
}

TuneResult tune_cuda_settings(const Model& model, const Box& box, int system_size, int systems,
                              const std::function<std::unique_ptr<CudaBackend>(const Model&, Strategy)>& make) {
  const auto started = std::chrono::steady_clock::now();
  const std::vector<Strategy> strategies = tunable_strategies(model, system_size, systems);
  const std::vector<double> skins = tunable_skins(model, box);
  if (tuning_has_choices(strategies, skins)) {
    // The first trial of a process would also pay for the GPU's clocks coming up and the
    // kernels' modules loading: a throwaway run first.
    try {
      const TuneChoice first{strategies.front(), skins[default_skin_index(skins, model, box)]};
      make(with_tuned_settings(model, first), first.strategy)->advance(50);
    } catch (const std::exception&) {
      // the search meets it again, and reports it
    }
  }
  TuneResult r = tune_step_settings(
      strategies, skins,
      [&](const TuneChoice& c) {
        std::unique_ptr<CudaBackend> b = make(with_tuned_settings(model, c), c.strategy);
        return time_steps(*b);
      },
      default_skin_index(skins, model, box));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!r.trials.empty()) std::cout << r.report() << "\n";
  return r;
}

}  // namespace pairmd
