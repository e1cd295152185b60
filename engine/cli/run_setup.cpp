#include "engine/cli/run_setup.h"

#include <sstream>

namespace pairmd::cli {

bool read_config_option(OptionReader& r, ConfigOptions& o) {
  std::string v;
  if (r.value("--set", v)) {
    o.sets.push_back(v);
    return true;
  }
  if (r.value("--backend", o.backend)) return true;
  if (r.value("--strategy", o.strategy)) return true;
  if (r.value("--steps", v)) {
    // Routed through the config's own validation so messages look alike.
    o.sets.push_back("steps=" + v);
    return true;
  }
  return false;
}

std::vector<std::string> command_line_overrides(const ConfigOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (!o.backend.empty()) sets.push_back("backend=" + o.backend);
  if (!o.strategy.empty()) sets.push_back("force.strategy=" + o.strategy);
  return sets;
}

RunConfig load_with_options(const ConfigOptions& o) { return load_config(o.config_path, command_line_overrides(o)); }

std::string output_prefix(const RunConfig& cfg) {
  if (!cfg.output.prefix.empty()) return cfg.output.prefix;
  std::string stem = cfg.path;
  const size_t slash = stem.find_last_of('/');
  if (slash != std::string::npos) stem = stem.substr(slash + 1);
  const size_t dot = stem.find_last_of('.');
  if (dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  return stem.empty() ? "pairmd" : stem;
}

std::string describe_system(const RunConfig& cfg, const BuiltSystem& sys) {
  std::ostringstream s;
  const SystemState& st = sys.state;
  s << "system: " << st.size() << " particles, " << st.type_names.size() << " type(s), " << sys.topology.bonds.size()
    << " bonds, box " << st.box.L.x << " x " << st.box.L.y << " x " << st.box.L.z
    << (st.box.periodic ? " (periodic)" : " (open)") << ", units " << cfg.model.units.name << "\n";
  s << "force field:";
  for (const PairTerm& t : cfg.model.force_field.pair_terms) s << " " << pair_kind_name(t.kind) << "(rc " << t.max_cutoff() << ")";
  for (const BondType& b : cfg.model.force_field.bond_types) s << " bond " << b.name << ":" << bond_kind_name(b.kind);
  s << ", skin " << cfg.model.neighbor.skin << "\n";
  const IntegratorSettings& in = cfg.model.integrator;
  s << "integrator: " << integrator_kind_name(in.kind) << ", dt " << in.dt;
  if (in.kind != IntegratorKind::VelocityVerlet) s << ", T " << in.temperature << ", friction " << in.friction << ", seed " << in.seed;
  s << "\n";
  return s.str();
}

}  // namespace pairmd::cli
