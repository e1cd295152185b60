// The potential-map kernels and methods: the one list of each, with their config names and docs
// lines, and the checks of a name. The config reader (analysis.potential_map.kernel / method), the
// front ends' options (session/map_options.h: `pairmd potential-map`, `place-ions`, the Python
// module's potential_map), the docs table (checked by tests/test_registries.cpp) and the map tests
// read them; analysis/potential_map.cpp maps a GPU kernel to its launcher (kernels/dcs/dcs_launch.h).
// Names only: the engine and the config include it, and nothing of the kernels.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pairmd {

enum class MapKernel { Auto, Cpu, Scatter, Gather, GatherCoarsened, GatherCoalesced };

struct MapKernelInfo {
  MapKernel kernel;
  const char* name;  // the config value of analysis.potential_map.kernel, --kernel
  bool gpu;          // runs on the GPU (kernels/dcs/dcs_kernels.cu)
  const char* doc;   // one line
};

inline constexpr MapKernelInfo kMapKernels[] = {
    {MapKernel::Auto, "auto", false, "gather_coalesced where a GPU is usable, else cpu"},
    {MapKernel::Cpu, "cpu", false, "the double-precision reference (OpenMP over lattice rows)"},
    {MapKernel::Scatter, "scatter", true, "thread per (atom, z-plane), float atomics into the lattice"},
    {MapKernel::Gather, "gather", true, "thread per lattice point, atoms in constant memory"},
    {MapKernel::GatherCoarsened, "gather_coarsened", true, "thread per 8 consecutive points of a row"},
    {MapKernel::GatherCoalesced, "gather_coalesced", true,
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

// The choices of analysis.potential_map.region and .boundary.
inline std::vector<std::string> map_region_names() { return {"box", "particles"}; }
inline std::vector<std::string> map_boundary_names() { return {"open", "periodic"}; }

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

// "exact", "msm", "auto"; throws std::invalid_argument naming the choices.
inline MapMethod parse_map_method(const std::string& name) {
  std::string all;
  for (const MapMethodInfo& m : kMapMethods) {
    if (name == m.name) return m.method;
    all += (all.empty() ? "" : ", ") + std::string(m.name);
  }
  throw std::invalid_argument("unknown potential-map method '" + name + "' (expected one of: " + all + ")");
}

inline const char* map_method_name(MapMethod m) {
  for (const MapMethodInfo& i : kMapMethods)
    if (i.method == m) return i.name;
  return "?";
}

// "auto", "cpu", "scatter", ...; throws std::invalid_argument naming the choices.
inline MapKernel parse_map_kernel(const std::string& name) {
  std::string all;
  for (const MapKernelInfo& k : kMapKernels) {
    if (name == k.name) return k.kernel;
    all += (all.empty() ? "" : ", ") + std::string(k.name);
  }
  throw std::invalid_argument("unknown potential-map kernel '" + name + "' (expected one of: " + all + ")");
}

inline const char* map_kernel_name(MapKernel k) {
  for (const MapKernelInfo& n : kMapKernels)
    if (n.kernel == k) return n.name;
  return "?";
}

}  // namespace pairmd
