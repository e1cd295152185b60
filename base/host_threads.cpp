#include "base/host_threads.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pairmd {

namespace {

std::atomic<int> g_pinned_threads{0};  // pin_host_threads(); 0: none

int openmp_max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A whole positive number, or 0.
double positive_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v <= 0) return 0;
  return v;
}

// The lowest quota of a cgroup and its parents: each level may limit its children.
double lowest_quota_up_the_path(const std::string& mount, std::string path, bool v2) {
  double lowest = 0;
  while (true) {
    const std::string dir = mount + (path == "/" ? "" : path);
    const double q = v2 ? cpu_quota_from_cgroup_v2(read_first_line(dir + "/cpu.max"))
                        : cpu_quota_from_cgroup_v1(read_first_line(dir + "/cpu.cfs_quota_us"),
                                                   read_first_line(dir + "/cpu.cfs_period_us"));
    if (q > 0 && (lowest == 0 || q < lowest)) lowest = q;
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return lowest;
}

}  // namespace

double cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& root) {
  std::istringstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    // A hybrid system lists both; the first that holds a quota counts.
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    double q = 0;
    if (line.compare(0, a, "0") == 0 && controllers.empty()) q = lowest_quota_up_the_path(root, path, true);
    std::stringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ','))
      if (name == "cpu")
        for (const char* mount : {"/cpu", "/cpu,cpuacct"})
          if (q == 0) q = lowest_quota_up_the_path(root + mount, path, false);
    if (q > 0) return q;
  }
  return 0;
}

namespace {}  // namespace

int automatic_host_threads(const HostCpuLimits& limits) {
  int threads = std::max(1, limits.affinity_cpus);
  if (limits.quota_cpus > 0) threads = std::min(threads, std::max(1, static_cast<int>(std::floor(limits.quota_cpus))));
  return threads;
}

double cpu_quota_from_cgroup_v2(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return 0;
  const double q = positive_number(quota), p = positive_number(period);
  return q > 0 && p > 0 ? q / p : 0;
}

double cpu_quota_from_cgroup_v1(const std::string& quota_us, const std::string& period_us) {
  const double q = positive_number(quota_us), p = positive_number(period_us);  // "-1": no quota
  return q > 0 && p > 0 ? q / p : 0;
}

HostCpuLimits read_host_cpu_limits() {
  HostCpuLimits limits;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  limits.affinity_cpus = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : openmp_max_threads();
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  limits.quota_cpus = cgroup_cpu_quota(text.str(), "/sys/fs/cgroup");
  return limits;
}

namespace {

bool num_threads_set() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  return env != nullptr && *env != '\0';
}

// The process's limits, read once (they are the same for the whole run).
const HostCpuLimits& own_limits() {
  static const HostCpuLimits limits = read_host_cpu_limits();
  return limits;
}

}  // namespace

std::string configure_host_threads() {
  std::ostringstream why;
  if (num_threads_set()) {
    why << openmp_max_threads() << " OpenMP thread(s) (OMP_NUM_THREADS)";
    return why.str();
  }
  const HostCpuLimits& limits = own_limits();
  const int threads = automatic_host_threads(limits);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
  why << "up to " << threads << " OpenMP thread(s): " << limits.affinity_cpus << " CPU(s) in the affinity mask";
  if (limits.quota_cpus > 0) why << ", cgroup CPU quota " << limits.quota_cpus;
  why << "; the CPU backend takes one per " << kParticlesPerThread << " particles (OMP_NUM_THREADS sets the count)";
  return why.str();
}

int host_threads_for_particles(size_t n) {
  if (const int pinned = g_pinned_threads; pinned > 0) return pinned;
  if (num_threads_set()) return openmp_max_threads();
  const size_t by_size = std::max<size_t>(1, n / kParticlesPerThread);
  return static_cast<int>(std::min<size_t>(static_cast<size_t>(automatic_host_threads(own_limits())), by_size));
}

void pin_host_threads(int threads) { g_pinned_threads = std::max(0, threads); }

bool wants_passive_wait_restart(const char* wait_policy, const char* spin_count, int max_threads) {
  const bool policy_set = wait_policy != nullptr && *wait_policy != '\0';
  const bool spin_set = spin_count != nullptr && *spin_count != '\0';
  return !policy_set && !spin_set && max_threads > 1;
}

}  // namespace pairmd
