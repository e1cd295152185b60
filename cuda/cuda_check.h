// Every CUDA call goes through PAIRMD_CUDA_CHECK, every launch is followed by
// PAIRMD_CHECK_LAUNCH(): a failure throws with the file, line, call and CUDA's message.
// With PAIRMD_SYNC_LAUNCHES=1 in the environment each launch is also synchronised, so an
// asynchronous fault is reported at the launch that caused it (for debugging and sanitizers).
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace pairmd {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + cudaGetErrorName(err) + ": " +
                  cudaGetErrorString(err));
}

inline bool sync_launches() {
  static const bool on = [] {
    const char* e = std::getenv("PAIRMD_SYNC_LAUNCHES");
    return e && *e && *e != '0';
  }();
  return on;
}

inline void check_launch(const char* file, int line) {
  cuda_check(cudaGetLastError(), "kernel launch", file, line);
  if (sync_launches()) cuda_check(cudaDeviceSynchronize(), "kernel execution", file, line);
}

}  // namespace pairmd

#define PAIRMD_CUDA_CHECK(call) ::pairmd::cuda_check((call), #call, __FILE__, __LINE__)
#define PAIRMD_CHECK_LAUNCH() ::pairmd::check_launch(__FILE__, __LINE__)
