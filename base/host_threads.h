// How many OpenMP threads pairmd's CPU code uses.
//
// OMP_NUM_THREADS, when set, is obeyed as it is. Otherwise the count is chosen: the CPUs the
// process's affinity mask allows (sched_getaffinity: taskset, mpirun's binding, a container's
// cpuset), no more than its cgroup's CPU quota (a container's --cpus, a batch job's CPU
// limit), and the CPU backend takes at most one thread per kParticlesPerThread particles:
// below that, the threads' meetings (several per step) cost more than the work they share, and
// on a machine whose cores are busy each meeting waits for a thread the scheduler set aside.
// The same rule holds for every front end (the pairmd program, the Python module), so that
// both run the same thread count and give the same bits.
#pragma once

#include <cstddef>
#include <string>

namespace pairmd {

// Measured on the 2-core development VM (docs/benchmarks.md, "CPU backend threads").
inline constexpr size_t kParticlesPerThread = 1000;

// What the automatic choice looks at.
struct HostCpuLimits {
  int affinity_cpus = 1;  // CPUs in the process's affinity mask
  double quota_cpus = 0;  // the cgroup's CPU quota in CPUs (quota / period); 0: none
};

// The automatic thread count: the affinity's CPUs, no more than the quota (rounded down:
// threads beyond it are throttled together at every period), at least 1.
int automatic_host_threads(const HostCpuLimits& limits);

// A cgroup's CPU quota in CPUs, 0 where there is none or the text is not a quota: v2's
// `cpu.max` ("200000 100000"; "max 100000" is none), v1's `cpu.cfs_quota_us` ("-1" is none)
// and `cpu.cfs_period_us`.
double cpu_quota_from_cgroup_v2(const std::string& cpu_max);
double cpu_quota_from_cgroup_v1(const std::string& quota_us, const std::string& period_us);

// The CPU quota of the cgroup that `proc_self_cgroup` (the text of /proc/self/cgroup) names,
// under the cgroup file system mounted at `root`: v2's unified hierarchy ("0::/path") or v1's
// cpu controller (ROOT/cpu or ROOT/cpu,cpuacct); the lowest quota on the path up to the root
// (each level limits its children; a container sees its own cgroup as the root). 0: none.
double cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& root);

// This process's limits: sched_getaffinity, and cgroup_cpu_quota(/proc/self/cgroup,
// /sys/fs/cgroup).
HostCpuLimits read_host_cpu_limits();

// The automatic choice for this process (read_host_cpu_limits() once), made OpenMP's default
// for the calling thread (omp_set_num_threads) so that the rest of the CPU code (potential maps)
// keeps to the quota too; nothing where OMP_NUM_THREADS is set. Returns a line for the log:
// the count and why.
std::string configure_host_threads();

// Threads for the CPU backend on n particles: pinned (below), else OMP_NUM_THREADS's count,
// else the automatic choice, at most one per kParticlesPerThread particles, at least 1.
int host_threads_for_particles(size_t n);

// Makes host_threads_for_particles() return `threads` whatever the size (tests of several
// thread counts on small systems); 0 goes back to the rule above.
void pin_host_threads(int threads);

// Whether the program should start itself again with OMP_WAIT_POLICY=passive before OpenMP
// runs anything: neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set (the user's choice is
// kept) and more than one thread may run. libgomp reads both once, when it is loaded.
bool wants_passive_wait_restart(const char* wait_policy, const char* spin_count, int max_threads);

}  // namespace pairmd
