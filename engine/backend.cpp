#include "engine/backend.h"

#include "engine/cpu_backend.h"

namespace pairmd {

#ifdef PAIRMD_HAVE_CUDA
// Defined in kernels/ (compiled by nvcc); declared here so the engine needs no CUDA headers.
std::unique_ptr<Backend> make_cuda_backend(const Model& model, const SystemState& initial);
bool cuda_device_present(std::string* reason);
#endif

bool cuda_available(std::string* reason) {
#ifdef PAIRMD_HAVE_CUDA
  return cuda_device_present(reason);
#else
  if (reason) *reason = "pairmd was built without CUDA";
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name, const Model& model, const SystemState& initial,
                                      std::string* why) {
  std::string reason;
  if (name == "cpu") {
    if (why) *why = "cpu (asked for)";
    return std::make_unique<CpuBackend>(model, initial);
  }
  const bool gpu = cuda_available(&reason);
  if (name == "cuda" && !gpu) throw std::runtime_error("backend cuda asked for, but " + reason);
  if (name != "cuda" && name != "auto") throw std::runtime_error("unknown backend '" + name + "' (cpu, cuda, auto)");
#ifdef PAIRMD_HAVE_CUDA
  if (gpu) {
    if (why) *why = name == "cuda" ? "cuda (asked for; " + reason + ")" : "cuda (auto: " + reason + ")";
    return make_cuda_backend(model, initial);
  }
#endif
  if (why) *why = "cpu (auto: " + reason + ")";
  return std::make_unique<CpuBackend>(model, initial);
}

}  // namespace pairmd
