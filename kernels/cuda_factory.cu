// What the engine calls (declared in backends/backend.cpp, so that the engine needs no CUDA
// header): make_cuda_backend, which picks the strategy (and times the deterministic ones for
// force.strategy auto), and the device probe (cuda/device_query.h).
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

std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial) {
  if (model.strategy != kAutoStrategy)
    return std::make_unique<CudaBackend>(model, initial, parse_strategy(model.strategy));
  // auto: time each deterministic strategy for a few steps on this very system and keep the
  // fastest; the chosen backend starts again from the initial state.
  std::ostringstream log;
  Strategy best = kDefaultStrategy;
  double best_ms = 1e300;
  for (const StrategyInfo& info : kStrategies) {
    if (!info.deterministic) continue;
    const Strategy s = info.id;
    CudaBackend b(model, initial, s);
    b.advance(10);  // warm-up, including list builds
    const auto t0 = std::chrono::steady_clock::now();
    b.advance(50);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 50;
    log << " " << strategy_name(s) << " " << std::setprecision(4) << ms << " ms/step;";
    if (ms < best_ms) {
      best_ms = ms;
      best = s;
    }
  }
  std::cout << "force.strategy auto: chose " << strategy_name(best) << " (timed 50 steps each:" << log.str() << ")\n";
  return std::make_unique<CudaBackend>(model, initial, best);
}

}  // namespace pairmd
