#include "replicas/pull_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pairmd {

namespace {

// The columns of a pull CSV by name (their units follow in brackets): step, extension, force.
bool read_event(const std::string& path, RuptureEvent& e) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return false;
  int c_step = -1, c_ext = -1, c_force = -1, c = 0;
  std::stringstream h(line);
  for (std::string name; std::getline(h, name, ','); ++c) {
    const std::string base = name.substr(0, name.find('['));
    if (base == "step") c_step = c;
    if (base == "extension") c_ext = c;
    if (base == "force") c_force = c;
  }
  if (c_step < 0 || c_ext < 0 || c_force < 0) return false;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream r(line);
    for (std::string x; std::getline(r, x, ',');) f.push_back(x);
    if (static_cast<int>(f.size()) <= std::max({c_step, c_ext, c_force})) continue;
    const double force = std::strtod(f[c_force].c_str(), nullptr);
    if (!std::isfinite(force)) continue;
    if (!e.found || force > e.force) {
      e.found = true;
      e.force = force;
      e.extension = std::strtod(f[c_ext].c_str(), nullptr);
      e.step = std::strtoll(f[c_step].c_str(), nullptr, 10);
    }
  }
  return e.found;
}

}  // namespace

std::vector<RuptureEvent> rupture_events(const std::vector<std::string>& replica_prefixes) {
  std::vector<RuptureEvent> out;
  for (size_t r = 0; r < replica_prefixes.size(); ++r) {
    RuptureEvent e;
    e.replica = static_cast<int>(r);
    read_event(replica_prefixes[r] + ".pull.csv", e);
    out.push_back(e);
  }
  return out;
}

void write_rupture_csv(const std::string& path, const std::vector<RuptureEvent>& events, const std::string& length_unit,
                       const std::string& force_unit) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << "replica,step,extension[" << length_unit << "],force[" << force_unit << "]\n";
    for (const RuptureEvent& e : events)
      if (e.found) f << e.replica << "," << e.step << "," << e.extension << "," << e.force << "\n";
    if (!f) throw std::runtime_error("cannot write '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write '" + path + "'");
}

std::string rupture_summary(const std::vector<RuptureEvent>& events, const std::string& force_unit,
                            double piconewton_per_force_unit) {
  double sum = 0, sum2 = 0, lo = 0, hi = 0;
  int n = 0;
  for (const RuptureEvent& e : events) {
    if (!e.found) continue;
    lo = n == 0 ? e.force : std::min(lo, e.force);
    hi = n == 0 ? e.force : std::max(hi, e.force);
    sum += e.force;
    sum2 += e.force * e.force;
    ++n;
  }
  std::ostringstream s;
  if (n == 0) return "rupture forces: no run logged a pulling force";
  const double mean = sum / n, sd = n > 1 ? std::sqrt(std::max(0.0, (sum2 - n * mean * mean) / (n - 1))) : 0;
  s.precision(3);
  s << "rupture forces of " << n << " runs: mean " << mean << " +- " << sd << " " << force_unit;
  if (piconewton_per_force_unit > 0)
    s << " (" << mean * piconewton_per_force_unit << " +- " << sd * piconewton_per_force_unit << " pN)";
  s << ", " << lo << " .. " << hi;
  return s.str();
}

}  // namespace pairmd
