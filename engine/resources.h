// Resource limits, checked before anything big is allocated: how many particles a config asks
// for (bounded while parsing, so no product of sizes overflows), how much memory a run of it
// needs (host and GPU), and how much this process may use. A run that cannot fit is refused
// with the estimate (exit 2) instead of failing with std::bad_alloc later. docs/config.md.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "engine/config.h"

namespace pairmd {

// What this process may still allocate, and the limit that decides it (MemAvailable, a cgroup
// limit, ulimit -v).
struct HostMemory {
  double available_bytes = 0;
  std::string limited_by;
};
HostMemory available_host_memory();

// The size of the system the config describes, before it is built: lattice, chains (with
// their counterions) and added particles. A start file's size is not known before it is read
// (particles = -1).
SystemSize planned_size(const RunConfig& cfg);
// The size of a built system (state and bonds).
SystemSize built_size(const SystemState& state, int64_t bonds);

// Everything a run of `size` holds at its peak: building the system (with its minimisation), the
// backend, the copies of the state the run loop and the outputs keep, the potential map of
// `map_points` points, and libraries and caches.
MemoryEstimate estimate_run_memory(const RunConfig& cfg, const std::string& backend, const SystemSize& size,
                                   double map_points);

// Whether `count` items of about `bytes_each` bytes may be allocated: "" when `count` is at most
// `max_count` and they fit in what this process can have (available_host_memory), else why not,
// naming them as `what`: "1000000000000 atom types, more than the 1073741824 pairmd can hold" or
// "1073741824 atom types need about 96 GiB of memory, but only 1.5 GiB can be had here (the
// address-space limit, ulimit -v)". For sizes read from files, checked before they are allocated.
std::string room_for(double count, double max_count, double bytes_each, const std::string& what);

// "1.2 GiB", "340 MiB", "12 KiB".
std::string format_bytes(double bytes);

// One line for the log: "memory: about 1.2 GiB of host memory (4000 particles), 16 MiB of GPU memory".
std::string describe_memory(const MemoryEstimate& need, const SystemSize& size);

// Throws ConfigError, naming the config key that sets the size, when `need` does not fit in
// `host` (or in the GPU's free memory, where that is known) or cannot be held at all.
// `held`: bytes of `need` this process holds already (counted as used by the limits).
void require_memory(const RunConfig& cfg, const MemoryEstimate& need, const SystemSize& size, const HostMemory& host,
                    double held);

// The config key whose value sets the system's size, with its file position, for messages:
// "run.yaml:4:31: system.lattice.cells".
std::string size_key(const RunConfig& cfg);

}  // namespace pairmd
