#include "io/start_readers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "io/h5md.h"

namespace pairmd {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Factor from a unit the file names to the run's real units (Angstrom, fs); 0: unknown.
double length_factor(const std::string& u) {
  if (u == "Angstrom" || u == "angstrom" || u == "A" || u == "Å") return 1.0;
  if (u == "nm") return 10.0;
  if (u == "pm") return 0.01;
  return 0;
}
double time_factor(const std::string& u) {
  if (u == "fs") return 1.0;
  if (u == "ps") return 1e3;
  if (u == "ns") return 1e6;
  return 0;
}
double velocity_factor(const std::string& u) {
  // "LENGTH TIME-1", as H5MD (and MDAnalysis) write it.
  std::istringstream in(u);
  std::string len, time;
  in >> len >> time;
  if (len.empty() || time.size() < 3 || time.compare(time.size() - 2, 2, "-1") != 0) return 0;
  const double l = length_factor(len), t = time_factor(time.substr(0, time.size() - 2));
  return l > 0 && t > 0 ? l / t : 0;
}

// H5MD frames become start structures, with the units the file names converted to the run's.
StartStructure from_h5md(H5mdFrame f, const Units& units, const std::string& path) {
  StartStructure out;
  out.state = std::move(f.state);
  out.topology = std::move(f.topology);
  out.time = f.time;
  out.types_by_name = false;
  out.has_velocities = f.has_velocity;
  out.has_masses = out.has_charges = true;
  if (units.reduced()) {
    if (!f.length_unit.empty())
      out.notes.push_back("the file's lengths are in " + f.length_unit + "; units lj takes the numbers as they are");
    return out;
  }
  const double lf = f.length_unit.empty() ? 1.0 : length_factor(f.length_unit);
  if (lf == 0)
    throw StartFileError("'" + path + "': positions in unit '" + f.length_unit +
                         "', which pairmd does not convert (Angstrom, nm, pm)");
  double vf = 1.0;
  if (f.has_velocity && !f.velocity_unit.empty()) {
    vf = velocity_factor(f.velocity_unit);
    if (vf == 0)
      throw StartFileError("'" + path + "': velocities in unit '" + f.velocity_unit +
                           "', which pairmd does not convert (Angstrom fs-1, Angstrom ps-1, nm ps-1, ...)");
  }
  const double tf = f.time_unit.empty() || time_factor(f.time_unit) == 0 ? 1.0 : time_factor(f.time_unit);
  SystemState& s = out.state;
  if (lf != 1.0) {
    for (Vec3d& x : s.position) x = lf * x;
    s.box.L = lf * s.box.L;
    s.box.lo = lf * s.box.lo;
    out.notes.push_back("positions and box converted from " + f.length_unit + " to Angstrom");
  }
  if (vf != 1.0) {
    for (Vec3d& v : s.velocity) v = vf * v;
    out.notes.push_back("velocities converted from " + f.velocity_unit + " to Angstrom fs-1");
  }
  out.time *= tf;
  return out;
}

// Wraps positions into a periodic box, counting the crossings in the images.
void wrap_into_box(SystemState& s, const std::string& path) {
  if (!s.box.periodic) return;
  const double lo[3] = {s.box.lo.x, s.box.lo.y, s.box.lo.z}, len[3] = {s.box.L.x, s.box.L.y, s.box.L.z};
  for (size_t i = 0; i < s.size(); ++i) {
    double* x[3] = {&s.position[i].x, &s.position[i].y, &s.position[i].z};
    int* im[3] = {&s.image[i].x, &s.image[i].y, &s.image[i].z};
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(*x[d]))
        throw StartFileError("'" + path + "': particle " + std::to_string(i) + " has a non-finite position");
      const double k = std::floor((*x[d] - lo[d]) / len[d]);
      if (std::fabs(k) > 1e6)
        throw StartFileError("'" + path + "': particle " + std::to_string(i) + " is far outside the box");
      if (k != 0) {
        *x[d] -= k * len[d];
        *im[d] += static_cast<int>(k);
      }
      if (*x[d] >= lo[d] + len[d] || *x[d] < lo[d]) *x[d] = lo[d];  // rounding at the upper face
    }
  }
}

// The file's angle (dihedral, improper) types onto the config's force_field.<key>: by name where
// the file names them, else by order. Returns the problem, or "" when every term has its type.
template <typename Kind, typename Term>
std::string map_bonded_types(std::vector<Term>& terms, const std::vector<std::string>& file_names,
                             const std::vector<BondedType<Kind>>& types, const std::string& family,
                             const std::string& key, bool numbered_from_one) {
  if (terms.empty()) return "";
  std::string names;
  for (const auto& t : types) names += (names.empty() ? "" : ", ") + t.name;
  if (types.empty())
    return "the file has " + std::to_string(terms.size()) + " " + family + "s but force_field." + key + " defines no " +
           family + " types (define them, or take the file's with `" + key + ": file`)";
  if (!file_names.empty()) {
    std::vector<int> map(file_names.size(), -1);
    for (size_t t = 0; t < file_names.size(); ++t)
      for (size_t c = 0; c < types.size(); ++c)
        if (types[c].name == file_names[t]) map[t] = static_cast<int>(c);
    for (Term& term : terms) {
      if (term.type < 0 || term.type >= static_cast<int>(map.size()) || map[term.type] < 0)
        return family + " type '" +
               (term.type >= 0 && term.type < static_cast<int>(file_names.size()) ? file_names[term.type]
                                                                                  : std::to_string(term.type)) +
               "' is not in force_field." + key + " (" + names + ")";
      term.type = map[term.type];
    }
    return "";
  }
  for (const Term& term : terms)
    if (term.type < 0 || term.type >= static_cast<int>(types.size()))
      return "the file's " + family + "s use " + family + " type " +
             std::to_string(term.type + (numbered_from_one ? 1 : 0)) + ", which force_field." + key +
             " does not define (" + family + " types are matched by order: " + names + ")";
  return "";
}

std::string names_of(const std::vector<TypeSpec>& types) {
  std::string n;
  for (const TypeSpec& t : types) n += (n.empty() ? "" : ", ") + t.name;
  return n;
}

}  // namespace

std::string start_file_format(const std::string& path, const std::string& format) {
  if (format != "auto") return format;
  const std::string p = lower(path);
  for (const char* e : {".h5", ".hdf5", ".h5md"})
    if (ends_with(p, e)) return "h5md";
  if (ends_with(p, ".gsd")) return "gsd";
  for (const char* e : {".data", ".lmp", ".lammps", ".lammpsdata"})
    if (ends_with(p, e)) return "lammps";
  if (ends_with(p, ".xyz") || ends_with(p, ".extxyz")) return "xyz";
  const size_t slash = p.find_last_of('/');
  if (p.compare(slash == std::string::npos ? 0 : slash + 1, 5, "data.") == 0) return "lammps";  // LAMMPS's data.NAME
  throw StartFileError(
      "cannot tell the format of '" + path +
      "' from its name (.h5, .gsd, .data/.lmp, .xyz): give system.file.format (h5md, gsd, lammps, xyz)");
}

StartStructure load_start_file(const RunConfig& cfg) {
  const FileSpec& fs = cfg.system.file;
  auto it = cfg.locations.find("system.file.path");
  const std::string where = it != cfg.locations.end() ? it->second : cfg.path;
  // Messages as every config error: where the key is, the key, then the file's own problem
  // ("run.yaml:8:9: system.file.path: start.data:12: Atoms: expected ...").
  auto fail = [&](const std::string& what) -> ConfigError {
    return ConfigError(where + ": system.file.path: " + what);
  };
  StartStructure out;
  std::string format;
  try {
    format = start_file_format(fs.path, fs.format);
    if (format == "h5md") {
      out = from_h5md(read_h5md_frame(fs.path, fs.frame), cfg.model.units, fs.path);
    } else if (format == "gsd") {
      out = read_gsd_frame(fs.path, fs.frame);
    } else if (format == "lammps") {
      if (fs.frame > 0)
        throw StartFileError("'" + fs.path + "': a LAMMPS data file has one frame (system.file.frame " +
                             std::to_string(fs.frame) + ")");
      out = read_lammps_data(fs.path, fs.atom_style);
    } else {
      out = read_xyz(fs.path, fs.frame, fs.box, cfg.system.periodic);
    }
  } catch (const StartFileError& e) {
    throw fail(e.what());
  } catch (const std::runtime_error& e) {
    // The H5MD reader's messages name the file already.
    throw fail(std::string(e.what()));
  }
  SystemState& s = out.state;
  if (s.size() == 0) throw fail("'" + fs.path + "' holds no particles");
  if (s.size() > static_cast<size_t>(kMaxParticles))
    throw fail("'" + fs.path + "' holds " + std::to_string(s.size()) + " particles, more than the " +
               std::to_string(kMaxParticles) + " pairmd can hold");

  // Types onto system.types: by name, or (H5MD, LAMMPS without labels) by order.
  const std::vector<TypeSpec>& types = cfg.system.types;
  std::vector<int> map(s.type_names.size(), -1);
  if (out.types_by_name) {
    for (size_t t = 0; t < s.type_names.size(); ++t) {
      for (size_t c = 0; c < types.size(); ++c)
        if (types[c].name == s.type_names[t]) map[t] = static_cast<int>(c);
      const bool used = std::find(s.type.begin(), s.type.end(), static_cast<int>(t)) != s.type.end();
      if (map[t] < 0 && used)
        throw fail("'" + fs.path + "': particle type '" + s.type_names[t] + "' is not in system.types (" +
                   names_of(types) + ")");
    }
  } else {
    if (s.type_names.size() > types.size())
      throw fail("'" + fs.path + "': the file has " + std::to_string(s.type_names.size()) +
                 " particle types but system.types lists " + std::to_string(types.size()) +
                 " (types are matched by order)");
    const bool numbered = format == "lammps";
    for (size_t t = 0; t < s.type_names.size(); ++t) {
      if (!numbered && s.type_names[t] != types[t].name)
        throw fail("'" + fs.path + "': particle type " + std::to_string(t) + " is '" + s.type_names[t] +
                   "' in the file but '" + types[t].name + "' in system.types");
      map[t] = static_cast<int>(t);
    }
    if (numbered && !s.type_names.empty()) {
      std::string m;
      for (size_t t = 0; t < s.type_names.size(); ++t) m += (t ? ", " : "") + s.type_names[t] + " -> " + types[t].name;
      out.notes.push_back("atom types by order: " + m);
    }
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.type[i] < 0 || (!map.empty() && s.type[i] >= static_cast<int>(map.size())) ||
        (map.empty() && s.type[i] >= static_cast<int>(types.size())))
      throw fail("'" + fs.path + "': particle " + std::to_string(i) + " has type " + std::to_string(s.type[i]) +
                 ", which system.types does not have");
    if (!map.empty()) s.type[i] = map[s.type[i]];
  }
  s.type_names.clear();
  for (const TypeSpec& t : types) s.type_names.push_back(t.name);
  s.mass.resize(s.size(), 0.0);
  s.charge.resize(s.size(), 0.0);
  s.velocity.resize(s.size(), Vec3d{0, 0, 0});
  s.image.resize(s.size(), Int3{0, 0, 0});
  if (!out.has_masses)
    for (size_t i = 0; i < s.size(); ++i) s.mass[i] = types[s.type[i]].mass;
  if (!out.has_charges)
    for (size_t i = 0; i < s.size(); ++i) s.charge[i] = types[s.type[i]].charge;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!(std::isfinite(s.mass[i]) && s.mass[i] > 0))
      throw fail("'" + fs.path + "': particle " + std::to_string(i) + " has mass " + std::to_string(s.mass[i]));
    if (!std::isfinite(s.charge[i]))
      throw fail("'" + fs.path + "': particle " + std::to_string(i) + " has a non-finite charge");
    const Vec3d v = s.velocity[i];
    if (!(std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z)))
      throw fail("'" + fs.path + "': particle " + std::to_string(i) + " has a non-finite velocity");
  }

  // Bond types onto force_field.bonds: by name where the file names them, else by order.
  const std::vector<BondType>& bt = cfg.model.force_field.bond_types;
  if (!out.bond_type_names.empty()) {
    std::vector<int> bmap(out.bond_type_names.size(), -1);
    for (size_t t = 0; t < out.bond_type_names.size(); ++t)
      for (size_t c = 0; c < bt.size(); ++c)
        if (bt[c].name == out.bond_type_names[t]) bmap[t] = static_cast<int>(c);
    for (Bond& b : out.topology.bonds) {
      if (bmap[b.type] < 0) {
        std::string names;
        for (const BondType& x : bt) names += (names.empty() ? "" : ", ") + x.name;
        throw fail("'" + fs.path + "': bond type '" + out.bond_type_names[b.type] + "' is not in force_field.bonds (" +
                   (names.empty() ? std::string("none defined") : names) + ")");
      }
      b.type = bmap[b.type];
    }
  } else {
    for (const Bond& b : out.topology.bonds)
      if (b.type < 0 || b.type >= static_cast<int>(bt.size()))
        throw fail("'" + fs.path + "': the file's bonds use bond type " +
                   std::to_string(b.type + (format == "lammps" ? 1 : 0)) +
                   ", which force_field.bonds does not define (bond types are matched by order)");
  }
  const ForceField& ff = cfg.model.force_field;
  const bool lammps = format == "lammps";
  for (const std::string& problem :
       {map_bonded_types(out.topology.angles, out.angle_type_names, ff.angle_types, "angle", "angles", lammps),
        map_bonded_types(out.topology.dihedrals, out.dihedral_type_names, ff.dihedral_types, "dihedral", "dihedrals",
                         lammps),
        map_bonded_types(out.topology.impropers, out.improper_type_names, ff.improper_types, "improper", "impropers",
                         lammps)})
    if (!problem.empty()) throw fail("'" + fs.path + "': " + problem);
  if (!cfg.system.periodic) s.box.periodic = false;
  try {
    wrap_into_box(s, fs.path);
  } catch (const StartFileError& e) {
    throw fail(e.what());
  }
  if (format == "lammps" && out.has_masses) out.notes.push_back("masses from the file's Masses section");
  return out;
}

StartTypes read_start_file_types(const RunConfig& cfg) {
  const FileSpec& fs = cfg.system.file;
  auto it = cfg.locations.find("system.file.path");
  const std::string where = it != cfg.locations.end() ? it->second : cfg.path;
  StartTypes types;
  try {
    const std::string format = start_file_format(fs.path, fs.format);
    if (format != "lammps")
      throw StartFileError("'" + fs.path +
                           "' is not a LAMMPS data file: only those give angle, dihedral and "
                           "improper coefficients (define the types in force_field instead of `file`)");
    types = read_lammps_data(fs.path, fs.atom_style).types;
  } catch (const StartFileError& e) {
    throw ConfigError(where + ": system.file.path: " + e.what());
  }
  const std::pair<bool, const std::string*> asked[] = {{cfg.angle_types_from_file, &types.angle_problem},
                                                       {cfg.dihedral_types_from_file, &types.dihedral_problem},
                                                       {cfg.improper_types_from_file, &types.improper_problem}};
  const char* keys[] = {"angles", "dihedrals", "impropers"};
  for (int k = 0; k < 3; ++k)
    if (asked[k].first && !asked[k].second->empty())
      throw ConfigError(where + ": force_field." + keys[k] + ": file: " + *asked[k].second);
  return types;
}

}  // namespace pairmd
