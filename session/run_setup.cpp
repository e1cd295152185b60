#include "session/run_setup.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "analysis/potential_map.h"

namespace pairmd {

std::string output_prefix(const RunConfig& cfg) {
  if (!cfg.output.prefix.empty()) return cfg.output.prefix;
  std::string stem = cfg.path;
  const size_t slash = stem.find_last_of('/');
  if (slash != std::string::npos) stem = stem.substr(slash + 1);
  const size_t dot = stem.find_last_of('.');
  if (dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  return stem.empty() ? "pairmd" : stem;
}

std::vector<std::string> config_input_files(const RunConfig& cfg) {
  std::vector<std::string> files;
  if (cfg.system.source == SystemSource::File) files.push_back(cfg.system.file.path);
  for (const PairListSource& s : cfg.pair_list_sources) files.push_back(s.file);
  return files;
}

namespace {

// What a list of names takes as an attribute of fixed-length strings (io/hdf5_util.h).
size_t attribute_bytes(const std::vector<std::string>& names) {
  size_t width = 1;
  for (const std::string& n : names) width = std::max(width, n.size() + 1);
  return width * names.size();
}

}  // namespace

void check_storable_names(const RunConfig& cfg) {
  // An attribute's message in an HDF5 object header may not exceed 64 KiB (65,535 bytes, less
  // the message's own header): 64,000 bytes of names leave room for that.
  constexpr size_t kMaxAttributeBytes = 64000;
  std::vector<std::string> types, bonds;
  for (const TypeSpec& t : cfg.system.types) types.push_back(t.name);
  for (const BondType& b : cfg.model.force_field.bond_types) bonds.push_back(b.name);
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {{"system.types", &types},
                                                                           {"force_field.bonds", &bonds}};
  for (const auto& [key, names] : lists) {
    const size_t bytes = attribute_bytes(*names);
    if (bytes <= kMaxAttributeBytes) continue;
    size_t longest = 0;
    for (const std::string& n : *names) longest = std::max(longest, n.size());
    throw ConfigError(cfg.path + ": " + key + ": the names (" + std::to_string(names->size()) + ", the longest " +
                      std::to_string(longest) + " characters) take " + std::to_string(bytes) +
                      " bytes as one HDF5 attribute of the trajectory and checkpoint, which holds at most " +
                      std::to_string(kMaxAttributeBytes) + "; use shorter names");
  }
}

std::string describe_system(const RunConfig& cfg, const BuiltSystem& sys) {
  std::ostringstream s;
  const SystemState& st = sys.state;
  const Topology& t = sys.topology;
  s << "system: " << st.size() << " particles, " << st.type_names.size() << " type(s), " << t.bonds.size() << " bonds";
  for (const auto& [count, what] : {std::pair<size_t, const char*>{t.angles.size(), " angles"},
                                    {t.dihedrals.size(), " dihedrals"},
                                    {t.impropers.size(), " impropers"}})
    if (count > 0) s << ", " << count << what;
  s << ", box " << st.box.L.x << " x " << st.box.L.y << " x " << st.box.L.z
    << (st.box.periodic ? " (periodic)" : " (open)") << ", units " << cfg.model.units.name << " ("
    << cfg.model.units.length_unit() << ", " << cfg.model.units.time_unit() << ", " << cfg.model.units.energy_unit()
    << ", " << cfg.model.units.temperature_unit() << ", " << cfg.model.units.pressure_unit() << ")\n";
  s << "force field:";
  for (const PairTerm& t : cfg.model.force_field.pair_terms)
    s << " " << pair_kind_name(t.kind) << "(rc " << t.max_cutoff() << ")";
  for (const BondType& b : cfg.model.force_field.bond_types) s << " bond " << b.name << ":" << bond_kind_name(b.kind);
  const ForceField& ff = cfg.model.force_field;
  for (const AngleType& a : ff.angle_types) s << " angle " << a.name << ":" << potential_info(a.kind).name;
  for (const DihedralType& d : ff.dihedral_types) s << " dihedral " << d.name << ":" << potential_info(d.kind).name;
  for (const ImproperType& i : ff.improper_types) s << " improper " << i.name << ":" << potential_info(i.kind).name;
  for (const PairList& l : cfg.model.force_field.pair_lists)
    s << " pair list " << l.name << ":" << bond_kind_name(l.kind) << "(" << l.size() << " pairs)";
  if (cfg.pulling.mode != PullMode::None)
    s << ", pulling " << (cfg.pulling.mode == PullMode::Ramp ? "ramp" : "constant");
  if (cfg.model.neighbor.skin_auto)
    s << ", skin auto (tuned on a GPU; else " << cfg.model.neighbor.skin << ")\n";
  else
    s << ", skin " << cfg.model.neighbor.skin << "\n";
  const IntegratorSettings& in = cfg.model.integrator;
  s << "integrator: " << integrator_kind_name(in.kind) << ", dt " << in.dt;
  if (in.kind != IntegratorKind::VelocityVerlet)
    s << ", T " << in.temperature << ", friction " << in.friction << ", seed " << in.seed;
  s << "\n";
  for (const std::string& note : sys.notes) s << note << "\n";
  return s.str();
}

std::string planned_backend(const RunConfig& cfg) {
  if (cfg.backend == "cpu" || cfg.backend == "cuda") return cfg.backend;
  std::string why;
  return cuda_available(&why) ? "cuda" : "cpu";
}

double potential_map_points(const RunConfig& cfg, const SystemState& s) {
  if (cfg.potential_map.every <= 0) return 0;
  const MapSettings& m = cfg.potential_map.settings;
  double lo[3] = {s.box.lo.x, s.box.lo.y, s.box.lo.z},
         hi[3] = {lo[0] + s.box.L.x, lo[1] + s.box.L.y, lo[2] + s.box.L.z};
  if (m.region == "particles" && s.size() > 0) {
    for (int d = 0; d < 3; ++d) lo[d] = std::numeric_limits<double>::infinity(), hi[d] = -lo[d];
    for (const Vec3d& p : s.position) {
      const double c[3] = {p.x, p.y, p.z};
      for (int d = 0; d < 3; ++d) lo[d] = std::min(lo[d], c[d] - m.padding), hi[d] = std::max(hi[d], c[d] + m.padding);
    }
  }
  double points = 1;
  for (int d = 0; d < 3; ++d) points *= std::ceil((hi[d] - lo[d]) / m.spacing - 1e-9) + 1;
  if (!(points <= static_cast<double>(kMaxMapPoints))) {
    auto it = cfg.locations.find("analysis.potential_map.spacing");
    std::ostringstream msg;
    msg << (it != cfg.locations.end() ? it->second : cfg.path) << ": analysis.potential_map.spacing: a spacing of "
        << m.spacing << " over the region " << hi[0] - lo[0] << " x " << hi[1] - lo[1] << " x " << hi[2] - lo[2]
        << " gives more than " << kMaxMapPoints << " lattice points; use a larger spacing";
    throw ConfigError(msg.str());
  }
  return points;
}

void check_build_memory(const RunConfig& cfg, const std::string& backend) {
  const SystemSize size = planned_size(cfg);
  if (size.particles < 0) return;
  if (size.particles > kMaxParticles)
    throw ConfigError(size_key(cfg) + ": the system would have " + std::to_string(size.particles) +
                      " particles (counterions included), more than the " + std::to_string(kMaxParticles) +
                      " pairmd can hold");
  require_memory(cfg, estimate_run_memory(cfg, backend, size, 0), size, available_host_memory(), 0);
}

MemoryEstimate check_run_memory(const RunConfig& cfg, const std::string& backend, const BuiltSystem& sys) {
  const SystemSize size = built_size(sys.state, static_cast<int64_t>(sys.topology.bonds.size()));
  const MemoryEstimate need = estimate_run_memory(cfg, backend, size, potential_map_points(cfg, sys.state));
  // The built state is already held (and counted as used by the limits).
  require_memory(cfg, need, size, available_host_memory(), 80.0 * static_cast<double>(size.particles));
  return need;
}

void check_start_forces(const RunConfig& cfg, const SystemState& s, const std::vector<Vec3d>& f) {
  for (size_t i = 0; i < f.size() && i < s.size(); ++i) {
    if (std::isfinite(f[i].x) && std::isfinite(f[i].y) && std::isfinite(f[i].z)) continue;
    size_t nearest = i;
    double best = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < s.size(); ++j) {
      if (j == i) continue;
      const Vec3d d = s.box.min_image(s.position[i] - s.position[j]);
      const double r = std::sqrt(dot(d, d));
      if (r < best) best = r, nearest = j;
    }
    std::ostringstream m;
    m << cfg.path << ": system: the force on particle " << i << " is not finite before the first step (F = (" << f[i].x
      << ", " << f[i].y << ", " << f[i].z << "))";
    if (nearest != i) m << "; particle " << nearest << " is " << best << " away";
    m << ". The start configuration has overlapping particles (or non-finite values); the time step is not the cause";
    throw ConfigError(m.str());
  }
}

}  // namespace pairmd
