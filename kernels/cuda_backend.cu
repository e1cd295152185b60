// Placeholder until the CUDA backend lands.
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "engine/backend.h"

namespace pairmd {

bool cuda_device_present(std::string* reason) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    if (reason) *reason = std::string("no CUDA device: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return false;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  if (reason) *reason = std::string("GPU ") + p.name;
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(const Model&, const SystemState&) {
  throw std::runtime_error("the CUDA backend is not implemented yet");
}

}  // namespace pairmd
