// force_field.angles, .dihedrals, .impropers (types from the registry: potentials/registry.h) and
// the weights of the pair terms on bonded neighbours (force_field.exclusions, .special_bonds).
#include <algorithm>

#include "engine/config_schema.h"
#include "engine/start_file.h"

namespace pairmd::config {

namespace {

template <typename Kind, size_t N>
std::vector<std::string> potential_names(const BondedPotentialInfo<Kind> (&registry)[N]) {
  std::vector<std::string> names;
  for (const auto& i : registry) names.push_back(i.name);
  return names;
}

// Every key a type of this family may have: name, potential, terms and the coefficients of its
// potentials (their union; which ones apply is checked per potential).
template <typename Kind, size_t N>
std::vector<const char*> type_keys(const BondedPotentialInfo<Kind> (&registry)[N]) {
  std::vector<const char*> keys = {"name", "potential"};
  for (const auto& info : registry) {
    if (info.max_repeats > 0) {
      if (std::find_if(keys.begin(), keys.end(), [](const char* k) { return std::string(k) == "terms"; }) == keys.end())
        keys.push_back("terms");
      continue;
    }
    for (int c = 0; c < info.ncoeffs; ++c)
      if (std::find_if(keys.begin(), keys.end(),
                       [&](const char* k) { return std::string(k) == info.coeffs[c].name; }) == keys.end())
        keys.push_back(info.coeffs[c].name);
  }
  return keys;
}

// What a potential's coefficients are, for messages: "k, theta0" or "terms: [[k, n, d], ...]".
template <typename Kind>
std::string coefficient_names(const BondedPotentialInfo<Kind>& info) {
  std::string s;
  for (int c = 0; c < info.ncoeffs; ++c) s += (c ? ", " : "") + std::string(info.coeffs[c].name);
  return info.max_repeats > 0 ? "terms: [[" + s + "], ...]" : s;
}

// A coefficient value checked against its spec (range, integer, non-zero).
double coefficient(const Map& m, const YAML::Node& n, const std::string& path, const BondedCoeffSpec& spec) {
  const std::string what = std::string(spec.name) + ": " + spec.meaning;
  const double v = m.to_number(n, path, -kInf, kInf, false, what.c_str());
  if (v < spec.lo || v > spec.hi || (spec.integer && v != std::floor(v)) || (spec.nonzero && v == 0))
    m.ctx().fail(n, path, "expected " + what + ", got " + n.Scalar());
  return v;
}

// The [k, n, d] groups of a potential with repeated terms (fourier).
template <typename Kind>
void read_terms(const Map& t, const BondedPotentialInfo<Kind>& info, BondedCoeffs& c) {
  if (!t.has("terms")) t.missing("terms", coefficient_names(info));
  const YAML::Node terms = t.node("terms");
  std::string group;
  for (int q = 0; q < info.ncoeffs; ++q) group += (q ? ", " : "") + std::string(info.coeffs[q].name);
  const std::string expected = "a list of 1 to " + std::to_string(info.max_repeats) + " terms [" + group + "]";
  if (!terms.IsSequence() || terms.size() < 1 || terms.size() > static_cast<size_t>(info.max_repeats))
    t.ctx().fail(terms, t.sub("terms"), "expected " + expected + ", got " + describe(terms));
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string path = t.sub("terms") + "[" + std::to_string(k) + "]";
    if (!terms[k].IsSequence() || terms[k].size() != static_cast<size_t>(info.ncoeffs))
      t.ctx().fail(terms[k], path, "expected " + std::to_string(info.ncoeffs) + " numbers, got " + describe(terms[k]));
    for (int q = 0; q < info.ncoeffs; ++q) c.values.push_back(coefficient(t, terms[k][q], path, info.coeffs[q]));
  }
}

// One type: its name, its potential and that potential's coefficients (no others).
template <typename Kind, size_t N>
BondedType<Kind> read_type(const Map& t, const BondedPotentialInfo<Kind> (&registry)[N], const char* family,
                           const std::vector<BondedType<Kind>>& earlier) {
  BondedType<Kind> type;
  if (!t.has("name")) t.missing("name", std::string("a name for the ") + family + " type");
  type.name = t.string("name", "");
  if (type.name.empty()) t.ctx().fail(t.node("name"), t.sub("name"), "expected a non-empty name");
  for (const BondedType<Kind>& other : earlier)
    if (other.name == type.name)
      t.ctx().fail(t.node("name"), t.sub("name"), std::string("duplicate ") + family + " type '" + type.name + "'");
  const std::vector<std::string> potentials = potential_names(registry);
  const std::string kind = t.choice("potential", "", potentials);
  if (kind.empty()) t.missing("potential", join_names(potentials, " or "));
  const BondedPotentialInfo<Kind>* info = nullptr;
  for (const auto& i : registry)
    if (kind == i.name) info = &i;
  type.kind = info->kind;
  for (const char* key : type_keys(registry)) {
    const std::string k = key;
    if (k == "name" || k == "potential") continue;
    bool takes = k == "terms" ? info->max_repeats > 0 : false;
    for (int c = 0; c < info->ncoeffs && info->max_repeats == 0; ++c) takes = takes || k == info->coeffs[c].name;
    if (!takes && t.has(key))
      t.ctx().fail(t.node(key), t.sub(key),
                   k + " does not apply to " + kind + " (it takes " + coefficient_names(*info) + ")");
  }
  if (info->max_repeats > 0) {
    read_terms(t, *info, type.coeffs);
  } else {
    for (int c = 0; c < info->ncoeffs; ++c) {
      const BondedCoeffSpec& spec = info->coeffs[c];
      if (!t.has(spec.name)) t.missing(spec.name, spec.meaning);
      type.coeffs.values.push_back(coefficient(t, t.node(spec.name), t.sub(spec.name), spec));
    }
  }
  return type;
}

// force_field.<key>: a list of types, or `file` (the LAMMPS data file's types and Coeffs).
// Returns true for `file`.
template <typename Kind, size_t N>
bool read_types(const Map& f, const char* key, const BondedPotentialInfo<Kind> (&registry)[N], const char* family,
                std::vector<BondedType<Kind>>& out) {
  if (f.has(key) && f.node(key).IsScalar() && f.node(key).Scalar() == "file") return true;
  const std::string what = std::string(
      "of {name, potential, coefficients...}, or file (the types of the LAMMPS "
      "data file system.file)");
  const YAML::Node list = list_node(f, key, false, what.c_str());
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string path = f.sub(key) + "[" + std::to_string(k) + "]";
    Map t(f.ctx(), list[k], path, type_keys(registry));
    out.push_back(read_type(t, registry, family, out));
  }
  return false;
}

// system.chains.angle / .dihedral: the index of the named type.
template <typename Kind>
int chain_type(const RunConfig& cfg, const std::string& name, const char* key, const char* list,
               const std::vector<BondedType<Kind>>& types) {
  if (name.empty()) return -1;
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i].name == name) return static_cast<int>(i);
  const std::string path = std::string("system.chains.") + key;
  throw ConfigError(cfg.locations.at(path) + ": " + path + ": unknown " + key + " type '" + name + "' (define it in " +
                    list + ")");
}

}  // namespace

void read_bonded_types(const Map& f, RunConfig& cfg) {
  ForceField& ff = cfg.model.force_field;
  cfg.angle_types_from_file = read_types(f, "angles", kAnglePotentials, "angle", ff.angle_types);
  cfg.dihedral_types_from_file = read_types(f, "dihedrals", kDihedralPotentials, "dihedral", ff.dihedral_types);
  cfg.improper_types_from_file = read_types(f, "impropers", kImproperPotentials, "improper", ff.improper_types);
  if (cfg.angle_types_from_file || cfg.dihedral_types_from_file || cfg.improper_types_from_file) {
    const char* key = cfg.angle_types_from_file ? "angles" : cfg.dihedral_types_from_file ? "dihedrals" : "impropers";
    if (cfg.system.source != SystemSource::File)
      f.ctx().fail(f.node(key), f.sub(key), "file takes the types of system.file, and the system has no file");
    const StartTypes file = read_start_file_types(cfg);
    if (cfg.angle_types_from_file) ff.angle_types = file.angle_types;
    if (cfg.dihedral_types_from_file) ff.dihedral_types = file.dihedral_types;
    if (cfg.improper_types_from_file) ff.improper_types = file.improper_types;
  }
  cfg.system.chains.angle_type = chain_type(cfg, cfg.chains_angle_name, "angle", "force_field.angles", ff.angle_types);
  cfg.system.chains.dihedral_type =
      chain_type(cfg, cfg.chains_dihedral_name, "dihedral", "force_field.dihedrals", ff.dihedral_types);
  if (cfg.system.source == SystemSource::Chains && cfg.system.chains.length < 3 && !cfg.chains_angle_name.empty())
    throw ConfigError(cfg.locations.at("system.chains.angle") +
                      ": system.chains.angle: chains of fewer than 3 beads have no angles");
}

// exclusions (the shorthand) or special_bonds {lj: [w12, w13, w14], coulomb: [...]}.
void read_special_bonds(const Map& f, RunConfig& cfg) {
  SpecialBonds& sb = cfg.model.force_field.special;
  if (f.has("exclusions") && f.has("special_bonds"))
    f.ctx().fail(f.node("special_bonds"), f.sub("special_bonds"),
                 "give exclusions or special_bonds, not both (exclusions: bonds is special_bonds {lj: [0, 1, 1], "
                 "coulomb: [0, 1, 1]})");
  if (!f.has("special_bonds")) {
    const std::string ex = f.choice("exclusions", "bonds", {"none", "bonds", "angles"});
    const double w13 = ex == "angles" ? 0.0 : 1.0, w12 = ex == "none" ? 1.0 : 0.0;
    for (double* w : {sb.lj, sb.coulomb}) {
      w[0] = w12;
      w[1] = w13;
      w[2] = 1.0;
    }
    return;
  }
  Map s(f.ctx(), f.node("special_bonds"), f.sub("special_bonds"), {"lj", "coulomb"});
  for (const char* key : {"lj", "coulomb"}) {
    double* w = std::string(key) == "lj" ? sb.lj : sb.coulomb;
    if (!s.has(key)) s.missing(key, "[w12, w13, w14], each in [0, 1]");
    const YAML::Node n = s.node(key);
    if (!n.IsSequence() || n.size() != 3)
      s.ctx().fail(n, s.sub(key), "expected [w12, w13, w14] (weights of 1-2, 1-3, 1-4 pairs), got " + describe(n));
    for (int k = 0; k < 3; ++k) w[k] = s.to_number(n[k], s.sub(key), 0.0, 1.0, false, "a weight in [0, 1]");
  }
}

}  // namespace pairmd::config
