#include "io/start_readers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/text.h"
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
  out.frame = f.frame;
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

std::string vector_text(const Vec3d& v) {
  return "(" + number_text(v.x) + ", " + number_text(v.y) + ", " + number_text(v.z) + ")";
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
               (term.type >= 0 && term.type < static_cast<int>(file_names.size()) ? printable(file_names[term.type])
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

std::string coordinate_problem(double v, const std::string& what) {
  if (!std::isfinite(v)) return what + " " + number_text(v) + " is not finite";
  if (std::fabs(v) > kMaxCoordinate)
    return what + " " + number_text(v) + " is beyond +-" + number_text(kMaxCoordinate) +
           ", the range pairmd takes for coordinates";
  return "";
}

std::string box_problem(const Vec3d& lo, const Vec3d& L) {
  const double l[3] = {lo.x, lo.y, lo.z}, e[3] = {L.x, L.y, L.z};
  for (int d = 0; d < 3; ++d) {
    if (!(std::isfinite(e[d]) && e[d] > 0)) return "the box's edge " + number_text(e[d]) + " is not a number > 0";
    for (const std::string& p :
         {coordinate_problem(e[d], "the box's edge"), coordinate_problem(l[d], "the box's bound"),
          coordinate_problem(l[d] + e[d], "the box's bound")})
      if (!p.empty()) return p;
  }
  return "";
}

std::string position_problem(const Vec3d& x, const Box& box) {
  if (!(std::isfinite(x.x) && std::isfinite(x.y) && std::isfinite(x.z)))
    return "the position " + vector_text(x) + " is not finite";
  const double c[3] = {x.x, x.y, x.z}, lo[3] = {box.lo.x, box.lo.y, box.lo.z}, len[3] = {box.L.x, box.L.y, box.L.z};
  for (int d = 0; d < 3; ++d) {
    const std::string name = std::string(1, "xyz"[d]) + " =";
    if (!box.periodic) {
      const std::string p = coordinate_problem(c[d], name);
      if (!p.empty()) return p;
      continue;
    }
    const double hi = lo[d] + len[d];
    const double out = c[d] < lo[d] ? lo[d] - c[d] : c[d] >= hi ? c[d] - hi : 0;
    if (out > 1e6 * len[d])
      return name + " " + number_text(c[d]) + " is outside the box [" + number_text(lo[d]) + ", " + number_text(hi) +
             ") by " + number_text(out) + ", more than 10^6 box lengths";
  }
  return "";
}

bool wrap_into_box(Vec3d& position, Int3& image, const Box& box) {
  double* x[3] = {&position.x, &position.y, &position.z};
  int* im[3] = {&image.x, &image.y, &image.z};
  const double lo[3] = {box.lo.x, box.lo.y, box.lo.z}, len[3] = {box.L.x, box.L.y, box.L.z};
  for (int d = 0; d < 3; ++d) {
    const double k = std::floor((*x[d] - lo[d]) / len[d]);
    if (k != 0) {
      const double crossed = static_cast<double>(*im[d]) + k;
      if (std::fabs(crossed) > 2147483647.0) return false;
      *x[d] -= k * len[d];
      *im[d] = static_cast<int>(crossed);
    }
    if (*x[d] >= lo[d] + len[d] || *x[d] < lo[d]) *x[d] = lo[d];  // rounding at the upper face
  }
  return true;
}

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

namespace {

// Messages as every config error: where the key is, the key, then the file's own problem
// ("run.yaml:8:9: system.file.path: start.data:12: Atoms: expected ...").
struct StartFile {
  std::string where;  // of system.file.path in the config
  std::string path;
  std::string format;
  ConfigError fail(const std::string& what) const { return ConfigError(where + ": system.file.path: " + what); }
  ConfigError fail_here(const std::string& what) const { return fail("'" + path + "'" + what); }
  // Where particle i is: "start.data:12" (text formats), "'start.gsd': frame 3, particle 7".
  std::string particle(const StartStructure& out, size_t i) const {
    if (i < out.lines.size()) return path + ":" + std::to_string(out.lines[i]);
    return "'" + path + "': frame " + std::to_string(out.frame) + ", particle " + std::to_string(i);
  }
};

StartStructure read_start(const RunConfig& cfg, StartFile& f) {
  const FileSpec& fs = cfg.system.file;
  try {
    f.format = start_file_format(fs.path, fs.format);
    if (f.format == "h5md") return from_h5md(read_h5md_frame(fs.path, fs.frame), cfg.model.units, fs.path);
    if (f.format == "gsd") return read_gsd_frame(fs.path, fs.frame);
    if (f.format == "lammps") {
      if (fs.frame > 0)
        throw StartFileError("'" + fs.path + "': a LAMMPS data file has one frame (system.file.frame " +
                             std::to_string(fs.frame) + ")");
      return read_lammps_data(fs.path, fs.atom_style);
    }
    return read_xyz(fs.path, fs.frame, fs.box, cfg.system.periodic);
  } catch (const StartFileError& e) {
    throw f.fail(e.what());
  } catch (const std::runtime_error& e) {
    // The H5MD reader's messages name the file already.
    throw f.fail(std::string(e.what()));
  }
}

// Particle types onto system.types: by name, or (H5MD, LAMMPS without labels) by order.
std::vector<int> type_map(const StartFile& f, const std::vector<TypeSpec>& types, StartStructure& out) {
  const SystemState& s = out.state;
  std::vector<int> map(s.type_names.size(), -1);
  if (out.types_by_name) {
    for (size_t t = 0; t < s.type_names.size(); ++t) {
      for (size_t c = 0; c < types.size(); ++c)
        if (types[c].name == s.type_names[t]) map[t] = static_cast<int>(c);
      const bool used = std::find(s.type.begin(), s.type.end(), static_cast<int>(t)) != s.type.end();
      if (map[t] < 0 && used)
        throw f.fail_here(": particle type '" + printable(s.type_names[t]) + "' is not in system.types (" +
                          names_of(types) + ")");
    }
    return map;
  }
  if (s.type_names.size() > types.size())
    throw f.fail_here(": the file has " + std::to_string(s.type_names.size()) +
                      " particle types but system.types lists " + std::to_string(types.size()) +
                      " (types are matched by order)");
  const bool numbered = f.format == "lammps";
  for (size_t t = 0; t < s.type_names.size(); ++t) {
    if (!numbered && s.type_names[t] != types[t].name)
      throw f.fail_here(": particle type " + std::to_string(t) + " is '" + printable(s.type_names[t]) +
                        "' in the file but '" + types[t].name + "' in system.types");
    map[t] = static_cast<int>(t);
  }
  if (numbered && !s.type_names.empty()) {
    std::string m;
    for (size_t t = 0; t < s.type_names.size(); ++t) m += (t ? ", " : "") + s.type_names[t] + " -> " + types[t].name;
    out.notes.push_back("atom types by order: " + m);
  }
  return map;
}

void map_types(const StartFile& f, const std::vector<TypeSpec>& types, StartStructure& out) {
  const std::vector<int> map = type_map(f, types, out);
  SystemState& s = out.state;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.type[i] < 0 || (!map.empty() && s.type[i] >= static_cast<int>(map.size())) ||
        (map.empty() && s.type[i] >= static_cast<int>(types.size())))
      throw f.fail_here(": particle " + std::to_string(i) + " has type " + std::to_string(s.type[i]) +
                        ", which system.types does not have");
    if (!map.empty()) s.type[i] = map[s.type[i]];
  }
  s.type_names.clear();
  for (const TypeSpec& t : types) s.type_names.push_back(t.name);
}

// Masses and charges from the config's types where the file has none; all checked finite.
void complete_particles(const StartFile& f, const std::vector<TypeSpec>& types, const StartStructure& out,
                        SystemState& s) {
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
      throw f.fail_here(": particle " + std::to_string(i) + " has mass " + std::to_string(s.mass[i]));
    if (!std::isfinite(s.charge[i])) throw f.fail_here(": particle " + std::to_string(i) + " has a non-finite charge");
    const Vec3d v = s.velocity[i];
    if (!(std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z)))
      throw f.fail_here(": particle " + std::to_string(i) + " has a non-finite velocity");
  }
}

// Bond types onto force_field.bonds: by name where the file names them, else by order.
void map_bond_types(const StartFile& f, const std::vector<BondType>& bt, StartStructure& out) {
  if (out.bond_type_names.empty()) {
    for (const Bond& b : out.topology.bonds)
      if (b.type < 0 || b.type >= static_cast<int>(bt.size()))
        throw f.fail_here(": the file's bonds use bond type " +
                          std::to_string(b.type + (f.format == "lammps" ? 1 : 0)) +
                          ", which force_field.bonds does not define (bond types are matched by order)");
    return;
  }
  std::vector<int> bmap(out.bond_type_names.size(), -1);
  for (size_t t = 0; t < out.bond_type_names.size(); ++t)
    for (size_t c = 0; c < bt.size(); ++c)
      if (bt[c].name == out.bond_type_names[t]) bmap[t] = static_cast<int>(c);
  for (Bond& b : out.topology.bonds) {
    if (bmap[b.type] < 0) {
      std::string names;
      for (const BondType& x : bt) names += (names.empty() ? "" : ", ") + x.name;
      throw f.fail_here(": bond type '" + printable(out.bond_type_names[b.type]) + "' is not in force_field.bonds (" +
                        (names.empty() ? std::string("none defined") : names) + ")");
    }
    b.type = bmap[b.type];
  }
}

// Angle, dihedral and improper types onto force_field.angles, .dihedrals, .impropers.
void map_bonded(const StartFile& f, const ForceField& ff, StartStructure& out) {
  const bool lammps = f.format == "lammps";
  for (const std::string& problem :
       {map_bonded_types(out.topology.angles, out.angle_type_names, ff.angle_types, "angle", "angles", lammps),
        map_bonded_types(out.topology.dihedrals, out.dihedral_type_names, ff.dihedral_types, "dihedral", "dihedrals",
                         lammps),
        map_bonded_types(out.topology.impropers, out.improper_type_names, ff.improper_types, "improper", "impropers",
                         lammps)})
    if (!problem.empty()) throw f.fail_here(": " + problem);
}

// The box and every position checked (box_problem, position_problem) and, in a periodic box,
// each position wrapped in with its crossings counted in its image.
void place_in_box(const StartFile& f, StartStructure& out) {
  SystemState& s = out.state;
  // A periodic box first (positions are placed in it), an open one after (a bounding box of
  // positions beyond the range is named by the position).
  const std::string box = box_problem(s.box.lo, s.box.L);
  if (!box.empty() && s.box.periodic) throw f.fail_here(": " + box);
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string problem = position_problem(s.position[i], s.box);
    if (!problem.empty()) throw f.fail(f.particle(out, i) + ": " + problem);
    if (s.box.periodic && !wrap_into_box(s.position[i], s.image[i], s.box))
      throw f.fail(f.particle(out, i) + ": its image " +
                   vector_text(Vec3d{double(s.image[i].x), double(s.image[i].y), double(s.image[i].z)}) +
                   " and the box crossings of its position overflow a 32-bit image counter");
  }
  if (!box.empty()) throw f.fail_here(": " + box);
}

}  // namespace

StartStructure load_start_file(const RunConfig& cfg) {
  auto it = cfg.locations.find("system.file.path");
  StartFile f{it != cfg.locations.end() ? it->second : cfg.path, cfg.system.file.path, ""};
  StartStructure out = read_start(cfg, f);
  SystemState& s = out.state;
  if (s.size() == 0) throw f.fail_here(" holds no particles");
  // A run goes on from the file's step: a negative one would give it checkpoints no restart
  // takes (their first step after their step), a huge one would overflow with the run's steps.
  if (s.step < 0 || s.step > kMaxStartStep)
    throw f.fail_here(": its step " + std::to_string(s.step) + " is not one a run starts from (0 to 2^62)");
  if (!std::isfinite(out.time)) throw f.fail_here(": its time " + number_text(out.time) + " is not finite");
  if (s.size() > static_cast<size_t>(kMaxParticles))
    throw f.fail_here(" holds " + std::to_string(s.size()) + " particles, more than the " +
                      std::to_string(kMaxParticles) + " pairmd can hold");
  map_types(f, cfg.system.types, out);
  complete_particles(f, cfg.system.types, out, s);
  map_bond_types(f, cfg.model.force_field.bond_types, out);
  map_bonded(f, cfg.model.force_field, out);
  if (!cfg.system.periodic) s.box.periodic = false;
  place_in_box(f, out);
  if (f.format == "lammps" && out.has_masses) out.notes.push_back("masses from the file's Masses section");
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
