// The potential-map kernels and methods: the one list of each, with their config names and docs
// lines. The config reader (analysis.potential_map.kernel / method), `pairmd potential-map` and
// `place-ions` (their --kernel and --method and --help), the docs table (checked by
// tests/test_registries.cpp) and the map tests read them; analysis/potential_map.cpp maps a GPU
// kernel to its launcher (dcs_launch.h). Plain C++: the engine and the config include it.
#pragma once

#include <string>
#include <vector>

#include "kernels/dcs/dcs_launch.h"

namespace pairmd {

enum class MapKernel { Auto, Cpu, Scatter, Gather, GatherCoarsened, GatherCoalesced };

struct MapKernelInfo {
  MapKernel kernel;
  const char* name;       // the config value of analysis.potential_map.kernel, --kernel
  bool gpu;               // runs on the GPU (kernels/dcs/dcs_kernels.cu)
  dcs::GpuKernel launch;  // its launcher kernel (gpu only)
  const char* doc;        // one line
};

inline constexpr MapKernelInfo kMapKernels[] = {
    {MapKernel::Auto, "auto", false, dcs::GpuKernel::Scatter, "gather_coalesced where a GPU is usable, else cpu"},
    {MapKernel::Cpu, "cpu", false, dcs::GpuKernel::Scatter,
     "the double-precision reference (OpenMP over lattice rows)"},
    {MapKernel::Scatter, "scatter", true, dcs::GpuKernel::Scatter,
     "thread per (atom, z-plane), float atomics into the lattice"},
    {MapKernel::Gather, "gather", true, dcs::GpuKernel::Gather, "thread per lattice point, atoms in constant memory"},
    {MapKernel::GatherCoarsened, "gather_coarsened", true, dcs::GpuKernel::GatherCoarsened,
     "thread per 8 consecutive points of a row"},
    {MapKernel::GatherCoalesced, "gather_coalesced", true, dcs::GpuKernel::GatherCoalesced,
     "thread per 8 points of a row, interleaved so that stores coalesce"},
};

// How the map is summed: exact (DCS), msm (multilevel summation), auto (by estimated cost).
enum class MapMethod { Exact, Msm, Auto };

struct MapMethodInfo {
  MapMethod method;
  const char* name;  // the config value of analysis.potential_map.method, --method
  const char* doc;   // one line
};

inline constexpr MapMethodInfo kMapMethods[] = {
    {MapMethod::Exact, "exact", "Direct Coulomb Summation over every charge (no periodic images)"},
    {MapMethod::Msm, "msm", "multilevel summation: O(atoms + points), relative error ~1e-4, estimated and reported"},
    {MapMethod::Auto, "auto", "msm where it is estimated 4x faster than exact"},
};

inline std::vector<std::string> map_kernel_names() {
  std::vector<std::string> n;
  for (const MapKernelInfo& k : kMapKernels) n.push_back(k.name);
  return n;
}

inline std::vector<std::string> map_method_names() {
  std::vector<std::string> n;
  for (const MapMethodInfo& m : kMapMethods) n.push_back(m.name);
  return n;
}

}  // namespace pairmd
