// How the CUDA backend puts work on its stream. Every kernel launch, memset, copy and library
// call of the step loop and of the list build goes through a Launcher, which
//   - issues it at once (Launcher(stream)),
//   - or only writes its key (Launcher::keying): what a cached graph of that work is compared
//     with before it is replayed (base/work_key.h),
//   - or writes its key and keeps it for later (Launcher::planning): a WorkPlan that is then
//     issued once, directly or into a graph capture, so the host-side bookkeeping that goes with
//     the work (a buffer flip, a build count) runs once whether the graph is replayed or made.
// A launch that bypasses the launcher would be missing from the keys, and a graph could be
// replayed with stale arguments: scripts/check_launches.py (ctest `launches`) fails on a `<<<`,
// a cudaMemsetAsync/cudaMemcpyAsync or a CUB call outside this file in kernels/ and neighbor/.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/work_key.h"
#include "cuda/cuda_check.h"

namespace pairmd {

// Where a launch was written, for its error message.
struct LaunchSite {
  const char* file;
  int line;
};
#define PAIRMD_HERE (::pairmd::LaunchSite{__FILE__, __LINE__})

// Work kept for later: its key, and the operations that issue it on a stream.
struct WorkPlan {
  WorkKey key;
  std::vector<std::function<void(cudaStream_t)>> ops;
  void issue(cudaStream_t stream) const {
    for (const auto& op : ops) op(stream);
  }
};

class Launcher {
 public:
  // Issues every piece of work on `stream` when it is given.
  explicit Launcher(cudaStream_t stream) : stream_(stream) {}
  // Writes the key of the work and issues nothing.
  static Launcher keying(WorkKey& key) { return Launcher(nullptr, &key, nullptr); }
  // Writes the key into plan.key and keeps the work in plan.ops.
  static Launcher planning(WorkPlan& plan) { return Launcher(nullptr, &plan.key, &plan); }

  // True when the work reaches the GPU, now or from a plan: host bookkeeping that belongs to the
  // work (counters of launches) goes with it, and not with a key that is only compared.
  bool issuing() const { return key_ == nullptr || plan_ != nullptr; }
  // True when work goes to the GPU at once: only then may the host wait for it (stream()).
  bool immediate() const { return key_ == nullptr; }
  cudaStream_t stream() const {
    if (!immediate()) throw std::logic_error("Launcher: only work issued at once has a stream to wait for");
    return stream_;
  }

  // kernel<<<grid, block, shared>>>(args...), the arguments converted to the kernel's parameter
  // types first (so the key holds what the kernel receives).
  template <typename... P, typename... A>
  void kernel(LaunchSite site, void (*k)(P...), dim3 grid, dim3 block, size_t shared, A&&... args) {
    static_assert(sizeof...(P) == sizeof...(A), "a kernel launch with the wrong number of arguments");
    std::tuple<std::decay_t<P>...> held(std::forward<A>(args)...);
    if (key_) {
      key_->add_bytes(&k, sizeof k);
      add_dims(grid);
      add_dims(block);
      key_->add(shared);
      std::apply([this](const auto&... a) { (key_->add(a), ...); }, held);
    }
    auto op = [site, k, grid, block, shared, held](cudaStream_t s) {
      std::apply([&](const auto&... a) { k<<<grid, block, shared, s>>>(a...); }, held);
      check_launch(site.file, site.line);
    };
    issue(std::move(op));
  }

  void memset(LaunchSite site, void* p, int value, size_t bytes) {
    if (key_) {
      key_->add(static_cast<int>(Op::Memset));
      key_->add(p);
      key_->add(value);
      key_->add(bytes);
    }
    issue([=](cudaStream_t s) {
      cuda_check(cudaMemsetAsync(p, value, bytes, s), "cudaMemsetAsync", site.file, site.line);
    });
  }

  // A copy between device buffers, or from the device into (pinned) host memory. A copy from
  // host memory must not be planned: the host source may be gone when the plan is issued.
  void copy(LaunchSite site, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    if (plan_ && kind == cudaMemcpyHostToDevice)
      throw std::logic_error("Launcher: a host-to-device copy cannot be kept in a plan");
    if (key_) {
      key_->add(static_cast<int>(Op::Copy));
      key_->add(dst);
      key_->add(src);
      key_->add(bytes);
      key_->add(kind);
    }
    issue([=](cudaStream_t s) {
      cuda_check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync", site.file, site.line);
    });
  }

  // A library call (a CUB algorithm) f(stream), whose launches the launcher cannot see: its key
  // is the arguments that decide them, given here.
  template <typename F, typename... K>
  void call(LaunchSite site, F&& f, const K&... key) {
    if (key_) {
      key_->add(static_cast<int>(Op::Call));
      key_->add(site.line);
      (key_->add(key), ...);
    }
    issue([site, f = std::forward<F>(f)](cudaStream_t s) { cuda_check(f(s), "library call", site.file, site.line); });
  }

 private:
  enum class Op { Memset = 1, Copy, Call };
  Launcher(cudaStream_t stream, WorkKey* key, WorkPlan* plan) : stream_(stream), key_(key), plan_(plan) {}
  void add_dims(dim3 d) {
    key_->add(d.x);
    key_->add(d.y);
    key_->add(d.z);
  }
  template <typename Op>
  void issue(Op&& op) {
    if (plan_)
      plan_->ops.emplace_back(std::forward<Op>(op));
    else if (!key_)
      op(stream_);
  }

  cudaStream_t stream_ = nullptr;
  WorkKey* key_ = nullptr;
  WorkPlan* plan_ = nullptr;
};

}  // namespace pairmd
