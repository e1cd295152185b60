// The one device probe of every CUDA part (the backend and the potential-map kernels): whether a
// device is usable and which, and its free memory. Host code, for .cu files.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "cuda/cuda_check.h"

namespace pairmd {

// True when a CUDA device is present; `reason` gets "GPU <name>" of device 0, or why not.
inline bool probe_cuda_device(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    if (reason)
      *reason = std::string("no CUDA device: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    cudaGetLastError();  // clear the sticky-free error so later checks start clean
    return false;
  }
  cudaDeviceProp p{};
  PAIRMD_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  if (reason) *reason = std::string("GPU ") + p.name;
  return true;
}

// Free and total memory of the current device; false where the query fails.
inline bool probe_cuda_free_memory(double* free_bytes, double* total_bytes) {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();  // not sticky; clear it so later checks start clean
    return false;
  }
  if (free_bytes) *free_bytes = static_cast<double>(free);
  if (total_bytes) *total_bytes = static_cast<double>(total);
  return true;
}

}  // namespace pairmd
