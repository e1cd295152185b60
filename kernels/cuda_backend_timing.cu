// The CUDA backend, timing and statistics (kernels/cuda_backend.cuh): CUDA events around each
// phase in profiling mode, read back in batches; the statistics line of a run.
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

#include "kernels/cuda_backend.cuh"

namespace pairmd {

int CudaBackend::take_event() {
  if (next_event_ == events_.size()) {
    cudaEvent_t e;
    PAIRMD_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return static_cast<int>(next_event_++);
}

void CudaBackend::phase_begin() {
  if (!profile_) return;
  if (open_phase_ >= 0) throw std::logic_error("CudaBackend: timing phases must not nest");
  open_phase_ = take_event();
  PAIRMD_CUDA_CHECK(cudaEventRecord(events_[open_phase_], stream_));
}

void CudaBackend::phase_end(double& seconds) {
  if (!profile_ || open_phase_ < 0) return;
  const int stop = take_event();
  PAIRMD_CUDA_CHECK(cudaEventRecord(events_[stop], stream_));
  pending_phases_.push_back({&seconds, open_phase_, stop});
  open_phase_ = -1;
  if (next_event_ >= 4096) resolve_phases();
}

void CudaBackend::resolve_phases() {
  if (!pending_phases_.empty()) {
    PAIRMD_CUDA_CHECK(cudaEventSynchronize(events_[pending_phases_.back().stop]));
    for (const PhaseMark& m : pending_phases_) {
      float ms = 0.f;
      PAIRMD_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[m.start], events_[m.stop]));
      *m.seconds += 1e-3 * ms;
    }
    pending_phases_.clear();
  }
  next_event_ = 0;
  open_phase_ = -1;
}

BackendStats CudaBackend::stats() const {
  BackendStats s = stats_;
  s.device_bytes = device_bytes_in_use();
  s.step_graph_resets = graphs_.resets();
  s.graph_captures = graphs_.captures() + build_graphs_.captures();
  s.strategy = strategy_name(strategy_);
  s.skin = model_.neighbor.skin;
  std::ostringstream d;
  d << "strategy " << strategy_name(strategy_);  // and the skin: what start-up tuning chose, if it ran
  if (!pair_terms_.empty() && has_lists()) d << ", skin " << model_.neighbor.skin;
  if (!pair_terms_.empty() && !has_lists()) d << ", no pair list (" << all_pairs_lanes_ << " threads per particle)";
  for (const auto& t : pair_terms_) {
    if (!t->list) continue;
    // The pair count waits for the device: after a CUDA error (a failed run's report) it is
    // left out rather than thrown, so the report still says where the last good state went.
    d << ", " << pair_kind_name(t->kind) << " list ";
    try {
      d << t->list->count_pairs() << " pairs";
    } catch (const std::exception&) {
      d << "(pairs unknown)";
    }
    d << " in " << t->list->entries() << " entries";
  }
  if (decide_launches_ > 0)
    d << ", the step decided after the summation (" << decide_launches_ << " launches enqueued)";
  if (stats_.steps > 0 && chunks_ > 0)
    d << ", " << std::fixed << std::setprecision(1) << static_cast<double>(stats_.steps) / chunks_ << " steps per "
      << (use_graphs_ ? "graph launch" : "host sync") << " (" << graphs_.captures() << " graphs captured, "
      << halted_steps_ << " halted steps launched; host " << std::setprecision(1)
      << 1e6 * seconds_chunks_ / stats_.steps << " us/step in chunks, " << 1e6 * seconds_rebuilds_ / stats_.steps
      << " in list builds)";
  d << ", GPU memory " << std::fixed << std::setprecision(1) << s.device_bytes / 1048576.0 << " MiB";
  if (stats_.list_capacity_growths) d << ", list grew " << stats_.list_capacity_growths << "x";
  s.detail = d.str();
  return s;
}

}  // namespace pairmd
