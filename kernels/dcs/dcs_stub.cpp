// Builds without CUDA: the GPU kernels are absent; asking for one is a clear error.
#include <stdexcept>

#include "kernels/dcs/dcs_launch.h"

namespace pairmd::dcs {

bool gpu_available(std::string* why) {
  if (why) *why = "this pairmd was built without CUDA";
  return false;
}

double gpu_potential(GpuKernel, const GpuLattice&, const float*, size_t, float*, const GpuOptions&) {
  throw std::runtime_error("the GPU potential-map kernels are not available: this pairmd was built without CUDA");
}

}  // namespace pairmd::dcs

#include "kernels/dcs/msm_launch.h"

namespace pairmd::dcs {

MsmGpuTimes gpu_msm_potential(const MsmGpuPlan&, const float*, size_t, float*, const MsmGpuOptions&,
                              std::vector<float>*) {
  throw std::runtime_error(
      "the GPU multilevel-summation kernels are not available: this pairmd was built without CUDA");
}

}  // namespace pairmd::dcs
