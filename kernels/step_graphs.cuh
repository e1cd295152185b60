// Work replayed as CUDA graphs. A chunk of k steps (k integrate kernels, each followed by the
// force kernels of the strategy) or a list build is captured once and then replayed with one
// launch: small systems are bound by launch overheads, not by the GPU.
//
// A graph holds its kernels' arguments by value, so each cached graph keeps the key of the work
// it was captured from (base/work_key.h: every launch with every argument, field by field), and
// is replayed only when the work due now has the same key; otherwise it is captured again. What
// a graph depends on is thus the work itself, not a list of buffers and settings kept by hand.
// Steps and their pending end live on the device (kernels/step_control.cuh), so one graph serves
// every chunk of its length and variant (the position buffer it starts from, the read-back slot
// it publishes to).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <utility>

#include "base/work_key.h"
#include "cuda/cuda_check.h"
#include "cuda/launcher.cuh"

namespace pairmd {

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  ~StepGraphs() { clear(); }

  // Launches the graph of (`steps`, `variant`) on `stream` if it was captured from work of key
  // `key`; else captures enqueue(launcher) first, the launcher issuing into the capture.
  template <typename Enqueue>
  void launch(int steps, int variant, const WorkKey& key, cudaStream_t stream, Enqueue&& enqueue) {
    Entry& e = execs_[{steps, variant}];
    if (e.exec && e.key != key) {
      cudaGraphExecDestroy(e.exec);
      e.exec = nullptr;
      ++resets_;
    }
    if (!e.exec) {
      capture(e, stream, enqueue);
      e.key = key;
      ++captures_;
    }
    PAIRMD_CUDA_CHECK(cudaGraphLaunch(e.exec, stream));
  }

  void clear() {
    for (auto& e : execs_)
      if (e.second.exec) cudaGraphExecDestroy(e.second.exec);
    execs_.clear();
  }
  int64_t captures() const { return captures_; }
  // Graphs dropped because the work due had another key than theirs.
  int64_t resets() const { return resets_; }

 private:
  struct Entry {
    cudaGraphExec_t exec = nullptr;
    WorkKey key;
  };

  template <typename Enqueue>
  static void capture(Entry& e, cudaStream_t stream, Enqueue& enqueue) {
    cudaGraph_t graph = nullptr;
    PAIRMD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      Launcher launcher(stream);
      enqueue(launcher);
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    PAIRMD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    const cudaError_t err = cudaGraphInstantiate(&e.exec, graph, 0);
    cudaGraphDestroy(graph);
    if (err != cudaSuccess) {
      e.exec = nullptr;
      cuda_check(err, "cudaGraphInstantiate", __FILE__, __LINE__);
    }
  }

  std::map<std::pair<int, int>, Entry> execs_;
  int64_t captures_ = 0;
  int64_t resets_ = 0;
};

}  // namespace pairmd
