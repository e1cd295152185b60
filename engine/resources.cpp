#include "engine/resources.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace pairmd {

namespace {

// A "Key:   123 kB" line of a /proc file, in bytes; -1 when absent.
double proc_kb(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) return 1024.0 * std::atof(line.c_str() + key.size() + 1);
  return -1;
}

double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  return std::atof(word.c_str());
}

// Headroom under this process's memory cgroup (v2, else v1); -1 when there is no limit.
double cgroup_headroom() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  double best = -1;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    double limit = -1, usage = -1;
    if (line.compare(0, 2, "0:") == 0 && controllers.empty()) {
      limit = read_number("/sys/fs/cgroup" + path + "/memory.max");
      usage = read_number("/sys/fs/cgroup" + path + "/memory.current");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = read_number("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      usage = read_number("/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
      if (limit > 1e18) limit = -1;  // "no limit" is written as a huge number
    }
    if (limit > 0 && usage >= 0) {
      const double room = std::max(0.0, limit - usage);
      best = best < 0 ? room : std::min(best, room);
    }
  }
  return best;
}

double rlimit_headroom(int resource, const char* status_key) {
  struct rlimit rl;
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
  const double used = std::max(0.0, proc_kb("/proc/self/status", status_key));
  return std::max(0.0, static_cast<double>(rl.rlim_cur) - used);
}

}  // namespace

HostMemory available_host_memory() {
  HostMemory m;
  m.available_bytes = std::numeric_limits<double>::infinity();
  auto consider = [&](double bytes, const char* why) {
    if (bytes >= 0 && bytes < m.available_bytes) {
      m.available_bytes = bytes;
      m.limited_by = why;
    }
  };
  consider(proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable in /proc/meminfo");
  consider(cgroup_headroom(), "the memory limit of this process's cgroup");
  consider(rlimit_headroom(RLIMIT_AS, "VmSize"), "the address-space limit, ulimit -v");
  consider(rlimit_headroom(RLIMIT_DATA, "VmData"), "the data-segment limit, ulimit -d");
  return m;
}

SystemSize planned_size(const RunConfig& cfg) {
  SystemSize s;
  const SystemSpec& sys = cfg.system;
  double n = -1;
  switch (sys.source) {
    case SystemSource::Lattice: {
      const LatticeSpec& l = sys.lattice;
      n = static_cast<double>(l.cells[0]) * l.cells[1] * l.cells[2] * (l.kind == LatticeKind::Fcc ? 4 : 1);
      s.volume = n / l.density;
      break;
    }
    case SystemSource::Chains: {
      const ChainsSpec& c = sys.chains;
      const double beads = static_cast<double>(c.count) * c.length;
      const double charged_per_chain = c.charged_every == 0 ? c.length : std::ceil(double(c.length) / c.charged_every);
      double counterions = 0;
      if (c.counterion_type >= 0) {
        const double qm = sys.types[c.monomer_type].charge, qc = sys.types[c.counterion_type].charge;
        if (qc != 0) counterions = std::max(0.0, std::round(-qm * charged_per_chain * c.count / qc));
      }
      n = beads + counterions;
      s.volume = n / c.density;
      s.bonds = c.length > 1 ? static_cast<int64_t>(c.count) * (c.length - 1) : 0;
      break;
    }
    case SystemSource::File:
      s.particles = -1;
      return s;
  }
  n += static_cast<double>(sys.add_particles.size());
  s.particles = static_cast<int64_t>(std::min(n, 9.0e18));
  return s;
}

SystemSize built_size(const SystemState& state, int64_t bonds) {
  SystemSize s;
  s.particles = static_cast<int64_t>(state.size());
  s.bonds = bonds;
  s.volume = state.box.volume();
  return s;
}

MemoryEstimate estimate_run_memory(const RunConfig& cfg, const std::string& backend, const SystemSize& size,
                                   double map_points) {
  MemoryEstimate e = estimate_backend_memory(backend, cfg.model, size);
  const double n = static_cast<double>(std::max<int64_t>(size.particles, 0));
  const double state = 80.0 * n;
  // Building: the state as vectors grow (up to twice its size), the placement grid of chains,
  // and the minimisation: a backend of the run's kind (on a GPU it is gone before the run's own
  // is made), the minimiser's two states (positions, images, forces), velocities and moves, and
  // the copies of the state a move through set_state makes (engine/minimize.cpp).
  double build = 2.0 * state + 48.0 * n;
  if (cfg.minimize.algorithm != MinimizeAlgorithm::None)
    build += estimate_backend_memory(backend, cfg.model, size).host_bytes + 2.0 * 60.0 * n + 48.0 * n + 2.0 * state;
  // Running: the backend, the state the run loop shows observers and its last good copy, the
  // checkpoint's copy and its file read back for the checksum, a forces frame, frame buffers.
  const double run = e.host_bytes + 4.0 * state + 2.0 * state + 24.0 * n + 3.0 * 24.0 * n;
  // The start state stays with the command throughout; a potential map keeps the last map, the
  // running sum, the mean and a float copy for the GPU; libraries and HDF5 caches.
  e.host_bytes = std::max(build, run) + state + 28.0 * map_points + 64.0 * 1048576.0;
  if (e.device_bytes > 0) e.device_bytes += 4.0 * map_points;
  return e;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string room_for(double count, double max_count, double bytes_each, const std::string& what) {
  char n[32], most[32];
  std::snprintf(n, sizeof n, "%.0f", count);
  std::snprintf(most, sizeof most, "%.0f", max_count);
  if (!(count <= max_count)) return std::string(n) + " " + what + ", more than the " + most + " pairmd can hold";
  const double need = count * bytes_each;
  const HostMemory host = available_host_memory();
  if (!(need <= host.available_bytes))
    return std::string(n) + " " + what + " need about " + format_bytes(need) + " of memory, but only " +
           format_bytes(host.available_bytes) + " can be had here (" + host.limited_by + ")";
  return "";
}

std::string describe_memory(const MemoryEstimate& need, const SystemSize& size) {
  std::ostringstream s;
  s << "memory: about " << format_bytes(need.host_bytes) << " of host memory";
  if (need.device_bytes > 0) s << " and " << format_bytes(need.device_bytes) << " of GPU memory";
  s << " (estimate for " << size.particles << " particles)";
  return s.str();
}

std::string size_key(const RunConfig& cfg) {
  const char* key = cfg.system.source == SystemSource::Lattice  ? "system.lattice.cells"
                    : cfg.system.source == SystemSource::Chains ? "system.chains.count"
                                                                : "system.file.path";
  auto it = cfg.locations.find(key);
  return (it != cfg.locations.end() ? it->second : cfg.path) + ": " + key;
}

void require_memory(const RunConfig& cfg, const MemoryEstimate& need, const SystemSize& size, const HostMemory& host,
                    double held) {
  if (!need.impossible.empty()) throw ConfigError(size_key(cfg) + ": " + need.impossible);
  if (need.host_bytes - held > host.available_bytes)
    throw ConfigError(size_key(cfg) + ": a run of " + std::to_string(size.particles) + " particles needs about " +
                      format_bytes(need.host_bytes) + " of host memory, but only " +
                      format_bytes(host.available_bytes) + " can be had here (" + host.limited_by +
                      "); nothing was started. Use a smaller system or a machine with more memory");
  double free = 0, total = 0;
  if (need.device_bytes > 0 && cuda_device_memory(&free, &total) && need.device_bytes > free)
    throw ConfigError(size_key(cfg) + ": a run of " + std::to_string(size.particles) + " particles needs about " +
                      format_bytes(need.device_bytes) + " of GPU memory, but the GPU has " + format_bytes(free) +
                      " free (of " + format_bytes(total) +
                      "); nothing was started. Use a smaller system, or --backend cpu");
}

}  // namespace pairmd
