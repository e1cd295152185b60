// Chunks of timesteps as CUDA graphs. A chunk of k steps (k integrate kernels, each followed by
// the force kernels of the strategy) is captured once and then replayed with one launch: small
// systems are bound by launch overheads, not by the GPU. The graph is valid as long as the
// kernels' arguments are: the backend passes a signature (every pointer and launch size the
// chunk uses), and the cache is emptied when it changes (buffers that grew at a list build).
// Steps and their pending end live on the device (kernels/step_control.cuh), so one graph
// serves every chunk of its length and variant (the position buffer it starts from, the
// read-back slot it publishes to).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "cuda/cuda_check.h"

namespace pairmd {

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  ~StepGraphs() { clear(); }

  // Launches the chunk of `steps` steps of variant `variant` on `stream`, capturing it first from
  // enqueue(steps, variant) if it is not cached for this signature.
  template <typename Enqueue>
  void launch(int steps, int variant, const std::vector<uintptr_t>& signature, cudaStream_t stream, Enqueue&& enqueue) {
    if (signature != signature_) {
      if (!execs_.empty()) ++resets_;
      clear();
      signature_ = signature;
    }
    cudaGraphExec_t& exec = execs_[{steps, variant}];
    if (!exec) {
      cudaGraph_t graph = nullptr;
      PAIRMD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue(steps, variant);
      } catch (...) {
        cudaStreamEndCapture(stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        execs_.erase({steps, variant});
        throw;
      }
      PAIRMD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      if (err != cudaSuccess) {
        execs_.erase({steps, variant});
        cuda_check(err, "cudaGraphInstantiate", __FILE__, __LINE__);
      }
      ++captures_;
    }
    PAIRMD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  }

  void clear() {
    for (auto& e : execs_)
      if (e.second) cudaGraphExecDestroy(e.second);
    execs_.clear();
  }
  int64_t captures() const { return captures_; }
  // Times the cached graphs were dropped because the signature changed.
  int64_t resets() const { return resets_; }

 private:
  std::map<std::pair<int, int>, cudaGraphExec_t> execs_;
  std::vector<uintptr_t> signature_;
  int64_t captures_ = 0;
  int64_t resets_ = 0;
};

}  // namespace pairmd
